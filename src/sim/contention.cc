#include "sim/contention.h"

#include <algorithm>

namespace migsched {

double ContentionSlowdown(double alpha, double pcie_gbps, double pcie_max_gbps, int n) {
  const double share = pcie_max_gbps / n;
  return std::max(1.0, alpha * pcie_gbps / share);
}

ContentionModel::ContentionModel(std::vector<double> pcie_max_gbps, bool enabled)
    : pcie_max_gbps_(std::move(pcie_max_gbps)), enabled_(enabled), on_gpu_(pcie_max_gbps_.size()) {}

void ContentionModel::Collect(const std::vector<int>& gpus, std::vector<JobId>* affected) const {
  const size_t first = affected->size();
  for (int g : gpus) affected->insert(affected->end(), on_gpu_[g].begin(), on_gpu_[g].end());
  std::sort(affected->begin() + first, affected->end());
  affected->erase(std::unique(affected->begin() + first, affected->end()), affected->end());
}

void ContentionModel::Add(JobId job, double pcie_gbps, double alpha, const std::vector<int>& gpus,
                          std::vector<JobId>* affected) {
  if (!enabled_ || pcie_gbps <= 0) return;
  Entry e{pcie_gbps, alpha, gpus};
  std::sort(e.gpus.begin(), e.gpus.end());
  e.gpus.erase(std::unique(e.gpus.begin(), e.gpus.end()), e.gpus.end());
  for (int g : e.gpus) on_gpu_[g].push_back(job);
  Collect(e.gpus, affected);
  jobs_.emplace(job, std::move(e));
}

void ContentionModel::Remove(JobId job, std::vector<JobId>* affected) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  for (int g : it->second.gpus) {
    auto& v = on_gpu_[g];
    v.erase(std::find(v.begin(), v.end(), job));
  }
  Collect(it->second.gpus, affected);
  jobs_.erase(it);
}

double ContentionModel::Rate(JobId job) const {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return 1.0;
  double rate = 1.0;
  for (int g : it->second.gpus) {
    const int n = static_cast<int>(on_gpu_[g].size());
    rate = std::min(rate, 1.0 / ContentionSlowdown(it->second.alpha, it->second.pcie_gbps,
                                                   pcie_max_gbps_[g], n));
  }
  return rate;
}

}  // namespace migsched
