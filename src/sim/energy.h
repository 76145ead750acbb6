// Energy estimate of a simulated run (the power data and its
// assumptions: docs/formats/catalog.md `power`).
//
// Model: every GPU draws its model's idle_w over the whole makespan, plus
// per_active_slice_w for each busy compute slice while it is busy. A slice is
// busy exactly as for utilisation (§9, sim/metrics.h): from the decision that
// placed a job on its instance to the job's completion (both instances during
// a migration's copy). So, in joules,
//
//   E = sum over GPUs g of idle_w(g) * makespan_s
//     + sum over models m of per_active_slice_w(m) * busy_slice_seconds(m)
//
// and energy_kwh = E / 3.6e6, jobs_per_kwh = completed jobs / energy_kwh.
// Idle MIG instances draw nothing beyond idle_w; a job slowed by PCIe
// contention (§8) counts as fully busy. Both are absent (JSON null, "-" in
// tables) when a model of the cluster has no `power` data; jobs_per_kwh is
// absent when the energy is 0 (a makespan of 0: no job completed).
//
// Thread-safety: thread-compatible.
#ifndef MIGSCHED_SIM_ENERGY_H_
#define MIGSCHED_SIM_ENERGY_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "core/cluster.h"
#include "core/gpu_model.h"

namespace migsched {

struct EnergyEstimate {
  std::optional<double> energy_kwh;    // kWh over the makespan
  std::optional<double> jobs_per_kwh;  // completed jobs per kWh
};

// One model's share of a run.
struct ModelUsage {
  const GpuModel* model = nullptr;
  int gpus = 0;                   // GPUs of this model in the cluster
  double busy_slice_seconds = 0;  // time integral of its busy compute slices
};

// The formula above; `makespan_s` >= 0.
EnergyEstimate EstimateEnergy(const std::vector<ModelUsage>& usage, double makespan_s,
                              int64_t completed_jobs);

// Integrates the busy compute slices of each model of a cluster over time.
class EnergyMeter {
 public:
  // One entry per distinct model, in Cluster::models() order.
  explicit EnergyMeter(const Cluster& cluster);

  // `busy_slices_by_model[i]` busy compute slices on the GPUs of model i hold
  // from `time_s` until the next sample. Times must not decrease; a sample at
  // the time of the previous one replaces it.
  void Sample(double time_s, const std::vector<int>& busy_slices_by_model);
  // Closes the last interval at `end_s` (ignored if before the last sample).
  void Finish(double end_s);

  const std::vector<ModelUsage>& usage() const { return usage_; }
  EnergyEstimate Estimate(double makespan_s, int64_t completed_jobs) const {
    return EstimateEnergy(usage_, makespan_s, completed_jobs);
  }

 private:
  void Close(double until_s);

  std::vector<ModelUsage> usage_;
  std::vector<int> busy_;
  bool started_ = false;
  double t_ = 0;
};

}  // namespace migsched

#endif  // MIGSCHED_SIM_ENERGY_H_
