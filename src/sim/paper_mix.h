// The `paper-mix` workload generator (§10 "Paper-style mix" and §8 of
// docs/algorithms.md; distributions in docs/formats/trace.md): a node of
// `num_gpus` GPUs (default 4 x A100 40GB) running the reference jobs of the
// authors' earlier paper (HPCAsia'25) on MIG instances.
//
// Each job i = 1..num_jobs is drawn independently, with these draws in this
// order from one core/rng.h stream seeded by `seed` (five draws per job, also
// when a share is 0 or 1, so changing one share does not shift the others):
//  1. profile: Choice over `profile_weights` (default 1g.5gb 0.25, 1g.10gb 0.1,
//     2g.10gb 0.25, 3g.20gb 0.2, 4g.20gb 0.1, 7g.40gb 0.1: small instances
//     dominate, as in inference serving; our choice);
//  2. kind: PCIe-bound with probability `pcie_share` (default 0.2; the
//     paper's settings are 20% and 60%), else ResNet50 inference;
//  3. which PCIe-bound job (used only for PCIe-bound ones): Bloom-560m or
//     Bloom-7b1 offloaded inference, equally likely;
//  4. duration: log-uniform in [min_duration_s, max_duration_s] (default 300
//     to 3600 s, "minutes to an hour"): exp(ln min + U * (ln max - ln min));
//  5. latency_sensitive: true with probability `latency_sensitive_share`
//     (default 0: the jobs are batch inference runs of minutes to an hour,
//     and latency-sensitive jobs never move between GPUs (§6), which would
//     hide migration; our choice).
// Reference jobs (§8, measured on A100 PCIe): ResNet50 inference 0 GB/s,
// alpha 1; Bloom-560m offloaded 5.7 GB/s, alpha 1.25; Bloom-7b1 offloaded
// 17.65 GB/s, alpha 1.07. Every job: count 1, migratable = `migratable`
// (default checkpoint), id "pm-0001", "pm-0002", ... (at least 4 digits).
// Arrivals: sim/arrivals.h in poisson mode at offered load `load` (default
// 0.9) on `num_gpus` GPUs, demand = the profile's compute slices / the
// model's compute slices, seeded by Rng::DeriveSeed(seed, 1).
//
// Deterministic: the same model, options and seed give identical jobs.
//
// Thread-safety: reentrant.
#ifndef MIGSCHED_SIM_PAPER_MIX_H_
#define MIGSCHED_SIM_PAPER_MIX_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/gpu_model.h"
#include "core/status.h"
#include "io/workload_job.h"

namespace migsched {

// A reference job of §8.
struct ReferenceJob {
  const char* name;
  double pcie_gbps;  // GB/s
  double alpha;
};
inline constexpr ReferenceJob kResNet50Inference{"resnet50-inference", 0.0, 1.0};
inline constexpr ReferenceJob kBloom560mOffload{"bloom-560m-offload", 5.7, 1.25};
inline constexpr ReferenceJob kBloom7b1Offload{"bloom-7b1-offload", 17.65, 1.07};

struct PaperMixOptions {
  int num_jobs = 200;                    // >= 0
  int num_gpus = 4;                      // >= 1
  double load = 0.9;                     // target offered load, > 0
  double pcie_share = 0.2;               // in [0, 1]
  double latency_sensitive_share = 0.0;  // in [0, 1]
  double min_duration_s = 300;           // > 0
  double max_duration_s = 3600;          // >= min_duration_s
  Migratable migratable = Migratable::kCheckpoint;
  uint64_t seed = 1;
  // Called with (jobs drawn so far, num_jobs) every 65,536 jobs and once when
  // all are drawn, from the calling thread; may be empty. For progress output
  // on large workloads.
  std::function<void(int64_t done, int64_t total)> progress;
  // (profile name on the model, weight >= 0); at least one weight > 0.
  std::vector<std::pair<std::string, double>> profile_weights = {
      {"1g.5gb", 0.25}, {"1g.10gb", 0.1}, {"2g.10gb", 0.25},
      {"3g.20gb", 0.2}, {"4g.20gb", 0.1}, {"7g.40gb", 0.1},
  };
};

// The first profile of `o.profile_weights` that `model` does not offer, or "" when it offers
// every one (GeneratePaperMix refuses such a model; a caller may say more of why).
std::string FirstProfileNotOffered(const GpuModel& model, const PaperMixOptions& o);

// Generates the workload on `model` (the node's GPU model; default setting
// A100 40GB). Errors (kInvalidArgument, naming the option): an option out of
// its range above, a profile name the model does not offer.
StatusOr<std::vector<WorkloadJob>> GeneratePaperMix(const GpuModel& model,
                                                    const PaperMixOptions& options);

}  // namespace migsched

#endif  // MIGSCHED_SIM_PAPER_MIX_H_
