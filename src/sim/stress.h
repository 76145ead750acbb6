// The scheduler stress harness: generated workloads and scheduler settings that combine every
// job attribute of the trace format (docs/formats/trace.md: count 1-8, each `migratable` kind,
// latency_sensitive, PCIe-bound and not, every profile of the cluster's models, gpu_fraction
// jobs) on every GPU model of a catalog and on mixed clusters, under every policy
// (PolicyNames()) with every option of the table of scheduler options (sched/option_table.h) given
// or left to its default, --max-wait 0 or off, short and long --reconfig-ms, expected ends known
// and unknown; each run with the simulator's self-check on (SimOptions::self_check: the §1
// invariants, one move in flight per job, no instance held twice, after every event time) and
// end checks on the result (every accepted job ends, the accounting balances).
//
// A case is drawn from a seed alone (same catalog, same seed, same case) and can be written out
// as a trace CSV plus the `migsched simulate` command line that replays it (CommandLine).
// Drivers: the bounded test (sim/stress_test.cc), `migsched stress` (scripts/stress.sh), the
// libFuzzer target fuzz/sim_fuzz.cc. docs/performance.md "Stress harness".
//
// Thread-safety: the functions are reentrant; a StressCase is a plain value (its model pointers
// point into the catalog, which must outlive it).
#ifndef MIGSCHED_SIM_STRESS_H_
#define MIGSCHED_SIM_STRESS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/catalog.h"
#include "core/gpu_model.h"
#include "core/rng.h"
#include "core/status.h"
#include "io/workload_job.h"
#include "sched/options.h"
#include "sim/reconfig_latency.h"
#include "sim/sim_options.h"
#include "sim/sim_result.h"

namespace migsched {

// The size of the cases GenerateStressCase draws.
struct StressLimits {
  int min_jobs = 5;   // >= 1
  int max_jobs = 60;  // >= min_jobs
  int max_gpus = 6;   // >= 1
  // Whether scheduler options added to the table after 2026-12-06 (overtake-guard,
  // limit-power, anchored-together) may be drawn.
  // They draw from a stream of their own, so a seed's other draws are as they were; false gives
  // a seed recorded before then its case exactly (StressTest's seeds that once failed).
  bool options_added_later = true;
};

struct StressCase {
  uint64_t seed = 0;
  // The cluster as `--cluster` writes it: COUNT x MODEL groups, GPUs in this order.
  std::vector<std::pair<int, const GpuModel*>> groups;
  std::vector<const GpuModel*> gpus;  // the groups expanded
  std::vector<WorkloadJob> jobs;      // sorted by arrival_s, named j0, j1, ...
  std::string policy;
  // Scheduler options given explicitly, by their table name (sched/option_table.h) and value as
  // a command line writes them (--NAME VALUE); the others keep their (policy's) defaults.
  std::vector<std::pair<std::string, std::string>> options;
  FractionRule fraction_rule = FractionRule::kCompute;  // --fraction-rule (every job's)
  double reconfig_ms = 23;                              // --reconfig-ms
  // --reconfig-latency (ReconfigLatency::ToSpecs) instead of --reconfig-ms when set; drawn
  // with the command line's --seed 1.
  std::shared_ptr<const ReconfigLatency> reconfig_latency;
  bool contention = true;                    // false: --no-contention
  Knowledge knowledge = Knowledge::kLimits;  // --expected-ends limits|known|unknown
  bool user_estimates = false;  // --user-estimates model|none (the model seeded by --seed 1)

  // "2xA100-40GB,1xH100-80GB" (the models' first short names, else their names).
  std::string ClusterSpec() const;
  // The scheduler options the run uses: the defaults, the given options applied through the
  // table, then the policy's own defaults for the others (OptionsForPolicy), as `migsched
  // simulate` does. kInvalidArgument naming the option for a value the table refuses.
  StatusOr<SchedulerOptions> Scheduler() const;
  // The simulator options: online, self_check on, per-job records kept, no timeline.
  SimOptions Sim() const;
  // `migsched simulate --self-check --cluster ... --workload TRACE --policy ... --NAME VALUE ...`
  // that replays the case once its jobs are written to `trace_path` (WriteTraceCsv);
  // `extra_args` (e.g. "--catalog X") are inserted after "migsched".
  std::string CommandLine(std::string_view trace_path, std::string_view extra_args = "") const;
};

// The case of `seed` on the models of `catalog` (every one of them can be drawn; the catalog
// must have at least one model). Deterministic.
StressCase GenerateStressCase(const Catalog& catalog, uint64_t seed, const StressLimits& limits);

// Draws a value for the option `spec_name` of the table through its own check (the value is one
// the table accepts), or "" to leave it unset. Exposed for the fuzz target, which draws from
// bytes instead of a seed. `gpus`: the cluster (text options name a static layout its models
// share).
std::string DrawOptionValue(std::string_view spec_name, const std::vector<const GpuModel*>& gpus,
                            Rng& rng);

// What a run did, added up over runs.
struct StressCounts {
  int64_t workloads = 0;
  int64_t jobs = 0;
  int64_t decisions = 0;         // scheduler placement attempts (Metrics::decisions)
  int64_t invariant_checks = 0;  // self-checks: one per event time (SimResult::event_times)
  int64_t migrations = 0;        // moves completed
  int64_t rejected = 0;
  void Add(const StressCounts& o);
};

// The end checks of one online result `r` of `c`: every job of the workload has a record, every
// job not rejected completed (placed at or after its arrival, started at or after it was placed,
// ran at least its duration, held `count` instances), completed + rejected = total, every
// rejection has a reason, reconfigurations = creates + destroys, moves only of migratable jobs
// and only with migration on, per-job moves adding up to the total, intra + inter =
// total. The first failure as kInternal, naming the job.
Status CheckStressResult(const StressCase& c, const SimResult& r);

// Runs `c` (Scheduler(), Sim()) and CheckStressResult; adds to `*counts` (may be nullptr) when
// the run ends. The first failure, prefixed with the seed.
Status RunStressCase(const StressCase& c, StressCounts* counts);

}  // namespace migsched

#endif  // MIGSCHED_SIM_STRESS_H_
