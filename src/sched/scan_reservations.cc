#include "sched/scan_reservations.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>

#include "core/numbers.h"

namespace migsched {

std::vector<Reservation> LookAheadReservations(const Cluster& cluster, JobId id, const Job& job,
                                               double now_s, const ExpectedEndFn& expected_end,
                                               const LookAheadRules& rules) {
  struct Best {
    double free_at;
    int wait_cs;
    int gpu;
    int profile;
    int start;
  };
  struct Busy {
    double end;
    int slot;
    int cs;
  };
  std::vector<std::pair<const GpuModel*, int>> profile_on;
  for (const GpuModel* m : cluster.models()) profile_on.emplace_back(m, ResolveProfile(*m, job));
  std::vector<Best> per_gpu;
  std::vector<Busy> busy;
  for (int g = 0; g < cluster.size(); ++g) {
    if (cluster.reserved(g)) continue;  // reserved or held for another job
    const GpuState& gs = cluster.gpu(g);
    const GpuModel& m = gs.model();
    const ConfigTable& t = gs.table();
    int profile = -1;
    for (const auto& [model, p] : profile_on) profile = model == &m ? p : profile;
    if (profile < 0) continue;
    // The busy instances by expected end; a migration source frees its
    // instance at the switch-over: soon; a hold, never by itself.
    busy.clear();
    for (const Instance& in : gs.instances()) {
      if (!in.busy()) continue;
      busy.push_back({in.migration == MigrationRole::kSource ? now_s
                      : in.runs_job()                        ? expected_end(in.job)
                                                             : kInf,
                      in.slot, m.profile(in.profile).compute_slices});
    }
    std::stable_sort(busy.begin(), busy.end(),
                     [](const Busy& a, const Busy& b) { return a.end < b.end; });
    std::optional<Best> best;
    for (int slot : m.SlotsOfProfile(profile)) {
      const uint64_t units = m.slots()[slot].unit_mask;
      ConfigId rest = gs.busy_config();
      double free_at = now_s;
      int wait_cs = 0;
      auto wait_for = [&](const Busy& b) {
        rest = t.Remove(rest, b.slot);
        free_at = std::max(free_at, b.end);
        wait_cs += b.cs;
      };
      // The instances overlapping the placement, then the soonest-ending
      // others while the compute slices do not suffice.
      for (const Busy& b : busy) {
        if (m.slots()[b.slot].unit_mask & units) wait_for(b);
      }
      for (const Busy& b : busy) {
        if (t.Add(rest, slot) != kInvalidConfig) break;
        if (!(m.slots()[b.slot].unit_mask & units)) wait_for(b);
      }
      if (t.Add(rest, slot) == kInvalidConfig) continue;
      Best b{free_at, wait_cs, g, profile, m.slots()[slot].start};
      if (!best || std::tie(b.free_at, b.wait_cs) < std::tie(best->free_at, best->wait_cs))
        best = b;
    }
    if (best) per_gpu.push_back(*best);
  }
  const size_t n = std::min(per_gpu.size(), static_cast<size_t>(std::max(1, job.count)));
  std::partial_sort(
      per_gpu.begin(), per_gpu.begin() + n, per_gpu.end(), [](const Best& a, const Best& b) {
        return std::tie(a.free_at, a.wait_cs, a.gpu) < std::tie(b.free_at, b.wait_cs, b.gpu);
      });
  if (n < static_cast<size_t>(std::max(1, job.count))) return {};  // a gang needs all
  // The job starts when its last placement frees.
  double start = now_s;
  for (size_t i = 0; i < n; ++i) start = std::max(start, per_gpu[i].free_at);
  // §13: a reservation whose start is unknown is made only when allowed
  // (options.reservation_needs_ends false, the strict starvation guard).
  if (std::isinf(start) && rules.needs_ends) return {};
  // §13 horizon: no GPU is held back for a start predicted further ahead. An unknown start is no
  // prediction: needs_ends alone decides for it (strict keeps the guard).
  if (rules.horizon_s >= 0 && std::isfinite(start) && start - now_s > rules.horizon_s) return {};
  // §13 slack: how much later than `start` a backfilled job may end (the
  // reserved job's duration × the option; 0 when the duration is unknown).
  const double slack = job.time_limit_s > 0 ? rules.slack_factor * job.time_limit_s : 0;
  std::vector<Reservation> out;
  for (size_t i = 0; i < n; ++i) {
    const Best& b = per_gpu[i];
    out.push_back({id, b.gpu, b.profile, b.start, b.free_at, start, false, slack});
  }
  return out;
}

bool KeepsReservation(const GpuState& g, const Reservation& r, int slot,
                      const ExpectedEndFn& expected_end) {
  const GpuModel& m = g.model();
  const ConfigTable& t = g.table();
  const int reserved_slot = m.SlotOf(r.profile, r.start);
  if (reserved_slot < 0) return false;
  // The busy instances still running at r.start_s (a migration source is
  // gone by then; unknown ends count as running), the new one, the reserved.
  ConfigId future = kEmptyConfig;
  for (const Instance& in : g.instances()) {
    if (!in.busy() || in.migration == MigrationRole::kSource) continue;
    if (expected_end(in.job) <= r.start_s) continue;
    future = t.Add(future, in.slot);
    if (future == kInvalidConfig) return false;
  }
  future = t.Add(future, slot);
  if (future == kInvalidConfig) return false;
  return t.Add(future, reserved_slot) != kInvalidConfig;
}

void ScanReservations::Begin() {
  all_.clear();
  closed_.assign(cluster_->size(), 0);
}

void ScanReservations::Add(const std::vector<Reservation>& r) {
  all_.insert(all_.end(), r.begin(), r.end());
}

void ScanReservations::DropFor(JobId id) {
  std::erase_if(all_, [id](const Reservation& r) { return r.job == id; });
}

void ScanReservations::CloseFor(JobId id, const EvacuationHolds& holds) {
  std::vector<char> want(cluster_->size(), 0);
  for (const Reservation& r : all_) {
    if (r.job != id) want[r.gpu] = 1;
  }
  for (const Reservation& h : holds.placements()) {
    if (h.job != id) want[h.gpu] = 1;
  }
  if (closed_.size() != want.size()) closed_.assign(want.size(), 0);
  for (int g = 0; g < cluster_->size(); ++g) {
    if (want[g] != closed_[g]) cluster_->SetReserved(g, want[g] != 0);
  }
  closed_ = std::move(want);
}

std::vector<int> ScanReservations::BackfillGpus(JobId id, double end_s,
                                                const EvacuationHolds& holds) const {
  std::vector<int> opened;
  for (const Reservation& r : all_) {
    if (r.job != id && end_s <= r.start_s + r.slack_s) opened.push_back(r.gpu);
  }
  std::erase_if(opened, [&](int g) {
    for (const Reservation& r : all_) {
      if (r.gpu == g && r.job != id && end_s > r.start_s + r.slack_s) return true;
    }
    return holds.HeldForOther(g, id);
  });
  std::sort(opened.begin(), opened.end());
  opened.erase(std::unique(opened.begin(), opened.end()), opened.end());
  return opened;
}

std::vector<char> ScanReservations::OwnGpus(JobId id) const {
  std::vector<char> own(cluster_->size(), 0);
  for (const Reservation& r : all_) {
    if (r.job == id) own[r.gpu] = 1;
  }
  return own;
}

bool ScanReservations::Has(JobId id) const {
  for (const Reservation& r : all_) {
    if (r.job == id) return true;
  }
  return false;
}

void ScanReservations::End(const EvacuationHolds& holds) {
  CloseFor(kNoJob, holds);
  for (int g = 0; g < cluster_->size(); ++g) cluster_->SetReserved(g, false);
  closed_.assign(cluster_->size(), 0);
}

void ScanReservations::SetFlags(bool on, const EvacuationHolds& holds) {
  for (const Reservation& r : all_) cluster_->SetReserved(r.gpu, on);
  for (const Reservation& h : holds.placements()) cluster_->SetReserved(h.gpu, on);
}

}  // namespace migsched
