// ServiceHost: what the daemon's services (JobService, NodeService) need
// from the daemon that wires them: whether changes are accepted now, the way
// to the store, and the control loop's wake-up.
//
// Thread-safety: the services call every method with the daemon's state lock
// held, and none blocks; Accepting and Persist require it
// (MIGSCHED_REQUIRES(kStateLock)), Wake takes no lock of this one (the daemon
// calls it without the lock too).
#ifndef MIGSCHED_DAEMON_SERVICE_HOST_H_
#define MIGSCHED_DAEMON_SERVICE_HOST_H_

#include <functional>
#include <vector>

#include "core/status.h"
#include "daemon/job_store.h"
#include "daemon/state_lock.h"

namespace migsched {

class ServiceHost {
 public:
  virtual ~ServiceHost() = default;
  // Why a state-changing call is refused now (OK: it is not): stopping, an
  // unusable state dir, a job store that cannot be written.
  virtual Status Accepting() const MIGSCHED_REQUIRES(kStateLock) = 0;
  // Queues `ops` for the store (retried until durable, or fail-fast);
  // `then(status)` runs with the state lock held once they are committed
  // (or failed): a lambda marked MIGSCHED_REQUIRES(kStateLock).
  virtual void Persist(std::vector<StoreOp> ops, bool retry,
                       std::function<void(const Status&)> then) MIGSCHED_REQUIRES(kStateLock) = 0;
  // Wakes the control loop (something it waits for may have changed).
  virtual void Wake() = 0;
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_SERVICE_HOST_H_
