// Pins: occupying placements chosen elsewhere, not by the queue (a cluster controller that
// planned every GPU of a cluster with this same core, a daemon finding its jobs again after a
// restart), and the holds of reservations and placeholders made that way. The rules of a free
// placement and the errors are those of Scheduler::PlaceAt, Adopt and Hold (sched/scheduler.h),
// which call these.
//
// Units: GPUs as Cluster indexes; profiles and starts as sched/decision.h InstanceRef.
//
// Thread-safety: none; owned and called by one Scheduler.
#ifndef MIGSCHED_SCHED_PINS_H_
#define MIGSCHED_SCHED_PINS_H_

#include <map>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/job.h"
#include "core/plan.h"
#include "core/status.h"
#include "sched/decision.h"

namespace migsched {

// The plan that occupies exactly `where` for (`holder`, `id`), applied to `cluster`. `existing`
// true: each placement must be an idle instance that exists (a kStart; any drain or reservation
// flag allowed); false: each must be free (its GPU accepts placements, no busy instance overlaps
// it, counting the earlier placements of `where`, and it fits beside the busy ones), and idle
// instances in the way are destroyed (candidates.h PlacementPlan). Each placement's last step is
// held by `holder`. Errors, with every GPU rolled back to its state before the call:
// kInvalidArgument (no such GPU, profile or placement), kFailedPrecondition (not free, or not an
// idle instance there, and why), kInternal (a plan ApplyPlan rejects: a bug).
StatusOr<Plan> ApplyPins(Cluster* cluster, Holder holder, JobId id,
                         const std::vector<InstanceRef>& where, bool existing);

// The instances each hold (a reservation's or a placeholder's, by holder and id) occupies.
class PinnedHolds {
 public:
  // The instances of hold (`holder`, `id`), or nullptr.
  const std::vector<InstanceRef>* Find(Holder holder, JobId id) const;
  // Records a new hold (Find returned nullptr for it).
  void Add(Holder holder, JobId id, std::vector<InstanceRef> where);
  // Ends a hold (nothing if there is none).
  void End(Holder holder, JobId id);
  // The hold's instances that `which` names, each once (all of them when `which` is empty).
  // kNotFound for an unknown hold; kInvalidArgument naming the first instance of `which` the
  // hold does not have (by Cluster::GpuName of `cluster`).
  StatusOr<std::vector<InstanceRef>> Select(Holder holder, JobId id,
                                            const std::vector<InstanceRef>& which,
                                            const Cluster& cluster) const;
  // Removes `taken` (from Select) from the hold; the hold ends when none is left.
  void Take(Holder holder, JobId id, const std::vector<InstanceRef>& taken);

 private:
  std::map<std::pair<Holder, JobId>, std::vector<InstanceRef>> holds_;
};

}  // namespace migsched

#endif  // MIGSCHED_SCHED_PINS_H_
