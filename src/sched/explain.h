// "Can it run, and if not, why": the one explainer. It returns verdicts, not
// sentences; each driver words them for its users (the simulator's and the
// daemon's rejections, the cluster planner's Slurm reasons, the Kubernetes
// extender's per-node FailedScheduling reasons).
//
//   never   CanEverHold: a set of GPUs (the cluster, or one node's) can never
//           hold every part of a request at once, even empty, and why (a
//           profile no GPU offers; at most N instances of a profile; more
//           compute slices together than the GPUs have).
//   no room ExplainRoom / NoPlacementReason: the request could run but no
//           placement of a part is free now, GPU by GPU, and why (no slice
//           free, too few compute slices, the instance limit, or the free
//           slices lie where the profile cannot start: external
//           fragmentation, docs/algorithms.md §4).
//   fits    neither: a free placement exists for every part (whether the parts
//           fit together is the placement's question, not the explainer's).
//
// The checks of CanEverHold are necessary conditions: a request that passes
// them may still never fit (parts whose placements exclude each other on
// every GPU), and the drivers that place say so in their own words.
//
// Slices are placement units (memory slices, docs/mig-hardware.md §1); a free
// slice is one no busy instance covers (an idle instance there is destroyed
// to make room, §4); the placements are the model's (§1).
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_SCHED_EXPLAIN_H_
#define MIGSCHED_SCHED_EXPLAIN_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/gpu_model.h"
#include "core/gpu_state.h"

namespace migsched {

// One part of a request: `count` instances of one profile, held at once.
struct AskedPart {
  // The part's profile on a model: its index into model.profiles(), or -1
  // when the model does not offer it (a profile name, or a gpu_fraction that
  // each model resolves to its own profile).
  std::function<int(const GpuModel&)> profile_on;
  int count = 1;
};

// A part asking for `count` instances of the profile named `profile`.
AskedPart PartOfProfile(const std::string& profile, int count);

// Why a set of GPUs can never hold a request, or kCan.
struct NeverVerdict {
  enum class Kind {
    kCan,            // none of the reasons below
    kNotOffered,     // no GPU of the set offers part `part`'s profile
    kTooFew,         // at most `most` instances of part `part` at once (0: the
                     // policy's layout has none), fewer than it asks
    kTooManySlices,  // the parts need `need` compute slices together; the GPUs
                     // have `most`
  };
  Kind kind = Kind::kCan;
  int part = -1;  // index into the parts
  int most = 0;
  int need = 0;
  bool can() const { return kind == Kind::kCan; }
};

// capacity(gpu, profile): the most instances of `profile` GPU `gpu` holds at
// once (PlacementPolicy::Capacity, or MaxInstancesAtOnce for the hardware).
using CapacityFn = std::function<int(int gpu, int profile)>;

// Whether GPUs `gpus` (indexes into c) can ever hold every part of `parts` at
// once. The first reason found, in this order: a part no GPU offers; a part
// with fewer instances at once than it asks (the parts in order); the
// compute slices of all parts together (each instance counted at the fewest
// compute slices its profile has on these GPUs) above those of the GPUs that
// offer some part.
NeverVerdict CanEverHold(const Cluster& c, const std::vector<int>& gpus,
                         const std::vector<AskedPart>& parts, const CapacityFn& capacity);

// Whether `profile` (an index into gs.model().profiles()) has a placement no
// busy instance covers now, and if not, what stands in the way, in this
// order of the checks.
struct GpuRoom {
  enum class Kind {
    kFree,           // a placement is free (why is "")
    kNoSliceFree,    // "no slice free"
    kInstanceLimit,  // "already 7 instances of 1g.5gb, the most a GPU has"
    kComputeSlices,  // "only 1 of 7 compute slices free, 2g.10gb needs 2"
    kTooFewSlices,   // "slices 6 free but 2g.10gb needs 2"
    kFragmented,     // enough free slices, but none where the profile starts:
                     // "slices 4-7 free but 4g.20gb goes only at 0-3 (1g.5gb at 1 busy)"
  };
  Kind kind = Kind::kFree;
  std::string why;
};
GpuRoom ExplainGpuRoom(const GpuState& gs, int profile);

// ExplainGpuRoom's words alone ("" when a placement is free).
std::string NoPlacementReason(const GpuState& gs, int profile);

// Per part of a request on GPUs `gpus`: how many of them have a free placement
// of it now, and for each that has none, why (the GPU's index into c and
// NoPlacementReason, or unavailable(gpu) when that is not empty: a drained
// GPU). GPUs that do not offer the part's profile are left out.
struct PartRoom {
  int free_places = 0;
  std::vector<std::pair<int, std::string>> blocked;
};
std::vector<PartRoom> ExplainRoom(const Cluster& c, const std::vector<int>& gpus,
                                  const std::vector<AskedPart>& parts,
                                  const std::function<std::string(int gpu)>& unavailable);

// Placement units of `mask` as ranges: 0b11110000 -> "4-7", 0b101 -> "0, 2".
std::string UnitRanges(uint64_t mask, int units);

}  // namespace migsched

#endif  // MIGSCHED_SCHED_EXPLAIN_H_
