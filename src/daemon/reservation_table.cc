#include "daemon/reservation_table.h"

#include <algorithm>

namespace migsched {

HeldReservation* ReservationTable::Find(const std::string& owner) {
  auto it = by_owner_.find(owner);
  return it == by_owner_.end() ? nullptr : &it->second;
}

const HeldReservation* ReservationTable::Find(const std::string& owner) const {
  auto it = by_owner_.find(owner);
  return it == by_owner_.end() ? nullptr : &it->second;
}

const HeldReservation* ReservationTable::FindByHold(JobId hold_id) const {
  for (const auto& [owner, r] : by_owner_) {
    if (r.hold_id == hold_id) return &r;
  }
  return nullptr;
}

void ReservationTable::Put(HeldReservation r) {
  const std::string owner = r.record.owner;
  by_owner_[owner] = std::move(r);
}

void ReservationTable::Erase(const std::string& owner) { by_owner_.erase(owner); }

std::vector<const HeldReservation*> ReservationTable::WithPrefix(const std::string& prefix) const {
  std::vector<const HeldReservation*> out;
  for (auto it = by_owner_.lower_bound(prefix); it != by_owner_.end(); ++it) {
    if (!it->first.starts_with(prefix)) break;
    if (it->second.ready) out.push_back(&it->second);
  }
  std::stable_sort(out.begin(), out.end(), [](const HeldReservation* a, const HeldReservation* b) {
    return a->record.created_at < b->record.created_at;
  });
  return out;
}

std::vector<std::string> ReservationTable::Expired(double now_unix) const {
  std::vector<std::string> out;
  for (const auto& [owner, r] : by_owner_) {
    if (r.ready && r.record.expires_at <= now_unix) out.push_back(owner);
  }
  return out;
}

}  // namespace migsched
