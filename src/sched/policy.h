// PlacementPolicy: where one instance of a job goes. Policies are named
// plug-ins behind this one interface (§4 frag-aware, §11 baselines), created by
// name through MakePolicy().
//
// A policy only chooses; the Scheduler turns the choice into a Plan
// (sched/candidates.h PlacementPlan) and applies it with ApplyPlan.
//
// Thread-safety: a policy instance is used by one scheduler at a time.
#ifndef MIGSCHED_SCHED_POLICY_H_
#define MIGSCHED_SCHED_POLICY_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/job.h"
#include "core/plan.h"
#include "sched/candidates.h"
#include "sched/options.h"

namespace migsched {

// What a policy is asked to place: one instance of `job`, whose profile index
// on each model of the cluster is given by ProfileOn (-1: that model cannot
// host it).
struct PlacementRequest {
  JobId job = kNoJob;
  const Job* spec = nullptr;
  std::vector<std::pair<const GpuModel*, int>> profile_by_model;

  int ProfileOn(const GpuModel& model) const {
    for (const auto& [m, p] : profile_by_model) {
      if (m == &model) return p;
    }
    return -1;
  }
};

// Resolves `job` on every model of `cluster`.
PlacementRequest MakeRequest(const Cluster& cluster, JobId id, const Job& job);

class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;

  // The registered name, e.g. "frag-aware".
  virtual std::string_view name() const = 0;

  // The chosen candidate for one instance of `req` on `cluster` as it is now,
  // or nullopt when no GPU can take it now (not an error: the job waits).
  virtual std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) = 0;

  // Instances to create before the first job (the `static` layouts). Errors
  // (kFailedPrecondition) when a model has no such layout.
  virtual StatusOr<Plan> SetupPlan(const Cluster& cluster) {
    (void)cluster;
    return Plan{};
  }

  // The whole workload, known in advance, told before SetupPlan by a driver
  // that has it (the simulator; not the daemon or the cluster controllers).
  // Only a baseline that stands for an offline choice reads it (`static`
  // chooses its layouts from the mix). Default: nothing.
  virtual void KnowWorkload(const Cluster& cluster, const std::vector<Job>& jobs) {
    (void)cluster;
    (void)jobs;
  }

  // Whether the policy ever creates or destroys instances after SetupPlan
  // (false: `static`, which only reuses the instances of its layout).
  virtual bool CreatesInstances() const { return true; }

  // Whether an instance whose job ended stays as an idle instance for reuse
  // (true), or is destroyed at once (false, as the Kubernetes DRA driver does).
  virtual bool KeepIdleInstances() const { return true; }

  // An arriving job, admitted by the scheduler (Scheduler::ObserveArrival): a
  // policy that learns the demand (the demand-weighted metric, §2) records
  // it. Called once per job, before it is first placed; the simulator also
  // seeds the window with the first jobs of the workload. Default: nothing.
  virtual void ObserveArrival(const Cluster& cluster, const Job& job) {
    (void)cluster;
    (void)job;
  }

  // Whether Choose returns nullopt exactly when no GPU offers one of this
  // policy's candidates, where a GPU's candidates depend only on that GPU's
  // state and reservation flag and are among AppendCandidates(...,
  // allow_create = true) (sched/candidates.h). Then a request that found
  // nothing can only fit, later, on a GPU that changed since, and
  // Scheduler::TryPlace answers its retries by looking at those GPUs alone.
  // Every built-in policy does; default false (a policy that is asked
  // every time).
  virtual bool FeasibilityIsPerGpu() const { return false; }

  // How many instances of `profile` GPU `gpu` could ever hold at once, given
  // its state right after setup (used to reject jobs that can never run).
  virtual int Capacity(const Cluster& cluster, int gpu, int profile) const;
};

// Which placement options a policy's own choice reads (docs/policies.md). Other parts of the
// scheduler read some of them for every policy when they are on: the migration planner
// (--migration on) reads threshold and frag_objective, joint placement (--joint-placement on)
// metric and reserve_full. The simulator's CLI says in a note when an option is given to a
// policy that reads it nowhere (cli/sim_flags.h InertOptionNotes).
struct PolicyReads {
  bool threshold = false;          // the lazy/busy split (§3): lb, lb+frag, full
  bool metric = false;             // metric and frag_objective, the §4 step 3 score: lb+frag, full
  bool reuse_first = false;        // §4 step 2 reuse first: lb+frag, full
  bool anchored_together = false;  // §4 step 2 anchored together: lb+frag, full
  bool idle_ttl = false;       // keeps idle instances (KeepIdleInstances) and lays none at setup
  bool static_layout = false;  // the static policies
  bool reserve_full = true;    // §4 step 7: every policy that creates instances
};

// ---- The policy registry ----
//
// The one list of policies: each entry owns its name, its aliases, a line of
// description, its factory and its defaults. The simulator (`simulate`,
// `compare`), the daemon (`serve`) and the cluster controllers all create
// policies through it, so that the same options give the same placements
// everywhere.
struct PolicyInfo {
  std::string name;                  // e.g. "lb+frag"
  std::vector<std::string> aliases;  // other names, e.g. "frag-aware"; not run by `compare`
  std::string summary;               // one line, e.g. for --help
  // The policy, named `as` (its name or an alias: name() returns it),
  // configured by `options` (already completed by `defaults`).
  std::function<StatusOr<std::unique_ptr<PlacementPolicy>>(const SchedulerOptions& options,
                                                           std::string_view as)>
      make;
  // `options` with the policy's own defaults for every option that `set`
  // does not mark as given (most policies: none, `options` unchanged).
  std::function<SchedulerOptions(SchedulerOptions options, const ExplicitOptions& set)> defaults;
  // Joint placement of waiting jobs (§12) when `set` does not mark it
  // (sched/full_policy.h kJointPlacementDefault for lb+frag and full).
  bool joint_placement = false;
  // The placement options its choice reads.
  PolicyReads reads;
};

// Every policy, in the order `compare` runs them by default: the ablation
// ladder (§11) first-fit, lb, lb+frag, full, then the other baselines.
const std::vector<PolicyInfo>& PolicyRegistry();
// The entry of `name` (a name or an alias). kNotFound listing the known
// names and aliases.
StatusOr<const PolicyInfo*> FindPolicy(std::string_view name);

// The policy every driver runs when none is named (the simulator's `--policy` is the exception: it
// defaults to lb+frag for the ladder's sake, docs/policies.md): the daemon, the Slurm controller,
// the Kubernetes extender and the cluster planner. One home for the name; the registry owns its
// defaults (OptionsForPolicy).
inline constexpr std::string_view kDefaultPolicy = "full";

// The names of PolicyRegistry(), in its order.
std::vector<std::string> PolicyNames();
// (alias, the policy it names) of every alias, e.g. ("frag-aware", "lb+frag").
std::vector<std::pair<std::string, std::string>> PolicyAliases();

// The options policy `name` runs with: `options` completed with the
// registry's defaults of that policy for what `set` does not mark. kNotFound
// for an unknown name. Not validated (SchedulerOptions::Validate).
StatusOr<SchedulerOptions> PolicyOptions(std::string_view name, SchedulerOptions options,
                                         const ExplicitOptions& set);
// The same for a known name (an unknown name returns `options` unchanged):
// the simulator's flags.
SchedulerOptions OptionsForPolicy(std::string_view name, SchedulerOptions options,
                                  const ExplicitOptions& set);
// Whether `name` runs with joint placement (§12) when the option is not
// given (PolicyInfo::joint_placement; false for an unknown name).
bool JointPlacementByDefault(std::string_view name);

// The policy `name` (a name or an alias), configured by `options` as given
// (apply PolicyOptions first for the policy's defaults). kNotFound lists the
// known names; kInvalidArgument for invalid options, an unknown metric, or
// migration on (options.migration.enabled) for a policy that never creates
// instances (`static`: a move needs an instance created at its target).
StatusOr<std::unique_ptr<PlacementPolicy>> MakePolicy(std::string_view name,
                                                      const SchedulerOptions& options);

}  // namespace migsched

#endif  // MIGSCHED_SCHED_POLICY_H_
