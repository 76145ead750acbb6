// The Slurm controller's configuration (`migsched slurm controller --config
// FILE`, also read by the hooks `migsched slurm prolog|task-prolog|epilog`),
// YAML; docs/slurm.md "Configuration". Unknown keys, and a key given twice
// (io/yaml_errors.h CheckNoRepeatedKey), are an error naming the key; every key but `nodes` has a
// default:
//
//   slurm:
//     partition: mig             the gated MIG partition (State=DOWN in slurm.conf)
//     gres_name: mig             the GRES name of the MIG profiles
//     bin_dir: ""                where squeue, sinfo, scontrol are ("": PATH)
//     command_timeout_s: 30      each Slurm command's time limit
//     max_bind_failures: 3       failed prologs before the job is held
//     bind_wait_s: 30            how long the prolog retries a bind that finds no room
//                                (an ended job's instance not yet released by its epilog)
//   nodes:                       every node of the partition with a node daemon
//     - name: n1                 the Slurm node name
//       url: http://10.0.0.1:7070
//       token_file: /etc/migsched/n1.token   (or token: "...")
//   token_file: ""               the token of nodes that name none
//   controller:
//     tick_ms: 1000              how often the controller plans
//     reservation_ttl_s: 60      a room's lifetime at the daemon, renewed every tick
//     room_timeout_s: 120        a room no job takes for this long is dropped, and its
//                                node gets no new room of that profile for as long
//     reclaim_grace_s: 10        an allocation whose Slurm job is gone is released
//                                after this long
//     node_timeout_s: 5          one node daemon call's time limit
//     revert_settle_s: 3         after Slurm put the counts back (reconfigure, restart), the
//                                gate stays closed this long before they are published again
//     log_file: ""               also log here ("": stderr only)
//     log_level: info
//     listen: ""                 host:port of GET /healthz, /metrics, /v1/status
//                                (`migsched slurm status`); "": none
//   migration:
//     enabled: true              requeue migratable jobs to open room (§14.5)
//     after_s: 60                only for a job waiting at least this long
//     max_moved_jobs: 2
//     min_runtime_s: 120         a job runs at least this long before it may move again
//   scheduler:                   policy: full, and every option of the simulator by its flag's
//                                name (`migsched simulate --help`, io/scheduler_options_yaml.h)
//
// Thread-safety: plain values.
#ifndef MIGSCHED_SLURM_CONTROLLER_CONFIG_H_
#define MIGSCHED_SLURM_CONTROLLER_CONFIG_H_

#include <string>
#include <vector>

#include "cluster/http_node_daemons.h"
#include "core/status.h"
#include "sched/options.h"
#include "sched/policy.h"

namespace migsched::slurm {

struct NodeEndpoint {
  std::string name;
  std::string url;  // http://host:port
  std::string token_file;
  std::string token;
};

struct ControllerConfig {
  std::string origin;  // the file, for messages
  // slurm:
  std::string partition = "mig";
  std::string gres_name = "mig";
  std::string bin_dir;
  double command_timeout_s = 30;
  int max_bind_failures = 3;
  double bind_wait_s = 30;
  // nodes:
  std::vector<NodeEndpoint> nodes;
  std::string token_file;
  // controller:
  int tick_ms = 1000;
  double reservation_ttl_s = 60;
  double room_timeout_s = 120;
  double reclaim_grace_s = 10;
  double node_timeout_s = 5;
  double revert_settle_s = 3;
  std::string log_file;
  std::string log_level = "info";
  std::string listen;  // "" or host:port (validated: a port 1-65535, or 0 for any)
  // migration:
  bool migration_enabled = true;
  double migration_after_s = 60;
  int max_moved_jobs = 2;
  double min_runtime_s = 120;
  // scheduler:
  std::string policy = std::string(kDefaultPolicy);
  // The options the policy runs with: the file's, the policy's registry defaults for the rest.
  SchedulerOptions scheduler =
      OptionsForPolicy(kDefaultPolicy, SchedulerOptions{}, ExplicitOptions{});
  ExplicitOptions explicit_options;  // which of the policy-defaulted options the file gave

  // The options the policy runs with (`scheduler`, completed when the file was read).
  SchedulerOptions PolicyOptions() const { return scheduler; }
  // The node's daemon as the cluster core describes it: its token file is its
  // own, else the global token_file.
  NodeDaemonEndpoint EndpointOf(const NodeEndpoint& node) const;
  // The node's token: `token`, else the first line of its or the global
  // token_file (cluster/http_node_daemons.h NodeDaemonToken, its errors).
  StatusOr<std::string> TokenOf(const NodeEndpoint& node) const;
};

// The node daemons of `config` for NewHttpNodeDaemons (cluster/http_node_daemons.h):
// every node with EndpointOf, node_timeout_s per call, the config's origin in messages.
HttpNodeDaemonsConfig NodeDaemonsOf(const ControllerConfig& config);

// Errors (kInvalidArgument) name the origin, the key and what is wrong.
StatusOr<ControllerConfig> ParseControllerConfig(const std::string& yaml_text,
                                                 const std::string& origin);
StatusOr<ControllerConfig> LoadControllerConfig(const std::string& path);

}  // namespace migsched::slurm

#endif  // MIGSCHED_SLURM_CONTROLLER_CONFIG_H_
