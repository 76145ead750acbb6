// Re-generating arrival times for a workload at a target offered load (§10 of
// docs/algorithms.md: the Alibaba trace's own times "do not describe load",
// so arrivals are re-generated: "Poisson at a target offered load, or the
// trace order with gaps scaled").
//
// Offered load. For jobs j = 1..n on a cluster of N GPUs,
//   demand_j  = count_j * (fraction of one GPU an instance of j occupies)
//   E[dD]     = (1/n) * sum_j demand_j * duration_j          (GPU-seconds per job)
//   mean gap  G = E[dD] / (load * N)                          (seconds)
// i.e. jobs arrive at rate 1/G and offer load * N GPUs' worth of work per
// second: offered load = sum_j demand_j * duration_j / (N * n * G). The
// per-instance fraction comes from the caller (`demand`), who resolves each
// job on the cluster's GPU model (e.g. compute slices of its profile / the
// model's compute slices, the measure of §9's utilisation).
//
// Modes:
//  * poisson: the jobs keep their order in the vector; the first arrives at
//    t = 0 and each later one after an exponential gap of mean G drawn with
//    core/rng.h seeded by `seed` (deterministic: the same jobs, options and
//    seed give bit-identical times).
//  * trace-order: the jobs are first sorted by their current arrival_s
//    (stable: ties keep vector order); then t'_i = (t_i - t_0) * k, with k
//    chosen so that the mean gap (t_last - t_0) / (n - 1) becomes G. Order,
//    ties and the ratios between gaps are preserved; the first job arrives at
//    t = 0. Needs at least two distinct arrival times when n > 1.
// With one job, it arrives at t = 0; an empty workload is left as is.
//
// Thread-safety: reentrant; `demand` is called from the calling thread only.
#ifndef MIGSCHED_SIM_ARRIVALS_H_
#define MIGSCHED_SIM_ARRIVALS_H_

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "io/workload_job.h"

namespace migsched {

enum class ArrivalMode {
  kPoisson,     // "poisson"
  kTraceOrder,  // "trace-order"
};
std::string_view ArrivalModeName(ArrivalMode mode);
// Parses "poisson" | "trace-order".
StatusOr<ArrivalMode> ParseArrivalMode(std::string_view s);

struct ArrivalOptions {
  ArrivalMode mode = ArrivalMode::kPoisson;
  // Target offered load, as a share of the cluster's GPU capacity; > 0
  // (values above 1 overload the cluster on purpose).
  double load = 0.9;
  // GPUs in the cluster; >= 1.
  int num_gpus = 1;
  // Seed of the Poisson draws (unused by trace-order).
  uint64_t seed = 1;
  // Fraction of one GPU that one instance of the job occupies, in (0, 1].
  // Required.
  std::function<double(const Job&)> demand;
};

// The mean inter-arrival gap G (seconds) of the formula above. Errors
// (kInvalidArgument, naming the job where one is at fault): no jobs, load not
// a finite number > 0, num_gpus < 1, no demand function, a demand outside
// (0, 1], a duration_s not finite and > 0.
StatusOr<double> MeanGapForLoad(const std::vector<WorkloadJob>& jobs,
                                const ArrivalOptions& options);

// Overwrites every job's arrival_s as described above. Errors as
// MeanGapForLoad (an empty workload is not an error here), plus
// kFailedPrecondition for trace-order when all of n > 1 jobs arrive at the
// same time. On error `jobs` is unchanged.
Status RegenerateArrivals(std::vector<WorkloadJob>* jobs, const ArrivalOptions& options);

}  // namespace migsched

#endif  // MIGSCHED_SIM_ARRIVALS_H_
