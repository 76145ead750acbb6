// Recovery: what a starting daemon finds in its job store, on the hardware
// and among the processes of a previous run, turned into the model and the
// tables it starts with (docs/daemon.md, "Recovery"):
//
//  1. The backend's instances are recorded and adopted as idle (one without a
//     compute instance, or of an unknown profile, is left to the resync,
//     which holds it by a placeholder and destroys it).
//  2. The policy's setup layout, if any, is applied on top (creates are
//     idempotent).
//  3. Every job that is not terminal:
//     queued     → queued again, in id (= submission) order;
//     starting   its launch intent was stored with a run number: the run lock
//                says whether that run lives (→ re-adopted, running), ended
//                (→ its exit status), or never ran (→ queued again: the job
//                never runs twice; a leftover orphan of the run is killed first);
//     running, migrating   alive with every instance still there under the
//                same MIG UUID → re-adopted on exactly those instances (a move
//                in flight is abandoned: the job stays on its source); ended
//                → its exit status ("exited with code N while the daemon was
//                down"; a `restart` job stopped for a move is queued again);
//                gone without a status → failed "process lost while the daemon
//                was down"; an instance vanished → killed, failed;
//     an allocation (running) → re-adopted on its instances, or failed when
//                one vanished.
//     A cancel that was requested is carried on (the process gets SIGTERM
//     again; one that ended is cancelled).
//  4. Reservations that have not expired hold their placements again
//     (created if missing); the others are dropped.
//  5. Operator drains are applied again (by GPU UUID).
//  6. Every GPU is resynced with the backend.
// The changes are committed before the daemon serves anything.
//
// Thread-safety: call before any thread of the daemon runs, without the
// state lock; it takes the lock around its model changes (InstanceSync
// expects it).
#ifndef MIGSCHED_DAEMON_RECOVERY_H_
#define MIGSCHED_DAEMON_RECOVERY_H_

#include <map>
#include <vector>

#include "core/clock.h"
#include "daemon/instance_sync.h"
#include "daemon/job_store.h"
#include "daemon/job_table.h"
#include "daemon/node_model.h"
#include "daemon/process_runner.h"
#include "daemon/reservation_table.h"
#include "daemon/state_lock.h"

namespace migsched {

struct RecoveryInputs {
  NodeModel* model MIGSCHED_PT_GUARDED_BY(kStateLock) = nullptr;
  InstanceSync* sync = nullptr;
  JobStore* store = nullptr;
  ProcessRunner* runner = nullptr;
  JobTable* jobs MIGSCHED_PT_GUARDED_BY(kStateLock) = nullptr;
  ReservationTable* reservations MIGSCHED_PT_GUARDED_BY(kStateLock) = nullptr;
  StateMutex* state_mu = nullptr;
  Clock* clock = nullptr;
};

struct RecoveryResult {
  DaemonJobId next_id = 1;
  std::vector<DaemonJobId> queued;  // to queue again, in this order
  struct Run {
    int64_t pgid = 0;
    bool cancel = false;  // a cancel was requested: SIGTERM it again
  };
  std::map<DaemonJobId, Run> runs;  // re-adopted processes
  bool paused = false;              // the scheduler was paused (Pause), stored: paused again
};

StatusOr<RecoveryResult> Recover(const RecoveryInputs& in) MIGSCHED_EXCLUDES(kStateLock);

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_RECOVERY_H_
