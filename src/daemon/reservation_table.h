// ReservationTable: the placements the daemon holds for cluster controllers
// (docs/api.md: reservations). Each reservation is named by its owner key,
// holds its placements in the scheduler as one hold (Holder::kReservation,
// `hold_id`), and expires by itself. A reservation is *ready* once its
// instances exist on the hardware and its record is committed: only then is
// it shown and can it be bound by an allocation.
//
// Thread-safety: none; the daemon's state lock guards it.
#ifndef MIGSCHED_DAEMON_RESERVATION_TABLE_H_
#define MIGSCHED_DAEMON_RESERVATION_TABLE_H_

#include <map>
#include <string>
#include <vector>

#include "core/job.h"
#include "daemon/job_store.h"
#include "sched/scheduler.h"

namespace migsched {

struct HeldReservation {
  ReservationRecord record;       // owner, placements (NVML terms), times
  std::vector<InstanceRef> refs;  // the same placements in the cluster
  JobId hold_id = kNoJob;         // the scheduler's hold
  bool ready = false;             // created on the hardware and committed
};

class ReservationTable {
 public:
  // A new hold id (1, 2, ...; never reused while the daemon runs).
  JobId NextHoldId() { return next_hold_++; }
  HeldReservation* Find(const std::string& owner);
  const HeldReservation* Find(const std::string& owner) const;
  // The reservation holding hold `hold_id`, or nullptr.
  const HeldReservation* FindByHold(JobId hold_id) const;
  void Put(HeldReservation r);
  void Erase(const std::string& owner);
  // Ready reservations whose owner starts with `prefix`, oldest first.
  std::vector<const HeldReservation*> WithPrefix(const std::string& prefix) const;
  // Owners of the ready reservations that expire at or before `now_unix`.
  std::vector<std::string> Expired(double now_unix) const;
  size_t size() const { return by_owner_.size(); }

 private:
  std::map<std::string, HeldReservation> by_owner_;
  JobId next_hold_ = 1;
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_RESERVATION_TABLE_H_
