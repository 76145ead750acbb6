// Two workload generators of other shapes than churn and paper-mix
// (docs/formats/trace.md "Generated workloads"), so that results can be read
// on families nothing was tuned on. Every job is a GPU fraction k/7 (compute
// rule), as in churn, so the same workload runs on every model and on mixed
// clusters. Deterministic: the same model, options and seed give identical
// jobs; the jobs come from one core/rng.h stream seeded by `seed`, the
// arrivals from Rng::DeriveSeed(seed, 1).
//
// `serving` (inference serving), per job, in this order:
//  1. class: Choice over serving_classes (1g 0.45, 2g 0.3, 3g 0.15, 4g 0.05,
//     7g 0.05: small inference instances dominate);
//  2. instances: count = multi_count (default 2) with probability
//     multi_share (0.2; a service of several instances started together),
//     else 1;
//  3. lifetime: bounded Pareto on [lifetime_min_s, lifetime_max_s] (10 min to
//     7 days) with shape lifetime_alpha (1.2): heavy-tailed, most services
//     short, a few running for days; inverse CDF x = L / (1 - u (1 -
//     (L/H)^a))^(1/a);
//  4. latency-sensitive with probability latency_sensitive_share (0.7);
//  5. PCIe-bound (Bloom-560m offload) with probability pcie_share (0.1), else
//     ResNet50 inference (the reference jobs of §8);
//  6. migratable: restart restart_share (0.5, a stateless server restarts
//     elsewhere), none none_share (0.3), checkpoint the rest.
//  Arrivals: a Poisson process whose rate follows the day, rate(t) = (1 /
//  G) (1 + A sin(2 pi t / P)) with A = diurnal_amplitude (0.6) and P =
//  diurnal_period_s (86,400 s), drawn by thinning; G is the mean gap of
//  sim/arrivals.h for `load` on `num_gpus` GPUs, so the long-run offered load
//  is `load`. The share of arrivals in the first half of each period is
//  1/2 + A/pi (0.69 for A = 0.6). The first job arrives at 0. Names "sv-0001".
//
// `training` (training-heavy), per job, in this order:
//  1. class: Choice over training_classes (1g 0.05, 2g 0.15, 3g 0.2, 4g 0.25,
//     7g 0.35: large instances dominate);
//  2. gang size: Choice over gang_sizes (1: 0.4, 2: 0.3, 4: 0.2, 8: 0.1),
//     capped at num_gpus × the instances of that class one GPU holds (a gang
//     the cluster can never hold would only be rejected);
//  3. duration: log-uniform in [duration_min_s, duration_max_s] (1 h to 2
//     days);
//  4. PCIe-bound (Bloom-7b1 offload) with probability pcie_share (0.1), else
//     ResNet50 (§8);
//  5. migratable: checkpoint with probability checkpoint_share (0.9), else
//     restart; never latency-sensitive.
//  Arrivals: Poisson at `load` (sim/arrivals.h), the first at 0. Names
//  "tr-0001".
//
// The shares and ranges are ours, chosen to give each family its shape
// (docs/formats/trace.md says which observations they follow); change them
// with the options.
//
// Thread-safety: reentrant.
#ifndef MIGSCHED_SIM_WORKLOAD_FAMILIES_H_
#define MIGSCHED_SIM_WORKLOAD_FAMILIES_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "core/gpu_model.h"
#include "core/status.h"
#include "io/workload_job.h"

namespace migsched {

struct ServingOptions {
  int num_jobs = 500;  // >= 0
  int num_gpus = 4;    // >= 1
  double load = 0.9;   // offered load, > 0
  // (compute slices of a 7-slice GPU, weight).
  std::vector<std::pair<int, double>> classes = {
      {1, 0.45}, {2, 0.3}, {3, 0.15}, {4, 0.05}, {7, 0.05}};
  double multi_share = 0.2;
  int multi_count = 2;  // >= 2
  double lifetime_min_s = 600, lifetime_max_s = 7 * 86400.0;
  double lifetime_alpha = 1.2;  // > 0
  double latency_sensitive_share = 0.7;
  double pcie_share = 0.1;
  double restart_share = 0.5, none_share = 0.3;
  double diurnal_amplitude = 0.6;  // in [0, 1]
  double diurnal_period_s = 86400;
  uint64_t seed = 1;
};

struct TrainingOptions {
  int num_jobs = 500;
  int num_gpus = 4;
  double load = 0.9;
  std::vector<std::pair<int, double>> classes = {
      {1, 0.05}, {2, 0.15}, {3, 0.2}, {4, 0.25}, {7, 0.35}};
  // (gang size, weight).
  std::vector<std::pair<int, double>> gang_sizes = {{1, 0.4}, {2, 0.3}, {4, 0.2}, {8, 0.1}};
  double duration_min_s = 3600, duration_max_s = 2 * 86400.0;
  double pcie_share = 0.1;
  double checkpoint_share = 0.9;
  uint64_t seed = 1;
};

// kInvalidArgument naming the option ("serving: ..."/"training: ...") when
// one is out of range. `model` gives the demand per job for the arrival rate
// (the first model of the cluster).
StatusOr<std::vector<WorkloadJob>> GenerateServing(const GpuModel& model,
                                                   const ServingOptions& options);
StatusOr<std::vector<WorkloadJob>> GenerateTraining(const GpuModel& model,
                                                    const TrainingOptions& options);

}  // namespace migsched

#endif  // MIGSCHED_SIM_WORKLOAD_FAMILIES_H_
