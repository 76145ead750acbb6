#include "sched/gpu_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace migsched {

namespace {

// Whether `a` is a better layout cost than `b` (the order of LayoutSolver).
bool Better(const LayoutCost& a, const LayoutCost& b, bool prefer_largest) {
  if (prefer_largest && a.admits_largest != b.admits_largest) return a.admits_largest;
  if (a.reconfigurations != b.reconfigurations) return a.reconfigurations < b.reconfigurations;
  return a.metric < b.metric - 1e-9;
}

// The idle instances of `pre` that laying `profiles[i]`@`starts[i]` destroys
// (their starts, ascending), and how many of the new instances reuse one.
struct Destroys {
  std::vector<int> starts;
  int reused = 0;
};

Destroys RelayDestroys(const GpuState& pre, const std::vector<int>& profiles,
                       const std::vector<int>& starts) {
  const GpuModel& m = pre.model();
  Destroys out;
  uint64_t created_units = 0;
  std::vector<bool> reuses(profiles.size(), false);
  for (size_t i = 0; i < profiles.size(); ++i) {
    const int at = pre.IndexAt(starts[i]);
    reuses[i] =
        at >= 0 && !pre.instances()[at].busy() && pre.instances()[at].profile == profiles[i];
    out.reused += reuses[i] ? 1 : 0;
    if (!reuses[i]) created_units |= m.slots()[m.SlotOf(profiles[i], starts[i])].unit_mask;
  }
  // Every instance after the relay: busy ones, new ones, kept idle ones.
  std::vector<int> cnt_profile(m.profiles().size(), 0);
  std::vector<int> cnt_base(m.profiles().size(), 0);
  int cs = 0;
  auto count = [&](int profile, int sign) {
    cnt_profile[profile] += sign;
    cnt_base[m.BaseOf(profile)] += sign;
    cs += sign * m.profile(profile).compute_slices;
  };
  for (const Instance& in : pre.instances()) {
    if (in.busy()) count(in.profile, +1);
  }
  for (int p : profiles) count(p, +1);
  std::vector<const Instance*> kept;
  for (const Instance& in : pre.instances()) {
    if (in.busy()) continue;
    bool reused = false;
    for (size_t i = 0; i < profiles.size(); ++i) {
      reused = reused || (reuses[i] && starts[i] == in.start);
    }
    if (reused) continue;  // already counted as a new instance
    if (m.slots()[in.slot].unit_mask & created_units) {
      out.starts.push_back(in.start);
    } else {
      kept.push_back(&in);
      count(in.profile, +1);
    }
  }
  // Largest first, ties to the lower start (instances() is in start order).
  std::stable_sort(kept.begin(), kept.end(), [&](const Instance* a, const Instance* b) {
    return m.profile(a->profile).compute_slices > m.profile(b->profile).compute_slices;
  });
  std::vector<bool> dropped(kept.size(), false);
  auto drop = [&](size_t k) {
    dropped[k] = true;
    count(kept[k]->profile, -1);
    out.starts.push_back(kept[k]->start);
  };
  // A profile's (or its base's) max_instances, then the compute slices.
  for (size_t k = 0; k < kept.size(); ++k) {
    const int p = kept[k]->profile;
    const int b = m.BaseOf(p);
    if (cnt_profile[p] > m.profile(p).max_instances || cnt_base[b] > m.profile(b).max_instances)
      drop(k);
  }
  for (size_t k = 0; k < kept.size() && cs > m.compute_slices(); ++k) {
    if (!dropped[k]) drop(k);
  }
  std::sort(out.starts.begin(), out.starts.end());
  return out;
}

}  // namespace

void SortForLayout(const GpuModel& model, std::vector<int>* profiles) {
  std::sort(profiles->begin(), profiles->end(), [&](int a, int b) {
    const int ca = model.profile(a).compute_slices, cb = model.profile(b).compute_slices;
    return ca != cb ? ca > cb : a < b;
  });
}

int RelayReconfigurations(const GpuState& pre, const std::vector<int>& profiles,
                          const std::vector<int>& starts) {
  const Destroys d = RelayDestroys(pre, profiles, starts);
  return static_cast<int>(profiles.size()) - d.reused + static_cast<int>(d.starts.size());
}

StatusOr<std::vector<std::vector<Step>>> RelayPlans(const GpuState& pre, int gpu,
                                                    const std::vector<RelayInstance>& order) {
  const GpuModel& m = pre.model();
  const ConfigTable& t = pre.table();
  std::vector<int> profiles, starts;
  for (const RelayInstance& r : order) {
    profiles.push_back(r.profile);
    starts.push_back(r.start);
  }
  const Destroys d = RelayDestroys(pre, profiles, starts);
  std::vector<int> doomed = d.starts;  // still to destroy
  GpuState g = pre;
  std::vector<std::vector<Step>> out(order.size());
  auto destroy = [&](size_t k, int start) -> Status {
    const int i = g.IndexAt(start);
    out[k].push_back({StepKind::kDestroy, gpu, g.instances()[i].profile, start, kNoJob});
    doomed.erase(std::find(doomed.begin(), doomed.end(), start));
    return g.Destroy(start);
  };
  for (size_t k = 0; k < order.size(); ++k) {
    const RelayInstance& r = order[k];
    if (k + 1 == order.size()) {
      // The analysis destroys nothing a step did not need; whatever is left goes here.
      while (!doomed.empty()) RETURN_IF_ERROR(destroy(k, doomed.front()));
    }
    const int at = g.IndexAt(r.start);
    const bool reuse =
        at >= 0 && !g.instances()[at].busy() && g.instances()[at].profile == r.profile;
    if (!reuse) {
      const int slot = m.SlotOf(r.profile, r.start);
      if (slot < 0) {
        return InternalError(fmt::format("relay: {}@{} is not a placement on {}",
                                         m.profile(r.profile).name, r.start, m.name()));
      }
      const uint64_t units = m.slots()[slot].unit_mask;
      // The doomed idle instances in its way, then those its profile's limits
      // or the compute slices need gone (largest first).
      for (size_t j = 0; j < doomed.size();) {
        const int i = g.IndexAt(doomed[j]);
        if (m.slots()[g.instances()[i].slot].unit_mask & units) {
          RETURN_IF_ERROR(destroy(k, doomed[j]));
        } else {
          ++j;
        }
      }
      while (!doomed.empty() &&
             (t.Add(g.all_config(), slot) == kInvalidConfig ||
              g.CountProfile(r.profile) + 1 > m.profile(r.profile).max_instances)) {
        const bool compute = t.compute_used(g.all_config()) + m.profile(r.profile).compute_slices >
                             m.compute_slices();
        int pick = -1, pick_cs = -1;
        for (int s : doomed) {
          const Instance& in = g.instances()[g.IndexAt(s)];
          const int cs = m.profile(in.profile).compute_slices;
          const bool fits_rule =
              compute ? true
                      : (in.profile == r.profile || m.BaseOf(in.profile) == m.BaseOf(r.profile));
          if (fits_rule && cs > pick_cs) {
            pick = s;
            pick_cs = cs;
          }
        }
        if (pick < 0) pick = doomed.front();
        RETURN_IF_ERROR(destroy(k, pick));
      }
      out[k].push_back({StepKind::kCreate, gpu, r.profile, r.start, kNoJob});
      if (Status st = g.Create(r.profile, r.start); !st.ok()) {
        return InternalError(fmt::format("relay on GPU {}: {}", gpu, st.message()));
      }
    }
    out[k].push_back({StepKind::kStart, gpu, r.profile, r.start, r.job});
    if (Status st = g.StartJob(r.profile, r.start, r.job); !st.ok()) {
      return InternalError(fmt::format("relay on GPU {}: {}", gpu, st.message()));
    }
  }
  return out;
}

const GpuLayout& LayoutSolver::Solve(const GpuState& pre, std::string_view pre_key,
                                     const std::vector<int>& profiles, bool prefer_largest) {
  key_.assign(pre_key);
  key_.push_back(prefer_largest ? 'L' : '-');
  for (int p : profiles) {
    key_.push_back(static_cast<char>(p & 0xff));
    key_.push_back(static_cast<char>(p >> 8));
  }
  auto it = memo_.find(key_);
  if (it != memo_.end() && it->second.generation == scorer_->generation()) {
    return it->second.layout;
  }
  if (it == memo_.end()) {
    if (memo_.size() >= kMaxEntries) memo_.clear();
    it = memo_.emplace(key_, Entry{}).first;
  }
  Entry& e = it->second;
  e.generation = scorer_->generation();
  e.prefer_largest = prefer_largest;
  e.layout = GpuLayout{};
  Walk(pre, profiles, prefer_largest, &e.layout);
  return e.layout;
}

void LayoutSolver::Walk(const GpuState& pre, const std::vector<int>& profiles, bool prefer_largest,
                        GpuLayout* best) {
  const GpuModel& m = pre.model();
  const ConfigTable& t = pre.table();
  best->profiles = profiles;
  const size_t n = profiles.size();
  // Capacity and the exact-profile limits (variants: the table knows only
  // base profiles) do not depend on the starts.
  int cs = 0;
  for (int p : profiles) cs += m.profile(p).compute_slices;
  if (cs > pre.free_compute_slices()) return;
  for (int p : profiles) {
    int same = 0;
    for (const Instance& in : pre.instances()) same += in.busy() && in.profile == p;
    for (int q : profiles) same += q == p;
    if (same > m.profile(p).max_instances) return;
  }
  // Compute slices still to place after item i (for pruning).
  std::vector<int> rest(n + 1, 0);
  for (size_t i = n; i-- > 0;) rest[i] = rest[i + 1] + m.profile(profiles[i]).compute_slices;
  const ConfigId before = pre.busy_config();
  const double value_before = scorer_->Value(t, before);
  std::vector<int> slots(n, -1), starts(n, 0);
  // Depth-first over the slots; equal profiles take ascending slots (the
  // same layout in another order is not walked again).
  auto walk = [&](auto& self, size_t i, ConfigId c) -> void {
    if (t.compute_used(c) + rest[i] > m.compute_slices()) return;
    if (i == n) {
      LayoutCost cost;
      cost.reconfigurations = RelayReconfigurations(pre, profiles, starts);
      cost.metric = scorer_->Value(t, c) - value_before;
      cost.admits_largest = t.Feasible(c, t.num_terms() - 1) > 0;
      if (!best->feasible || Better(cost, best->cost, prefer_largest)) {
        best->feasible = true;
        best->cost = cost;
        best->busy_after = c;
        best->starts = starts;
      }
      return;
    }
    const int min_slot = i > 0 && profiles[i] == profiles[i - 1] ? slots[i - 1] + 1 : 0;
    for (int slot : m.SlotsOfProfile(profiles[i])) {
      if (slot < min_slot) continue;
      const ConfigId next = t.Add(c, slot);
      if (next == kInvalidConfig) continue;
      slots[i] = slot;
      starts[i] = m.slots()[slot].start;
      self(self, i + 1, next);
    }
  };
  walk(walk, 0, before);
}

}  // namespace migsched
