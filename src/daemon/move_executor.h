// MoveExecutor: carries out the moves (§6, make-before-break) that the
// scheduler's migration planner began, one state machine per moving job,
// advanced by the daemon's control loop; nothing in it blocks:
//
//   target   the begin plan (destroy idle instances in the target's way,
//            create the target) runs on InstanceSync's thread. Failure: the
//            move is abandoned (Scheduler::AbandonMigration), the job stays
//            on its source, untouched.
//   checkpoint  (`checkpoint` jobs with checkpoint/restore commands configured)
//            the checkpoint command runs as a helper process ({pid}, {dir});
//            polled, bounded by kCheckpointTimeoutS. Failure: the job is
//            restarted instead.
//   stopping SIGTERM to the job's process group, SIGKILL after kill_grace_s.
//   (the process ends) → switch-over: FinishMigration, the source is
//            destroyed, and the job is launched again on the target: its
//            command with MIGSCHED_RESTARTED=1 (restart), or the restore
//            command (checkpoint). A process that exits 0 while being stopped
//            has finished: it succeeds and the move is dropped.
//
// Thread-safety: none; every method requires the daemon's state lock
// (MIGSCHED_REQUIRES(kStateLock), state_lock.h).
#ifndef MIGSCHED_DAEMON_MOVE_EXECUTOR_H_
#define MIGSCHED_DAEMON_MOVE_EXECUTOR_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/config.h"
#include "daemon/instance_sync.h"
#include "daemon/metrics.h"
#include "daemon/node_model.h"
#include "daemon/state_lock.h"
#include "nodeapi/job_record.h"

namespace migsched {

// A launch the daemon carries out outside its lock once the job's record
// (with the run's attempt number) is durable.
struct LaunchRequest {
  bool helper = false;            // a checkpoint helper, not the job's own process
  bool restarted = false;         // MIGSCHED_RESTARTED=1
  std::vector<std::string> argv;  // empty: the job's command
  std::string checkpoint_dir;     // helper: {dir}
  std::string event = "started";  // the event stored once it runs
};

// What the move executor needs from the daemon (state lock held).
// SaveJob's `then` runs with the state lock held.
class MoveHost {
 public:
  virtual ~MoveHost() = default;
  virtual DaemonJobRecord* MutableJob(DaemonJobId id) MIGSCHED_REQUIRES(kStateLock) = 0;
  // Stores `r` (retried until durable) with an event; `then` runs once it is.
  virtual void SaveJob(DaemonJobRecord& r, std::string_view event, nlohmann::json detail,
                       std::function<void()> then = nullptr) MIGSCHED_REQUIRES(kStateLock) = 0;
  // SIGTERM to the job's processes now, SIGKILL after kill_grace_s.
  virtual void StopProcess(DaemonJobId id) MIGSCHED_REQUIRES(kStateLock) = 0;
  // The job's process group id (0 if none) and command pid.
  virtual int64_t ProcessGroup(DaemonJobId id) const MIGSCHED_REQUIRES(kStateLock) = 0;
  virtual int64_t ProcessId(DaemonJobId id) const MIGSCHED_REQUIRES(kStateLock) = 0;
  virtual void RequestLaunch(DaemonJobId id, LaunchRequest request)
      MIGSCHED_REQUIRES(kStateLock) = 0;
  virtual std::vector<JobInstance> InstancesOf(DaemonJobId id) MIGSCHED_REQUIRES(kStateLock) = 0;
  virtual void FinishJob(DaemonJobRecord& r, JobState state, std::optional<int> exit_code,
                         std::string reason) MIGSCHED_REQUIRES(kStateLock) = 0;
};

class MoveExecutor {
 public:
  // A checkpoint command gets this long before it counts as failed.
  static constexpr double kCheckpointTimeoutS = 300;

  MoveExecutor(NodeModel* model, InstanceSync* sync, const DaemonConfig* config,
               DaemonCounters* counters, Clock* clock, MoveHost* host)
      : model_(model),
        sync_(sync),
        config_(config),
        counters_(counters),
        clock_(clock),
        host_(host) {}

  // The scheduler began `st` (its begin plan applied to the model).
  void Begin(const MigrationStart& st) MIGSCHED_REQUIRES(kStateLock);
  bool moving(DaemonJobId id) const MIGSCHED_REQUIRES(kStateLock) { return moves_.count(id) > 0; }
  size_t size() const MIGSCHED_REQUIRES(kStateLock) { return moves_.size(); }
  // The job's process ended with `exit_code` during its move: true if this
  // was the stop the move asked for (the move then completes and the job is
  // relaunched on its target); false if the job finished by itself (the move
  // is abandoned; the caller ends the job).
  bool OnProcessEnded(DaemonJobId id, int exit_code) MIGSCHED_REQUIRES(kStateLock);
  // A checkpoint helper was launched (pgid) or could not be (error).
  void OnHelperLaunched(DaemonJobId id, const StatusOr<int64_t>& pgid)
      MIGSCHED_REQUIRES(kStateLock);
  // Polls the checkpoint helpers; called every tick.
  void Advance(class ProcessRunner* runner) MIGSCHED_REQUIRES(kStateLock);
  // The job left (cancelled, ended, failed): forget its move, if any. The
  // scheduler's Release has already let both ends go.
  void Forget(DaemonJobId id) MIGSCHED_REQUIRES(kStateLock) { moves_.erase(id); }

 private:
  enum class Phase { kTarget, kCheckpoint, kStopping };
  struct Move {
    MigrationMove mv;
    Phase phase = Phase::kTarget;
    int64_t helper_pgid = 0;
    double helper_deadline_s = 0;
    std::string checkpoint_dir;
    bool checkpointed = false;
  };
  void OnTargetReady(DaemonJobId id, const Status& st) MIGSCHED_REQUIRES(kStateLock);
  void StartStopping(DaemonJobId id, Move& m) MIGSCHED_REQUIRES(kStateLock);
  double Now() const { return static_cast<double>(clock_->NowNanos()) / 1e9; }
  double Unix() const { return clock_->UnixSeconds(); }  // the records' times

  NodeModel* model_ MIGSCHED_PT_GUARDED_BY(kStateLock);
  InstanceSync* sync_;
  const DaemonConfig* config_;
  DaemonCounters* counters_;
  Clock* clock_;
  MoveHost* host_;
  std::map<DaemonJobId, Move> moves_ MIGSCHED_GUARDED_BY(kStateLock);
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_MOVE_EXECUTOR_H_
