// Flags shared by `simulate` and `compare`, and turning them into a cluster,
// a workload, and scheduler/simulator options.
#ifndef MIGSCHED_CLI_SIM_FLAGS_H_
#define MIGSCHED_CLI_SIM_FLAGS_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cli/context.h"
#include "cli/memory_check.h"
#include "cli/output_files.h"
#include "core/gpu_model.h"
#include "io/workload_job.h"
#include "sched/full_policy.h"
#include "sched/options.h"
#include "sim/sim_options.h"
#include "sim/simulator.h"

namespace migsched::cli {

struct SimFlags {
  std::string cluster;   // --cluster 4xA100-40GB[,8xH100-80GB...]
  std::string workload;  // --workload FILE | paper-mix | churn | alibaba:FILE
  double load = 0;       // --load (finite, > 0); 0 = not given (0.9 for generated arrivals, none
                         // for a FILE)
  std::string arrivals = "poisson";
  uint64_t seed = 1;
  int jobs = 0;  // --jobs (>= 1): paper-mix / churn size (default 200 / 500) / limit on a trace;
                 // 0 = not given
  double pcie_share = 0.2;
  std::string fraction_rule = "compute";
  std::string mode = "online";
  double fill_target = 1.3;
  double reconfig_ms = 23;
  bool reconfig_ms_given = false;
  // --reconfig-latency, as given (repeatable: SPEC, create=SPEC, destroy=SPEC;
  // sim/reconfig_latency.h ParseReconfigLatency); empty: --reconfig-ms.
  std::vector<std::string> reconfig_latency;
  bool no_contention = false;
  // --expected-ends limits|known|unknown (SimOptions::knowledge; online mode only).
  std::string expected_ends = "limits";
  // --user-estimates model|none (SimOptions::user_estimates; online mode only).
  std::string user_estimates = "model";
  double duration_cap = 0;  // --duration-cap S (> 0): durations above S are cut to S; 0 = none

  // The scheduler options, one flag per entry of the table of scheduler options
  // (sched/option_table.h: --threshold, --metric, --evacuation, ..., the same names as the
  // config files' `scheduler:` keys), and which of the policy-defaulted ones were given (set while
  // parsing): the others take the policy's registry defaults (SimSetup::SchedulerFor).
  SchedulerOptions scheduler;
  ExplicitOptions explicit_options;
  // Flags that apply to some workloads or modes only, given or not (set while
  // parsing): BuildSimSetup refuses one that would be ignored.
  bool arrivals_given = false;
  bool pcie_share_given = false;
  bool fill_target_given = false;
  bool expected_ends_given = false;
  bool user_estimates_given = false;
  bool no_memory_check = false;  // --no-memory-check (cli/memory_check.h)
  bool self_check = false;       // --self-check (SimOptions::self_check)

  // Replicas (§9, sim/replicas.h): --replicas N runs of every simulation, replica r with seed
  // --seed + r, and --jitter F for workloads whose arrivals are not drawn from the seed.
  int replicas = 1;
  double jitter = 0.05;  // sim/replicas.h kDefaultJitter
  bool jitter_given = false;
};

// Adds --replicas and --jitter to `cmd` (the commands that simulate).
void AddReplicaFlags(CLI::App* cmd, SimFlags* flags);

// Adds one flag per entry of the table of scheduler options (sched/option_table.h) to `cmd`:
// --NAME with the entry's check, help and the default of `*options`; a value given is applied to
// `*options` and marks its `given` bit in `*given`.
void AddSchedulerFlags(CLI::App* cmd, SchedulerOptions* options, ExplicitOptions* given);

// Adds the shared flags (AddSchedulerFlags among them) to `cmd`.
void AddSimFlags(CLI::App* cmd, SimFlags* flags);

// CLI11 checks with messages that say what a value must be (CLI11 writes
// "--load: must be a finite number > 0, got 'nan'"):
// a number that is finite (not nan, inf, or out of double's range like 1e400)
// and satisfies `ok`; `requirement` completes "must be ...".
CLI::Validator FiniteNumber(std::string_view requirement, std::function<bool(double)> ok);
// An integer written in decimal digits (a leading '-' only when min < 0) in
// min..max: "-1" is not read as 2^64-1, "0" is refused where min is 1.
CLI::Validator WholeNumber(int64_t min, uint64_t max);
// An output file's flag (--json, --report, --jobs-csv, ...): an empty name is refused ("must name a
// file, got ''"), not taken for "not asked for".
CLI::Validator OutputPath();

// The policies of `compare` and `report`'s --policies, each value a comma-separated list (the
// flag may be repeated): the names in order. kInvalidArgument naming the entry: an empty entry
// ("first-fit,,lb", "", a trailing comma), or a policy given twice, by the same name or by a name
// and its alias ("frag-aware,lb+frag": sched/policy.h FindPolicy). A name no policy has is left
// to MakePolicy's error (it lists the known ones).
StatusOr<std::vector<std::string>> ParsePolicyList(const std::vector<std::string>& values);
// Adds --policies to `cmd`, read into `*policies` by ParsePolicyList; its refusals are usage
// errors (CLI11 writes "--policies: <reason>", exit 2).
void AddPoliciesFlag(CLI::App* cmd, std::vector<std::string>* policies, const std::string& help);

// The files a run of `f` reads, for CheckOutputFiles (an output may not overwrite one): the
// --workload file (a trace; alibaba:FILE's pod list; none for a generated workload), every
// --catalog path of `ctx`, the --reconfig-latency empirical:FILE, and every GPU model file the
// catalog loads (the data folder's gpus/*.json, a --catalog folder's files; loads the catalog).
std::vector<InputFile> SimInputFiles(const SimFlags& f, Context& ctx);

// Everything a run needs, built from the flags.
struct SimSetup {
  std::vector<const GpuModel*> gpus;
  std::vector<WorkloadJob> jobs;
  SchedulerOptions scheduler;
  SimOptions sim;
  std::vector<std::string> notes;  // e.g. "skipped 861 pending pods without scheduled_time"
  std::string workload_label;      // e.g. "alibaba:openb_pod_list_default.csv (7064 jobs)"
  double offered_load = 0;         // target load of regenerated arrivals; 0 if kept from a file
  // How replicas of this setting differ (§9): "seed" (the workload or its arrivals are drawn
  // from --seed), "jitter" (arrival gaps and durations jittered by --jitter, seeded), "none"
  // (one run, a workload with its own arrival times).
  std::string perturbation = "seed";
  int replica = 0;                   // which replica of BuildReplicaSetups this is
  double jitter_applied = 0;         // the jitter fraction applied (0: none)
  ExplicitOptions explicit_options;  // from the flags
  // The scheduler options `policy` runs with: `scheduler` with the policy's own defaults for the
  // options the user did not give (`full`, sched/full_policy.h OptionsForPolicy).
  SchedulerOptions SchedulerFor(std::string_view policy) const {
    return OptionsForPolicy(policy, scheduler, explicit_options);
  }
  nlohmann::ordered_json ToJson(const SimFlags& flags) const;  // the run's settings
};

// Notes on scheduler options given on the command line that have no effect on some of
// `policies` as they run (with their registry defaults, SimSetup::SchedulerFor): an
// --evacuation other than off for a policy that runs with migration off (evacuation moves
// running jobs: docs/algorithms.md §13), --reservation-slack or --reservation-horizon for a
// policy that makes no look-ahead reservation (max_skip_seconds < 0), and a placement option
// that the policy's own choice does not read (PolicyInfo::reads: --threshold, --metric,
// --frag-objective, --reuse-first, --idle-ttl, --static-layout, --reserve-full) and no other
// part of its run reads either; one note per option and reason, naming the policies, e.g.
// "--reuse-first on has no effect on first-fit (read only by lb+frag, full)". Not errors, since
// `compare` gives one flag to every policy. Where `policies` names the fragmentation-free
// reference (sim/frag_free.h), which reads no scheduler option but --max-wait: every other option
// of the table set to a value other than its default (SchedulerOptions{}), with that value.
// docs/policies.md "Options a policy does not read".
// The policies `compare` and `report` run when --policies is not given: every registered
// policy except a static one whose catalog layout (--static-layout, or static-all-balanced's
// all-balanced) some GPU model of the cluster does not have (static_layouts is optional in a
// catalog file), which is left out with a note in setup->notes saying how to run it (regression:
// default_policies_on_a_model_without_static_layouts).
std::vector<std::string> DefaultPoliciesFor(SimSetup* setup);

std::vector<std::string> InertOptionNotes(const SimSetup& setup,
                                          const std::vector<std::string>& policies);
// The same notes for a config file's `scheduler:` mapping (`migsched serve`): `options` and
// `given` as read (SchedulerConfig), for `policy`, with the keys named as the file names them
// ("scheduler.overtake-guard 2 has no effect on first-fit (...; scheduler.queue-order
// response-ratio turns it on)"). Regression inert_config_option_unsaid: such a config started
// without a word. A key whose value is the one `policy` runs with by default says nothing (a
// printed default config writes every key; regression trial_printed_config_warned).
std::vector<std::string> InertConfigNotes(const SchedulerOptions& options,
                                          const ExplicitOptions& given, const std::string& policy);

// The note of `sweep --param OPTION` (a scheduler option's flag without "--") when `policy`,
// run with `setup`'s options, does not read it (the reasons of InertOptionNotes): "--threshold
// has no effect on first-fit (...): every value runs the same". Empty when it does.
std::string InertSweptOptionNote(const SimSetup& setup, const std::string& policy,
                                 std::string_view option);

// Why fill mode (--mode fill) ignores the flag `flag` (without "--"), as its refusal says it:
// "fill mode ignores arrival times" (load, arrivals), "... durations" (duration-cap), "... has no
// queue" (max-skip-seconds), "... has no time" (reconfig-latency), "... has no completions"
// (idle-ttl, expected-ends, user-estimates); empty for a flag a fill run reads (--max-wait:
// `full` runs with threshold 1 where jobs are turned away).
std::string_view FillModeIgnores(std::string_view flag);
// kInvalidArgument "--FLAG applies to --mode online only (<FillModeIgnores>)".
Status FlagIgnoredInFillMode(std::string_view flag);

// Builds the setup; errors name the flag or the file at fault. A flag value
// that would be ignored (--arrivals on paper-mix, or on a trace file without
// --load; --pcie-share on another workload than paper-mix; --fill-target in
// online mode) is an error. Before generating or simulating, the memory the
// run needs (`shape`, with the job count filled in here) is estimated and the
// run refused when it exceeds what the machine has (cli/memory_check.h),
// unless --no-memory-check. Progress of a large paper-mix generation goes to
// stderr unless --quiet.
StatusOr<SimSetup> BuildSimSetup(const SimFlags& flags, Context& ctx, RunShape shape = {});

// The flags.replicas setups of one setting (§9): replica r is built with seed
// ReplicaSeed(flags.seed, r); a workload whose arrival times are not drawn
// from the seed (a trace file without --load, or one with --arrivals trace-order) is then
// jittered (JitterWorkload, fraction flags.jitter, seed ReplicaSeed(seed, r))
// when there are several replicas or --jitter was given. The memory check
// covers all of them (`shape.workloads` is multiplied by the replicas). Errors
// as BuildSimSetup; --jitter on a workload drawn from the seed is refused.
StatusOr<std::vector<SimSetup>> BuildReplicaSetups(const SimFlags& flags, Context& ctx,
                                                   RunShape shape = {});

// Calls run(0) ... run(count - 1), up to `threads` of them at once (0: as many
// as the machine has cores), each index exactly once, from a pool of threads
// taking the next index when they finish one; returns when all are done.
// Results that `run` stores by index do not depend on `threads`.
void RunInParallel(size_t count, int threads, const std::function<void(size_t)>& run);
// The simulations `threads` (0: the cores) lets run at once out of `count`.
int ParallelRuns(size_t count, int threads);

// Runs every policy of `policies` on every setup of `setups` (the replicas of
// one setting): task k is policy k % P on setups[k / P], up to `threads` at
// once (0: the cores), with progress on ctx's stderr labelled "POLICY #r" when
// there are several replicas. Returns the results by task index (they do not
// depend on `threads`).
std::vector<StatusOr<SimResult>> RunPoliciesOnReplicas(const std::vector<SimSetup>& setups,
                                                       const std::vector<std::string>& policies,
                                                       int threads, Context& ctx);

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
