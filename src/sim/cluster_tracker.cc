#include "sim/cluster_tracker.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sched/candidates.h"

namespace migsched {

ClusterTracker::ClusterTracker(const Cluster& cluster, bool creates_instances)
    : cluster_(&cluster), creates_(creates_instances), models_(cluster.models()) {}

StatusOr<ClusterTracker> ClusterTracker::Create(const Cluster& cluster, bool creates_instances) {
  ClusterTracker t(cluster, creates_instances);
  for (const GpuModel* m : t.models_) {
    if (m->profiles().size() > 64) {
      return InvalidArgumentError(
          fmt::format("GPU model '{}' has {} profiles; the simulator supports at most 64",
                      m->name(), m->profiles().size()));
    }
    t.demand_.emplace_back(m->profiles().size(), 0);
  }
  t.demand_mask_.assign(t.models_.size(), 0);
  t.busy_by_model_.assign(t.models_.size(), 0);
  t.model_of_gpu_.resize(cluster.size());
  t.cache_.resize(cluster.size());
  for (int g = 0; g < cluster.size(); ++g) {
    const GpuModel* m = &cluster.gpu(g).model();
    t.model_of_gpu_[g] =
        static_cast<int>(std::find(t.models_.begin(), t.models_.end(), m) - t.models_.begin());
    t.RefreshGpu(g);
  }
  return t;
}

uint64_t ClusterTracker::FitMask(int gpu) const {
  // Mirrors AppendCandidates (sched/candidates.h): CrossCheck compares both.
  const GpuState& g = cluster_->gpu(gpu);
  const GpuModel& m = g.model();
  const ConfigTable& t = g.table();
  uint64_t mask = 0;
  for (int p = 0; p < static_cast<int>(m.profiles().size()); ++p) {
    const Profile& prof = m.profile(p);
    if (!prof.is_base()) {
      int busy_same = 0;
      for (const Instance& in : g.instances()) busy_same += in.busy() && in.profile == p;
      if (busy_same >= prof.max_instances) continue;
    }
    bool fits = false;
    if (creates_) {
      for (int slot : m.SlotsOfProfile(p)) {
        if (t.Add(g.busy_config(), slot) != kInvalidConfig) {
          fits = true;
          break;
        }
      }
    } else {
      for (const Instance& in : g.instances()) {
        if (!in.busy() && in.profile == p && t.Add(g.busy_config(), in.slot) != kInvalidConfig) {
          fits = true;
          break;
        }
      }
    }
    if (fits) mask |= uint64_t{1} << p;
  }
  return mask;
}

void ClusterTracker::Account(int gpu, int sign) {
  const GpuCache& c = cache_[gpu];
  busy_cs_ += sign * c.busy_cs;
  busy_by_model_[model_of_gpu_[gpu]] += sign * c.busy_cs;
  frag_sum_ += sign * static_cast<long double>(c.fragcost);
  if (c.free_cs == 0) return;
  auto key = std::make_pair(model_of_gpu_[gpu], c.fit);
  int64_t& v = free_by_fit_[key];
  v += sign * c.free_cs;
  if (v == 0) free_by_fit_.erase(key);
}

void ClusterTracker::RefreshGpu(int gpu) {
  Account(gpu, -1);
  const GpuState& g = cluster_->gpu(gpu);
  GpuCache& c = cache_[gpu];
  c.busy_cs = g.busy_compute_slices();
  c.free_cs = g.free_compute_slices();
  c.fragcost = g.fragcost();
  c.fit = FitMask(gpu);
  Account(gpu, +1);
}

void ClusterTracker::Refresh(const Plan& plan) {
  int last = -1;
  for (const Step& s : plan.steps) {
    if (s.gpu == last) continue;  // consecutive steps on one GPU: refresh once
    last = s.gpu;
    RefreshGpu(s.gpu);
    // A migration step also changes its source's GPU (§6).
    if (s.from_gpu >= 0 && s.from_gpu != s.gpu) RefreshGpu(s.from_gpu);
  }
}

double ClusterTracker::utilization() const {
  const int total = total_compute_slices();
  return total == 0 ? 0.0 : static_cast<double>(busy_cs_) / total;
}

double ClusterTracker::fragmentation_rate() const {
  if (cluster_->size() == 0) return 0;
  return std::max(0.0, static_cast<double>(frag_sum_ / cluster_->size()));
}

void ClusterTracker::AddDemand(const Job& job, int delta) {
  queued_ += delta;
  for (size_t mi = 0; mi < models_.size(); ++mi) {
    const int p = ResolveProfile(*models_[mi], job);
    if (p < 0) continue;
    int64_t& n = demand_[mi][p];
    n += delta;
    if (n > 0) {
      demand_mask_[mi] |= uint64_t{1} << p;
    } else {
      demand_mask_[mi] &= ~(uint64_t{1} << p);
    }
  }
}

int64_t ClusterTracker::stranded_compute_slices() const {
  if (queued_ <= 0) return 0;
  int64_t stranded = 0;
  for (const auto& [key, free] : free_by_fit_) {
    if ((key.second & demand_mask_[key.first]) == 0) stranded += free;
  }
  return stranded;
}

double ClusterTracker::stranded() const {
  const int64_t free_total = total_compute_slices() - busy_cs_;
  if (queued_ <= 0 || free_total <= 0) return 0;
  return static_cast<double>(stranded_compute_slices()) / static_cast<double>(free_total);
}

Status ClusterTracker::CrossCheck() const {
  if (busy_cs_ != cluster_->busy_compute_slices()) {
    return InternalError(fmt::format("tracker: busy compute slices {} != cluster's {}", busy_cs_,
                                     cluster_->busy_compute_slices()));
  }
  if (std::abs(fragmentation_rate() - cluster_->FragmentationRate()) > 1e-9) {
    return InternalError(fmt::format("tracker: fragmentation rate {} != cluster's {}",
                                     fragmentation_rate(), cluster_->FragmentationRate()));
  }
  std::vector<int> busy_by_model(models_.size(), 0);
  for (int gpu = 0; gpu < cluster_->size(); ++gpu) {
    busy_by_model[model_of_gpu_[gpu]] += cluster_->gpu(gpu).busy_compute_slices();
  }
  if (busy_by_model != busy_by_model_) {
    return InternalError("tracker: busy compute slices per model differ");
  }
  std::map<std::pair<int, uint64_t>, int64_t> free_by_fit;
  std::vector<Candidate> cands;
  for (int gpu = 0; gpu < cluster_->size(); ++gpu) {
    const GpuState& g = cluster_->gpu(gpu);
    uint64_t fit = 0;
    for (int p = 0; p < static_cast<int>(g.model().profiles().size()); ++p) {
      cands.clear();
      AppendCandidates(*cluster_, gpu, p, creates_, &cands);
      if (!cands.empty()) fit |= uint64_t{1} << p;
    }
    if (fit != cache_[gpu].fit || g.free_compute_slices() != cache_[gpu].free_cs) {
      return InternalError(fmt::format(
          "tracker: GPU {} fit mask {:#x} / free {} != re-derived {:#x} / {} ({})", gpu,
          cache_[gpu].fit, cache_[gpu].free_cs, fit, g.free_compute_slices(), g.DebugString()));
    }
    if (g.free_compute_slices() > 0)
      free_by_fit[{model_of_gpu_[gpu], fit}] += g.free_compute_slices();
  }
  if (free_by_fit != free_by_fit_) return InternalError("tracker: free-by-fit totals differ");
  return Status();
}

}  // namespace migsched
