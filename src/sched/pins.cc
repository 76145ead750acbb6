#include "sched/pins.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "sched/candidates.h"

namespace migsched {

StatusOr<Plan> ApplyPins(Cluster* cluster, Holder holder, JobId id,
                         const std::vector<InstanceRef>& where, bool existing) {
  std::vector<std::pair<int, GpuState>> saved;  // (gpu, state before), first touch
  auto rollback = [&] {
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      cluster->SetGpu(it->first, std::move(it->second));
    }
  };
  Plan plan;
  for (const InstanceRef& w : where) {
    if (w.gpu < 0 || w.gpu >= cluster->size()) {
      rollback();
      return InvalidArgumentError(
          fmt::format("GPU {} does not exist (the cluster has {})", w.gpu, cluster->size()));
    }
    const std::string gpu_name = cluster->GpuName(w.gpu);
    const GpuState& g = cluster->gpu(w.gpu);
    const GpuModel& m = g.model();
    if (w.profile < 0 || w.profile >= static_cast<int>(m.profiles().size())) {
      rollback();
      return InvalidArgumentError(
          fmt::format("{}: no profile #{} on {}", gpu_name, w.profile, m.name()));
    }
    const Profile& p = m.profile(w.profile);
    const int slot = m.SlotOf(w.profile, w.start);
    if (slot < 0) {
      std::string starts;
      for (int s : m.SlotsOfProfile(w.profile)) {
        starts += fmt::format("{}{}", starts.empty() ? "" : ", ", m.slots()[s].start);
      }
      rollback();
      return InvalidArgumentError(fmt::format("{}: {} is not a placement of {} on {} (starts: {})",
                                              gpu_name, w.start, p.name, m.name(), starts));
    }
    const std::string what = fmt::format("{}: {}@{}", gpu_name, p.name, w.start);
    const int at = g.IndexAt(w.start);
    Plan part;
    if (existing) {
      if (at < 0 || g.instances()[at].profile != w.profile) {
        rollback();
        return FailedPreconditionError(fmt::format("{} is not an instance there", what));
      }
      if (g.instances()[at].busy()) {
        // Built before the rollback: it replaces the GPU state that `g` refers to.
        Status refused = FailedPreconditionError(
            fmt::format("{} is held by {}", what, g.instances()[at].HolderString()));
        rollback();
        return refused;
      }
      part.steps.push_back({StepKind::kStart, w.gpu, w.profile, w.start, id});
    } else {
      if (cluster->drained(w.gpu)) {
        rollback();
        return FailedPreconditionError(fmt::format("{} is drained", gpu_name));
      }
      if (cluster->reserved(w.gpu)) {
        rollback();
        return FailedPreconditionError(
            fmt::format("{} is reserved for the oldest waiting job (§5)", gpu_name));
      }
      for (const Instance& in : g.instances()) {
        if (in.busy() && (m.slots()[in.slot].unit_mask & m.slots()[slot].unit_mask)) {
          // Built before the rollback: it replaces the GPU state that `in` lives in.
          Status refused = FailedPreconditionError(fmt::format("{} overlaps {}@{} ({})", what,
                                                               m.profile(in.profile).name, in.start,
                                                               in.HolderString()));
          rollback();
          return refused;
        }
      }
      if (g.table().Add(g.busy_config(), slot) == kInvalidConfig) {
        rollback();
        return FailedPreconditionError(fmt::format(
            "{} does not fit beside the busy instances (compute slices or the profile's "
            "instance limit)",
            what));
      }
      part = PlacementPlan(*cluster, w.gpu, w.profile, w.start, id);
    }
    part.steps.back().holder = holder;
    bool touched = false;
    for (const auto& [gpu, state] : saved) touched = touched || gpu == w.gpu;
    if (!touched) saved.emplace_back(w.gpu, cluster->gpu(w.gpu));
    if (Status st = ApplyPlan(part, cluster); !st.ok()) {
      rollback();
      return st;
    }
    plan.steps.insert(plan.steps.end(), part.steps.begin(), part.steps.end());
  }
  return plan;
}

const std::vector<InstanceRef>* PinnedHolds::Find(Holder holder, JobId id) const {
  auto it = holds_.find({holder, id});
  return it == holds_.end() ? nullptr : &it->second;
}

void PinnedHolds::Add(Holder holder, JobId id, std::vector<InstanceRef> where) {
  holds_[{holder, id}] = std::move(where);
}

void PinnedHolds::End(Holder holder, JobId id) { holds_.erase({holder, id}); }

StatusOr<std::vector<InstanceRef>> PinnedHolds::Select(Holder holder, JobId id,
                                                       const std::vector<InstanceRef>& which,
                                                       const Cluster& cluster) const {
  const std::vector<InstanceRef>* held = Find(holder, id);
  if (held == nullptr) {
    return NotFoundError(fmt::format("no {} {} holds instances", HolderName(holder), id));
  }
  std::vector<InstanceRef> take = which.empty() ? *held : which;
  std::vector<InstanceRef> keep = *held;
  for (const InstanceRef& w : take) {
    auto k = std::find(keep.begin(), keep.end(), w);
    if (k == keep.end()) {
      return InvalidArgumentError(fmt::format("{} {} does not hold {}@{} on {}", HolderName(holder),
                                              id, w.profile, w.start, cluster.GpuName(w.gpu)));
    }
    keep.erase(k);
  }
  return take;
}

void PinnedHolds::Take(Holder holder, JobId id, const std::vector<InstanceRef>& taken) {
  auto it = holds_.find({holder, id});
  if (it == holds_.end()) return;
  for (const InstanceRef& w : taken) {
    auto k = std::find(it->second.begin(), it->second.end(), w);
    if (k != it->second.end()) it->second.erase(k);
  }
  if (it->second.empty()) holds_.erase(it);
}

}  // namespace migsched
