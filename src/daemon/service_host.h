// ServiceHost: what the daemon's services (JobService, NodeService) need
// from the daemon that wires them: whether changes are accepted now, the way
// to the store, and the control loop's wake-up.
//
// Thread-safety: every method is called with the daemon's state lock held
// and must not block.
#ifndef MIGSCHED_DAEMON_SERVICE_HOST_H_
#define MIGSCHED_DAEMON_SERVICE_HOST_H_

#include <functional>
#include <vector>

#include "core/status.h"
#include "daemon/job_store.h"

namespace migsched {

class ServiceHost {
 public:
  virtual ~ServiceHost() = default;
  // Why a state-changing call is refused now (OK: it is not): stopping, an
  // unusable state dir, a job store that cannot be written.
  virtual Status Accepting() const = 0;
  // Queues `ops` for the store (retried until durable, or fail-fast);
  // `then(status)` runs with the state lock held once they are committed
  // (or failed).
  virtual void Persist(std::vector<StoreOp> ops, bool retry,
                       std::function<void(const Status&)> then) = 0;
  // Wakes the control loop (something it waits for may have changed).
  virtual void Wake() = 0;
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_SERVICE_HOST_H_
