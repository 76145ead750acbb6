// Flags shared by `simulate` and `compare`, and turning them into a cluster,
// a workload, and scheduler/simulator options.
#ifndef MIGSCHED_CLI_SIM_FLAGS_H_
#define MIGSCHED_CLI_SIM_FLAGS_H_

#include <CLI/CLI.hpp>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cli/context.h"
#include "core/gpu_model.h"
#include "core/job.h"
#include "sched/full_policy.h"
#include "sched/options.h"
#include "sim/sim_options.h"

namespace migsched::cli {

struct SimFlags {
  std::string cluster;     // --cluster 4xA100-40GB[,8xH100-80GB...]
  std::string workload;    // --workload FILE | paper-mix | alibaba:FILE
  double threshold = 0.4;  // --threshold
  std::string frag_objective = "delta";
  std::string static_layout = "all-balanced";
  double load = 0;  // --load; 0 = default (0.9 for generated arrivals, none for a FILE)
  std::string arrivals = "poisson";
  uint64_t seed = 1;
  int jobs = 0;  // --jobs: paper-mix size (default 200) / limit on a trace (0 = all)
  double pcie_share = 0.2;
  std::string fraction_rule = "compute";
  std::string mode = "online";
  double fill_target = 1.3;
  double reconfig_ms = 23;
  bool no_contention = false;

  std::string metric = "fragcost";      // --metric (§2, sched/metrics.h)
  int demand_window = 1000;             // --demand-window (demand-weighted, §2)
  int reserve_full = 0;                 // --reserve-full (§4 step 7)
  std::string joint_placement = "off";  // --joint-placement on|off (§12; the policy's default)

  // §5 queue options and idle-instance retention, seconds; < 0 = off.
  double max_skip_seconds = -1;  // --max-skip-seconds
  double max_wait = -1;          // --max-wait
  double idle_ttl = -1;          // --idle-ttl
  // §6 migration knobs (--defrag-interval, --max-moves-per-pass,
  // --migration-cooldown, --migration-fixed-s, --migration-gbps, --switch-s,
  // --checkpoint-interval); used by policies that migrate (`full`).
  SchedulerOptions::Migration migration;
  // Which of --metric, --reserve-full, --max-skip-seconds, --joint-placement were given (set while
  // parsing);
  // the others take the policy's defaults (sched/full_policy.h OptionsForPolicy).
  ExplicitOptions explicit_options;
};

// Adds the shared flags to `cmd`.
void AddSimFlags(CLI::App* cmd, SimFlags* flags);

// Everything a run needs, built from the flags.
struct SimSetup {
  std::vector<const GpuModel*> gpus;
  std::vector<Job> jobs;
  SchedulerOptions scheduler;
  SimOptions sim;
  std::vector<std::string> notes;    // e.g. "skipped 861 pending pods without scheduled_time"
  std::string workload_label;        // e.g. "alibaba:openb_pod_list_default.csv (7064 jobs)"
  double offered_load = 0;           // target load of regenerated arrivals; 0 if kept from a file
  ExplicitOptions explicit_options;  // from the flags
  // The scheduler options `policy` runs with: `scheduler` with the policy's own defaults for the
  // options the user did not give (`full`, sched/full_policy.h OptionsForPolicy).
  SchedulerOptions SchedulerFor(std::string_view policy) const {
    return OptionsForPolicy(policy, scheduler, explicit_options);
  }
  nlohmann::ordered_json ToJson(const SimFlags& flags) const;  // the run's settings
};

// Builds the setup; errors name the flag or the file at fault.
StatusOr<SimSetup> BuildSimSetup(const SimFlags& flags, Context& ctx);

// A progress printer for stderr (thread-safe; silent when ctx.quiet).
class ProgressPrinter {
 public:
  explicit ProgressPrinter(Context& ctx) : ctx_(ctx) {}
  void Report(const std::string& policy, const SimProgress& p, bool is_fill);

 private:
  Context& ctx_;
  std::mutex mu_;
};

}  // namespace migsched::cli

#endif  // MIGSCHED_CLI_SIM_FLAGS_H_
