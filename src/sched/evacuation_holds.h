// The holds of §13 evacuation (docs/algorithms.md): for each waiting job that an evacuation is
// opening a placement for, that placement (closed to every other job while it is held) and the
// running jobs moved for it. A hold lasts while some of those moves are in flight: when the
// scan after their switch-over has had its chance to start the job, the hold ends
// (Scheduler::ScheduleQueue), as it does when the job starts, leaves the queue or is turned away.
//
// Units: as sched/reservation.h.
//
// Thread-safety: none; owned by one Scheduler, which serialises every call.
#ifndef MIGSCHED_SCHED_EVACUATION_HOLDS_H_
#define MIGSCHED_SCHED_EVACUATION_HOLDS_H_

#include <functional>
#include <map>
#include <vector>

#include "core/job.h"
#include "sched/reservation.h"

namespace migsched {

class EvacuationHolds {
 public:
  // Holds `placement` (hold = true) for `placement.job`, with no mover yet.
  void Hold(const Reservation& placement);
  // `mover` is moved for the hold of `waiting` (Hold first).
  void AddMover(JobId waiting, JobId mover);
  // Ends the hold of `waiting`, if it has one.
  void Drop(JobId waiting);

  // Whether `waiting` has a hold.
  bool Holds(JobId waiting) const { return movers_.count(waiting) > 0; }
  // Whether GPU `gpu` is held for a job other than `id` (kNoJob: for any job).
  bool HeldForOther(int gpu, JobId id) const;
  // The held placements, in the order they were made.
  const std::vector<Reservation>& placements() const { return placements_; }
  // The waiting jobs (ascending) whose movers are all done moving (`moving` false for each).
  std::vector<JobId> Over(const std::function<bool(JobId)>& moving) const;

 private:
  std::vector<Reservation> placements_;
  std::map<JobId, std::vector<JobId>> movers_;  // by waiting job
};

}  // namespace migsched

#endif  // MIGSCHED_SCHED_EVACUATION_HOLDS_H_
