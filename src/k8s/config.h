// The config files of `migsched k8s extender --config FILE` and
// `migsched k8s node-agent --config FILE` (YAML mappings; an unknown key, a
// key given twice, a wrong type or a bad value is an error naming the file and the key; the
// ConfigMaps of deploy/kubernetes/base/ hold commented examples).
//
// extender:
//   listen: "0.0.0.0:8888"          host:port of the extender's HTTP server
//   kubeconfig: ""                  "" = the pod's service account (in-cluster)
//   kube_context: ""                a context of the kubeconfig ("" = its current-context)
//   node_agents:                    the node daemons: the node-agent pods, found by label...
//     namespace: migsched-system
//     label_selector: app.kubernetes.io/name=migsched-node-agent
//     port: 7070
//   nodes:                          ...or listed: [{name: gpu-node-1, url: http://10.0.0.11:7070}]
//   token_file: /var/run/migsched/token   the node daemons' bearer token (or token: "...")
//   scheduler: {policy: full, ...}  the simulator's and the daemon's option names
//   reservation_ttl_s: 300          how long a bind's reservation waits for the kubelet (at most
//                                   the daemons' reservation_max_ttl_s, 600 by default: a
//                                   longer one is warned about at start)
//   reclaim_interval_s: 30          how often allocations of pods that are gone are released
//   refresh_s: 0.5                  the cluster view is re-read when older than this
//   bind_wait_s: 20                 a bind waits this long for an earlier pod on its node
//   daemon_timeout_s: 2             a node daemon call's connect and read limit, and the longest
//                                   a filter, prioritize or bind waits for a node it names
//                                   (a daemon that does not answer: that node is refused)
//   migration: true                 evict migratable pods to open room (docs/kubernetes.md)
//   migrate_after_s: 60             a pod waits this long before room is opened for it
//   tls:                            HTTPS with client certificates checked (mutual TLS);
//     cert_file: /etc/migsched-tls/tls.crt     absent: plain HTTP (only behind a
//     key_file: /etc/migsched-tls/tls.key      NetworkPolicy, docs/kubernetes.md)
//     client_ca_file: /etc/migsched-tls/ca.crt the CA of kube-scheduler's client certificate
//   probe_listen: ""                host:port of a plain-HTTP listener serving only /healthz,
//                                   /readyz, /metrics ("" = none): the kubelet's probes and
//                                   Prometheus present no client certificate
//   max_body_bytes: 16777216        a longer request body is refused with 413
//   leader_election:                several replicas, one writer (k8s/api/leader_election.h)
//     enabled: false
//     namespace: migsched-system    the coordination.k8s.io Lease's namespace and name
//     name: migsched-extender
//     identity: ""                  "" = $POD_NAME, else the host name
//     lease_duration_s: 15
//     renew_deadline_s: 10          < lease_duration_s
//     retry_s: 2                    < renew_deadline_s
//
// node-agent:
//   node_name: ""                   "" = $NODE_NAME, else the host name
//   daemon_url: http://127.0.0.1:7070
//   token_file: /var/run/migsched/token   (or token: "...")
//   device_plugin_dir: /var/lib/kubelet/device-plugins
//   device_nodes: [/dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools]
//   cdi: false                      true: also name each instance as the CDI device
//                                   nvidia.com/gpu=<MIG UUID>
//   health_interval_s: 5            how often the daemon is asked whether it answers
//   probe_listen: ""                host:port of a plain-HTTP listener for the kubelet's
//                                   probes ("" = none): GET /healthz (200 while the process
//                                   serves), GET /readyz (200 once every resource is
//                                   registered with the kubelet and the daemon answers,
//                                   else 503 with the reason)
//
// Thread-safety: plain values.
#ifndef MIGSCHED_K8S_CONFIG_H_
#define MIGSCHED_K8S_CONFIG_H_

#include <string>
#include <vector>

#include "core/status.h"
#include "sched/options.h"
#include "sched/policy.h"

namespace migsched::k8s {

struct StaticNode {
  std::string name;
  std::string url;
};

struct ExtenderConfig {
  std::string listen = "0.0.0.0:8888";
  std::string kubeconfig;
  std::string kube_context;
  // node_agents (discovery) or nodes (static): exactly one.
  std::string agents_namespace;
  std::string agents_label_selector;
  int agents_port = 7070;
  std::vector<StaticNode> nodes;
  std::string token_file;
  std::string token;
  std::string scheduler_yaml;  // the `scheduler:` mapping as YAML text ("" = defaults)
  double reservation_ttl_s = 300;
  double reclaim_interval_s = 30;
  double refresh_s = 0.5;
  double bind_wait_s = 20;
  double daemon_timeout_s = 2;
  bool migration = true;
  double migrate_after_s = 60;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  std::string probe_listen;
  double max_body_bytes = 16u << 20;
  bool leader_elect = false;
  std::string lease_namespace = "migsched-system";
  std::string lease_name = "migsched-extender";
  std::string lease_identity;
  double lease_duration_s = 15;
  double renew_deadline_s = 10;
  double retry_s = 2;

  bool discovers() const { return nodes.empty(); }
};

struct NodeAgentConfig {
  std::string node_name;
  std::string daemon_url = "http://127.0.0.1:7070";
  std::string token_file;
  std::string token;
  std::string device_plugin_dir = "/var/lib/kubelet/device-plugins";
  std::vector<std::string> device_nodes = {"/dev/nvidiactl", "/dev/nvidia-uvm",
                                           "/dev/nvidia-uvm-tools"};
  bool cdi = false;
  double health_interval_s = 5;
  std::string probe_listen;
};

// The extender's scheduler policy: its name and the options it runs with
// (the file's `scheduler:` keys, the policy's registry defaults for the rest),
// read with the one reader of `scheduler:` mappings (io/scheduler_options_yaml.h),
// so that the names and checks are the daemon's and the simulator's.
struct ExtenderPolicy {
  std::string policy = std::string(kDefaultPolicy);
  SchedulerOptions scheduler;
};
// kInvalidArgument "<origin>: scheduler.<key>: <what>"; kNotFound for an unknown policy.
StatusOr<ExtenderPolicy> PolicyOf(const ExtenderConfig& config, const std::string& origin);

// kInvalidArgument "<origin>: <key>: <what>" for bad input.
StatusOr<ExtenderConfig> ParseExtenderConfig(const std::string& yaml_text,
                                             const std::string& origin);
StatusOr<NodeAgentConfig> ParseNodeAgentConfig(const std::string& yaml_text,
                                               const std::string& origin);
// The file's text parsed; kNotFound when it cannot be read.
StatusOr<ExtenderConfig> LoadExtenderConfig(const std::string& path);
StatusOr<NodeAgentConfig> LoadNodeAgentConfig(const std::string& path);

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_CONFIG_H_
