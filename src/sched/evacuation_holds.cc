#include "sched/evacuation_holds.h"

#include <algorithm>

namespace migsched {

void EvacuationHolds::Hold(const Reservation& placement) {
  movers_[placement.job];
  placements_.push_back(placement);
}

void EvacuationHolds::AddMover(JobId waiting, JobId mover) { movers_[waiting].push_back(mover); }

void EvacuationHolds::Drop(JobId waiting) {
  if (!movers_.erase(waiting)) return;
  std::erase_if(placements_, [waiting](const Reservation& h) { return h.job == waiting; });
}

bool EvacuationHolds::HeldForOther(int gpu, JobId id) const {
  return std::any_of(placements_.begin(), placements_.end(),
                     [&](const Reservation& h) { return h.gpu == gpu && h.job != id; });
}

std::vector<JobId> EvacuationHolds::Over(const std::function<bool(JobId)>& moving) const {
  std::vector<JobId> over;
  for (const auto& [job, movers] : movers_) {
    if (std::none_of(movers.begin(), movers.end(), moving)) over.push_back(job);
  }
  return over;
}

}  // namespace migsched
