// The `scheduler:` mapping of a config file (`migsched serve`, the Slurm controller, the
// Kubernetes extender), read with the table of scheduler options (sched/option_table.h): the
// keys are the simulator's flags without "--" (kebab-case, or snake_case), with the same ranges
// and messages, plus `policy`. What the mapping does not give takes the policy's own defaults
// from the policy registry (sched/policy.h PolicyOptions), as `migsched simulate --policy NAME`.
//
//   scheduler:
//     policy: full
//     threshold: 0.4
//     evacuation: queue
//     ...
//
// Thread-safety: reentrant.
#ifndef MIGSCHED_IO_SCHEDULER_OPTIONS_YAML_H_
#define MIGSCHED_IO_SCHEDULER_OPTIONS_YAML_H_

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "core/status.h"
#include "sched/options.h"
#include "sched/policy.h"

namespace migsched {

struct SchedulerConfig {
  std::string policy = std::string(kDefaultPolicy);  // as written (a registered name or an alias)
  // The options the policy runs with: what the mapping gives, the policy's registry defaults
  // for the rest (validated).
  SchedulerOptions options;
  ExplicitOptions given;  // which of the policy-defaulted options the mapping gave
};

// Reads the mapping `node` (null or undefined: every default). `origin` is the file, `key` the
// mapping's key in it ("scheduler"). Errors (kInvalidArgument), with the line where known:
//   "<origin>:<line>: unknown key 'scheduler.x' (known: policy, threshold, ...)"
//   "<origin>:<line>: scheduler.evacuation must be one of off, head, queue, got 'all'"
//   "<origin>: scheduler.policy: unknown policy 'x' (known: first-fit, ...)"
//   "<origin>: scheduler: <what SchedulerOptions::Validate says>"
StatusOr<SchedulerConfig> ReadSchedulerYaml(const YAML::Node& node, const std::string& origin,
                                            const std::string& key = "scheduler");
// The same from the mapping's YAML text ("" = every default).
StatusOr<SchedulerConfig> ParseSchedulerYaml(const std::string& text, const std::string& origin,
                                             const std::string& key = "scheduler");

// The `scheduler:` section of a commented example config: `policy: <policy>` and every option of
// the table with the value `policy` runs with by default (the registry's, as `migsched simulate
// --policy NAME`), each line indented by `indent` spaces and followed by its help as a comment;
// but a static layout of best-for-mix (the simulator's default for `static`: chosen from the
// workload's mix known in advance, which a running scheduler never has) is printed as the catalog
// layout all-balanced, with a comment saying so, so that every printed section starts a daemon.
// kNotFound listing the known policies for an unknown name.
StatusOr<std::string> DefaultSchedulerYaml(std::string_view policy, int indent = 2);

}  // namespace migsched

#endif  // MIGSCHED_IO_SCHEDULER_OPTIONS_YAML_H_
