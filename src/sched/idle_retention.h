// Idle-instance retention (docs/algorithms.md §4, option idle_ttl_s): which instances are idle
// and since when, so that the scheduler destroys those unused for idle_ttl_s seconds, oldest
// first; and the counts of the instances kept for reuse that a job then took, and of those that
// expired. Whether retention is on (idle_ttl_s >= 0, a policy that keeps idle instances, no setup
// layout) is the scheduler's call (Scheduler::ExpireIdleInstances): this class keeps the books
// either way.
//
// An instance's idle time (`since`) begins when a plan step leaves it idle: a create (the
// instance is made before its job starts, or for nobody), a release (its job ended: the
// instance is *kept*), the source of a finished move (migrate-end), the target of an aborted one
// (migrate-abort). It ends with a start or a migrate-begin onto it (a *reuse* when it was kept)
// and with a destroy.
//
// Thread-safety: none; owned by one Scheduler, which serialises every call.
#ifndef MIGSCHED_SCHED_IDLE_RETENTION_H_
#define MIGSCHED_SCHED_IDLE_RETENTION_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "core/cluster.h"
#include "core/plan.h"
#include "core/status.h"

namespace migsched {

class IdleRetention {
 public:
  // The books after `plan` was applied at `now_s` (seconds, the scheduler's clock).
  void Track(const Plan& plan, double now_s);

  // The destroys of the instances idle since `now_s - ttl_s` or earlier, oldest first, not
  // applied. kInternal when one of them is not an idle instance of `cluster` (the books and the
  // cluster disagree: a bug).
  StatusOr<Plan> Due(const Cluster& cluster, double now_s, double ttl_s) const;

  // When the longest-idle instance became idle; nullopt when none is idle.
  std::optional<double> OldestSince() const;

  // `n` more instances expired (their Due plan was applied).
  void CountExpired(int64_t n) { expirations_ += n; }

  // Starts onto an instance a job had left idle (each saved a destroy and a create).
  int64_t kept_reuses() const { return kept_reuses_; }
  // Instances destroyed because their idle time ran out (CountExpired).
  int64_t expirations() const { return expirations_; }

 private:
  using SlotKey = std::pair<int, int>;  // (gpu, start)
  struct Idle {
    double since_s = 0;
    bool kept = false;  // left idle by a job that ended (not freshly created)
  };
  void Erase(const SlotKey& key);
  void Set(const SlotKey& key, bool kept, double now_s);

  std::map<SlotKey, Idle> idle_;
  std::set<std::tuple<double, int, int>> by_time_;  // (since, gpu, start)
  int64_t kept_reuses_ = 0;
  int64_t expirations_ = 0;
};

}  // namespace migsched

#endif  // MIGSCHED_SCHED_IDLE_RETENTION_H_
