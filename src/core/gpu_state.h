// GpuState: the MIG instances on one GPU, busy or idle (§1 of docs/algorithms.md).
//
// An instance is (profile, start); it is *busy* while a job runs on it
// (possibly mid-migration) and *idle* when created without a job (reusable, or
// destroyable at the cost of a reconfiguration). FragCost and lazy/busy use
// the busy instances only; idle ones are free space with a reuse bonus (§4).
//
// Migration (§6, make-before-break): while a job's state is copied, the job
// holds two busy instances, its *source* (where it still runs) and its
// *target* (created for it, receiving the copy). Each end records the other
// end as (peer GPU index in the owning Cluster, peer start); ApplyPlan checks
// that the two ends point at each other (core/plan.h). Both count as busy.
//
// Mutations are only made by ApplyPlan (core/plan.h), which checks the §1
// invariants; the mutators here validate their own preconditions and return
// kInternal with the reason when a step is impossible.
//
// Thread-safety: thread-compatible (no internal locking).
#ifndef MIGSCHED_CORE_GPU_STATE_H_
#define MIGSCHED_CORE_GPU_STATE_H_

#include <string>
#include <vector>

#include "core/config_table.h"
#include "core/gpu_model.h"
#include "core/job.h"
#include "core/status.h"

namespace migsched {

// The part an instance plays in a migration in progress (§6).
enum class MigrationRole { kNone, kSource, kTarget };

// §3: a GPU with `busy_cs` of its `total_cs` compute slices busy is *lazy*
// when util = busy_cs / total_cs < t (the threshold), else busy. The one
// home of the rule (policies, the migration planner, the daemon's views).
inline bool IsLazyUtil(int busy_cs, int total_cs, double threshold) {
  return static_cast<double>(busy_cs) / total_cs < threshold;
}
// util(a) < util(b) for `cs_a` of `total_a` and `cs_b` of `total_b` busy
// compute slices, compared exactly (cross-multiplied: no rounding).
inline bool UtilLess(int cs_a, int total_a, int cs_b, int total_b) {
  return cs_a * total_b < cs_b * total_a;
}

struct Instance {
  int profile = -1;    // index into GpuModel::profiles() (may be a variant)
  int start = 0;       // placement units
  int slot = -1;       // GpuModel slot of (base profile, start)
  JobId job = kNoJob;  // kNoJob: idle; else the id of its holder
  // Who holds it while busy (core/job.h Holder): a job, a reservation or a
  // placeholder; `job` is that holder's id. kJob when idle.
  Holder holder = Holder::kJob;
  // kNone unless a copy of `job` is in progress; then the other end of the
  // move is instance `peer_start` of GPU `peer_gpu` (a Cluster index).
  MigrationRole migration = MigrationRole::kNone;
  int peer_gpu = -1;
  int peer_start = -1;
  bool busy() const { return job != kNoJob; }
  // Busy with a scheduled job (not a hold).
  bool runs_job() const { return busy() && holder == Holder::kJob; }
  // "job 12", "reservation 3", "placeholder 1" (empty when idle).
  std::string HolderString() const;
};

class GpuState {
 public:
  GpuState(const GpuModel& model, const ConfigTable& table) : model_(&model), table_(&table) {}

  const GpuModel& model() const { return *model_; }
  const ConfigTable& table() const { return *table_; }
  // Instances sorted by start.
  const std::vector<Instance>& instances() const { return instances_; }

  // Configuration of the busy instances / of all instances (ConfigTable ids).
  ConfigId busy_config() const { return busy_config_; }
  ConfigId all_config() const { return all_config_; }
  int busy_compute_slices() const { return table_->compute_used(busy_config_); }
  int free_compute_slices() const { return model_->compute_slices() - busy_compute_slices(); }
  // util(g) = busy compute slices / model compute slices (§3), in [0, 1].
  double utilization() const {
    return static_cast<double>(busy_compute_slices()) / model_->compute_slices();
  }
  // §3: util(g) < threshold (IsLazyUtil).
  bool lazy(double threshold) const {
    return IsLazyUtil(busy_compute_slices(), model_->compute_slices(), threshold);
  }
  // FragCost of the busy instances (§2).
  double fragcost() const { return table_->FragCost(busy_config_); }
  // The busy configuration once every copy in progress has switched over:
  // busy instances minus migration sources (§6). O(1): kept up to date by the
  // mutators below (the migration planner asks for it per state group and
  // pass).
  ConfigId settled_config() const { return settled_config_; }
  bool empty() const { return instances_.empty(); }

  // Index in instances() of the instance starting at `start`, or -1.
  int IndexAt(int start) const;
  // Number of instances (busy or idle) of exactly this profile.
  int CountProfile(int profile) const;

  // Creates an idle instance. kInternal if the start is not a placement of
  // the profile, it overlaps an instance, compute slices or max_instances
  // would be exceeded.
  Status Create(int profile, int start);
  // Destroys the idle instance at `start` (kInternal if none or busy).
  Status Destroy(int start);
  // Binds `job` (a holder of kind `holder`) to the idle instance of
  // `profile` at `start`.
  Status StartJob(int profile, int start, JobId job, Holder holder = Holder::kJob);
  // Unbinds `job` (of kind `holder`) from the busy instance at `start`; the
  // instance becomes idle. Also ends a migration role (a job that ends
  // mid-copy releases both ends).
  Status ReleaseJob(int start, JobId job, Holder holder = Holder::kJob);

  // §6 make-before-break. BeginMigrationTarget binds `job` to the idle
  // instance of `profile` at `start` as a move's target; BeginMigrationSource
  // marks the instance at `start`, busy with `job` and in no move, as its
  // source. (peer_gpu, peer_start) name the other end. EndMigrationTarget
  // makes the target an ordinary busy instance; EndMigrationSource releases
  // the source (it becomes idle). kInternal naming the mismatch otherwise.
  Status BeginMigrationTarget(int profile, int start, JobId job, int peer_gpu, int peer_start);
  Status BeginMigrationSource(int start, JobId job, int peer_gpu, int peer_start);
  Status EndMigrationTarget(int start, JobId job, int peer_gpu, int peer_start);
  Status EndMigrationSource(int start, JobId job, int peer_gpu, int peer_start);
  // A move abandoned before its switch-over (its target could not be made
  // on the hardware): AbortMigrationTarget releases the target (it becomes
  // idle), AbortMigrationSource makes the source an ordinary busy instance
  // again. Only jobs (Holder::kJob) migrate.
  Status AbortMigrationTarget(int start, JobId job, int peer_gpu, int peer_start);
  Status AbortMigrationSource(int start, JobId job, int peer_gpu, int peer_start);

  // Re-derives everything from the instance list and checks the §1 validity
  // rules, the cached configurations, and that only busy instances have a
  // migration role (with a peer). kInternal naming the violation. (Whether
  // the two ends of a move match is a cluster-level check: ApplyPlan.)
  Status CheckInvariants() const;

  // "3g.20gb@4[busy:job 12] 1g.5gb@0[idle] 1g.5gb@1[target:job 3<-0@5]".
  std::string DebugString() const;

 private:
  const GpuModel* model_;
  const ConfigTable* table_;
  std::vector<Instance> instances_;
  ConfigId busy_config_ = kEmptyConfig;
  ConfigId all_config_ = kEmptyConfig;
  ConfigId settled_config_ = kEmptyConfig;
};

}  // namespace migsched

#endif  // MIGSCHED_CORE_GPU_STATE_H_
