// ContentionModel: PCIe bandwidth sharing between the running jobs of a GPU
// (§8 of docs/algorithms.md).
//
// Per GPU g with bandwidth pcie_max_gbps(g) (GpuModel::pcie_max_gbps(), GB/s)
// and n running PCIe-bound jobs (pcie_gbps > 0; a job counts once per GPU
// however many of its instances are there):
//
//   slowdown_g(j) = max(1, alpha_j * pcie_gbps_j / (pcie_max_gbps(g) / n))
//   rate(j)       = min over the GPUs g of j of 1 / slowdown_g(j)
//
// (the minimum makes a gang as slow as its slowest member). A job with
// pcie_gbps = 0, or any job when contention is disabled, has rate 1. A job
// counts from the time it starts running (after its reconfigurations), not
// from the decision that placed it.
//
// Thread-safety: thread-compatible.
#ifndef MIGSCHED_SIM_CONTENTION_H_
#define MIGSCHED_SIM_CONTENTION_H_

#include <unordered_map>
#include <vector>

#include "core/job.h"

namespace migsched {

// slowdown of §8 for one job on one GPU shared by `n` (>= 1) PCIe-bound jobs.
// REQUIRES: pcie_max_gbps > 0.
double ContentionSlowdown(double alpha, double pcie_gbps, double pcie_max_gbps, int n);

class ContentionModel {
 public:
  // One bandwidth per GPU of the cluster, GB/s. The caller makes sure that
  // every GPU a PCIe-bound job can run on has a bandwidth > 0.
  ContentionModel(std::vector<double> pcie_max_gbps, bool enabled);

  // `job` starts running on `gpus` (GPU indices; duplicates allowed, counted
  // once) with demand `pcie_gbps` (GB/s) and sensitivity `alpha`. Appends to
  // `affected` every running PCIe-bound job whose rate may have changed (the
  // jobs sharing one of those GPUs, `job` included), ascending, no duplicates.
  // Nothing changes for a job with pcie_gbps == 0 or when disabled.
  void Add(JobId job, double pcie_gbps, double alpha, const std::vector<int>& gpus,
           std::vector<JobId>* affected);
  // `job` stopped running; appends the jobs whose rate may have changed
  // (those still sharing one of its GPUs). No-op for an unknown job.
  void Remove(JobId job, std::vector<JobId>* affected);

  // Current progress rate of `job` in (0, 1] (1 for a job not tracked here).
  double Rate(JobId job) const;
  // Running PCIe-bound jobs on `gpu`.
  int JobsOn(int gpu) const { return static_cast<int>(on_gpu_[gpu].size()); }

 private:
  struct Entry {
    double pcie_gbps;
    double alpha;
    std::vector<int> gpus;  // distinct, ascending
  };
  void Collect(const std::vector<int>& gpus, std::vector<JobId>* affected) const;

  std::vector<double> pcie_max_gbps_;
  bool enabled_;
  std::vector<std::vector<JobId>> on_gpu_;
  std::unordered_map<JobId, Entry> jobs_;
};

}  // namespace migsched

#endif  // MIGSCHED_SIM_CONTENTION_H_
