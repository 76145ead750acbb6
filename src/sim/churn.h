// The `churn` workload generator (docs/algorithms.md §10, docs/formats/trace.md):
// paper-mix-like jobs arriving and leaving in bursts, with a mix, durations
// and job properties that differ from paper-mix on purpose, so that results
// are not tuned to one workload. Every job is a GPU fraction (compute rule),
// so the same workload runs on every GPU model and on mixed clusters.
//
// Per workload, then per job, from one core/rng.h stream seeded by `seed`:
//  0. the mix (once per workload): each base weight (1g 0.35, 2g 0.25, 3g 0.2,
//     4g 0.1, 7g 0.1 of a 7-slice GPU: paper-mix's with its two 1g profiles
//     merged) is multiplied by an independent factor uniform in
//     [1 - mix_spread, 1 + mix_spread] (default 0.5) and the weights are
//     normalised: every seed has its own paper-mix-like mix;
//  then per job, seven draws in this order (also when a share is 0 or 1):
//  1. class: Choice over the mix; the request is gpu_fraction k / 7 for a
//     kg class (1/7, 2/7, 3/7, 4/7, 1), resolved per model by the compute
//     rule (1g.5gb ... 7g.40gb on A100 40GB, 1g.10gb ... 7g.80gb on H100 80GB);
//  2. PCIe-bound with probability `pcie_share` (default 0.2), else ResNet50
//     inference (the reference jobs of §8, as in paper-mix);
//  3. which PCIe-bound job: Bloom-560m or Bloom-7b1, equally likely;
//  4. long or short: long with probability `long_share` (default 0.25);
//  5. duration: log-uniform in [short_min_s, short_max_s] (default 2 to 30 min)
//     for a short job, in [long_min_s, long_max_s] (30 min to 4 h) for a long
//     one: minutes-long inference and evaluation beside hours-long training;
//  6. latency-sensitive with probability `latency_sensitive_share` (0.1):
//     such a job never leaves its GPU (§6);
//  7. migratable: checkpoint 0.8, restart 0.1, none 0.1 (one Uniform01 draw
//     against the cumulative shares).
// Arrivals (seeded by Rng::DeriveSeed(seed, 1)): a two-phase Markov-modulated
// Poisson process. Calm phases last an exponential time of mean
// `calm_mean_s` (default 1 h), bursts of mean `burst_mean_s` (15 min); within
// a burst jobs arrive `burst_factor` (default 3) times as often as in a calm
// phase; the first job arrives at 0 in a calm phase. The rates are chosen so
// that the long-run mean gap is the G of sim/arrivals.h for offered load
// `load` on `num_gpus` GPUs (demand = the job's compute share on `model`):
// calm gap = G × (c + f b) / (c + b), burst gap = calm gap / f, with c, b the
// phase means and f the burst factor. A gap that would cross more than 1000
// phase changes (phases far shorter than the gap: a load of about 1e-5 or
// less) is drawn, from the last of them, at the long-run rate 1 / G, so that a
// tiny load costs no more than a usual one. Names "ch-0001", "ch-0002", ... (at
// least 4 digits); count 1.
//
// Deterministic: the same model, options and seed give identical jobs.
//
// Thread-safety: reentrant.
#ifndef MIGSCHED_SIM_CHURN_H_
#define MIGSCHED_SIM_CHURN_H_

#include <cstdint>
#include <vector>

#include "core/gpu_model.h"
#include "core/status.h"
#include "io/workload_job.h"

namespace migsched {

struct ChurnOptions {
  int num_jobs = 500;  // >= 0
  int num_gpus = 4;    // >= 1
  double load = 0.9;   // offered load, > 0
  double pcie_share = 0.2;
  double mix_spread = 0.5;  // in [0, 1)
  double long_share = 0.25;
  double short_min_s = 120, short_max_s = 1800;
  double long_min_s = 1800, long_max_s = 14400;
  double latency_sensitive_share = 0.1;
  double restart_share = 0.1, none_share = 0.1;  // migratable; the rest checkpoint
  double calm_mean_s = 3600, burst_mean_s = 900;
  double burst_factor = 3;  // >= 1
  uint64_t seed = 1;
};

// The base weights of step 0 (compute slices of a 7-slice GPU, weight).
struct ChurnClass {
  int compute_slices;
  double weight;
};
const std::vector<ChurnClass>& ChurnClasses();

// Generates the workload; `model` gives the demand per job for the arrival
// rate (the first model of the cluster). kInvalidArgument naming the option
// when one is out of range.
StatusOr<std::vector<WorkloadJob>> GenerateChurn(const GpuModel& model,
                                                 const ChurnOptions& options);

}  // namespace migsched

#endif  // MIGSCHED_SIM_CHURN_H_
