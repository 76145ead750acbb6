// The daemon's state lock: the one lock that guards the state of all the
// daemon's parts (the node model, InstanceSync's view of the backend, the
// job and node services' tables, the moves, the control loop's own state),
// and the names Clang's thread-safety analysis checks its use by
// (thread_annotations.h, scripts/thread-safety-check.sh).
//
// The lock is one StateMutex, owned by the daemon and passed to each part by
// pointer; the parts call each other with it held. The analysis compares
// locks by how they are spelled, so each part's own pointer
// (`jobs_->state_mu_`, `node_->state_mu_`) would be a lock of its own to it.
// It therefore knows the state lock by one name, kStateLock, a capability
// with no state: StateMutex::Lock and StateLock acquire it, what the lock
// guards is MIGSCHED_GUARDED_BY(kStateLock), a function that needs it held
// is MIGSCHED_REQUIRES(kStateLock), and one that takes it itself is
// MIGSCHED_EXCLUDES(kStateLock). The price: the analysis cannot tell two
// daemons' locks apart (tests run several in one process); no daemon's code
// touches another's state.
//
// A callback that its caller runs with the lock held (InstanceSync::Done,
// ServiceHost::Persist's `then`) is a lambda marked
// MIGSCHED_REQUIRES(kStateLock): its body is checked as holding the lock;
// the std::function that carries it is not checked.
//
// Thread-safety: StateMutex is a mutex (not recursive).
#ifndef MIGSCHED_DAEMON_STATE_LOCK_H_
#define MIGSCHED_DAEMON_STATE_LOCK_H_

#include <condition_variable>
#include <mutex>
#include <utility>

#include "daemon/thread_annotations.h"

namespace migsched {

// The capability the analysis knows the state lock by (never defined: it
// only appears in annotations).
class MIGSCHED_CAPABILITY("mutex") StateCapability {};
extern const StateCapability kStateLock;

class StateMutex {
 public:
  // (Not analysed inside: std::mutex carries no annotations.)
  void Lock() MIGSCHED_ACQUIRE(kStateLock) MIGSCHED_NO_THREAD_SAFETY_ANALYSIS { mu_.lock(); }
  void Unlock() MIGSCHED_RELEASE(kStateLock) MIGSCHED_NO_THREAD_SAFETY_ANALYSIS { mu_.unlock(); }
  // Waits on `cv` until `ready()` (called with the lock held): the lock is
  // held on entry and on return, and released while waiting (as
  // std::condition_variable::wait does with a std::unique_lock).
  template <typename Pred>
  void Wait(std::condition_variable& cv, Pred ready) MIGSCHED_REQUIRES(kStateLock) {
    std::unique_lock<std::mutex> lock(mu_, std::adopt_lock);
    cv.wait(lock, std::move(ready));
    lock.release();  // still held, by the caller
  }

 private:
  std::mutex mu_;
};

// Holds the state lock for its scope.
class MIGSCHED_SCOPED_CAPABILITY StateLock {
 public:
  explicit StateLock(StateMutex* mu) MIGSCHED_ACQUIRE(kStateLock) : mu_(mu) { mu_->Lock(); }
  ~StateLock() MIGSCHED_RELEASE() { mu_->Unlock(); }
  StateLock(const StateLock&) = delete;
  StateLock& operator=(const StateLock&) = delete;

 private:
  StateMutex* mu_;
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_STATE_LOCK_H_
