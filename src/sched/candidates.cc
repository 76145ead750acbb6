#include "sched/candidates.h"

#include <algorithm>
#include <array>
#include <utility>

namespace migsched {

std::vector<int> IdleInstancesToDestroy(const GpuState& g, int profile, int start) {
  const GpuModel& m = g.model();
  const int slot = m.SlotOf(profile, start);
  const uint64_t units = m.slots()[slot].unit_mask;
  std::vector<int> out;
  std::vector<const Instance*> kept;
  int cs = m.profile(profile).compute_slices;
  int same_profile = 1;  // the new instance
  for (const Instance& in : g.instances()) {
    if (in.busy()) {
      cs += m.profile(in.profile).compute_slices;
      same_profile += in.profile == profile;
      continue;
    }
    if (in.start == start && in.profile == profile) continue;  // reused, not destroyed
    if (m.slots()[in.slot].unit_mask & units) {
      out.push_back(in.start);
    } else {
      kept.push_back(&in);
    }
  }
  // Reusing in place: the instance itself is already counted as "new".
  const int reused = g.IndexAt(start);
  const bool reuse =
      reused >= 0 && !g.instances()[reused].busy() && g.instances()[reused].profile == profile;
  if (reuse) return out;
  for (const Instance* in : kept) {
    cs += m.profile(in->profile).compute_slices;
    same_profile += in->profile == profile;
  }
  // Drop kept idle instances, largest first, until compute and max_instances fit.
  std::stable_sort(kept.begin(), kept.end(), [&](const Instance* a, const Instance* b) {
    return m.profile(a->profile).compute_slices > m.profile(b->profile).compute_slices;
  });
  const int max_same = m.profile(profile).max_instances;
  for (const Instance* in : kept) {
    const bool over_cs = cs > m.compute_slices();
    const bool over_count = same_profile > max_same && in->profile == profile;
    if (!over_cs && !over_count) continue;
    if (over_cs || over_count) {
      out.push_back(in->start);
      cs -= m.profile(in->profile).compute_slices;
      same_profile -= in->profile == profile;
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

int CountIdleInstancesToDestroy(const GpuState& g, int profile, int start) {
  // IdleInstancesToDestroy without its allocations: the same steps, counted.
  const GpuModel& m = g.model();
  const int slot = m.SlotOf(profile, start);
  const uint64_t units = m.slots()[slot].unit_mask;
  int out = 0;
  // Kept idle instances as (compute slices, same profile?), at most one per
  // placement unit (<= 64, GpuModel).
  std::array<std::pair<int, bool>, 64> kept;
  int n_kept = 0;
  int cs = m.profile(profile).compute_slices;
  int same_profile = 1;  // the new instance
  bool reuse = false;
  for (const Instance& in : g.instances()) {
    const int in_cs = m.profile(in.profile).compute_slices;
    if (in.busy()) {
      cs += in_cs;
      same_profile += in.profile == profile;
      continue;
    }
    if (in.start == start && in.profile == profile) {
      reuse = true;  // reused, not destroyed
      continue;
    }
    if (m.slots()[in.slot].unit_mask & units) {
      ++out;
    } else if (n_kept < static_cast<int>(kept.size())) {
      kept[n_kept++] = {in_cs, in.profile == profile};
    }
  }
  if (reuse) return out;
  for (int i = 0; i < n_kept; ++i) {
    cs += kept[i].first;
    same_profile += kept[i].second;
  }
  // Largest first, ties in start order (a stable insertion sort).
  for (int i = 1; i < n_kept; ++i) {
    for (int j = i; j > 0 && kept[j - 1].first < kept[j].first; --j)
      std::swap(kept[j - 1], kept[j]);
  }
  const int max_same = m.profile(profile).max_instances;
  for (int i = 0; i < n_kept; ++i) {
    const bool over_cs = cs > m.compute_slices();
    const bool over_count = same_profile > max_same && kept[i].second;
    if (over_cs || over_count) {
      ++out;
      cs -= kept[i].first;
      same_profile -= kept[i].second;
    }
  }
  return out;
}

void AppendCandidates(const Cluster& cluster, int gpu, int profile, bool allow_create,
                      std::vector<Candidate>* out, bool count_destroys) {
  ForEachCandidateOn(cluster, gpu, profile, allow_create, count_destroys,
                     [out](const Candidate& c) { out->push_back(c); });
}

bool Step4Before(const Cluster& cluster, const Step4Key& a, const Step4Key& b) {
  if (a.reuse != b.reuse) return a.reuse;
  if (a.destroys != b.destroys) return a.destroys < b.destroys;
  const GpuState& ga = cluster.gpu(a.gpu);
  const GpuState& gb = cluster.gpu(b.gpu);
  const int ua = ga.busy_compute_slices(), ub = gb.busy_compute_slices();
  const int ta = ga.model().compute_slices(), tb = gb.model().compute_slices();
  if (UtilLess(ua, ta, ub, tb)) return true;
  if (UtilLess(ub, tb, ua, ta)) return false;
  if (a.gpu != b.gpu) return a.gpu < b.gpu;
  return a.start > b.start;
}

Plan PlacementPlan(const Cluster& cluster, int gpu, int profile, int start, JobId job) {
  const GpuState& g = cluster.gpu(gpu);
  Plan plan;
  if (g.all_config() != g.busy_config()) {  // idle instances exist: some may be in the way
    for (int s : IdleInstancesToDestroy(g, profile, start)) {
      plan.steps.push_back(
          {StepKind::kDestroy, gpu, g.instances()[g.IndexAt(s)].profile, s, kNoJob});
    }
  }
  const int at = g.IndexAt(start);
  const bool reuse = at >= 0 && !g.instances()[at].busy() && g.instances()[at].profile == profile;
  if (!reuse) plan.steps.push_back({StepKind::kCreate, gpu, profile, start, kNoJob});
  plan.steps.push_back({StepKind::kStart, gpu, profile, start, job});
  return plan;
}

namespace {

// Whether busy configuration `c` of `table` admits the model's largest base profile.
bool AdmitsLargest(const ConfigTable& table, ConfigId c) {
  return table.Feasible(c, table.num_terms() - 1) > 0;
}

}  // namespace

FullSizeReserve::FullSizeReserve(const Cluster& cluster, int reserve) : reserve_(reserve) {
  if (reserve_ <= 0) return;
  for (const GpuModel* m : cluster.models()) hosts_.emplace_back(m, 0);
  // O(distinct states): every GPU of a group admits the largest profile or not alike.
  for (int gpu : cluster.representatives()) {
    const GpuState& g = cluster.gpu(gpu);
    if (!AdmitsLargest(g.table(), g.busy_config())) continue;
    for (auto& [m, n] : hosts_) n += m == &g.model() ? cluster.represented(gpu) : 0;
  }
}

int FullSizeReserve::Hosts(const GpuModel& model) const {
  for (const auto& [m, n] : hosts_) {
    if (m == &model) return n;
  }
  return 0;
}

bool FullSizeReserve::Keeps(const Cluster& cluster, const Candidate& c) const {
  if (reserve_ <= 0) return true;
  const GpuState& g = cluster.gpu(c.gpu);
  const bool before = AdmitsLargest(g.table(), g.busy_config());
  const bool after = AdmitsLargest(g.table(), c.busy_after);
  return Hosts(g.model()) - (before && !after ? 1 : 0) >= reserve_;
}

void ApplyFullSizeReserve(const Cluster& cluster, int reserve, std::vector<Candidate>* candidates) {
  if (reserve <= 0 || candidates->empty()) return;
  const FullSizeReserve r(cluster, reserve);
  std::vector<Candidate> kept;
  for (const Candidate& c : *candidates) {
    if (r.Keeps(cluster, c)) kept.push_back(c);
  }
  if (!kept.empty()) candidates->swap(kept);
}

}  // namespace migsched
