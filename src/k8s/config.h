// The config files of `migsched k8s extender --config FILE` and
// `migsched k8s node-agent --config FILE` (YAML mappings; an unknown key, a
// wrong type or a bad value is an error naming the file and the key; the
// ConfigMaps of deploy/kubernetes/ hold commented examples).
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
//   reservation_ttl_s: 300          how long a bind's reservation waits for the kubelet
//   reclaim_interval_s: 30          how often allocations of pods that are gone are released
//   refresh_s: 0.5                  the cluster view is re-read when older than this
//   bind_wait_s: 20                 a bind waits this long for an earlier pod on its node
//   migration: true                 evict migratable pods to open room (docs/kubernetes.md)
//   migrate_after_s: 60             a pod waits this long before room is opened for it
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
//
// Thread-safety: plain values.
#ifndef MIGSCHED_K8S_CONFIG_H_
#define MIGSCHED_K8S_CONFIG_H_

#include <string>
#include <vector>

#include "core/status.h"
#include "sched/options.h"

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
  bool migration = true;
  double migrate_after_s = 60;

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
};

// The extender's scheduler policy: its name and the options it runs with
// (the file's `scheduler:` keys, the policy's registry defaults for the rest),
// read with the one reader of `scheduler:` mappings (io/scheduler_options_yaml.h),
// so that the names and checks are the daemon's and the simulator's.
struct ExtenderPolicy {
  std::string policy = "full";
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
