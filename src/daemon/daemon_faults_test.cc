// Regressions of the daemon's defects under injected faults (fake backend),
// each named after what it guards.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "daemon/daemon_fixture.h"
#include "daemon/job_store.h"
#include "daemon/node_model.h"
#include "daemon/process_runner.h"
#include "daemon/store_writer.h"

namespace migsched {
namespace {

using ::testing::HasSubstr;

// Regression (gpu_stuck_after_one_in_use_destroy): with one "in use" answer
// on destroy, the idle 7g.40gb left by a finished job could not be
// destroyed for the first of four 1g.5gb jobs; the instance was recorded as a
// pending destroy without a placeholder, a later resync added a placeholder
// that was never released, and the four jobs waited forever (the other jobs
// of the batch also got create failures counted). Now the plans behind the
// failed one are not attempted (not their failure), the instance is held by
// exactly one placeholder until its destroy succeeds, and all four run.
TEST_F(DaemonTest, GpuStuckAfterOneInUseDestroy) {
  FakeFaults faults;
  faults.destroy_in_use = 1;
  auto d = Start("1xA100-40GB", faults);
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Submit(Req("7g.40gb", {"true"})));
  ASSERT_TRUE(WaitTerminal(*d, 1));
  ASSERT_EQ(Get(*d, 1).state, JobState::kSucceeded);
  ASSERT_EQ(d->Gpus()[0].instances.size(), 1u);  // the idle 7g.40gb, kept for reuse (§4)
  ASSERT_OK(d->Pause());
  for (int i = 0; i < 4; ++i) ASSERT_OK(d->Submit(Req("1g.5gb", {"true"})));
  ASSERT_OK(d->Resume());
  ASSERT_TRUE(TickUntil(*d, [&] {
    for (DaemonJobId id = 2; id <= 5; ++id) {
      if (!IsTerminal(Get(*d, id).state)) return false;
    }
    return true;
  }));
  for (DaemonJobId id = 2; id <= 5; ++id) {
    EXPECT_EQ(Get(*d, id).state, JobState::kSucceeded) << id << ": " << Get(*d, id).reason;
  }
  ASSERT_OK(d->Settle());
  // No instance is left held by anyone, and the model matches the backend.
  std::vector<GpuView> gpus = d->Gpus();
  StatusOr<std::vector<BackendInstance>> live = fake_->ListInstances(0);
  ASSERT_OK(live);
  ASSERT_EQ(gpus[0].instances.size(), live->size());
  for (size_t i = 0; i < live->size(); ++i) {
    EXPECT_FALSE(gpus[0].instances[i].busy) << HolderKindName(gpus[0].instances[i].holder);
    EXPECT_EQ(gpus[0].instances[i].start, (*live)[i].placement.start);
    EXPECT_EQ(gpus[0].instances[i].mig_uuid, (*live)[i].mig_uuid);
  }
  EXPECT_EQ(fake_->destroys(), 1);  // the 7g.40gb, once, after its one "in use"
}

// Regression (job_runs_twice_after_kill_9): a daemon killed between launching
// a process and storing its start restarted the job beside the first copy
// (4 of 60 kill -9 rounds). The launch intent (state starting, run N) is
// stored first; a restart finds run N by its run lock. Here the crash is
// played exactly: the daemon goes away with the job running and its
// "running" record lost (the store says starting, run 1).
TEST_F(DaemonTest, JobRunsOnceWhenTheDaemonDiesRightAfterTheLaunch) {
  config_.on_shutdown = "leave";
  const std::filesystem::path runs = config_.WorkDir() + "/1/runs";  // the job's cwd
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_OK(d->Submit(Req("1g.5gb", {"sh", "-c", "echo run >> runs; sleep 0.5"})));
    ASSERT_OK(d->Settle());
    ASSERT_EQ(Get(*d, 1).state, JobState::kRunning);
    ASSERT_EQ(Get(*d, 1).attempt, 1);
  }
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<JobStore> store, JobStore::Open(config_.state_dir));
    ASSERT_OK_AND_ASSIGN(DaemonJobRecord r, store->Get(1));
    r.state = JobState::kStarting;  // as if the crash came before the start was stored
    r.pid = 0;
    ASSERT_OK(store->Update(r));
  }
  auto d = Start();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(Get(*d, 1).state, JobState::kRunning);  // found again by its run lock
  ASSERT_TRUE(WaitTerminal(*d, 1));
  EXPECT_EQ(Get(*d, 1).state, JobState::kSucceeded);
  EXPECT_EQ(ReadFile(runs), "run\n");  // once
  EXPECT_EQ(Get(*d, 1).attempt, 1);
}

// The other side of the window: the intent (run 2) was stored but the daemon
// died before it launched anything: the job is queued again and runs once.
TEST_F(DaemonTest, StoredLaunchIntentWithoutARunIsQueuedAgain) {
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_OK(d->Pause());
    ASSERT_OK(d->Submit(Req("1g.5gb", {"sh", "-c", "echo run >> runs"})));
    ASSERT_OK(d->Settle());
  }
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<JobStore> store, JobStore::Open(config_.state_dir));
    ASSERT_OK_AND_ASSIGN(DaemonJobRecord r, store->Get(1));
    r.state = JobState::kStarting;
    r.attempt = 2;
    ASSERT_OK(store->Update(r));
  }
  auto d = Start();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(Get(*d, 1).state, JobState::kQueued);
  EXPECT_EQ(Get(*d, 1).reason, "requeued: the daemon restarted before the job was launched");
  EXPECT_TRUE(d->paused());  // the pause is stored (PauseSurvivesARestart)
  ASSERT_OK(d->Resume());
  ASSERT_TRUE(WaitTerminal(*d, 1));
  EXPECT_EQ(Get(*d, 1).state, JobState::kSucceeded);
  EXPECT_EQ(ReadFile(std::filesystem::path(config_.WorkDir()) / "1" / "runs"), "run\n");
  EXPECT_EQ(Get(*d, 1).attempt, 3);
}

// Regression (failed_store_writes_dropped): with the state dir on a full
// disk, finished jobs showed succeeded in the API while the database said
// running, and a restart made them failed "process lost". Now what the API
// shows is what is stored; a failed write is retried while submissions get
// kUnavailable (HTTP 503) with the reason, and the daemon catches up.
TEST_F(DaemonTest, FailedStoreWritesAreRetriedAndRefuseSubmissions) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Submit(Req("1g.5gb", {"sleep", "0.2"})));
  ASSERT_OK(d->Settle());
  ASSERT_EQ(Get(*d, 1).state, JobState::kRunning);
  StoreWriter* w = d->store_writer_for_testing();
  w->SetFailureForTesting(UnavailableError("disk I/O error: database or disk is full"));
  // The job ends; its end cannot be stored: the API keeps showing what is stored.
  ASSERT_TRUE(TickUntil(*d, [&] { return !d->Health().ok(); }));
  EXPECT_EQ(Get(*d, 1).state, JobState::kRunning);
  EXPECT_THAT(d->Health().message(), HasSubstr("database or disk is full"));
  StatusOr<DaemonJobRecord> refused = d->Submit(Req("1g.5gb", {"true"}));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(refused.status().message(), HasSubstr("the job store cannot be written"));
  EXPECT_EQ(d->ListJobs().size(), 1u);  // nothing half-accepted
  // Space returns: the pending write lands, submissions are taken again.
  w->SetFailureForTesting(Status());
  ASSERT_TRUE(TickUntil(*d, [&] { return Get(*d, 1).state == JobState::kSucceeded; }));
  EXPECT_OK(d->Health());
  ASSERT_OK(d->Submit(Req("1g.5gb", {"true"})));
  d.reset();
  // What a restart finds is what was shown.
  auto again = Start();
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(Get(*again, 1).state, JobState::kSucceeded);
}

// A fail-fast write (a submission) whose commit fails is not accepted: the
// caller hears why, and nothing of it remains.
TEST_F(DaemonTest, SubmissionWhoseCommitFailsIsNotAccepted) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  d->store_writer_for_testing()->SetFailureForTesting(UnavailableError("disk full"));
  StatusOr<DaemonJobRecord> r = d->Submit(Req("1g.5gb", {"true"}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message(),
            "the job store cannot be written (disk full); the job was not accepted");
  d->store_writer_for_testing()->SetFailureForTesting(Status());
  EXPECT_TRUE(d->ListJobs().empty());
  ASSERT_OK_AND_ASSIGN(DaemonJobRecord ok, d->Submit(Req("1g.5gb", {"true"})));
  EXPECT_EQ(ok.id, 2);  // id 1 was given and is never reused
}

// Regression (lock_held_through_sqlite_busy_wait): every call waited while
// one write sat in SQLite's 5 s busy wait under the daemon's lock. Writes
// happen on the store writer's thread; the API's reads never wait for them.
TEST_F(DaemonTest, ApiAnswersWhileTheDatabaseIsLocked) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open((config_.state_dir + "/migsched.db").c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  std::future<StatusOr<DaemonJobRecord>> submit =
      std::async(std::launch::async, [&] { return d->Submit(Req("1g.5gb", {"true"})); });
  // While that submission waits for the database, reads answer.
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(d->Gpus().size(), 1u);
    EXPECT_TRUE(d->ListJobs().empty());
    (void)d->Node();
  }
  StatusOr<DaemonJobRecord> r = submit.get();
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("database is locked"));
  ASSERT_OK(d->Submit(Req("1g.5gb", {"true"})));
}

// Regression (deleted_state_dir_unnoticed): the state dir was deleted under
// a running daemon, which went on writing into a deleted database.
TEST_F(DaemonTest, DeletedStateDirStopsSubmissions) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  std::filesystem::remove_all(config_.state_dir);
  ASSERT_OK(d->Tick());
  EXPECT_THAT(d->Health().message(), HasSubstr("was deleted while the daemon runs"));
  StatusOr<DaemonJobRecord> r = d->Submit(Req("1g.5gb", {"true"}));
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("was deleted"));
}

// Regression (cancel_lost_at_restart): a cancel of a running job did not
// survive a restart: the job later ended as succeeded. The job here takes
// 0.4 s to stop on SIGTERM; the daemon goes away meanwhile.
TEST_F(DaemonTest, CancelSurvivesARestart) {
  config_.on_shutdown = "leave";
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_OK(d->Submit(Req(
        "1g.5gb", {"sh", "-c", "trap 'sleep 0.4; exit 0' TERM; while :; do sleep 0.05; done"})));
    ASSERT_OK(d->Settle());
    ASSERT_EQ(Get(*d, 1).state, JobState::kRunning);
    ASSERT_OK_AND_ASSIGN(DaemonJobRecord c, d->Cancel(1));
    EXPECT_TRUE(c.cancel_requested);
    EXPECT_EQ(c.reason, "cancel requested");
  }
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(WaitTerminal(*d, 1));
  EXPECT_EQ(Get(*d, 1).state, JobState::kCancelled);
}

// The other half: a job that outlives the daemon's SIGTERM (it stops only at
// the second) gets the cancel again from the restarted daemon, which
// re-adopts it with its stored cancel_requested; it never ends as succeeded.
TEST_F(DaemonTest, CancelIsSentAgainAfterARestart) {
  config_.on_shutdown = "leave";
  config_.kill_grace_s = 30;  // no SIGKILL within the test: only SIGTERMs end it
  // Signals are not queued: the test waits for the job to have seen each.
  auto log_has = [](const std::filesystem::path& log, const std::string& line) {
    for (int i = 0; i < 500; ++i) {
      if (ReadFile(log).find(line) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_OK(d->Submit(Req("1g.5gb", {"sh", "-c",
                                       "n=0; trap 'n=$((n+1)); echo term $n; [ $n -ge 2 ] && "
                                       "exit 0' TERM; echo ready; while :; do sleep 0.05; done"})));
    ASSERT_OK(d->Settle());
    ASSERT_EQ(Get(*d, 1).state, JobState::kRunning);
    ASSERT_TRUE(log_has(d->LogPath(1), "ready\n"));
    ASSERT_OK(d->Cancel(1));  // the first SIGTERM
    ASSERT_TRUE(log_has(d->LogPath(1), "term 1\n"));
  }
  auto d = Start();  // re-adopts the job, cancel requested: the second SIGTERM
  ASSERT_NE(d, nullptr);
  const bool ended = WaitTerminal(*d, 1);
  if (!ended && Get(*d, 1).pid > 0) ::kill(-static_cast<pid_t>(Get(*d, 1).pid), SIGKILL);
  ASSERT_TRUE(ended) << "the job did not get the cancel again";
  EXPECT_EQ(Get(*d, 1).state, JobState::kCancelled);
  EXPECT_EQ(Get(*d, 1).exit_code, 0);
}

// Regression (gang_waits_forever_without_reason): a gang that can no longer
// fit because a GPU is gone waited with no reason. It now says why, and
// starts when the GPU takes placements again.
TEST_F(DaemonTest, GangThatCannotFitNowSaysWhy) {
  auto d = Start("2xA100-40GB");
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Drain(1));
  ASSERT_OK(d->Submit(Req("7g.40gb", {"true"}, 2)));
  ASSERT_OK(d->Settle());
  DaemonJobRecord r = Get(*d, 1);
  EXPECT_EQ(r.state, JobState::kQueued);
  EXPECT_EQ(r.reason,
            "waiting: needs 2x7g.40gb at once; the GPUs that take placements now hold at most 1 "
            "(GPU 1 is drained)");
  ASSERT_OK(d->Undrain(1));
  ASSERT_TRUE(WaitTerminal(*d, 1));
  EXPECT_EQ(Get(*d, 1).state, JobState::kSucceeded);
}

// Regression (single_job_blocked_by_drain_has_no_reason): a one-instance job that fits only on a
// drained GPU waited with no reason, while a gang said why. By hand: 2 x A100 40GB, GPU 1
// drained; a 7g.40gb job fills GPU 0, the one GPU open; a 1g.5gb then has no room there and would
// have some on GPU 1. It says so, and starts once GPU 1 takes placements again.
TEST_F(DaemonTest, AJobThatFitsOnlyOnADrainedGpuSaysWhy) {
  auto d = Start("2xA100-40GB");
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Drain(1));
  ASSERT_OK(d->Submit(Req("7g.40gb", {"sleep", "60"})));
  ASSERT_OK(d->Settle());
  ASSERT_EQ(Get(*d, 1).state, JobState::kRunning);
  ASSERT_OK(d->Submit(Req("1g.5gb", {"true"})));
  ASSERT_OK(d->Settle());
  DaemonJobRecord r = Get(*d, 2);
  EXPECT_EQ(r.state, JobState::kQueued);
  EXPECT_EQ(r.reason,
            "waiting: no room for 1g.5gb now on the GPUs that take placements; there is on the "
            "others (GPU 1 is drained)");
  ASSERT_OK(d->Undrain(1));
  ASSERT_TRUE(WaitTerminal(*d, 2));
  EXPECT_EQ(Get(*d, 2).state, JobState::kSucceeded);
  ASSERT_OK(d->Cancel(1));
  ASSERT_TRUE(WaitTerminal(*d, 1));
}

// An operator's drain is stored (by GPU UUID) and applied again at start; an
// undrain is stored too. By hand: 2 x A100 40GB, GPU 1 drained, two 7g.40gb
// jobs: only GPU 0 can take one, so the second waits until the undrain.
// Regression: a pause was kept in memory only, so a daemon paused for maintenance and restarted
// started its queue at once. It is stored as a drain is: the restarted daemon stays paused (its
// queued job waits) until resume, and the resume is stored as well.
TEST_F(DaemonTest, PauseSurvivesARestart) {
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_OK(d->Pause());
    ASSERT_OK(d->Submit(Req("1g.5gb", {"true"})));
    ASSERT_OK(d->Settle());
    EXPECT_EQ(Get(*d, 1).state, JobState::kQueued);
  }
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    EXPECT_TRUE(d->paused());
    EXPECT_TRUE(d->Node().paused);
    ASSERT_OK(d->Settle());
    EXPECT_EQ(Get(*d, 1).state, JobState::kQueued);
    ASSERT_OK(d->Resume());
    ASSERT_TRUE(WaitTerminal(*d, 1));
    EXPECT_EQ(Get(*d, 1).state, JobState::kSucceeded);
  }
  auto d = Start();
  ASSERT_NE(d, nullptr);
  EXPECT_FALSE(d->paused());  // the resume was stored as well
}

// Regression (pause_answered_while_the_store_was_down): with the store unwritable a pause was
// answered 200 and held in memory only (a restart started the queue); a drain got 503. Both are
// refused now, as every change is, and nothing changes.
TEST_F(DaemonTest, APauseIsRefusedWhileTheStoreCannotBeWritten) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Submit(Req("1g.5gb", {"sleep", "0.2"})));
  ASSERT_OK(d->Settle());
  // The job's end cannot be stored: the store is degraded.
  d->store_writer_for_testing()->SetFailureForTesting(UnavailableError("disk full"));
  ASSERT_TRUE(TickUntil(*d, [&] { return !d->Health().ok(); }));
  Status paused = d->Pause();
  EXPECT_EQ(paused.code(), StatusCode::kUnavailable) << paused.message();
  EXPECT_FALSE(d->paused());
  EXPECT_EQ(d->Drain(NvmlIndex{0}).code(), StatusCode::kUnavailable);
  d->store_writer_for_testing()->SetFailureForTesting(Status());
  ASSERT_TRUE(TickUntil(*d, [&] { return d->Health().ok(); }));
  ASSERT_OK(d->Pause());
  EXPECT_TRUE(d->paused());
  d.reset();
  auto again = Start();
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(again->paused());  // the pause that was answered was stored
}

// Regression (pause_rejected_queued_jobs): with `scheduler: max-wait`, a job queued while the
// daemon was paused was turned away after max-wait ("waited longer than --max-wait"): a pause for
// maintenance lost accepted jobs. By hand, max-wait 5 s, one A100: job 1 (7g.40gb) runs; paused,
// job 2 (1g.5gb, no room while job 1 runs) is submitted and the pause lasts 60 s: job 2 stays
// queued. Resumed, it still has its 5 s: queued after 4 s, turned away after 6 s.
TEST_F(DaemonTest, APauseHoldsTheQueueAgainstMaxWait) {
  ManualClock clock(1'800'000'000'000'000'000);
  clock_ = &clock;
  config_.scheduler.max_wait_s = 5;
  auto d = Start("1xA100-40GB");
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Submit(Req("7g.40gb", {"sleep", "30"})));
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kRunning); }));
  ASSERT_OK(d->Pause());
  ASSERT_OK(d->Submit(Req("1g.5gb", {"true"})));
  clock.Advance(60 * kSecond);
  ASSERT_OK(d->Settle());
  EXPECT_EQ(Get(*d, 2).state, JobState::kQueued);
  ASSERT_OK(d->Resume());
  ASSERT_OK(d->Settle());
  EXPECT_EQ(Get(*d, 2).state, JobState::kQueued);
  clock.Advance(4 * kSecond);
  ASSERT_OK(d->Settle());
  EXPECT_EQ(Get(*d, 2).state, JobState::kQueued);
  clock.Advance(2 * kSecond);
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 2, JobState::kRejected); }));
  EXPECT_EQ(Get(*d, 2).reason, "waited longer than max-wait (5 s; the scheduler's setting)");
  ASSERT_OK(d->Cancel(1));
  ASSERT_TRUE(WaitTerminal(*d, 1));
}

TEST_F(DaemonTest, DrainSurvivesARestart) {
  {
    auto d = Start("2xA100-40GB");
    ASSERT_NE(d, nullptr);
    ASSERT_OK(d->Drain(1));
  }
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    EXPECT_FALSE(d->Gpus()[0].draining);
    EXPECT_TRUE(d->Gpus()[1].draining);
    ASSERT_OK(d->Submit(Req("7g.40gb", {"sleep", "30"})));
    ASSERT_OK(d->Submit(Req("7g.40gb", {"true"})));
    ASSERT_OK(d->Settle());
    EXPECT_EQ(Get(*d, 1).state, JobState::kRunning);
    EXPECT_EQ(Get(*d, 1).instances[0].gpu, NvmlIndex{0});
    EXPECT_EQ(Get(*d, 2).state, JobState::kQueued);
    ASSERT_OK(d->Undrain(1));
    ASSERT_TRUE(WaitTerminal(*d, 2));
    EXPECT_EQ(Get(*d, 2).instances[0].gpu, NvmlIndex{1});
    ASSERT_OK(d->Cancel(1));
    ASSERT_TRUE(WaitTerminal(*d, 1));
  }
  auto d = Start();
  ASSERT_NE(d, nullptr);
  EXPECT_FALSE(d->Gpus()[1].draining);  // the undrain was stored as well
}

// Regression (profile_stored_as_typed): the daemon kept a job's profile as
// the client typed it, so "1G.5GB" and "1g.5gb" were two profiles to the
// idempotency check, the records and the store, and an allocation naming
// "MIG-3g.20gb" found no reservation of 3g.20gb. Every spelling that
// NormalizeProfileName accepts is now one profile, in the catalog's spelling.
TEST_F(DaemonTest, ProfileSpellingsAreOneProfile) {
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_OK(d->Pause());
    ASSERT_OK_AND_ASSIGN(SubmitResult first, d->Submit(Req("1G.5GB", {"true"}), "k"));
    EXPECT_EQ(first.record.request.profile, "1g.5gb");
    ASSERT_OK_AND_ASSIGN(SubmitResult again,
                         d->Submit(Req("nvidia.com/mig-1g.5gb", {"true"}), "k"));
    EXPECT_TRUE(again.replayed);
    EXPECT_EQ(again.record.id, first.record.id);
    ASSERT_OK_AND_ASSIGN(PlanPreview p, d->PreviewPlan(Req(" MIG-2G.10GB ", {"true"})));
    EXPECT_TRUE(p.fits_now);
    ReservationRequest room;
    room.owner = "slurm:5";
    room.placements = {{0, "3G.20GB", 4}};
    ASSERT_OK_AND_ASSIGN(ReserveResult r, d->Reserve(room));
    EXPECT_EQ(r.reservation.record.placements[0].profile, "3g.20gb");
    AllocationRequest a;
    a.owner = "slurm:5";
    a.reservation = "slurm:5";
    a.instances = {{-1, "MIG-3g.20gb", -1}};
    ASSERT_OK_AND_ASSIGN(SubmitResult bound, d->Allocate(a, ""));
    EXPECT_EQ(bound.record.state, JobState::kRunning);
    EXPECT_EQ(bound.record.allocation.instances[0].profile, "3g.20gb");
    ASSERT_EQ(bound.record.instances.size(), 1u);
    EXPECT_EQ(bound.record.instances[0].start, 4);
  }
  auto d = Start();  // what the store kept
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(Get(*d, 1).request.profile, "1g.5gb");
  EXPECT_EQ(Get(*d, 2).allocation.instances[0].profile, "3g.20gb");
}

TEST_F(DaemonTest, IdempotencyKeyGivesTheFirstJobBack) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Pause());
  ASSERT_OK_AND_ASSIGN(SubmitResult first, d->Submit(Req("1g.5gb", {"true"}), "client-7"));
  EXPECT_FALSE(first.replayed);
  ASSERT_OK_AND_ASSIGN(SubmitResult again, d->Submit(Req("1g.5gb", {"true"}), "client-7"));
  EXPECT_TRUE(again.replayed);
  EXPECT_EQ(again.record.id, first.record.id);
  StatusOr<SubmitResult> other = d->Submit(Req("2g.10gb", {"true"}), "client-7");
  EXPECT_EQ(other.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(other.status().message(),
            "idempotency key 'client-7' was used for another request (job 1)");
  EXPECT_EQ(d->ListJobs().size(), 1u);
  d.reset();
  auto restarted = Start();  // the key is stored with the job
  ASSERT_NE(restarted, nullptr);
  ASSERT_OK_AND_ASSIGN(SubmitResult after, restarted->Submit(Req("1g.5gb", {"true"}), "client-7"));
  EXPECT_TRUE(after.replayed);
  EXPECT_EQ(after.record.id, 1);
}

// Regression (checkpoint_blocks_the_api): the checkpoint command ran under
// the daemon's lock and blocked every call for up to its timeout. It runs as
// a helper process now; this one waits for a file only the test creates,
// which it can only do while the API answers.
TEST_F(DaemonTest, CheckpointDoesNotBlockTheApi) {
  config_.checkpoint_command = {"sh", "-c",
                                "touch {dir}/started; while [ ! -e {dir}/go ]; do sleep 0.01; "
                                "done; echo saved > {dir}/state"};
  config_.restore_command = {"sh", "-c", "cat {dir}/state"};
  config_.scheduler.migration.passes =
      DefragPasses::kAlways;  // a completion pass with nothing waiting
  auto d = Start();
  ASSERT_NE(d, nullptr);
  // As in the checkpoint test of daemon_test.cc: job 2 moves from 3g@0 to
  // 3g@4 when job 1 ends.
  ASSERT_OK(d->Submit(Req("3g.20gb", {"sleep", "0.2"})));
  JobRequest r = Req("3g.20gb", {"sleep", "30"});
  r.migratable = Migratable::kCheckpoint;
  ASSERT_OK(d->Submit(r));
  const std::filesystem::path dir =
      std::filesystem::path(config_.state_dir) / "jobs" / "2" / "checkpoint-0";
  ASSERT_TRUE(TickUntil(*d, [&] { return std::filesystem::exists(dir / "started"); }));
  // The checkpoint runs; the API answers and the loop goes on.
  EXPECT_EQ(d->Gpus().size(), 1u);
  ASSERT_OK(d->Submit(Req("1g.5gb", {"true"})));
  ASSERT_OK(d->Tick());
  { std::ofstream(dir / "go") << "\n"; }
  ASSERT_TRUE(TickUntil(*d, [&] { return Get(*d, 2).state == JobState::kSucceeded; }));
  EXPECT_EQ(Get(*d, 2).migrations, 1);
  EXPECT_THAT(ReadFile(d->LogPath(2)), HasSubstr("saved\n"));
}

// Regression: state_dir / or /tmp was answered "run chmod 700 /" (or /tmp), which breaks the
// host if followed. A folder the system shares is refused as such, and left as it is.
TEST_F(DaemonTest, AStateDirTheSystemSharesIsRefused) {
  StatusOr<std::vector<const GpuModel*>> models = ParseClusterSpec("1xA100-40GB", BundledCatalog());
  ASSERT_OK(models);
  for (const std::string dir : {"/", "/tmp", "/var", "/tmp/"}) {
    struct stat before {};
    ASSERT_EQ(::stat(dir.c_str(), &before), 0) << dir;
    DaemonConfig c = config_;
    c.state_dir = dir;
    StatusOr<std::unique_ptr<Daemon>> d =
        Daemon::Create(c, std::make_unique<FakeBackend>(*models, FakeFaults{}), &BundledCatalog());
    ASSERT_FALSE(d.ok()) << dir;
    EXPECT_EQ(d.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(d.status().message(),
              "state_dir " + dir +
                  " is a folder the system shares; give the daemon a folder of its own (e.g. "
                  "/var/lib/migsched, which it creates with mode 0700)");
    struct stat after {};
    ASSERT_EQ(::stat(dir.c_str(), &after), 0);
    EXPECT_EQ(after.st_mode, before.st_mode) << dir;
  }
}

// Regression (unsafe_state_dir_accepted): a state dir with mode 0755 was
// accepted (job logs, the database and the token readable by jobs).
TEST_F(DaemonTest, StateDirOpenToOthersIsRefused) {
  ::chmod(config_.state_dir.c_str(), 0755);
  StatusOr<std::vector<const GpuModel*>> models = ParseClusterSpec("1xA100-40GB", BundledCatalog());
  ASSERT_OK(models);
  StatusOr<std::unique_ptr<Daemon>> d = Daemon::Create(
      config_, std::make_unique<FakeBackend>(*models, FakeFaults{}), &BundledCatalog());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(d.status().message(),
            "state_dir " + config_.state_dir +
                " has mode 0755: group or others may read it (job logs, the database, the "
                "token); run chmod 700 " +
                config_.state_dir);
  ::chmod(config_.state_dir.c_str(), 0700);
  { std::ofstream(config_.state_dir + "/migsched.db") << ""; }
  ::chmod((config_.state_dir + "/migsched.db").c_str(), 0644);
  d = Daemon::Create(config_, std::make_unique<FakeBackend>(*models, FakeFaults{}),
                     &BundledCatalog());
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), HasSubstr("has mode 0644: group or others may read it"));
}

// Regression (history_never_pruned): finished jobs were kept forever
// (memory, database, logs). They go `retention_s` after their end.
TEST_F(DaemonTest, FinishedJobsArePrunedAfterTheRetention) {
  ManualClock clock(1'800'000'000'000'000'000);
  clock_ = &clock;
  config_.retention_s = 3600;
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Submit(Req("1g.5gb", {"true"})));
  ASSERT_TRUE(WaitTerminal(*d, 1));
  ASSERT_TRUE(std::filesystem::exists(d->LogPath(1)));
  clock.Advance(int64_t{3599} * 1'000'000'000);  // not yet
  ASSERT_OK(d->Settle());
  EXPECT_OK(d->GetJob(1));
  clock.Advance(int64_t{120} * 1'000'000'000);  // past the retention and the prune interval
  ASSERT_OK(d->Settle());
  EXPECT_EQ(d->GetJob(1).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(d->LogPath(1).parent_path()));
  d.reset();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<JobStore> store, JobStore::Open(config_.state_dir));
  ASSERT_OK_AND_ASSIGN(std::vector<DaemonJobRecord> all, store->LoadAll());
  EXPECT_TRUE(all.empty());
  ASSERT_OK_AND_ASSIGN(DaemonJobId next, store->NextJobId());
  EXPECT_EQ(next, 2);  // the pruned id is not given again
}

// Regression (listings_not_paged): GET /v1/jobs returned every job at once.
TEST_F(DaemonTest, ListingsArePaged) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Pause());
  for (int i = 0; i < 250; ++i) ASSERT_OK(d->Submit(Req("1g.5gb", {"true"})));
  JobQuery q;  // limit 100 by default
  JobPage p1 = d->ListJobs(q);
  ASSERT_EQ(p1.jobs.size(), 100u);
  EXPECT_EQ(p1.jobs.front().id, 1);
  EXPECT_EQ(p1.next, 100);
  q.after = p1.next;
  JobPage p2 = d->ListJobs(q);
  EXPECT_EQ(p2.jobs.front().id, 101);
  EXPECT_EQ(p2.next, 200);
  q.after = p2.next;
  JobPage p3 = d->ListJobs(q);
  EXPECT_EQ(p3.jobs.size(), 50u);
  EXPECT_EQ(p3.next, 0);
  q = JobQuery{};
  q.limit = 5000;  // clamped to 1000
  EXPECT_EQ(d->ListJobs(q).jobs.size(), 250u);
}

// Regression (jobs_run_as_the_daemons_user): jobs ran as root and read the
// token, other jobs' logs and environments.
TEST_F(DaemonTest, JobsCannotReadTheStateDir) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (the daemon's user) to run jobs as nobody";
  auto d = Start();
  ASSERT_NE(d, nullptr);
  JobRequest secret = Req("1g.5gb", {"sh", "-c", "echo $TOP_SECRET > /dev/null"});
  secret.env["TOP_SECRET"] = "hunter2";
  ASSERT_OK(d->Submit(secret));
  const std::string s = config_.state_dir;
  ASSERT_OK(d->Submit(Req("1g.5gb", {"sh", "-c",
                                     "id -un; for f in " + s + "/token " + s + "/migsched.db " + s +
                                         "/jobs/1/log; do cat $f 2>&1 | head -c 200; "
                                         "done; grep -r hunter2 " +
                                         s + " 2>&1 | head -3"})));
  ASSERT_TRUE(WaitTerminal(*d, 2));
  const std::string log = ReadFile(d->LogPath(2));
  EXPECT_THAT(log, HasSubstr("cannot find name for user ID 6"));  // a per-job uid, no name
  EXPECT_EQ(log.find("hunter2"), std::string::npos) << log;
  EXPECT_EQ(log.find("SQLite"), std::string::npos) << log;
  EXPECT_THAT(log, HasSubstr("Permission denied"));
}

// The uid of the process whose /proc/<pid>/status is `status` (-1: none).
int64_t UidOf(const std::filesystem::path& status) {
  std::ifstream in(status);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("Uid:")) return std::stoll(line.substr(4));
  }
  return -1;
}

// Regression (jobs_share_nobody): every job ran as nobody, so a job read
// another's SECRET through /proc/<pid>/environ and could signal it. Each job
// runs under a uid of its own from job_uids (61184-65519 by default).
TEST_F(DaemonTest, JobsCannotReadEachOthersEnvironmentFilesOrSignalThem) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (the daemon's user) to give jobs uids";
  // A range of this test's own (tests run in parallel): job 1 gets its first
  // uid, job 2 the next ((id - 1) mod 10 from the first).
  const int64_t first = 62000 + ::getpid() % 3000;
  config_.job_uids = std::to_string(first) + "-" + std::to_string(first + 9);
  auto d = Start();
  ASSERT_NE(d, nullptr);
  JobRequest victim = Req("1g.5gb", {"sh", "-c", "id -u; echo mine > private; exec sleep 30"});
  victim.env["SECRET"] = "hunter2";
  ASSERT_OK(d->Submit(victim));
  ASSERT_TRUE(
      TickUntil(*d, [&] { return ReadFile(d->LogPath(1)).find('\n') != std::string::npos; }));
  const int64_t uid1 = std::stoll(ReadFile(d->LogPath(1)));
  EXPECT_EQ(uid1, first);
  // The victim's command: its `sleep 30` under its uid (not a shell of the moment before the
  // exec, which may be gone when it is read: regression of a flaky first version of this test).
  int64_t pid = 0;
  ASSERT_TRUE(TickUntil(*d, [&] {
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      const std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") == std::string::npos &&
          UidOf(e.path() / "status") == uid1 &&
          ReadFile((e.path() / "cmdline").string()).starts_with("sleep")) {
        pid = std::stoll(name);
        return true;
      }
    }
    return false;
  }));
  ASSERT_GT(pid, 0);
  // Control: root (the test) reads its environment, so the probe below can find it.
  EXPECT_THAT(ReadFile("/proc/" + std::to_string(pid) + "/environ"), HasSubstr("SECRET=hunter2"));
  const std::string p = std::to_string(pid);
  const std::string work1 = (std::filesystem::path(config_.WorkDir()) / "1").string();
  ASSERT_OK(d->Submit(Req("1g.5gb", {"sh", "-c",
                                     "id -u; tr '\\0' '\\n' < /proc/" + p +
                                         "/environ | grep SECRET || echo cannot-read-env; "
                                         "kill -0 " +
                                         p +
                                         " && echo signalled || echo cannot-signal; "
                                         "cat " +
                                         work1 + "/private || echo cannot-read-files"})));
  ASSERT_TRUE(WaitTerminal(*d, 2));
  const std::string log = ReadFile(d->LogPath(2));
  EXPECT_EQ(std::stoll(log), first + 1);
  EXPECT_EQ(log.find("hunter2"), std::string::npos) << log;
  EXPECT_THAT(log, HasSubstr("cannot-read-env"));
  EXPECT_THAT(log, HasSubstr("cannot-signal"));
  EXPECT_THAT(log, HasSubstr("cannot-read-files"));
  EXPECT_EQ(log.find("mine"), std::string::npos) << log;
  ASSERT_OK(d->Cancel(1));
  ASSERT_TRUE(WaitTerminal(*d, 1));
}

// The live processes whose real uid is `uid`.
int ProcessesOf(int64_t uid) {
  int n = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = ReadProcFile((it->path() / "stat").string()).value_or("");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos || stat.size() < paren + 3 || stat[paren + 2] == 'Z') continue;
    if (UidOf(it->path() / "status") == uid) ++n;
  }
  return n;
}

// Waits (at most 5 s) until `n` live processes have `uid`; whether they do.
bool ProcessesOfBecome(int64_t uid, int n) {
  for (int i = 0; i < 500 && ProcessesOf(uid) != n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return ProcessesOf(uid) == n;
}

// A `sleep 60` under `uid` (gid the same) with the environment `env` (NAME=VALUE entries), as a
// process no job of the daemon owns (another daemon's job, a leftover that changed its
// environment); killed and reaped by Stop or at the end of its scope.
class SleeperAs {
 public:
  SleeperAs(int64_t uid, std::vector<std::string> env) {
    // Everything the child needs, made before the fork (no allocation after it).
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    char* argv[] = {const_cast<char*>("sleep"), const_cast<char*>("60"), nullptr};
    pid_ = ::fork();
    if (pid_ != 0) return;
    if (::setgid(static_cast<gid_t>(uid)) != 0 || ::setuid(static_cast<uid_t>(uid)) != 0) {
      ::_exit(1);
    }
    ::execve("/bin/sleep", argv, envp.data());
    ::_exit(127);
  }
  ~SleeperAs() { Stop(); }
  SleeperAs(const SleeperAs&) = delete;
  SleeperAs& operator=(const SleeperAs&) = delete;
  pid_t pid() const { return pid_; }
  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = 0;
  }

 private:
  pid_t pid_ = -1;
};

// Regression: a job's `setsid` child left its process group, so the end of the group did not
// end it: it ran on under the job's uid after the job had ended, holding CUDA_VISIBLE_DEVICES of
// a released instance, until the uid went to another job. What is left under a per-job uid with
// the job's HOME now ends with the job, also for a job re-adopted after a restart (its uid is
// found again). A process of the same uid with another HOME (a job of another daemon that uses
// the same job_uids on this host) is left alone.
TEST_F(DaemonTest, WhatAJobLeavesUnderItsUidEndsWithIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (the daemon's user) to give jobs uids";
  config_.on_shutdown = "leave";
  // A range of this test's own, apart from the test above's: job N gets first + N - 1.
  const int64_t first = 58000 + ::getpid() % 3000;
  config_.job_uids = std::to_string(first) + "-" + std::to_string(first + 9);
  // The bystander: job 1's uid, another daemon's HOME.
  SleeperAs bystander(first, {"HOME=/var/lib/another-daemon/work/1"});
  ASSERT_GT(bystander.pid(), 0);
  ASSERT_TRUE(ProcessesOfBecome(first, 1));
  // The bystander holds `first`: no job is given it, so job 1 gets first + 1 ((1 - 1) mod 10 = 0
  // taken, the next), and so does job 2 ((2 - 1) mod 10 = 1) once job 1 and its leftover are gone.
  const int64_t mine = first + 1;
  const std::string leave = "setsid sleep 60 </dev/null >/dev/null 2>&1 & ";
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_OK(d->Submit(Req("1g.5gb", {"sh", "-c", leave + "id -u"})));
    ASSERT_TRUE(WaitTerminal(*d, 1));
    EXPECT_EQ(Get(*d, 1).state, JobState::kSucceeded);
    EXPECT_EQ(std::stoll(ReadFile(d->LogPath(1))), mine);
    // Job 1's leftover is gone; the bystander runs on.
    EXPECT_TRUE(ProcessesOfBecome(mine, 0)) << ProcessesOf(mine) << " under job 1's uid";
    EXPECT_TRUE(ProcessesOfBecome(first, 1)) << ProcessesOf(first) << " under the bystander's";
    EXPECT_EQ(::waitpid(bystander.pid(), nullptr, WNOHANG), 0) << "the bystander was killed";
    ASSERT_OK(d->Submit(Req("1g.5gb", {"sh", "-c", leave + "exec sleep 30"})));
    ASSERT_TRUE(TickUntil(*d, [&] { return ProcessesOf(mine) == 2; }));
  }
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(Get(*d, 2).state, JobState::kRunning);  // re-adopted
  ASSERT_OK(d->Cancel(2));
  ASSERT_TRUE(WaitTerminal(*d, 2));
  EXPECT_TRUE(ProcessesOfBecome(mine, 0)) << ProcessesOf(mine) << " under job 2's uid";
}

// Regression (uids_shared_when_the_range_ran_out, uid_given_beside_a_leftover): with more jobs
// than uids, the next jobs shared a uid (or were given a system user's), and a uid was given to a
// job while a leftover of an ended job that had changed its HOME and MIGSCHED_JOB_DIR (`env -i`)
// still ran under it, and read the new job's environment. A uid some process has is not given;
// with none free a job waits, `starting` with its instances, and runs once one frees.
TEST_F(DaemonTest, AJobWaitsForAUidNoJobOrProcessHolds) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (the daemon's user) to give jobs uids";
  const int64_t first = 52000 + ::getpid() % 2000;
  config_.job_uids = std::to_string(first) + "-" + std::to_string(first + 1);
  // A leftover no end of job could tell: `first`, an environment of its own.
  SleeperAs leftover(first, {});
  ASSERT_GT(leftover.pid(), 0);
  ASSERT_TRUE(ProcessesOfBecome(first, 1));
  auto d = Start("2xA100-40GB");
  ASSERT_NE(d, nullptr);
  // Job 1: (1 - 1) mod 2 = 0 is the leftover's: first + 1.
  ASSERT_OK(d->Submit(Req("1g.5gb", {"sh", "-c", "id -u; exec sleep 30"})));
  ASSERT_TRUE(TickUntil(*d, [&] { return ProcessesOf(first + 1) == 1; }));
  // Job 2: both uids held. It waits, `starting`, and says why.
  ASSERT_OK(d->Submit(Req("1g.5gb", {"sh", "-c", "id -u"})));
  ASSERT_TRUE(TickUntil(*d, [&] { return Get(*d, 2).reason.starts_with("waiting for a uid"); }))
      << Get(*d, 2).reason;
  EXPECT_EQ(Get(*d, 2).state, JobState::kStarting);
  EXPECT_EQ(Get(*d, 2).reason,
            "waiting for a uid of its own: every uid of job_uids (2) is held by a job or a "
            "process");
  ASSERT_OK(d->Settle());  // a launch waiting for a uid does not hold Settle
  EXPECT_EQ(Get(*d, 2).state, JobState::kStarting);
  // The leftover ends: job 2 gets its uid and runs.
  leftover.Stop();
  ASSERT_TRUE(WaitTerminal(*d, 2));
  EXPECT_EQ(Get(*d, 2).state, JobState::kSucceeded);
  EXPECT_EQ(std::stoll(ReadFile(d->LogPath(2))), first);
  EXPECT_EQ(std::stoll(ReadFile(d->LogPath(1))), first + 1);
  ASSERT_OK(d->Cancel(1));
  ASSERT_TRUE(WaitTerminal(*d, 1));
}

// Regression (home_in_the_request_escaped_the_end_of_job_cleanup): a request that set HOME gave
// every process of the job that HOME, and the end of the job looked for the per-job HOME only,
// so a `setsid` child ran on under the job's uid. It is found by MIGSCHED_JOB_DIR now.
TEST_F(DaemonTest, ALeftoverIsEndedAlsoWhenTheRequestSetHome) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (the daemon's user) to give jobs uids";
  const int64_t first = 55000 + ::getpid() % 2000;
  config_.job_uids = std::to_string(first) + "-" + std::to_string(first + 9);
  auto d = Start();
  ASSERT_NE(d, nullptr);
  JobRequest r = Req("1g.5gb", {"sh", "-c", "setsid sleep 60 </dev/null >/dev/null 2>&1 & true"});
  r.env["HOME"] = "/tmp";
  ASSERT_OK(d->Submit(r));
  ASSERT_TRUE(WaitTerminal(*d, 1));
  EXPECT_EQ(Get(*d, 1).state, JobState::kSucceeded);
  EXPECT_TRUE(ProcessesOfBecome(first, 0)) << ProcessesOf(first) << " under job 1's uid";
}

// Regression (reused_uid_read_an_ended_jobs_directory): with a range of one uid, job 2 gets job
// 1's uid once job 1 has ended, and read the file job 1 left in its working directory (kept for
// days). The ended job's directory is the daemon's now: job 2 cannot enter it.
TEST_F(DaemonTest, AJobGivenAnEndedJobsUidCannotReadItsWorkingDirectory) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (the daemon's user) to give jobs uids";
  const int64_t uid = 57000 + ::getpid() % 900;
  config_.job_uids = std::to_string(uid) + "-" + std::to_string(uid);
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Submit(Req("1g.5gb", {"sh", "-c", "id -u; echo TOPSECRET > secret"})));
  ASSERT_TRUE(WaitTerminal(*d, 1));
  ASSERT_EQ(Get(*d, 1).state, JobState::kSucceeded);
  const std::string work1 = (std::filesystem::path(config_.WorkDir()) / "1").string();
  ASSERT_OK(d->Submit(
      Req("1g.5gb", {"sh", "-c", "id -u; cat " + work1 + "/secret || echo cannot-read"})));
  ASSERT_TRUE(WaitTerminal(*d, 2));
  EXPECT_EQ(std::stoll(ReadFile(d->LogPath(1))), uid);
  const std::string log = ReadFile(d->LogPath(2));
  EXPECT_EQ(std::stoll(log), uid);  // the same uid
  EXPECT_EQ(log.find("TOPSECRET"), std::string::npos) << log;
  EXPECT_THAT(log, HasSubstr("cannot-read"));
}

// Regression (root_jobs_with_a_warning): job_user: root started with a
// warning only. It is refused unless allow_root_jobs accepts it.
TEST_F(DaemonTest, JobUserRootIsRefusedUnlessAccepted) {
  config_.job_user = "root";
  FakeBackend fake(*ParseClusterSpec("1xA100-40GB", BundledCatalog()));
  StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(config_, std::make_unique<SharedBackend>(&fake), &BundledCatalog(), clock_);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(d.status().message(),
              HasSubstr("job_user: 'root' is root: jobs could read the API token"));
  EXPECT_THAT(d.status().message(), HasSubstr("set allow_root_jobs: true to accept it"));
  // Regression (trial_start_errors_without_line): the key's file and line come first when the
  // config was read from a file (here: as if job_user were on line 6 of d.yaml).
  config_.origin = "d.yaml";
  config_.key_lines["job_user"] = 6;
  d = Daemon::Create(config_, std::make_unique<SharedBackend>(&fake), &BundledCatalog(), clock_);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), ::testing::StartsWith("d.yaml:6: job_user: 'root' is root"));
  config_.allow_root_jobs = true;
  d = Daemon::Create(config_, std::make_unique<SharedBackend>(&fake), &BundledCatalog(), clock_);
  EXPECT_OK(d);
}

TEST_F(DaemonTest, AJobUidRangeOfSystemUsersOnlyIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "per-job uids are for a root daemon";
  StatusOr<RunAsUser> nobody = LookUpUser("nobody");
  if (!nobody.ok()) GTEST_SKIP() << "no user nobody here";
  const std::string uid = std::to_string(nobody->uid);
  config_.job_uids = uid + "-" + uid;
  FakeBackend fake(*ParseClusterSpec("1xA100-40GB", BundledCatalog()));
  StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(config_, std::make_unique<SharedBackend>(&fake), &BundledCatalog(), clock_);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(),
              HasSubstr("every uid of the range belongs to a user of the system"));
}

// A start that fails after discovery (here: the job store is not a SQLite
// database) returns the error; tearing the half-built daemon down must not
// touch the parts it never started (it used to flush a store writer that did
// not exist yet).
TEST_F(DaemonTest, AStartThatFailsAtTheStoreReturnsTheErrorWithoutACrash) {
  const std::filesystem::path path = std::filesystem::path(config_.state_dir) / "migsched.db";
  {
    std::ofstream db(path);
    db << "this is not a SQLite database, and it is longer than its 100-byte header would be...\n";
  }
  ::chmod(path.c_str(), 0600);
  FakeBackend fake(*ParseClusterSpec("1xA100-40GB", BundledCatalog()));
  StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(config_, std::make_unique<SharedBackend>(&fake), &BundledCatalog(), clock_);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), HasSubstr("migsched.db"));
}

// An internal error in the scheduler core (a bug: here the fault drill fails job 2's placement)
// refuses that one decision, never the daemon or an accepted job: jobs 1 and 3 run, job 2 stays
// queued holding no instance, with a waiting reason that says so; the metric counts it, the
// daemon stays healthy. Once the fault is gone and the retry time has passed, job 2 runs.
TEST_F(DaemonTest, AnInternalErrorInTheCoreCostsNoJobAndNotTheDaemon) {
  ManualClock clock(1'800'000'000'000'000'000);
  clock_ = &clock;
  auto d = Start("1xA100-40GB");
  ASSERT_NE(d, nullptr);
  std::atomic<bool> fail{true};
  d->InjectSchedulerFaultForTesting([&fail](DaemonJobId id) { return fail && id == 2; });
  ASSERT_OK(d->Pause());
  for (int i = 0; i < 3; ++i) ASSERT_OK(d->Submit(Req("1g.5gb", {"true"})));
  ASSERT_OK(d->Resume());
  ASSERT_TRUE(
      TickUntil(*d, [&] { return IsTerminal(Get(*d, 1).state) && IsTerminal(Get(*d, 3).state); }));
  EXPECT_EQ(Get(*d, 1).state, JobState::kSucceeded);
  EXPECT_EQ(Get(*d, 3).state, JobState::kSucceeded);
  const DaemonJobRecord two = Get(*d, 2);
  EXPECT_EQ(two.state, JobState::kQueued);
  EXPECT_THAT(two.reason, HasSubstr("internal error"));
  EXPECT_GE(d->Metrics().internal_errors, 1);
  for (const GpuView& g : d->Gpus()) {
    for (const InstanceView& in : g.instances) EXPECT_FALSE(in.busy && in.job == 2);
  }
  EXPECT_OK(d->Health());
  fail = false;
  clock.Advance(static_cast<int64_t>(kInternalErrorRetryS * 1e9));
  ASSERT_TRUE(WaitTerminal(*d, 2));
  EXPECT_EQ(Get(*d, 2).state, JobState::kSucceeded);
}

// Regression (trial_launch_trouble_failed_accepted_jobs): in a trial the state filesystem ran
// out of inodes, the daemon could not make the job directories, and every queued job ended
// `failed` for good while /healthz said ok. Here a plain file stands where job 1's directory goes
// (state_dir/jobs/1): its launch fails on the daemon's side; the job waits `starting`, keeping
// its instance, with the reason; /healthz is degraded and says why. Once the file is gone and
// the first retry wait (5 s) has passed, the job runs and the daemon is healthy again.
TEST_F(DaemonTest, ALaunchTheDaemonCannotMakeCostsNoJob) {
  ManualClock clock(1'800'000'000'000'000'000);
  clock_ = &clock;
  auto d = Start("1xA100-40GB");
  ASSERT_NE(d, nullptr);
  const std::filesystem::path blocker = std::filesystem::path(config_.state_dir) / "jobs" / "1";
  std::filesystem::create_directories(blocker.parent_path());
  std::ofstream(blocker) << "in the way\n";
  ASSERT_OK(d->Submit(Req("1g.5gb", {"true"})));
  ASSERT_TRUE(TickUntil(
      *d, [&] { return Get(*d, 1).reason.find("could not launch") != std::string::npos; }));
  const DaemonJobRecord one = Get(*d, 1);
  EXPECT_EQ(one.state, JobState::kStarting);
  EXPECT_THAT(one.reason, HasSubstr("tried again in 5 s"));
  EXPECT_THAT(one.reason, HasSubstr("job directory " + blocker.string()));
  const Status health = d->Health();
  EXPECT_FALSE(health.ok());
  EXPECT_THAT(health.message(), HasSubstr("jobs cannot be launched: job directory"));
  bool busy = false;
  for (const GpuView& g : d->Gpus()) {
    for (const InstanceView& in : g.instances) busy = busy || (in.busy && in.job == 1);
  }
  EXPECT_TRUE(busy);  // it keeps its instance while it waits
  std::filesystem::remove(blocker);
  clock.Advance(static_cast<int64_t>(5e9));
  ASSERT_TRUE(WaitTerminal(*d, 1));
  EXPECT_EQ(Get(*d, 1).state, JobState::kSucceeded);
  EXPECT_OK(d->Health());
}

}  // namespace
}  // namespace migsched
