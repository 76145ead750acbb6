#!/usr/bin/env python3
"""Regenerates the Pod, Node and extender request bodies of tests/data/k8s/.

The container part of each Pod comes from kubectl's offline generators
(`kubectl create job ... --dry-run=client -o json`, `kubectl set resources
--local`); the rest is what the API server and the Job controller add before
kube-scheduler sees the pod (metadata.uid/generateName/labels/ownerReferences,
spec defaults, a service-account volume, status.phase), written here by hand in
the shape of Kubernetes v1.32 (kubectl v1.32.4 made the generator output).
kube-scheduler marshals ExtenderArgs with encoding/json: Go field names as
keys, "Nodes": null when nodeCacheCapable is true.

Run from the repository root: python3 tests/data/k8s/make_fixtures.py
"""
import json
import pathlib
import subprocess

OUT = pathlib.Path(__file__).resolve().parent


def kubectl(*args, stdin=None):
    return json.loads(subprocess.run(["kubectl", *args], input=stdin, capture_output=True,
                                     text=True, check=True).stdout)


def job(name, image, command, limits, requests=None):
    j = kubectl("create", "job", name, f"--image={image}", "--dry-run=client", "-o", "json",
                "--", *command)
    args = ["set", "resources", "--local", "-f", "-", "-o", "json",
            "--limits=" + ",".join(f"{k}={v}" for k, v in limits.items())]
    if requests:
        args.append("--requests=" + ",".join(f"{k}={v}" for k, v in requests.items()))
    return kubectl(*args, stdin=json.dumps(j))


def pod_of(job_obj, namespace, suffix, uid, job_uid, scheduler="migsched"):
    """The Pod the Job controller creates, as the API server stores it."""
    name = job_obj["metadata"]["name"]
    spec = job_obj["spec"]["template"]["spec"]
    vol = f"kube-api-access-{suffix[:5]}"
    for c in spec["containers"]:
        res = c.setdefault("resources", {})
        # The API server defaults requests from limits for every resource.
        req = res.setdefault("requests", {})
        for k, v in res.get("limits", {}).items():
            req.setdefault(k, v)
        if not req:
            del res["requests"]
        c["volumeMounts"] = [{"name": vol, "readOnly": True,
                              "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]
        c["terminationMessagePath"] = "/dev/termination-log"
        c["terminationMessagePolicy"] = "File"
        c["imagePullPolicy"] = "IfNotPresent"
    labels = {"batch.kubernetes.io/controller-uid": job_uid, "batch.kubernetes.io/job-name": name,
              "controller-uid": job_uid, "job-name": name}
    spec.update({
        "volumes": [{"name": vol, "projected": {"sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}],
            "defaultMode": 420}}],
        "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default", "serviceAccount": "default", "securityContext": {},
        "schedulerName": scheduler,
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300}],
        "priority": 0, "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority"})
    qos = "BestEffort"
    if any(c.get("resources", {}).get("requests") for c in spec["containers"]):
        qos = "Burstable"
    return {
        "metadata": {
            "name": f"{name}-{suffix}", "generateName": f"{name}-", "namespace": namespace,
            "uid": uid, "resourceVersion": "48213", "creationTimestamp": "2026-05-04T09:12:33Z",
            "labels": labels,
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": name,
                                 "uid": job_uid, "controller": True, "blockOwnerDeletion": True}],
            "finalizers": ["batch.kubernetes.io/job-tracking"]},
        "spec": spec,
        "status": {"phase": "Pending", "qosClass": qos}}


def node(name, gpus, profiles):
    """A Node with MIG GPUs as kube-scheduler's cache holds it (abridged status)."""
    cap = {"cpu": "64", "memory": "527920128Ki", "pods": "110", "ephemeral-storage": "1872759360Ki"}
    for p, n in profiles.items():
        cap[f"nvidia.com/mig-{p}"] = str(n * gpus)
    return {
        "metadata": {"name": name, "uid": f"0c1d2e3f-0000-4000-8000-00000000000{name[-1]}",
                     "resourceVersion": "47110", "creationTimestamp": "2026-04-01T07:00:00Z",
                     "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                "kubernetes.io/arch": "amd64", "nvidia.com/mig.capable": "true",
                                "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
                                "migsched.io/node-agent": "true"}},
        "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"]},
        "status": {"capacity": cap, "allocatable": cap,
                   "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                   "message": "kubelet is posting ready status",
                                   "lastHeartbeatTime": "2026-05-04T09:12:00Z",
                                   "lastTransitionTime": "2026-04-01T07:01:00Z"}],
                   "nodeInfo": {"kubeletVersion": "v1.32.4", "operatingSystem": "linux",
                                "architecture": "amd64", "containerRuntimeVersion": "containerd://1.7.24",
                                "kernelVersion": "6.1.0-31-amd64", "osImage": "Debian GNU/Linux 12 (bookworm)",
                                "machineID": "", "systemUUID": "", "bootID": "",
                                "kubeProxyVersion": "v1.32.4"}}}


def write(name, obj):
    (OUT / name).write_text(json.dumps(obj, indent=2) + "\n")


A100 = {"1g.5gb": 7, "1g.10gb": 4, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1, "7g.40gb": 1}

train = pod_of(job("train", "nvcr.io/nvidia/pytorch:24.05-py3", ["python", "train.py"],
                   {"nvidia.com/mig-3g.20gb": 1, "cpu": 4, "memory": "16Gi"}, {"cpu": 2}),
               "ml", "x7k2p", "5d0c6a7e-3f4b-4c1d-9e2a-6b7c8d9e0f11",
               "a1b2c3d4-0000-4000-8000-000000000001")
write("pod-3g.20gb.json", train)

two = job("infer", "nvcr.io/nvidia/tritonserver:24.05-py3", ["tritonserver"],
          {"nvidia.com/mig-1g.5gb": 2})
side = json.loads(json.dumps(two["spec"]["template"]["spec"]["containers"][0]))
side.update({"name": "embed", "command": ["python", "embed.py"],
             "resources": {"limits": {"nvidia.com/mig-2g.10gb": "1"}}})
two["spec"]["template"]["spec"]["containers"].append(side)
write("pod-two-containers.json",
      pod_of(two, "serving", "q9w8e", "77aa1c20-5b6e-4f70-8a91-b2c3d4e5f601",
             "a1b2c3d4-0000-4000-8000-000000000002"))

cpu = pod_of(job("etl", "python:3.12-slim", ["python", "etl.py"], {"cpu": 1, "memory": "2Gi"}),
             "ml", "m3n4b", "0f9e8d7c-6b5a-4493-8271-605f4e3d2c1b",
             "a1b2c3d4-0000-4000-8000-000000000003", scheduler="default-scheduler")
write("pod-no-mig.json", cpu)

odd = pod_of(job("odd", "busybox:1.36", ["sleep", "1"], {"nvidia.com/mig-9g.99gb": 1}),
             "ml", "z1x2c", "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f",
             "a1b2c3d4-0000-4000-8000-000000000004")
write("pod-unknown-profile.json", odd)

nodes = [node(f"gpu-node-{i}", 2, A100) for i in (1, 2, 3)]
write("node-gpu-node-1.json", nodes[0])

write("filter-args.json", {"Pod": train, "Nodes": None,
                           "NodeNames": ["gpu-node-1", "gpu-node-2", "gpu-node-3"]})
write("filter-args-nodelist.json", {"Pod": train, "Nodes": {"metadata": {}, "items": nodes},
                                    "NodeNames": None})
write("bind-args.json", {"PodName": train["metadata"]["name"],
                         "PodNamespace": train["metadata"]["namespace"],
                         "PodUID": train["metadata"]["uid"], "Node": "gpu-node-2"})
