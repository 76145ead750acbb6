// ClusterTracker: running totals of the cluster quantities the metrics need
// (§2, §9 of docs/algorithms.md), kept up to date from the plans the
// scheduler applies, so that sampling them costs O(1) (stranded capacity:
// O(distinct fit patterns)) instead of O(GPUs) per event.
//
//  * busy compute slices (utilisation = busy / total compute slices);
//  * the sum of FragCost over the GPUs (cluster fragmentation rate = sum / GPUs);
//  * stranded capacity: free compute slices on GPUs where none of the
//    profiles waiting in the queue can be placed now, over all free compute
//    slices; 0 when the queue is empty or nothing is free. "Can be placed
//    now" follows the candidate rule of sched/candidates.h: a slot of the
//    profile free of busy instances with the busy set staying valid (idle
//    instances may be destroyed) for policies that create instances; for the
//    `static` policy, an idle instance of exactly that profile.
//
// Refresh(plan) re-reads only the GPUs the plan touched. CrossCheck() re-sums
// the whole cluster (tests and --self-check only).
//
// Thread-safety: thread-compatible. The cluster must outlive the tracker.
#ifndef MIGSCHED_SIM_CLUSTER_TRACKER_H_
#define MIGSCHED_SIM_CLUSTER_TRACKER_H_

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/job.h"
#include "core/plan.h"
#include "core/status.h"

namespace migsched {

class ClusterTracker {
 public:
  // `creates_instances`: false for a policy that only reuses existing
  // instances (`static`). kInvalidArgument if a model has more than 64
  // profiles (fit patterns are 64-bit masks).
  static StatusOr<ClusterTracker> Create(const Cluster& cluster, bool creates_instances);

  // Re-reads the GPUs touched by `plan` (after it was applied).
  void Refresh(const Plan& plan);
  void RefreshGpu(int gpu);

  int busy_compute_slices() const { return busy_cs_; }
  // The distinct models (Cluster::models() order) and the busy compute slices
  // on the GPUs of each (the energy estimate, sim/energy.h).
  const std::vector<const GpuModel*>& models() const { return models_; }
  const std::vector<int>& busy_compute_slices_by_model() const { return busy_by_model_; }
  int total_compute_slices() const { return cluster_->total_compute_slices(); }
  // Busy / total compute slices, in [0, 1].
  double utilization() const;
  // Mean FragCost over the GPUs (§2), in [0, 1].
  double fragmentation_rate() const;

  // A queued job enters (+1) or leaves (-1) the queue; its profile on every
  // model becomes (or stops being) waiting demand.
  void AddDemand(const Job& job, int delta);
  // Stranded share in [0, 1] (see the file comment).
  double stranded() const;
  // Its numerator: free compute slices on GPUs where no waiting profile fits.
  int64_t stranded_compute_slices() const;

  // Compares every running total with a full re-sum of the cluster and the
  // fit patterns with sched/candidates.h AppendCandidates; kInternal naming
  // the first difference.
  Status CrossCheck() const;

 private:
  ClusterTracker(const Cluster& cluster, bool creates_instances);
  // Bit p set when profile p of the GPU's model can be placed now.
  uint64_t FitMask(int gpu) const;
  void Account(int gpu, int sign);

  struct GpuCache {
    int busy_cs = 0;
    int free_cs = 0;
    double fragcost = 0;
    uint64_t fit = 0;
  };

  const Cluster* cluster_;
  bool creates_;
  std::vector<const GpuModel*> models_;  // distinct, cluster order
  std::vector<int> model_of_gpu_;        // index into models_
  std::vector<GpuCache> cache_;
  int busy_cs_ = 0;
  std::vector<int> busy_by_model_;  // per index into models_
  long double frag_sum_ = 0;
  // (model index, fit mask) -> free compute slices on GPUs with that pattern.
  std::map<std::pair<int, uint64_t>, int64_t> free_by_fit_;
  // Queued jobs per (model, profile), and the resulting demand mask per model.
  std::vector<std::vector<int64_t>> demand_;
  std::vector<uint64_t> demand_mask_;
  int64_t queued_ = 0;
};

}  // namespace migsched

#endif  // MIGSCHED_SIM_CLUSTER_TRACKER_H_
