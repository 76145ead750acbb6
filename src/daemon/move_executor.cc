#include "daemon/move_executor.h"

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "daemon/process_runner.h"

namespace migsched {
namespace {

std::vector<std::string> Substitute(const std::vector<std::string>& tmpl, int64_t pid,
                                    const std::string& dir) {
  std::vector<std::string> out;
  for (std::string s : tmpl) {
    for (size_t p; (p = s.find("{pid}")) != std::string::npos;) {
      s.replace(p, 5, std::to_string(pid));
    }
    for (size_t p; (p = s.find("{dir}")) != std::string::npos;) s.replace(p, 5, dir);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

void MoveExecutor::Begin(const MigrationStart& st) {
  const DaemonJobId id = st.move.job;
  DaemonJobRecord* r = host_->MutableJob(id);
  if (r == nullptr) return;
  moves_[id] = Move{st.move, Phase::kTarget, 0, 0, "", false};
  if (Status moved = TransitionJob(*r, JobState::kMigrating, Unix()); !moved.ok()) {
    // Not a running job (a bug): the move is abandoned as one whose target
    // cannot be made; the job stays where it is.
    spdlog::error("{}", moved.message());
    sync_->Execute(st.plan, [this, id, moved](const Status&)
                                MIGSCHED_REQUIRES(kStateLock) { OnTargetReady(id, moved); });
    return;
  }
  host_->SaveJob(*r, "migration-begun",
                 {{"from_gpu", model_->nvml(st.move.from.gpu)},
                  {"from_start", st.move.from.start},
                  {"to_gpu", model_->nvml(st.move.to.gpu)},
                  {"to_start", st.move.to.start}});
  // An operator reading the log sees every move, and what it costs the job.
  const std::string_view how = r->request.migratable == Migratable::kRestart
                                   ? "stopped and started again there (its work so far is lost)"
                               : r->request.migratable == Migratable::kCheckpoint
                                   ? "checkpointed and restored there"
                                   : "moved";
  spdlog::info("job {}: moving from GPU {} start {} to GPU {} start {}{}: {}", id,
               model_->nvml(st.move.from.gpu), st.move.from.start, model_->nvml(st.move.to.gpu),
               st.move.to.start,
               st.for_job != kNoJob ? fmt::format(" (making room for job {})", st.for_job) : "",
               how);
  sync_->Execute(
      st.plan, [this, id](const Status& s) MIGSCHED_REQUIRES(kStateLock) { OnTargetReady(id, s); });
}

void MoveExecutor::OnTargetReady(DaemonJobId id, const Status& st) {
  auto it = moves_.find(id);
  if (it == moves_.end()) return;  // the job ended meanwhile (Release freed both ends)
  Move& m = it->second;
  DaemonJobRecord* r = host_->MutableJob(id);
  if (!st.ok()) {
    // The move cannot begin: the job stays where it is, untouched.
    spdlog::warn("job {}: move cannot begin: {}", id, st.message());
    StatusOr<Plan> abandon = model_->scheduler().AbandonMigration(static_cast<JobId>(id));
    if (abandon.ok()) {
      sync_->Execute(*abandon, nullptr);
    } else {
      spdlog::error("job {}: {}", id, abandon.status().message());
    }
    moves_.erase(it);
    if (r != nullptr && r->state == JobState::kMigrating) {
      if (Status moved = TransitionJob(*r, JobState::kRunning, Unix()); !moved.ok()) {
        spdlog::error("{}", moved.message());
      } else {
        host_->SaveJob(*r, "move-abandoned", {{"reason", st.message()}});
      }
    }
    return;
  }
  const bool can_checkpoint =
      !config_->checkpoint_command.empty() && !config_->restore_command.empty();
  if (r != nullptr && r->request.migratable == Migratable::kCheckpoint && can_checkpoint) {
    m.phase = Phase::kCheckpoint;
    m.checkpoint_dir = (std::filesystem::path(config_->state_dir) / "jobs" / std::to_string(id) /
                        fmt::format("checkpoint-{}", r->migrations))
                           .string();
    std::error_code ec;
    std::filesystem::create_directories(m.checkpoint_dir, ec);
    const int64_t pid = host_->ProcessId(id) > 0 ? host_->ProcessId(id) : host_->ProcessGroup(id);
    LaunchRequest l;
    l.helper = true;
    l.argv = Substitute(config_->checkpoint_command, pid, m.checkpoint_dir);
    l.checkpoint_dir = m.checkpoint_dir;
    host_->RequestLaunch(id, std::move(l));
    return;
  }
  StartStopping(id, m);
}

void MoveExecutor::OnHelperLaunched(DaemonJobId id, const StatusOr<int64_t>& pgid) {
  auto it = moves_.find(id);
  if (it == moves_.end()) return;
  Move& m = it->second;
  if (!pgid.ok()) {
    spdlog::warn("job {}: checkpoint failed ({}); it is restarted instead", id,
                 pgid.status().message());
    StartStopping(id, m);
    return;
  }
  m.helper_pgid = *pgid;
  m.helper_deadline_s = Now() + kCheckpointTimeoutS;
}

void MoveExecutor::Advance(ProcessRunner* runner) {
  for (auto& [id, m] : moves_) {
    if (m.phase != Phase::kCheckpoint || m.helper_pgid == 0) continue;
    ProcessStatus ps = runner->PollHelper(id, m.helper_pgid);
    if (ps.kind == ProcessStatus::Kind::kRunning) {
      if (Now() >= m.helper_deadline_s) {
        runner->SignalGroup(m.helper_pgid, SIGKILL);
        spdlog::warn("job {}: checkpoint did not finish within {} s; it is restarted instead", id,
                     kCheckpointTimeoutS);
        m.helper_pgid = 0;
        StartStopping(id, m);
      }
      continue;
    }
    m.checkpointed = ps.kind == ProcessStatus::Kind::kExited && ps.exit_code == 0;
    if (!m.checkpointed) {
      spdlog::warn("job {}: checkpoint failed ({}); it is restarted instead", id,
                   ps.kind == ProcessStatus::Kind::kExited
                       ? fmt::format("exit code {}", ps.exit_code)
                       : std::string("its process was lost"));
    }
    m.helper_pgid = 0;
    StartStopping(id, m);
  }
}

void MoveExecutor::StartStopping(DaemonJobId id, Move& m) {
  m.phase = Phase::kStopping;
  host_->StopProcess(id);
}

bool MoveExecutor::OnProcessEnded(DaemonJobId id, int exit_code) {
  auto it = moves_.find(id);
  if (it == moves_.end()) return false;
  Move m = it->second;
  DaemonJobRecord* r = host_->MutableJob(id);
  if (r == nullptr) {
    moves_.erase(it);
    return false;
  }
  if (m.phase != Phase::kStopping || exit_code == 0) {
    // It ended by itself (or finished while being stopped): no move. The
    // caller ends the job; Scheduler::Release lets both ends go.
    moves_.erase(it);
    return false;
  }
  moves_.erase(it);
  StatusOr<Plan> end = model_->scheduler().FinishMigration(static_cast<JobId>(id));
  if (!end.ok()) {
    spdlog::error("job {}: {}", id, end.status().message());
    host_->FinishJob(*r, JobState::kFailed, exit_code,
                     "migration failed: " + end.status().message());
    return true;
  }
  sync_->Execute(*end, nullptr);  // destroys the source, unless the policy keeps it idle
  r->instances = host_->InstancesOf(id);
  ++r->migrations;
  ++(m.mv.inter() ? counters_->migrations_inter : counters_->migrations_intra);
  LaunchRequest l;
  l.event = "migrated";
  if (m.checkpointed) {
    l.argv = Substitute(config_->restore_command, host_->ProcessId(id), m.checkpoint_dir);
  } else {
    ++r->restarts;
    l.restarted = true;
  }
  ++r->attempt;
  if (Status moved = TransitionJob(*r, JobState::kStarting, Unix()); !moved.ok()) {
    spdlog::error("{}", moved.message());
  }
  r->pid = 0;
  const DaemonJobId job = id;
  host_->SaveJob(
      *r, "switched-over",
      {{"to_gpu", model_->nvml(m.mv.to.gpu)}, {"to_start", m.mv.to.start}, {"run", r->attempt}},
      [this, job, l]()
          MIGSCHED_REQUIRES(kStateLock) mutable { host_->RequestLaunch(job, std::move(l)); });
  return true;
}

}  // namespace migsched
