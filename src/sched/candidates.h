// Candidate placements for one instance, and the plan that realises a choice
// (§4 steps 1 and 5 of docs/algorithms.md).
//
// A candidate is (GPU, profile, start) where `start` is a placement of the
// profile whose placement units are free of *busy* instances and where the
// busy instances plus the new one stay valid (§1). Idle instances in the way
// may be destroyed; an idle instance of exactly that profile and start is
// reused without any reconfiguration.
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_SCHED_CANDIDATES_H_
#define MIGSCHED_SCHED_CANDIDATES_H_

#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/config_table.h"
#include "core/gpu_state.h"
#include "core/plan.h"

namespace migsched {

struct Candidate {
  int gpu = -1;
  int profile = -1;                      // profile index on the GPU's model
  int start = 0;                         // placement units
  int slot = -1;                         // model slot of (base profile, start)
  ConfigId busy_after = kInvalidConfig;  // busy configuration with the new instance
  bool reuse = false;                    // an idle instance of exactly (profile, start) exists
  int destroys = 0;  // idle instances that must be destroyed first; -1: not counted
                     // (AppendCandidates with count_destroys false)
};

// Appends every candidate for `profile` on GPU `gpu` of `cluster` to `out`,
// in ascending start; none while the GPU is reserved for a waiting job
// (Cluster::reserved, §5 starvation guard) or drained (Cluster::drained). `allow_create` false
// keeps only reuse candidates (the `static` policy never reconfigures). `count_destroys` false
// leaves Candidate::destroys at -1 for a caller that needs it only to break ties among a few
// candidates (CountIdleInstancesToDestroy counts it then): the count is the costliest part of a
// candidate on a GPU with idle instances.
void AppendCandidates(const Cluster& cluster, int gpu, int profile, bool allow_create,
                      std::vector<Candidate>* out, bool count_destroys = true);

// Starts of the idle instances that must go for `profile`@`start` to be
// created on `g`: those overlapping it, then (largest first) any needed to
// respect the compute-slice total and the profile's max_instances. Excludes
// an idle instance reused in place.
std::vector<int> IdleInstancesToDestroy(const GpuState& g, int profile, int start);
// IdleInstancesToDestroy(g, profile, start).size(), without allocating (the
// candidate scan calls it for every placement of every state group).
int CountIdleInstancesToDestroy(const GpuState& g, int profile, int start);

// AppendCandidates' candidates handed to `f(const Candidate&)` one by one, in
// ascending start, instead of stored: for a caller that scores them as they
// come (the `lb+frag` choice). Same arguments and the same candidates.
template <typename F>
void ForEachCandidateOn(const Cluster& cluster, int gpu, int profile, bool allow_create,
                        bool count_destroys, F&& f) {
  if (!cluster.accepts_placements(gpu)) return;
  const GpuState& g = cluster.gpu(gpu);
  const GpuModel& m = g.model();
  const ConfigTable& t = g.table();
  const Profile& p = m.profile(profile);
  // Not enough free compute slices: no slot of the profile can be added (the
  // same answer as ConfigTable::Add for each, in O(1)).
  const std::vector<int>& slots = m.SlotsOfProfile(profile);
  if (slots.empty() || m.slots()[slots.front()].compute_slices > g.free_compute_slices()) return;
  if (!p.is_base()) {
    int busy_same = 0;
    for (const Instance& in : g.instances()) busy_same += in.busy() && in.profile == profile;
    if (busy_same >= p.max_instances) return;
  }
  // Slots holding an idle instance (of the slot's base profile): only there
  // can an instance of `profile` be reused.
  const uint64_t idle_slots = t.slot_mask(g.all_config()) & ~t.slot_mask(g.busy_config());
  // Nothing idle on the GPU means nothing to destroy.
  const bool no_idle = g.all_config() == g.busy_config();
  for (int slot : slots) {
    const ConfigId after = t.Add(g.busy_config(), slot);
    if (after == kInvalidConfig) continue;
    Candidate c;
    c.gpu = gpu;
    c.profile = profile;
    c.start = m.slots()[slot].start;
    c.slot = slot;
    c.busy_after = after;
    if (idle_slots >> slot & 1) {
      const int at = g.IndexAt(c.start);
      c.reuse = at >= 0 && !g.instances()[at].busy() && g.instances()[at].profile == profile;
    }
    if (!c.reuse && !allow_create) continue;
    if (no_idle) {
      c.destroys = 0;
    } else {
      c.destroys = count_destroys ? CountIdleInstancesToDestroy(g, profile, c.start) : -1;
    }
    f(static_cast<const Candidate&>(c));
  }
}

// §4 step 4, the tie-break among candidates whose step-3 scores tie (within
// 1e-9): the one that reuses an idle instance, then the one that destroys
// fewer idle instances, then the one on the GPU with lower util (exactly,
// UtilLess), then the lower GPU index, then the higher start. The one home
// of the rule: the policies (ReuseOrderBefore) and the migration planner's
// choice of targets use it. A strict total order.
struct Step4Key {
  int gpu = -1;
  int start = 0;
  bool reuse = false;
  int destroys = 0;
};
bool Step4Before(const Cluster& cluster, const Step4Key& a, const Step4Key& b);

// The plan placing `job` on `profile`@`start` of GPU `gpu`: destroy the idle
// instances in the way, create the instance unless one is reused, start the job.
Plan PlacementPlan(const Cluster& cluster, int gpu, int profile, int start, JobId job);

// §4 step 7, full-size reserve (`--reserve-full N`): candidates that would leave
// fewer than N GPUs able to host the model's largest profile are used only if
// no other candidate exists.
//
// A GPU "can host the largest profile" when its *busy* configuration admits
// one instance of its model's largest base profile (feasible_m > 0, §2; idle
// instances do not count, they may be destroyed). GPUs are counted per model:
// a candidate on an A100 is judged by the A100s of the cluster.
class FullSizeReserve {
 public:
  // Counts the GPUs of each model that can host its largest profile: O(GPUs).
  // `reserve` <= 0 turns the rule off.
  FullSizeReserve(const Cluster& cluster, int reserve);

  // Whether choosing `c` leaves at least `reserve` GPUs of its model able to
  // host the largest profile (always true when off). O(models).
  bool Keeps(const Cluster& cluster, const Candidate& c) const;
  // GPUs of `model` able to host its largest profile now.
  int Hosts(const GpuModel& model) const;

 private:
  int reserve_;
  std::vector<std::pair<const GpuModel*, int>> hosts_;
};

// Removes from `candidates` those that break the full-size reserve, unless
// every one of them does (then all stay). Order is kept. No effect when
// `reserve` <= 0.
void ApplyFullSizeReserve(const Cluster& cluster, int reserve, std::vector<Candidate>* candidates);

}  // namespace migsched

#endif  // MIGSCHED_SCHED_CANDIDATES_H_
