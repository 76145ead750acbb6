#include "sched/evacuation.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "core/numbers.h"
#include "sched/candidates.h"

namespace migsched {
namespace {

struct Opening {
  int gpu;
  int profile;
  int slot;
  int start;
  std::vector<int> blockers;  // indices into the GPU's instances()
  double memory_mib;
};

// Busy instances of `profile` (a variant counts only itself) on `g`.
int BusyOfProfile(const GpuState& g, int profile) {
  int n = 0;
  for (const Instance& in : g.instances()) n += in.busy() && in.profile == profile;
  return n;
}

// One target GPU's state during the search.
struct TargetState {
  int gpu = -1;
  ConfigId busy = kInvalidConfig;     // busy now, with the targets assigned so far
  ConfigId settled = kInvalidConfig;  // settled, with them
  std::map<int, int> variants;        // variant profile -> assigned targets of it
};

struct Option {
  int target = -1;  // index into targets; -1: intra (on the candidate GPU)
  int profile = -1;
  int slot = -1;
  int start = 0;
  double score = 0;
  bool reuse = false;
  int destroys = 0;
  int gpu = -1;
};

class EvacuationSearch {
 public:
  EvacuationSearch(const Cluster& c, const EvacuationQuery& q, const Opening& cand)
      : c_(c), q_(q), cand_(cand), g_(c.gpu(cand.gpu)) {}

  std::optional<std::vector<MigrationMove>> Run() {
    const GpuModel& m = g_.model();
    const ConfigTable& t = g_.table();
    // The candidate GPU after the switch-overs: what stays, and the placement.
    ConfigId rest = g_.busy_config();
    for (int i : cand_.blockers) rest = t.Remove(rest, g_.instances()[i].slot);
    final_ = t.Add(rest, cand_.slot);
    now_ = g_.busy_config();
    if (final_ == kInvalidConfig) return std::nullopt;
    job_units_ = m.slots()[cand_.slot].unit_mask;
    // Target GPUs: per state group, as many allowed members as there are blockers.
    for (int rep : c_.representatives()) {
      int taken = 0;
      c_.ForEachInGroup(rep, [&](int gpu) {
        if (gpu == cand_.gpu || !q_.target_ok(gpu)) return true;
        const GpuState& h = c_.gpu(gpu);
        targets_.push_back({gpu, h.busy_config(), h.settled_config(), {}});
        return ++taken < static_cast<int>(cand_.blockers.size());
      });
    }
    // Blockers, largest first (then lower start).
    items_ = cand_.blockers;
    std::stable_sort(items_.begin(), items_.end(), [&](int a, int b) {
      return m.profile(g_.instances()[a].profile).compute_slices >
             m.profile(g_.instances()[b].profile).compute_slices;
    });
    chosen_.assign(items_.size(), Option{});
    if (!Walk(0)) return std::nullopt;
    std::vector<MigrationMove> moves;
    for (size_t i = 0; i < items_.size(); ++i) {
      const Instance& in = g_.instances()[items_[i]];
      const Option& o = chosen_[i];
      moves.push_back(
          MigrationMove{in.job, {cand_.gpu, in.profile, in.start}, {o.gpu, o.profile, o.start}});
    }
    return moves;
  }

 private:
  std::vector<Option> Options(size_t i) {
    std::vector<Option> out;
    const Instance& in = g_.instances()[items_[i]];
    const GpuModel& m = g_.model();
    const ConfigTable& t = g_.table();
    const MoveRights rights = q_.rights(in.job);
    // Intra: disjoint from the placement, valid now and after the switch-overs.
    for (int slot : m.SlotsOfProfile(in.profile)) {
      if (m.slots()[slot].unit_mask & job_units_) continue;
      const ConfigId now = t.Add(now_, slot), after = t.Add(final_, slot);
      if (now == kInvalidConfig || after == kInvalidConfig) continue;
      // A variant's own limit: its source counts until the switch-over.
      if (!m.profile(in.profile).is_base() &&
          BusyOfProfile(g_, in.profile) + intra_variants_[in.profile] >=
              m.profile(in.profile).max_instances) {
        continue;
      }
      Option o{-1, in.profile, slot, m.slots()[slot].start, t.FragCost(after) - t.FragCost(final_)};
      o.gpu = cand_.gpu;
      Idle(g_, &o);
      out.push_back(o);
    }
    const Job* spec = q_.job_of ? q_.job_of(in.job) : nullptr;
    if (rights == MoveRights::kAny && spec != nullptr) {
      for (size_t k = 0; k < targets_.size(); ++k) {
        const TargetState& ts = targets_[k];
        const GpuState& h = c_.gpu(ts.gpu);
        const GpuModel& hm = h.model();
        const ConfigTable& ht = h.table();
        const int profile = ResolveProfile(hm, *spec);
        if (profile < 0) continue;
        const Profile& p = hm.profile(profile);
        if (!p.is_base()) {
          auto v = ts.variants.find(profile);
          const int assigned = v == ts.variants.end() ? 0 : v->second;
          if (BusyOfProfile(h, profile) + assigned >= p.max_instances) continue;
        }
        for (int slot : hm.SlotsOfProfile(profile)) {
          if (ht.Add(ts.busy, slot) == kInvalidConfig) continue;
          const ConfigId settled = ht.Add(ts.settled, slot);
          if (settled == kInvalidConfig) continue;
          Option o{static_cast<int>(k), profile, slot, hm.slots()[slot].start,
                   ht.FragCost(settled) - ht.FragCost(ts.settled)};
          o.gpu = ts.gpu;
          Idle(h, &o);
          out.push_back(o);
        }
      }
    }
    std::stable_sort(out.begin(), out.end(), [](const Option& a, const Option& b) {
      if (a.score < b.score - kEps) return true;
      if (b.score < a.score - kEps) return false;
      if (a.reuse != b.reuse) return a.reuse;
      if (a.destroys != b.destroys) return a.destroys < b.destroys;
      if (a.gpu != b.gpu) return a.gpu < b.gpu;
      return a.start > b.start;
    });
    return out;
  }

  static void Idle(const GpuState& g, Option* o) {
    const int at = g.IndexAt(o->start);
    o->reuse = at >= 0 && !g.instances()[at].busy() && g.instances()[at].profile == o->profile;
    o->destroys = CountIdleInstancesToDestroy(g, o->profile, o->start);
  }

  bool Walk(size_t i) {
    if (i == items_.size()) return true;
    for (const Option& o : Options(i)) {
      if (++nodes_ > kEvacuationMaxNodes) return false;
      // Apply.
      ConfigId old_now = now_, old_final = final_;
      TargetState old_target;
      const ConfigTable& t = g_.table();
      if (o.target < 0) {
        now_ = t.Add(now_, o.slot);
        final_ = t.Add(final_, o.slot);
        ++intra_variants_[o.profile];
      } else {
        TargetState& ts = targets_[o.target];
        old_target = ts;
        const ConfigTable& ht = c_.gpu(ts.gpu).table();
        ts.busy = ht.Add(ts.busy, o.slot);
        ts.settled = ht.Add(ts.settled, o.slot);
        ++ts.variants[o.profile];
      }
      chosen_[i] = o;
      if (Walk(i + 1)) return true;
      if (nodes_ > kEvacuationMaxNodes) return false;
      // Undo.
      if (o.target < 0) {
        now_ = old_now;
        final_ = old_final;
        --intra_variants_[o.profile];
      } else {
        targets_[o.target] = old_target;
      }
    }
    return false;
  }

  const Cluster& c_;
  const EvacuationQuery& q_;
  const Opening& cand_;
  const GpuState& g_;
  ConfigId now_ = kInvalidConfig, final_ = kInvalidConfig;
  uint64_t job_units_ = 0;
  std::vector<TargetState> targets_;
  std::vector<int> items_;
  std::vector<Option> chosen_;
  std::map<int, int> intra_variants_;
  int nodes_ = 0;
};

// The candidates of GPU `gpu` for `profile` (only `only_start` when >= 0).
void CandidatesOn(const Cluster& c, const EvacuationQuery& q, int gpu, int profile, int only_start,
                  std::vector<Opening>* out) {
  const GpuState& g = c.gpu(gpu);
  const GpuModel& m = g.model();
  const ConfigTable& t = g.table();
  for (const Instance& in : g.instances()) {
    if (in.migration != MigrationRole::kNone) return;  // mid-move: not now
  }
  const Profile& p = m.profile(profile);
  for (int slot : m.SlotsOfProfile(profile)) {
    const int start = m.slots()[slot].start;
    if (only_start >= 0 && start != only_start) continue;
    if (t.Add(g.busy_config(), slot) != kInvalidConfig &&
        (p.is_base() || BusyOfProfile(g, profile) < p.max_instances)) {
      continue;  // free now: nothing to move
    }
    const uint64_t units = m.slots()[slot].unit_mask;
    Opening cand{gpu, profile, slot, start, {}, 0};
    ConfigId rest = g.busy_config();
    int same = 0;  // busy instances of the variant `profile` that stay
    std::vector<int> others;
    for (int i = 0; i < static_cast<int>(g.instances().size()); ++i) {
      const Instance& in = g.instances()[i];
      if (!in.busy()) continue;
      if (m.slots()[in.slot].unit_mask & units) {
        cand.blockers.push_back(i);
        rest = t.Remove(rest, in.slot);
      } else {
        others.push_back(i);
        same += in.profile == profile;
      }
    }
    // Then the smallest others while the placement is not valid yet.
    std::stable_sort(others.begin(), others.end(), [&](int a, int b) {
      return m.profile(g.instances()[a].profile).memory_mib <
             m.profile(g.instances()[b].profile).memory_mib;
    });
    auto valid = [&] {
      return t.Add(rest, slot) != kInvalidConfig && (p.is_base() || same < p.max_instances);
    };
    for (int i : others) {
      if (valid()) break;
      cand.blockers.push_back(i);
      rest = t.Remove(rest, g.instances()[i].slot);
      same -= g.instances()[i].profile == profile;
    }
    if (!valid()) continue;
    // Every blocker moves, and a job has at most one move in flight (§6): a
    // candidate that two instances of one gang job block is not one.
    bool movable = true;
    std::set<JobId> jobs;
    for (int i : cand.blockers) {
      const Instance& in = g.instances()[i];
      movable = movable && q.rights(in.job) != MoveRights::kNone && jobs.insert(in.job).second;
      cand.memory_mib += static_cast<double>(m.profile(in.profile).memory_mib);
    }
    if (movable && !cand.blockers.empty()) out->push_back(std::move(cand));
  }
}

}  // namespace

std::optional<EvacuationPlan> PlanEvacuation(const Cluster& c, const EvacuationQuery& q) {
  if (q.job == nullptr || q.job->count != 1 || !q.rights || !q.source_ok || !q.target_ok) {
    return std::nullopt;
  }
  std::vector<Opening> cands;
  if (q.gpu >= 0) {
    if (q.gpu < c.size() && q.source_ok(q.gpu))
      CandidatesOn(c, q, q.gpu, q.profile, q.start, &cands);
  } else {
    for (int rep : c.representatives()) {
      int gpu = -1;
      c.ForEachInGroup(rep, [&](int m) {
        if (!q.source_ok(m)) return true;
        gpu = m;
        return false;
      });
      if (gpu < 0) continue;
      const int profile = ResolveProfile(c.gpu(gpu).model(), *q.job);
      if (profile >= 0) CandidatesOn(c, q, gpu, profile, -1, &cands);
    }
  }
  std::stable_sort(cands.begin(), cands.end(), [](const Opening& a, const Opening& b) {
    return std::make_tuple(a.blockers.size(), a.memory_mib, a.gpu, a.start) <
           std::make_tuple(b.blockers.size(), b.memory_mib, b.gpu, b.start);
  });
  for (const Opening& cand : cands) {
    EvacuationSearch search(c, q, cand);
    if (std::optional<std::vector<MigrationMove>> moves = search.Run()) {
      EvacuationPlan plan;
      plan.gpu = cand.gpu;
      plan.profile = cand.profile;
      plan.start = cand.start;
      plan.moves = std::move(*moves);
      plan.memory_mib = cand.memory_mib;
      if (q.accept && !q.accept(plan)) continue;
      return plan;
    }
  }
  return std::nullopt;
}

bool KeepsRoomFor(const Cluster& c, const EvacuationPlan& plan, int compute_slices) {
  if (compute_slices < 1) return true;
  // Some placement of a base profile of that size fits beside busy configuration `cfg` of `g`.
  auto room = [&](int g, ConfigId cfg) {
    const GpuModel& m = c.gpu(g).model();
    const ConfigTable& t = c.gpu(g).table();
    for (int p : m.base_profiles()) {
      if (m.profile(p).compute_slices != compute_slices) continue;
      for (int slot : m.SlotsOfProfile(p)) {
        if (t.Add(cfg, slot) != kInvalidConfig) return true;
      }
    }
    return false;
  };
  bool now = false;
  for (int g = 0; g < c.size() && !now; ++g) now = room(g, c.gpu(g).busy_config());
  if (!now) return true;
  // The busy configurations after the plan: sources freed, then targets and the placement.
  std::map<int, ConfigId> after;
  auto at = [&](int g) -> ConfigId& {
    return after.try_emplace(g, c.gpu(g).busy_config()).first->second;
  };
  auto slot_of = [&](const InstanceRef& r) {
    return c.gpu(r.gpu).model().SlotOf(r.profile, r.start);
  };
  for (const MigrationMove& mv : plan.moves) {
    if (mv.from.gpu < 0 || mv.from.gpu >= c.size() || slot_of(mv.from) < 0) return true;
    ConfigId& cfg = at(mv.from.gpu);
    if (cfg == kInvalidConfig) return true;
    cfg = c.gpu(mv.from.gpu).table().Remove(cfg, slot_of(mv.from));
  }
  std::vector<InstanceRef> added;
  for (const MigrationMove& mv : plan.moves) added.push_back(mv.to);
  added.push_back({plan.gpu, plan.profile, plan.start});
  for (const InstanceRef& r : added) {
    if (r.gpu < 0 || r.gpu >= c.size() || slot_of(r) < 0) return true;
    ConfigId& cfg = at(r.gpu);
    if (cfg == kInvalidConfig) return true;
    cfg = c.gpu(r.gpu).table().Add(cfg, slot_of(r));
    if (cfg == kInvalidConfig) return true;
  }
  for (int g = 0; g < c.size(); ++g) {
    auto it = after.find(g);
    if (room(g, it == after.end() ? c.gpu(g).busy_config() : it->second)) return true;
  }
  return false;
}

void RecentArrivalSizes::Observe(int compute_slices) {
  if (compute_slices < 1) return;
  sizes_.push_back(compute_slices);
  ++counts_[compute_slices];
  if (static_cast<int>(sizes_.size()) > window_) {
    auto it = counts_.find(sizes_.front());
    if (--it->second == 0) counts_.erase(it);
    sizes_.pop_front();
  }
}

}  // namespace migsched
