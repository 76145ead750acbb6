// IdempotencyKeys: the client-supplied keys (Idempotency-Key, docs/api.md)
// whose first request is being stored. A second request with the same key
// waits until the first is stored (or failed), then finds its record in the
// JobTable (JobTable::ByKey) and gets it back instead of a duplicate. Job
// submissions and allocations share one gate: one key names one record.
//
// Thread-safety: none of its own; the daemon's state lock guards it (its
// owner's member is MIGSCHED_GUARDED_BY(kStateLock)). Wait releases that lock
// (passed in, held on entry and on return) while it waits.
#ifndef MIGSCHED_DAEMON_IDEMPOTENCY_KEYS_H_
#define MIGSCHED_DAEMON_IDEMPOTENCY_KEYS_H_

#include <condition_variable>
#include <set>
#include <string>

#include "daemon/state_lock.h"

namespace migsched {

class IdempotencyKeys {
 public:
  // Waits (state lock released meanwhile) until no first request of `key`
  // is being stored. An empty key returns at once.
  void Wait(StateMutex* state_mu, const std::string& key) MIGSCHED_REQUIRES(kStateLock) {
    if (key.empty()) return;
    state_mu->Wait(cv_, [&] { return !pending_.count(key); });
  }
  // The first request of `key` is being stored (a no-op for an empty key).
  void Begin(const std::string& key) {
    if (!key.empty()) pending_.insert(key);
  }
  // It is stored, or failed: the requests waiting for `key` go on.
  void End(const std::string& key) {
    if (key.empty()) return;
    pending_.erase(key);
    cv_.notify_all();
  }

 private:
  std::set<std::string> pending_;
  std::condition_variable cv_;
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_IDEMPOTENCY_KEYS_H_
