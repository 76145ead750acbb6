#include "daemon/recovery.h"

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "daemon/json_text.h"

namespace migsched {
namespace {

// The model's placements of `r`'s instances, if each is still on the backend
// under the same MIG UUID; else the first MIG UUID that vanished in `vanished`.
std::vector<InstanceRef> StillThere(const NodeModel& model, const InstanceSync& sync,
                                    const DaemonJobRecord& r, std::string* vanished)
    MIGSCHED_REQUIRES(kStateLock) {
  std::vector<InstanceRef> where;
  for (const JobInstance& in : r.instances) {
    const int g = model.ClusterIndex(in.gpu);
    const BackendInstance* live = g < 0 ? nullptr : sync.Live(g, in.start);
    if (live == nullptr || live->mig_uuid != in.mig_uuid) {
      *vanished =
          in.mig_uuid.empty() ? fmt::format("at GPU {} @{}", in.gpu, in.start) : in.mig_uuid;
      return {};
    }
    where.push_back({g, model.ProfileIndex(g, in.profile), in.start});
  }
  if (where.empty()) *vanished = "(none recorded)";
  return where;
}

// The core's view of an allocation's instances (they are pinned, never chosen).
Job AllocationJob(const DaemonJobRecord& r) {
  Job j;
  j.name = r.allocation.name;
  j.profile = r.instances.empty() ? "" : r.instances.front().profile;
  j.count = static_cast<int>(r.instances.size());
  j.migratable = Migratable::kNone;          // the daemon never moves it
  j.moved_by_owner = !r.allocation.anchors;  // its engine may, unless it anchors (§4 step 2)
  return j;
}

}  // namespace

StatusOr<RecoveryResult> Recover(const RecoveryInputs& in) {
  RecoveryResult out;
  NodeModel& model = *in.model;
  const double now = in.clock->UnixSeconds();
  // 1. The backend's instances, adopted as idle.
  {
    StateLock lock(in.state_mu);
    for (int g = 0; g < model.size(); ++g) {
      const GpuModel& m = model.cluster().gpu(g).model();
      for (const BackendInstance& bi : model.inventory().gpus[g].instances) {
        in.sync->Record(g, bi);
        int profile = -1;
        for (int p = 0; p < static_cast<int>(m.profiles().size()); ++p) {
          if (m.profile(p).id == bi.profile_id && (profile < 0 || m.profile(p).is_base())) {
            profile = p;
          }
        }
        if (profile < 0 || !bi.has_compute_instance) {
          spdlog::warn("GPU {}: instance gi {} at {} ({}) is destroyed", model.nvml(g), bi.gi_id,
                       bi.placement.start, profile < 0 ? "unknown profile" : "no compute instance");
          continue;  // the resync holds it by a placeholder and destroys it
        }
        Status st = model.scheduler().ApplyExternal(
            Plan{{{StepKind::kCreate, g, profile, bi.placement.start, kNoJob}}});
        if (st.ok()) {
          spdlog::info("GPU {}: found instance {}@{} ({}), adopted as idle", model.nvml(g),
                       m.profile(profile).name, bi.placement.start, bi.mig_uuid);
        } else {
          spdlog::warn("GPU {}: cannot adopt instance {}: {}", model.nvml(g), bi.mig_uuid,
                       st.message());
        }
      }
    }
  }
  // 2. The policy's setup layout (static policies), on top of what exists.
  StatusOr<Plan> setup = [&] {
    StateLock lock(in.state_mu);
    return model.scheduler().Setup();
  }();
  if (!setup.ok()) return setup.status();
  if (Status st = in.sync->ExecuteNow(*setup); !st.ok()) {
    spdlog::warn("setup layout: {}", st.message());
  }
  // 3. The jobs.
  ASSIGN_OR_RETURN(std::vector<DaemonJobRecord> all, in.store->LoadAll());
  ASSIGN_OR_RETURN(out.next_id, in.store->NextJobId());
  std::vector<StoreOp> ops;
  auto changed = [&](const DaemonJobRecord& r, std::string kind, nlohmann::json detail) {
    detail["state"] = std::string(JobStateName(r.state));
    ops.push_back(StoreOp::UpdateJob(r));
    ops.push_back(StoreOp::Event(r.id, now, std::move(kind), JsonText(detail)));
  };
  // A state change the life cycle does not have (a bug) leaves the record as
  // it was stored.
  auto transition = [&](DaemonJobRecord& r, JobState to) {
    Status st = TransitionJob(r, to, now);
    if (!st.ok()) spdlog::error("{}", st.message());
    return st.ok();
  };
  // `ended_s`: when the job ended, where known (its exit file), else now (the restart).
  auto end = [&](DaemonJobRecord& r, JobState state, std::optional<int> code, std::string reason,
                 double ended_s = 0) {
    if (!transition(r, state)) return;
    if (ended_s > r.started_at && ended_s < r.ended_at) r.ended_at = ended_s;
    r.exit_code = code;
    r.reason = std::move(reason);
    nlohmann::json d;
    if (code) d["exit_code"] = *code;
    if (!r.reason.empty()) d["reason"] = r.reason;
    changed(r, "ended", d);
  };
  auto requeue = [&](DaemonJobRecord& r, const std::string& why) {
    if (!transition(r, JobState::kQueued)) return;
    r.instances.clear();
    r.pid = 0;
    r.reason = "requeued: " + why;
    changed(r, "requeued", {{"reason", why}});
    out.queued.push_back(r.id);
  };
  {
    StateLock lock(in.state_mu);
    for (DaemonJobRecord& r : all) {
      if (IsTerminal(r.state)) {
        in.jobs->AddStored(r);
        continue;
      }
      const JobId jid = static_cast<JobId>(r.id);
      if (r.kind == JobKind::kAllocation) {
        std::string vanished;
        std::vector<InstanceRef> where = StillThere(model, *in.sync, r, &vanished);
        if (r.state == JobState::kRunning && !where.empty() &&
            model.scheduler().Adopt(jid, AllocationJob(r), where).ok()) {
          spdlog::info("allocation {} ({}): re-adopted", r.id, r.owner());
        } else {
          end(r, JobState::kFailed, std::nullopt,
              fmt::format("instance {} vanished while the daemon was down", vanished));
        }
        in.jobs->AddStored(r);
        continue;
      }
      // A job that may still run re-enters the daemon here: its Job is derived once, and the
      // job table keeps it (JobTable::JobOf).
      const Job job = r.request.ToJob();
      if (r.state == JobState::kQueued) {
        // The node may have changed while the daemon was down (other GPUs, another `gpus:`): a
        // job that can no longer run here ends `rejected` with the reason, as at its
        // submission, instead of waiting for ever.
        Status can = model.CheckOffered(job);
        if (can.ok()) can = model.scheduler().CheckCanEverRun(job);
        if (!can.ok()) {
          end(r, JobState::kRejected, std::nullopt,
              "can no longer run on this node (checked again at the daemon's start): " +
                  can.message());
          spdlog::warn("job {}: {}", r.id, r.reason);
          in.jobs->AddStored(r);
          continue;
        }
        out.queued.push_back(r.id);
        in.jobs->AddStored(r, job);
        continue;
      }
      // Starting, running or migrating: what became of its run?
      RunProbe probe = in.runner->Probe(r.id, r.attempt);
      if (r.attempt == 0 && r.pid > 0 && probe.kind == RunProbe::Kind::kNeverRan &&
          in.runner->GroupAlive(r.pid)) {
        probe = RunProbe{RunProbe::Kind::kAlive, r.pid, 0};  // a run of schema 1: no run lock
      }
      const bool was_starting = r.state == JobState::kStarting;
      // A run that is alive or ended but was stored without its start (the daemon went down
      // between the launch and storing the job running) began when its monitor took the run
      // lock, not at this restart (regression: crash_while_starting_restarted_the_limit: a job
      // re-adopted so ran its whole limit again from the restart). Kept within [submitted, now]:
      // the run file's time is the wall clock's.
      if (r.started_at == 0 && probe.started_unix_s > 0 &&
          (probe.kind == RunProbe::Kind::kAlive || probe.kind == RunProbe::Kind::kEnded)) {
        r.started_at = std::min(std::max(probe.started_unix_s, r.submitted_at), now);
      }
      switch (probe.kind) {
        case RunProbe::Kind::kAlive: {
          std::string vanished;
          std::vector<InstanceRef> where = StillThere(model, *in.sync, r, &vanished);
          if (!where.empty() && model.scheduler().Adopt(jid, job, where).ok()) {
            const bool was_moving = r.state == JobState::kMigrating;
            r.pid = probe.pgid;
            // A running job stays running; a starting or moving one runs again.
            if (r.state != JobState::kRunning) {
              transition(r, JobState::kRunning);
            } else if (r.started_at == 0) {
              r.started_at = now;  // a run stored without its start time
            }
            changed(r, was_moving ? "move-abandoned" : "adopted",
                    {{"reason", "the daemon restarted"}, {"pid", r.pid}});
            out.runs[r.id] = RecoveryResult::Run{probe.pgid, r.cancel_requested};
            spdlog::info("job {}: re-adopted (pid {})", r.id, r.pid);
          } else {
            in.runner->SignalGroup(probe.pgid, SIGKILL);
            end(r, JobState::kFailed, std::nullopt,
                vanished.empty()
                    ? "its instances could not be re-adopted after a daemon restart"
                    : fmt::format("instance {} vanished while the daemon was down", vanished));
          }
          break;
        }
        case RunProbe::Kind::kEnded: {
          const int code = probe.exit_code;
          // It ended while the daemon was down: its end is its exit file's time, not the
          // restart's (regression: ended_while_down_timed_at_the_restart).
          const double at = probe.ended_unix_s;
          if (r.cancel_requested) {
            end(r, StoppedState(r), code, StoppedReason(r, "cancelled"), at);
          } else if (r.state == JobState::kMigrating && code != 0 &&
                     r.request.migratable != Migratable::kNone) {
            ++r.restarts;
            requeue(r, "it was stopped for a move when the daemon went down");
          } else if (code == 0) {
            end(r, JobState::kSucceeded, 0, "", at);
          } else {
            end(r, JobState::kFailed, code,
                probe.signalled
                    ? fmt::format("killed by signal {} while the daemon was down", code - 128)
                    : fmt::format("exited with code {} while the daemon was down", code),
                at);
          }
          break;
        }
        case RunProbe::Kind::kOrphanAlive:
          // The monitor is gone without a status but its command lives on: it
          // must not run twice, nor be left unaccounted for.
          in.runner->SignalGroup(probe.pgid, SIGKILL);
          if (was_starting && !r.cancel_requested) {
            requeue(r,
                    "the daemon restarted while the job was starting; its leftover process was "
                    "killed");
          } else {
            end(r, r.cancel_requested ? StoppedState(r) : JobState::kFailed, std::nullopt,
                r.cancel_requested ? StoppedReason(r, "cancelled")
                                   : "process lost while the daemon was down");
          }
          break;
        case RunProbe::Kind::kNeverRan:
          if (r.cancel_requested) {
            end(r, JobState::kCancelled, std::nullopt, "cancelled before it started");
          } else if (was_starting) {
            requeue(r, "the daemon restarted before the job was launched");
          } else {
            end(r, JobState::kFailed, std::nullopt, "process lost while the daemon was down");
          }
          break;
      }
      if (IsTerminal(r.state)) {
        in.jobs->AddStored(r);
      } else {
        in.jobs->AddStored(r, job);
      }
    }
  }
  // 4. Reservations.
  ASSIGN_OR_RETURN(std::vector<ReservationRecord> reservations, in.store->LoadReservations());
  for (ReservationRecord& rec : reservations) {
    if (rec.expires_at <= now) {
      ops.push_back(StoreOp::DeleteReservation(rec.owner));
      continue;
    }
    HeldReservation res;
    res.record = rec;
    Status st;
    Plan plan;
    {
      StateLock lock(in.state_mu);
      for (const PlacementRef& p : rec.placements) {
        StatusOr<InstanceRef> ref = model.Resolve(p.gpu, p.profile, p.start);
        if (!ref.ok()) {
          st = ref.status();
          break;
        }
        res.refs.push_back(*ref);
      }
      if (st.ok()) {
        res.hold_id = in.reservations->NextHoldId();
        // Idle instances at exactly these placements are held as they are.
        bool existing = true;
        for (const InstanceRef& ref : res.refs) {
          const GpuState& g = model.cluster().gpu(ref.gpu);
          const int i = g.IndexAt(ref.start);
          existing = existing && i >= 0 && !g.instances()[i].busy() &&
                     g.instances()[i].profile == ref.profile;
        }
        StatusOr<Plan> held =
            model.scheduler().Hold(Holder::kReservation, res.hold_id, res.refs, existing);
        if (held.ok()) {
          plan = *held;
        } else {
          st = held.status();
        }
      }
    }
    if (st.ok()) st = in.sync->ExecuteNow(plan);
    if (!st.ok()) {
      spdlog::warn("reservation '{}' is dropped at restart: {}", rec.owner, st.message());
      StateLock lock(in.state_mu);
      if (res.hold_id != kNoJob && model.scheduler().HeldBy(Holder::kReservation, res.hold_id)) {
        (void)model.scheduler().ReleaseHold(Holder::kReservation, res.hold_id);
      }
      ops.push_back(StoreOp::DeleteReservation(rec.owner));
      continue;
    }
    res.ready = true;
    StateLock lock(in.state_mu);
    in.reservations->Put(std::move(res));
  }
  // 5. Operator drains.
  ASSIGN_OR_RETURN(auto node, in.store->LoadNode());
  if (auto it = node.find("drained_gpus"); it != node.end()) {
    nlohmann::json uuids = nlohmann::json::parse(it->second, nullptr, false);
    if (uuids.is_array()) {
      StateLock lock(in.state_mu);
      for (const nlohmann::json& u : uuids) {
        if (!u.is_string()) continue;
        for (int g = 0; g < model.size(); ++g) {
          if (model.uuid(g) == u.get<std::string>()) {
            model.SetDrain(g, NodeModel::DrainReason::kOperator, true);
            spdlog::info("GPU {}: drained (kept from before the restart)", model.nvml(g));
          }
        }
      }
    }
  }
  // 6. A pause (Pause) is kept across restarts, as a drain is.
  if (auto it = node.find("paused"); it != node.end() && it->second == "true") {
    out.paused = true;
    spdlog::info("scheduler paused (kept from before the restart; `migsched resume` ends it)");
  }
  RETURN_IF_ERROR(in.store->Commit(ops).WithPrefix("storing what recovery found"));
  // 7. The hardware is the truth for what is left.
  in.sync->ResyncAllNow();
  return out;
}

}  // namespace migsched
