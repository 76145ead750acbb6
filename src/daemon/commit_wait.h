// How an API call that changed state waits for its commit (docs/daemon.md,
// "Durability"): the change is made in memory under the state lock and
// queued on the StoreWriter; the call then waits, without the lock, for the
// writer's answer, at most kCommitWaitS.
//
// Thread-safety: free functions.
#ifndef MIGSCHED_DAEMON_COMMIT_WAIT_H_
#define MIGSCHED_DAEMON_COMMIT_WAIT_H_

#include <fmt/format.h>

#include <chrono>
#include <future>
#include <string_view>

#include "core/status.h"

namespace migsched {

// How long an API call that changed state waits for its commit, seconds.
inline constexpr double kCommitWaitS = 10;

// The commit's outcome from `f`, or kUnavailable when it did not come within
// kCommitWaitS (the change is in effect and stored once the store can be
// written; `what` names it in the message). A real-time wait on the writer
// thread, not the daemon's Clock.
inline Status WaitForCommit(std::future<Status>& f, std::string_view what) {
  if (f.wait_for(std::chrono::duration<double>(kCommitWaitS)) != std::future_status::ready) {
    return UnavailableError(fmt::format(
        "{} is in effect but could not be stored within {} s; it is stored when the job store "
        "can be written",
        what, kCommitWaitS));
  }
  return f.get();
}

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_COMMIT_WAIT_H_
