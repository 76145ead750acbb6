// The KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) that puts
// the migsched extender in front of kube-scheduler, with the catalog's MIG
// resources as managedResources (`migsched k8s scheduler-config`; the files
// in deploy/kubernetes/ (base/scheduler.yaml) are its output).
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_K8S_DEPLOY_SCHEDULER_CONFIG_H_
#define MIGSCHED_K8S_DEPLOY_SCHEDULER_CONFIG_H_

#include <string>
#include <vector>

#include "core/catalog.h"

namespace migsched::k8s {

struct SchedulerConfigOptions {
  // A second profile named `scheduler_name` that pods choose with
  // spec.schedulerName (its own kube-scheduler, with leader election in
  // `lease_namespace`); false: the extender on the cluster's default profile.
  bool second_profile = true;
  std::string scheduler_name = "migsched";
  std::string lease_namespace = "migsched-system";
  std::string url = "https://migsched-extender.migsched-system.svc:8888";
  // The extender entry's tlsConfig: kube-scheduler presents DIR/tls.crt +
  // DIR/tls.key as its client certificate and checks the extender's against
  // DIR/ca.crt (the files of deploy/kubernetes/make-certs.sh). "" for none
  // (an http:// url).
  std::string tls_dir = "/etc/migsched-tls";
  std::string kubeconfig;  // clientConnection.kubeconfig ("" for in-cluster)
  int weight = 5;
  std::string http_timeout = "30s";
};

// "nvidia.com/mig-<profile>" of every base profile of `models`, first model
// first, each name once (media-extension variants are left out: '+' is not
// allowed in a resource name).
std::vector<std::string> MigResourceNames(const std::vector<const GpuModel*>& models);

// The configuration as YAML, with comments.
std::string KubeSchedulerConfigYaml(const std::vector<std::string>& resources,
                                    const SchedulerConfigOptions& options);

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_DEPLOY_SCHEDULER_CONFIG_H_
