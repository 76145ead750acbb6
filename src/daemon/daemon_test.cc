#include "daemon/daemon.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "core/cluster.h"
#include "daemon/daemon_fixture.h"
#include "daemon/fake_backend.h"
#include "daemon/job_store.h"
#include "daemon/process_runner.h"
#include "testing/status_matchers.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::MakeTempDir;
using ::migsched::testing::ReadFile;

using ::migsched::testing::BundledCatalog;

TEST_F(DaemonTest, JobRunsToSuccessWithLogAndExitCode) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  StatusOr<DaemonJobRecord> r =
      d->Submit(Req("1g.5gb", {"sh", "-c", "echo hi $CUDA_VISIBLE_DEVICES"}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->id, 1);
  EXPECT_EQ(r->state, JobState::kQueued);
  ASSERT_TRUE(TickUntil(*d, [&] { return IsTerminal(Get(*d, 1).state); }));
  DaemonJobRecord done = Get(*d, 1);
  EXPECT_EQ(done.state, JobState::kSucceeded);
  ASSERT_TRUE(done.exit_code.has_value());
  EXPECT_EQ(*done.exit_code, 0);
  ASSERT_EQ(done.instances.size(), 1u);
  // §4 on an empty A100 40GB: every 1g.5gb start has ΔFragCost; 1g@6 costs 0
  // (table in §2: "1g@6 | 0"), the only start with no loss → start 6.
  EXPECT_EQ(done.instances[0].start, 6);
  EXPECT_EQ(ReadFile(d->LogPath(1)), "hi " + done.instances[0].mig_uuid + "\n");
  EXPECT_GT(done.started_at, 0);
  EXPECT_GE(done.ended_at, done.started_at);

  StatusOr<DaemonJobRecord> f = d->Submit(Req("1g.5gb", {"false"}));
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(TickUntil(*d, [&] { return IsTerminal(Get(*d, 2).state); }));
  EXPECT_EQ(Get(*d, 2).state, JobState::kFailed);
  EXPECT_EQ(Get(*d, 2).exit_code, 1);
  EXPECT_EQ(Get(*d, 2).reason, "exited with code 1");

  // Regression exit_status_above_128_read_as_a_signal: a command that exits with 200 itself was
  // "killed by signal 72"; one that a signal kills still says so.
  ASSERT_TRUE(d->Submit(Req("1g.5gb", {"sh", "-c", "exit 200"})).ok());
  ASSERT_TRUE(d->Submit(Req("1g.5gb", {"sh", "-c", "kill -TERM $$"})).ok());
  ASSERT_TRUE(
      TickUntil(*d, [&] { return IsTerminal(Get(*d, 3).state) && IsTerminal(Get(*d, 4).state); }));
  EXPECT_EQ(Get(*d, 3).exit_code, 200);
  EXPECT_EQ(Get(*d, 3).reason, "exited with code 200");
  EXPECT_EQ(Get(*d, 4).exit_code, 128 + SIGTERM);
  EXPECT_EQ(Get(*d, 4).reason, "killed by signal 15");
}

TEST_F(DaemonTest, TwoJobsGetNonOverlappingPlacementsThenQueueAndReuse) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  // By hand (§4, A100 40GB): job 1 3g.20gb on the empty GPU: candidates @0
  // (FragCost 0.35) and @4 (0) → @4. Job 2: only @0 is free → @0. Job 3
  // (3g): 1 compute slice left → queued; when job 1 ends its 3g@4 stays idle
  // and job 3 reuses it (step 4).
  ASSERT_TRUE(d->Submit(Req("3g.20gb", {"sleep", "0.3"})).ok());
  ASSERT_TRUE(d->Submit(Req("3g.20gb", {"sleep", "5"})).ok());
  ASSERT_TRUE(d->Submit(Req("3g.20gb", {"true"})).ok());
  ASSERT_OK(d->Settle());
  DaemonJobRecord j1 = Get(*d, 1), j2 = Get(*d, 2);
  ASSERT_EQ(j1.state, JobState::kRunning);
  ASSERT_EQ(j2.state, JobState::kRunning);
  EXPECT_EQ(j1.instances[0].profile, "3g.20gb");
  EXPECT_EQ(j1.instances[0].start, 4);
  EXPECT_EQ(j1.instances[0].size, 4);
  EXPECT_EQ(j2.instances[0].start, 0);
  EXPECT_NE(j1.instances[0].mig_uuid, j2.instances[0].mig_uuid);
  EXPECT_EQ(Get(*d, 3).state, JobState::kQueued);
  EXPECT_EQ(d->Metrics().queue_length, 1);
  const std::string reused = j1.instances[0].mig_uuid;
  ASSERT_TRUE(TickUntil(*d, [&] { return Get(*d, 3).state == JobState::kSucceeded; }));
  EXPECT_EQ(Get(*d, 1).state, JobState::kSucceeded);
  EXPECT_EQ(Get(*d, 3).instances[0].start, 4);
  EXPECT_EQ(Get(*d, 3).instances[0].mig_uuid, reused);  // the same MIG instance, no reconfiguration
  // Creates so far: 3g@4 and 3g@0 only.
  EXPECT_EQ(fake_->creates(), 2);
  std::vector<GpuView> gpus = d->Gpus();
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].placement_units, 8);
  ASSERT_EQ(gpus[0].instances.size(), 2u);
  EXPECT_TRUE(gpus[0].instances[0].busy);  // 3g@0, job 2
  EXPECT_EQ(gpus[0].instances[0].job, 2);
  EXPECT_FALSE(gpus[0].instances[1].busy);  // 3g@4, idle
  // util 3/7 ≥ 0.4 → busy; FragCost(3g@0 busy) = 0.35 (§2 table).
  EXPECT_NEAR(gpus[0].utilisation, 3.0 / 7, 1e-12);
  EXPECT_FALSE(gpus[0].lazy);
  EXPECT_NEAR(gpus[0].frag_cost, 0.35, 1e-9);
  ASSERT_TRUE(d->Cancel(2).ok());
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 2, JobState::kCancelled); }));
}

TEST_F(DaemonTest, CancelQueuedAndRunning) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(d->Submit(Req("7g.40gb", {"sleep", "30"})).ok());
  ASSERT_TRUE(d->Submit(Req("7g.40gb", {"true"})).ok());
  ASSERT_OK(d->Settle());
  ASSERT_EQ(Get(*d, 1).state, JobState::kRunning);
  ASSERT_EQ(Get(*d, 2).state, JobState::kQueued);
  StatusOr<DaemonJobRecord> c = d->Cancel(2);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->state, JobState::kCancelled);
  EXPECT_EQ(c->reason, "cancelled while queued");
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(d->Cancel(1).ok());
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kCancelled); }));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));  // SIGTERM was enough
  EXPECT_EQ(Get(*d, 1).exit_code, 128 + SIGTERM);
  StatusOr<DaemonJobRecord> again = d->Cancel(1);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(again.status().message(), "job 1 is already cancelled");
  EXPECT_EQ(d->Cancel(42).status().code(), StatusCode::kNotFound);
}

TEST_F(DaemonTest, GangIsAllOrNothing) {
  auto d = Start("2xA100-40GB");
  ASSERT_NE(d, nullptr);
  // Job 1 (7g) takes GPU 0 (both empty and lazy, equal ΔFragCost, lower
  // index). The gang of two 7g cannot start on GPU 1 alone: nothing is created.
  ASSERT_TRUE(d->Submit(Req("7g.40gb", {"sleep", "0.3"})).ok());
  ASSERT_TRUE(d->Submit(Req("7g.40gb", {"sh", "-c", "echo $CUDA_VISIBLE_DEVICES"}, 2)).ok());
  ASSERT_OK(d->Settle());
  EXPECT_EQ(Get(*d, 1).instances[0].gpu, NvmlIndex{0});
  EXPECT_EQ(Get(*d, 2).state, JobState::kQueued);
  EXPECT_TRUE(d->Gpus()[1].instances.empty());
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 2, JobState::kSucceeded); }));
  DaemonJobRecord g = Get(*d, 2);
  ASSERT_EQ(g.instances.size(), 2u);
  EXPECT_NE(g.instances[0].gpu, g.instances[1].gpu);
  EXPECT_EQ(ReadFile(d->LogPath(2)),
            g.instances[0].mig_uuid + "," + g.instances[1].mig_uuid + "\n");
}

TEST_F(DaemonTest, BadRequestsAndNeverRunnableJobs) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  StatusOr<DaemonJobRecord> r = d->Submit(Req("9g.99gb", {"true"}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("unknown profile '9g.99gb'"), std::string::npos);
  EXPECT_EQ(d->Submit(Req("1g.5gb", {})).status().message(),
            "field 'command' must be a non-empty argv array (program, arguments)");
  EXPECT_EQ(d->Submit(Req("1g.5gb", {"true"}, 0)).status().message(),
            "field 'count' must be from 1 to 64, got 0");
  EXPECT_TRUE(d->ListJobs().empty());  // nothing stored
  // Two 4g.20gb at once can never fit on one A100 (4g.20gb has one placement).
  r = d->Submit(Req("4g.20gb", {"true"}, 2));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->state, JobState::kRejected);
  EXPECT_FALSE(r->reason.empty());
  EXPECT_EQ(Get(*d, r->id).state, JobState::kRejected);
}

TEST_F(DaemonTest, DestroyInUseIsRetriedThenDone) {
  FakeFaults faults;
  faults.destroy_in_use = 2;
  auto d = Start("1xA100-40GB", faults);
  ASSERT_NE(d, nullptr);
  // Job 1 leaves an idle 3g.20gb@4; job 2 (7g) needs it destroyed, which
  // answers "in use" twice: job 2 waits (requeued), the instance stays in the
  // model, and the third try destroys it.
  ASSERT_TRUE(d->Submit(Req("3g.20gb", {"true"})).ok());
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kSucceeded); }));
  ASSERT_TRUE(d->Submit(Req("7g.40gb", {"true"})).ok());
  ASSERT_OK(d->Settle());
  DaemonJobRecord j2 = Get(*d, 2);
  EXPECT_EQ(j2.state, JobState::kQueued);
  EXPECT_NE(j2.reason.find("in use"), std::string::npos) << j2.reason;
  ASSERT_EQ(d->Gpus()[0].instances.size(), 1u);  // 3g@4 still there, not given away
  EXPECT_EQ(d->Gpus()[0].instances[0].start, 4);
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 2, JobState::kSucceeded); }));
  EXPECT_EQ(fake_->destroys(), 1);
  EXPECT_EQ(Get(*d, 2).instances[0].profile, "7g.40gb");
  EXPECT_EQ(Get(*d, 2).instances[0].start, 0);
}

TEST_F(DaemonTest, CreateFailureRequeuesTheJob) {
  FakeFaults faults;
  faults.fail_create = 1;
  auto d = Start("1xA100-40GB", faults);
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(d->Submit(Req("2g.10gb", {"true"})).ok());
  ASSERT_OK(d->Settle());
  DaemonJobRecord r = Get(*d, 1);
  EXPECT_EQ(r.state, JobState::kQueued);
  EXPECT_TRUE(r.reason.starts_with("requeued: create 2g.10gb")) << r.reason;
  EXPECT_TRUE(d->Gpus()[0].instances.empty());  // the model matches the backend
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kSucceeded); }));
}

TEST_F(DaemonTest, VanishedGpuIsDrainedAndTheJobRunsElsewhere) {
  FakeFaults faults;
  faults.disappear_gpu = 0;
  auto d = Start("2xA100-40GB", faults);
  ASSERT_NE(d, nullptr);
  // The job goes to GPU 0 (tie → lower index); its create finds the GPU gone.
  ASSERT_TRUE(d->Submit(Req("7g.40gb", {"true"})).ok());
  ASSERT_OK(d->Settle());
  EXPECT_EQ(Get(*d, 1).state, JobState::kQueued);
  EXPECT_TRUE(d->Gpus()[0].draining);
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kSucceeded); }));
  EXPECT_EQ(Get(*d, 1).instances[0].gpu, NvmlIndex{1});
}

// Regression (vanished_gpu_phantom_instance_and_stale_reason): on a node whose only GPU
// vanished at the job's create, `gpus` kept an idle 2g.10gb with no MIG UUID (the create had
// failed; the GPU could not be listed to drop it), and the job's reason stayed "requeued:
// create … is gone" where the docs promise it names the unreachable GPU.
TEST_F(DaemonTest, AVanishedGpuKeepsNoInstanceItNeverMadeAndTheJobSaysWhyItWaits) {
  FakeFaults faults;
  faults.disappear_gpu = 0;
  auto d = Start("1xA100-40GB", faults);
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(d->Submit(Req("2g.10gb", {"true"})).ok());
  ASSERT_OK(d->Settle());
  ASSERT_TRUE(TickUntil(*d, [&] { return Get(*d, 1).reason.starts_with("waiting: "); }))
      << Get(*d, 1).reason;
  EXPECT_EQ(Get(*d, 1).state, JobState::kQueued);
  // No open GPU: the open ones hold at most 0 of it (daemon.md, "waiting: needs …").
  EXPECT_THAT(Get(*d, 1).reason, ::testing::HasSubstr("hold at most 0 (GPU 0 is unreachable: "));
  EXPECT_TRUE(d->Gpus()[0].draining);
  EXPECT_TRUE(d->Gpus()[0].instances.empty());
}

TEST_F(DaemonTest, LaunchFailureFailsTheJobAndFreesItsInstance) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(d->Submit(Req("7g.40gb", {"no-such-command-migsched"})).ok());
  ASSERT_TRUE(d->Submit(Req("7g.40gb", {"true"})).ok());
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 2, JobState::kSucceeded); }));
  DaemonJobRecord r = Get(*d, 1);
  EXPECT_EQ(r.state, JobState::kFailed);
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_EQ(r.reason, "command not found: 'no-such-command-migsched'");
}

// Regression (one_daemon_per_state_dir): two daemons on one state dir ran the
// same queued job twice. The second is refused while the first lives, and
// the lock goes with the first daemon.
TEST_F(DaemonTest, SecondDaemonOnTheSameStateDirIsRefused) {
  auto first = Start();
  ASSERT_NE(first, nullptr);
  StatusOr<std::unique_ptr<Daemon>> second =
      Daemon::Create(config_, std::make_unique<SharedBackend>(fake_.get()), &BundledCatalog());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(),
              ::testing::HasSubstr("state_dir " + config_.state_dir +
                                   " is in use by another migsched serve (pid " +
                                   std::to_string(getpid()) + ")"));
  first.reset();
  auto third = Start();
  EXPECT_NE(third, nullptr);
}

// Regression (trial_shared_work_dir): two daemons of two state dirs with one work_dir started, and
// the second one's job 1 ran in the first one's job 1 directory (its files handed over to it).
// The second is refused while the first runs, and after it too (the work_dir holds the first's
// job directories); the first starts again on it.
TEST_F(DaemonTest, TwoDaemonsCannotShareAWorkDir) {
  auto first = Start();
  ASSERT_NE(first, nullptr);
  DaemonConfig other = config_;
  other.state_dir = (MakeTempDir("other-state") / "s").string();
  other.work_dir = config_.WorkDir();
  StatusOr<std::unique_ptr<Daemon>> second =
      Daemon::Create(other, std::make_unique<SharedBackend>(fake_.get()), &BundledCatalog());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(),
              ::testing::HasSubstr("work_dir " + config_.WorkDir() +
                                   " is in use by another migsched serve (pid " +
                                   std::to_string(getpid()) + ", state_dir "));
  first.reset();
  second = Daemon::Create(other, std::make_unique<SharedBackend>(fake_.get()), &BundledCatalog());
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.status().message(),
              ::testing::HasSubstr("work_dir " + config_.WorkDir() +
                                   " holds the job directories of state_dir "));
  auto again = Start();
  EXPECT_NE(again, nullptr);
}

TEST_F(DaemonTest, RecoveryAfterCrash) {
  config_.on_shutdown = "leave";
  int64_t pid = 0;
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_TRUE(d->Submit(Req("7g.40gb", {"sh", "-c", "sleep 1; exit 3"})).ok());
    ASSERT_TRUE(d->Submit(Req("7g.40gb", {"true"})).ok());
    ASSERT_TRUE(d->Submit(Req("1g.5gb", {"true"})).ok());
    ASSERT_OK(d->Settle());
    ASSERT_EQ(Get(*d, 1).state, JobState::kRunning);
    pid = Get(*d, 1).pid;
    // The daemon goes away without draining (as after kill -9: nothing else
    // is written; the store has every committed change).
  }
  auto d = Start();
  ASSERT_NE(d, nullptr);
  std::vector<DaemonJobRecord> all = d->ListJobs();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].state, JobState::kRunning);
  EXPECT_EQ(all[0].pid, pid);
  EXPECT_EQ(all[1].state, JobState::kQueued);
  EXPECT_EQ(all[2].state, JobState::kQueued);
  // The 7g instance was adopted busy: the queued jobs still wait for it.
  ASSERT_OK(d->Settle());
  EXPECT_EQ(Get(*d, 1).state, JobState::kRunning);
  EXPECT_EQ(Get(*d, 2).state, JobState::kQueued);
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 3, JobState::kSucceeded); }));
  EXPECT_EQ(Get(*d, 1).state, JobState::kFailed);
  EXPECT_EQ(Get(*d, 1).exit_code, 3);
  EXPECT_EQ(Get(*d, 2).state, JobState::kSucceeded);
}

// Regression (ended_while_down_timed_at_the_restart): a job that ended while the daemon was down
// got the restart's time as its end, so its run time counted the whole downtime (a 3 s job
// showed 9.3 s). Its end is its exit file's time now. `sleep 0.2`, the daemon down for 2.5 s:
// the job's run is under 2 s (with the restart's time it would be over 2.7 s).
TEST_F(DaemonTest, AJobThatEndedWhileTheDaemonWasDownEndsWhenItsProcessDid) {
  config_.on_shutdown = "leave";
  int64_t pgid = 0;
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_TRUE(d->Submit(Req("1g.5gb", {"sleep", "0.2"})).ok());
    ASSERT_OK(d->Settle());
    pgid = Get(*d, 1).pid;
    ASSERT_GT(pgid, 0);
  }
  // The monitor writes the exit file and exits; reaped here, as for a daemon restarted as a new
  // process.
  int status = 0;
  ASSERT_EQ(waitpid(static_cast<pid_t>(pgid), &status, 0), pgid);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  auto d = Start();
  ASSERT_NE(d, nullptr);
  const DaemonJobRecord r = Get(*d, 1);
  EXPECT_EQ(r.state, JobState::kSucceeded);
  EXPECT_GT(r.ended_at, r.started_at);
  EXPECT_LT(r.ended_at - r.started_at, 2.0);
}

// Regression (crash_while_starting_restarted_the_limit): a daemon killed between launching a job
// and storing it running left it `starting` in the store, without a start time; the restart
// re-adopted it with the restart's time as its start, so its limit ran again from there (an 8 s
// limit let a job run 20 s). Its start is its run's now. The store is set back here to what such
// a crash leaves; the daemon is down 2.5 s (the tolerance, 1 s, is for a loaded machine).
TEST_F(DaemonTest, AJobReadoptedFromStartingKeepsTheStartOfItsRun) {
  config_.on_shutdown = "leave";
  double started = 0;
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_TRUE(d->Submit(Req("1g.5gb", {"sleep", "30"})).ok());
    ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kRunning); }));
    started = Get(*d, 1).started_at;
    ASSERT_GT(started, 0);
  }
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<JobStore> store, JobStore::Open(config_.state_dir));
    ASSERT_OK_AND_ASSIGN(DaemonJobRecord r, store->Get(1));
    r.state = JobState::kStarting;
    r.started_at = 0;
    ASSERT_OK(store->Update(r));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  auto d = Start();
  ASSERT_NE(d, nullptr);
  const DaemonJobRecord r = Get(*d, 1);
  EXPECT_EQ(r.state, JobState::kRunning);
  EXPECT_NEAR(r.started_at, started, 1.0);  // the restart's time is 2.5 s later
  ASSERT_OK(d->Cancel(1));
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kCancelled); }));
}

TEST_F(DaemonTest, RecoveryFailsAJobWhoseProcessDied) {
  config_.on_shutdown = "leave";
  int64_t pgid = 0;
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_TRUE(d->Submit(Req("2g.10gb", {"sleep", "30"})).ok());
    ASSERT_OK(d->Settle());
    pgid = Get(*d, 1).pid;
    ASSERT_GT(pgid, 0);
  }
  // While the daemon is down the job dies without an exit status (SIGKILL
  // kills its monitor too); reaping it here makes it no child of ours, as
  // for a daemon restarted as a new process.
  ASSERT_EQ(kill(static_cast<pid_t>(-pgid), SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(static_cast<pid_t>(pgid), &status, 0), pgid);
  auto d = Start();
  ASSERT_NE(d, nullptr);
  DaemonJobRecord r = Get(*d, 1);
  EXPECT_EQ(r.state, JobState::kFailed);
  EXPECT_EQ(r.reason, "process lost while the daemon was down");
  EXPECT_FALSE(r.exit_code.has_value());
  // Its instance is idle again and reusable.
  ASSERT_TRUE(d->Submit(Req("2g.10gb", {"true"})).ok());
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 2, JobState::kSucceeded); }));
  ASSERT_EQ(r.instances.size(), 1u);
  EXPECT_EQ(Get(*d, 2).instances[0].mig_uuid, r.instances[0].mig_uuid);
  EXPECT_EQ(fake_->creates(), 1);
}

// The moves of the next tests are begun by a completion pass with nothing waiting: the passes
// always (the default runs them only while a job waits, `full` never; docs/algorithms.md §13).
TEST_F(DaemonTest, RestartJobIsMigratedAndRestarted) {
  config_.scheduler.migration.passes = DefragPasses::kAlways;
  auto d = Start();
  ASSERT_NE(d, nullptr);
  // Job 1 (none) takes 3g@4, job 2 (restart) 3g@0 (see the placement test).
  // When job 1 ends, the GPU (3/7 busy, util ≥ 0.4) has FragCost 0.35 with
  // job 2 at @0 and 0 at @4, so the completion pass moves job 2 to the idle
  // 3g@4 (§6 intra-GPU): SIGTERM, relaunch there with MIGSCHED_RESTARTED=1.
  ASSERT_TRUE(d->Submit(Req("3g.20gb", {"sleep", "0.3"})).ok());
  JobRequest r = Req("3g.20gb", {"sh", "-c",
                                 "echo run restarted=${MIGSCHED_RESTARTED:-0} "
                                 "on=$CUDA_VISIBLE_DEVICES; "
                                 "if [ -z \"$MIGSCHED_RESTARTED\" ]; then exec sleep 30; fi"});
  r.migratable = Migratable::kRestart;
  ASSERT_TRUE(d->Submit(r).ok());
  ASSERT_OK(d->Settle());
  const DaemonJobRecord before = Get(*d, 2);
  ASSERT_EQ(before.instances[0].start, 0);
  const std::string target = Get(*d, 1).instances[0].mig_uuid;
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 2, JobState::kSucceeded); }));
  DaemonJobRecord after = Get(*d, 2);
  EXPECT_EQ(after.restarts, 1);
  EXPECT_EQ(after.migrations, 1);
  EXPECT_EQ(after.instances[0].start, 4);
  EXPECT_EQ(after.instances[0].mig_uuid, target);
  EXPECT_EQ(ReadFile(d->LogPath(2)), "run restarted=0 on=" + before.instances[0].mig_uuid +
                                         "\nrun restarted=1 on=" + target + "\n");
  EXPECT_EQ(d->Metrics().migrations_intra, 1);
  // The source 3g@0 was kept idle at the switch-over, as a completed job's instance is (the
  // daemon's policy keeps idle instances, docs/algorithms.md §6): the same MIG device, free for
  // the next 3g job. Both are idle now that job 2 has ended.
  const std::vector<InstanceView> left = d->Gpus()[0].instances;
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].start, 0);
  EXPECT_EQ(left[0].mig_uuid, before.instances[0].mig_uuid);
  EXPECT_FALSE(left[0].busy);
  EXPECT_EQ(left[1].start, 4);
  EXPECT_FALSE(left[1].busy);
}

// Regression readopted_job_killed_by_a_stop: after a restart the moved job is a re-adopted
// process (not the daemon's child); one that ignores SIGTERM is ended by the SIGKILL after
// kill_grace_s, which also ends its monitor, so no exit file is written. The move then marked it
// `failed` ("process lost") instead of relaunching it on its target. The placements are those of
// RestartJobIsMigratedAndRestarted: job 2 at 3g@0 moves to 3g@4 once job 1 there has ended.
TEST_F(DaemonTest, ReadoptedRestartJobThatIgnoresSigtermIsRelaunchedAfterItsKill) {
  config_.scheduler.migration.passes = DefragPasses::kAlways;
  config_.on_shutdown = "leave";
  config_.kill_grace_s = 0.2;
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_TRUE(d->Submit(Req("3g.20gb", {"sleep", "2"})).ok());
    JobRequest r = Req("3g.20gb", {"sh", "-c",
                                   "trap '' TERM; echo run restarted=${MIGSCHED_RESTARTED:-0}; "
                                   "if [ -z \"$MIGSCHED_RESTARTED\" ]; then exec sleep 30; fi"});
    r.migratable = Migratable::kRestart;
    ASSERT_TRUE(d->Submit(r).ok());
    ASSERT_TRUE(TickUntil(*d, [&] {
      return InState(*d, 1, JobState::kRunning) && InState(*d, 2, JobState::kRunning);
    }));
    ASSERT_EQ(Get(*d, 2).instances[0].start, 0);
  }
  auto d = Start();  // re-adopts both; job 1 ends, the completion pass moves job 2
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(TickUntil(*d, [&] { return IsTerminal(Get(*d, 2).state); }));
  const DaemonJobRecord after = Get(*d, 2);
  EXPECT_EQ(after.state, JobState::kSucceeded) << after.reason;
  EXPECT_EQ(after.restarts, 1);
  EXPECT_EQ(after.migrations, 1);
  EXPECT_EQ(after.instances[0].start, 4);
  EXPECT_EQ(ReadFile(d->LogPath(2)), "run restarted=0\nrun restarted=1\n");
}

TEST_F(DaemonTest, CheckpointJobIsCheckpointedAndRestoredOnTheTarget) {
  // Same moves as the restart test; the configured commands run instead:
  // checkpoint (while the job still runs, the target already created), then
  // the job is stopped and the restore command becomes its process.
  config_.checkpoint_command = {"sh", "-c", "echo saved > {dir}/state; echo ckpt pid={pid}"};
  config_.scheduler.migration.passes = DefragPasses::kAlways;
  config_.restore_command = {"sh", "-c",
                             "echo restore $(cat {dir}/state) on=$CUDA_VISIBLE_DEVICES"};
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(d->Submit(Req("3g.20gb", {"sleep", "0.3"})).ok());
  JobRequest r = Req("3g.20gb", {"sh", "-c", "echo first; exec sleep 30"});
  r.migratable = Migratable::kCheckpoint;
  ASSERT_TRUE(d->Submit(r).ok());
  ASSERT_OK(d->Settle());
  const std::string target = Get(*d, 1).instances[0].mig_uuid;
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 2, JobState::kSucceeded); }));
  DaemonJobRecord after = Get(*d, 2);
  EXPECT_EQ(after.restarts, 0);
  EXPECT_EQ(after.migrations, 1);
  EXPECT_EQ(after.instances[0].mig_uuid, target);
  const std::string log = ReadFile(d->LogPath(2));
  EXPECT_TRUE(log.starts_with("first\nckpt pid=")) << log;
  EXPECT_TRUE(log.ends_with("restore saved on=" + target + "\n")) << log;
}

// Regression readopted_checkpoint_pid: after a restart the checkpoint command's {pid} was the
// monitor's pid (a process of the daemon, root's), not the job's command: a `criu dump -t {pid}`
// would have dumped the wrong process. The job prints its own pid ($$, kept by exec); the
// checkpoint command prints {pid}; the move happens after the restart (job 1 ends then).
TEST_F(DaemonTest, ReadoptedCheckpointJobsPidIsItsCommands) {
  config_.checkpoint_command = {"sh", "-c", "echo ckpt pid={pid}"};
  config_.restore_command = {"sh", "-c", "echo restored"};
  config_.scheduler.migration.passes = DefragPasses::kAlways;
  config_.on_shutdown = "leave";
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_TRUE(d->Submit(Req("3g.20gb", {"sleep", "2"})).ok());
    JobRequest r = Req("3g.20gb", {"sh", "-c", "echo first pid=$$; exec sleep 30"});
    r.migratable = Migratable::kCheckpoint;
    ASSERT_TRUE(d->Submit(r).ok());
    ASSERT_TRUE(TickUntil(*d, [&] {
      return InState(*d, 1, JobState::kRunning) && InState(*d, 2, JobState::kRunning);
    }));
  }
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(TickUntil(*d, [&] { return IsTerminal(Get(*d, 2).state); }));
  EXPECT_EQ(Get(*d, 2).state, JobState::kSucceeded) << Get(*d, 2).reason;
  EXPECT_EQ(Get(*d, 2).migrations, 1);
  const std::string log = ReadFile(d->LogPath(2));
  const size_t first = log.find("first pid="), ckpt = log.find("ckpt pid=");
  ASSERT_NE(first, std::string::npos) << log;
  ASSERT_NE(ckpt, std::string::npos) << log;
  const std::string job_pid = log.substr(first + 10, log.find('\n', first) - first - 10);
  const std::string ckpt_pid = log.substr(ckpt + 9, log.find('\n', ckpt) - ckpt - 9);
  EXPECT_EQ(ckpt_pid, job_pid) << log;
}

TEST_F(DaemonTest, CheckpointJobsDoNotMoveWithoutCommands) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(d->Submit(Req("3g.20gb", {"true"})).ok());
  JobRequest r = Req("3g.20gb", {"sleep", "0.5"});
  r.migratable = Migratable::kCheckpoint;
  ASSERT_TRUE(d->Submit(r).ok());
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 2, JobState::kSucceeded); }));
  EXPECT_EQ(Get(*d, 2).migrations, 0);
  EXPECT_EQ(Get(*d, 2).instances[0].start, 0);
}

TEST_F(DaemonTest, RecoveryAdoptsUnknownInstancesAndFailsJobsWhoseInstanceVanished) {
  config_.on_shutdown = "leave";
  int64_t pgid = 0;
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_TRUE(d->Submit(Req("3g.20gb", {"sleep", "30"})).ok());
    ASSERT_OK(d->Settle());
    pgid = Get(*d, 1).pid;
  }
  // While the daemon is down: its instance goes, another one appears.
  const JobInstance gone = [&] {
    std::vector<BackendInstance> live = *fake_->ListInstances(0);
    EXPECT_EQ(live.size(), 1u);
    EXPECT_TRUE(fake_->DestroyInstance(0, live[0].gi_id).ok());
    JobInstance j;
    j.mig_uuid = live[0].mig_uuid;
    return j;
  }();
  // 1g.5gb is profile id 19 on A100 40GB (docs/mig-hardware.md §2.2).
  StatusOr<BackendInstance> extra = fake_->CreateInstance(0, 19, Placement{6, 1});
  ASSERT_TRUE(extra.ok()) << extra.status().ToString();
  auto d = Start();
  ASSERT_NE(d, nullptr);
  DaemonJobRecord r = Get(*d, 1);
  EXPECT_EQ(r.state, JobState::kFailed);
  EXPECT_EQ(r.reason, "instance " + gone.mig_uuid + " vanished while the daemon was down");
  ProcessRunner probe(config_.state_dir, config_.WorkDir());
  for (int i = 0; i < 200 && probe.GroupAlive(pgid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_FALSE(probe.GroupAlive(pgid)) << "its process was not stopped";
  std::vector<GpuView> gpus = d->Gpus();
  ASSERT_EQ(gpus[0].instances.size(), 1u);
  EXPECT_EQ(gpus[0].instances[0].profile, "1g.5gb");
  EXPECT_EQ(gpus[0].instances[0].start, 6);
  EXPECT_FALSE(gpus[0].instances[0].busy);
  EXPECT_EQ(gpus[0].instances[0].mig_uuid, extra->mig_uuid);
  // The adopted idle instance is reused (§4 step 4: 1g@6 is also the best start).
  ASSERT_TRUE(d->Submit(Req("1g.5gb", {"true"})).ok());
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 2, JobState::kSucceeded); }));
  EXPECT_EQ(Get(*d, 2).instances[0].mig_uuid, extra->mig_uuid);
}

// Regression: after the node's GPUs changed while the daemon was down (an A100 40GB replaced by
// an H100 80GB), jobs queued for profiles the node no longer offers stayed `queued` for ever, with
// no reason. They now end `rejected` at the restart, saying why, as at their submission; a job the
// new node can run stays queued.
TEST_F(DaemonTest, QueuedJobThatCanNoLongerRunIsRejectedAtTheRestart) {
  config_.on_shutdown = "leave";
  {
    auto d = Start("1xA100-40GB");
    ASSERT_NE(d, nullptr);
    ASSERT_OK(d->Pause());
    ASSERT_TRUE(d->Submit(Req("1g.5gb", {"true"})).ok());  // an A100 40GB profile only
    JobRequest any = Req("", {"true"});                    // a fraction: a profile on either model
    any.gpu_fraction = 0.4;
    ASSERT_TRUE(d->Submit(any).ok());
    ASSERT_OK(d->Settle());
    ASSERT_EQ(Get(*d, 1).state, JobState::kQueued);
  }
  fake_.reset();  // the new card, with no instances
  auto d = Start("1xH100-80GB");
  ASSERT_NE(d, nullptr);
  const DaemonJobRecord r = Get(*d, 1);
  EXPECT_EQ(r.state, JobState::kRejected);
  EXPECT_THAT(r.reason, ::testing::StartsWith("can no longer run on this node (checked again at "
                                              "the daemon's start): unknown profile '1g.5gb'"));
  EXPECT_EQ(Get(*d, 2).state, JobState::kQueued);
  ASSERT_OK(d->Resume());
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 2, JobState::kSucceeded); }));
}

TEST_F(DaemonTest, ConcurrentSubmissionsWithTheWorkerRunning) {
  config_.tick_ms = 5;
  auto d = Start();
  ASSERT_NE(d, nullptr);
  d->StartWorker();
  constexpr int kThreads = 4, kEach = 10;
  std::vector<std::thread> threads;
  std::vector<std::vector<DaemonJobId>> ids(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        StatusOr<DaemonJobRecord> r = d->Submit(Req("1g.5gb", {"true"}));
        if (r.ok()) ids[t].push_back(r->id);
        (void)d->ListJobs();
        (void)d->Gpus();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  std::set<DaemonJobId> all;
  for (const auto& v : ids) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kEach));  // no id given twice
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto done = [&] {
    for (const DaemonJobRecord& r : d->ListJobs()) {
      if (r.state != JobState::kSucceeded) return false;
    }
    return true;
  };
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(done());
  EXPECT_EQ(d->ListJobs().size(), static_cast<size_t>(kThreads * kEach));
  d->Stop();
}

TEST_F(DaemonTest, DrainedGpuGetsNoNewPlacements) {
  auto d = Start("2xA100-40GB");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->Drain(7).code(), StatusCode::kNotFound);
  ASSERT_TRUE(d->Drain(0).ok());
  ASSERT_TRUE(d->Submit(Req("7g.40gb", {"true"})).ok());
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kSucceeded); }));
  EXPECT_EQ(Get(*d, 1).instances[0].gpu, NvmlIndex{1});  // GPU 0 would win the tie otherwise
  EXPECT_TRUE(d->Gpus()[0].draining);
  EXPECT_TRUE(d->Gpus()[0].instances.empty());
  // Undrained, GPU 0 takes placements again: two 7g jobs at once (the first
  // sleeps 1 s) need both GPUs, whichever goes where.
  EXPECT_EQ(d->Undrain(7).code(), StatusCode::kNotFound);
  ASSERT_TRUE(d->Undrain(0).ok());
  EXPECT_FALSE(d->Gpus()[0].draining);
  ASSERT_TRUE(d->Submit(Req("7g.40gb", {"sleep", "1"})).ok());
  ASSERT_TRUE(d->Submit(Req("7g.40gb", {"true"})).ok());
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 3, JobState::kSucceeded); }));
  // Jobs 2 and 3 ran at the same time (job 2 sleeps 1 s): one per GPU.
  const DaemonJobRecord j2 = Get(*d, 2), j3 = Get(*d, 3);
  ASSERT_EQ(j2.instances.size(), 1u);
  ASSERT_EQ(j3.instances.size(), 1u);
  std::set<NvmlIndex> gpus = {j2.instances[0].gpu, j3.instances[0].gpu};
  EXPECT_EQ(gpus, (std::set<NvmlIndex>{0, 1}));
}

TEST_F(DaemonTest, PauseMetricsAndPreview) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Pause());
  EXPECT_TRUE(d->paused());
  ASSERT_TRUE(d->Submit(Req("1g.5gb", {"true"})).ok());
  ASSERT_OK(d->Settle());
  EXPECT_EQ(Get(*d, 1).state, JobState::kQueued);
  StatusOr<PlanPreview> p = d->PreviewPlan(Req("3g.20gb", {"true"}));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->fits_now);
  ASSERT_EQ(p->instances.size(), 1u);
  EXPECT_EQ(p->instances[0].start, 4);          // as in the placement test
  ASSERT_EQ(p->steps.size(), 2u);               // create, start
  EXPECT_TRUE(d->Gpus()[0].instances.empty());  // nothing applied
  ASSERT_OK(d->Resume());
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kSucceeded); }));
  DaemonMetrics m = d->Metrics();
  EXPECT_EQ(m.jobs_by_state.size(), 10u);  // every state, released and timeout included
  EXPECT_EQ(m.jobs_by_state["succeeded"], 1);
  EXPECT_EQ(m.jobs_by_state["queued"], 0);
  EXPECT_EQ(m.reconfigurations, 1);  // one create
  EXPECT_EQ(m.reconfig_seconds.count, 1u);
  EXPECT_GE(m.decision_seconds.count, 1u);
}

// Regression: while the scheduler was paused, a queued job showed "(Resources)" with no reason,
// as if the node were full. It now says the scheduler is paused, and the reason goes with the
// pause.
TEST_F(DaemonTest, PausedQueueSaysSoInTheJobsReason) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Pause());
  ASSERT_TRUE(d->Submit(Req("1g.5gb", {"sleep", "0.3"})).ok());
  const std::string paused = "waiting: the scheduler is paused (`migsched resume` ends it)";
  ASSERT_TRUE(TickUntil(*d, [&] { return Get(*d, 1).reason == paused; })) << Get(*d, 1).reason;
  EXPECT_EQ(Get(*d, 1).state, JobState::kQueued);
  ASSERT_OK(d->Resume());
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kRunning); }));
  EXPECT_EQ(Get(*d, 1).reason, "");
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kSucceeded); }));
}

// Regression (paused_wait_reasons_flipped_every_tick): while paused, each tick cleared every
// queued job's reason (the instant's scan step, run even with no scan) and set the pause's again,
// each change a stored "waiting" event: with 440 jobs queued the store grew by millions of
// events, and submits, drains and `resume` itself could no longer be stored. Three jobs queued
// while paused, 30 ticks: each job's reason is set once, one "waiting" event per job.
TEST_F(DaemonTest, APausedQueueStoresEachJobsReasonOnce) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Pause());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(d->Submit(Req("1g.5gb", {"true"})).ok());
  const std::string paused = "waiting: the scheduler is paused (`migsched resume` ends it)";
  for (int t = 0; t < 30; ++t) {
    ASSERT_TRUE(d->Tick().ok());
    d->WaitIdle();
  }
  for (DaemonJobId id = 1; id <= 3; ++id) EXPECT_EQ(Get(*d, id).reason, paused);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2((std::filesystem::path(config_.state_dir) / "migsched.db").c_str(), &db,
                            SQLITE_OPEN_READONLY, nullptr),
            SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(
      sqlite3_prepare_v2(
          db, "SELECT job, COUNT(*) FROM events WHERE kind = 'waiting' GROUP BY job ORDER BY job",
          -1, &q, nullptr),
      SQLITE_OK);
  std::vector<std::pair<int64_t, int64_t>> counts;
  while (sqlite3_step(q) == SQLITE_ROW) {
    counts.push_back({sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1)});
  }
  sqlite3_finalize(q);
  sqlite3_close(db);
  EXPECT_EQ(counts, (std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 1}, {3, 1}}));
  ASSERT_OK(d->Resume());
  ASSERT_TRUE(TickUntil(*d, [&] { return IsTerminal(Get(*d, 3).state); }));
}

TEST_F(DaemonTest, StopInDrainModeWaitsForRunningJobs) {
  config_.on_shutdown = "drain";
  config_.tick_ms = 10;
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(d->Submit(Req("7g.40gb", {"sleep", "0.2"})).ok());
  ASSERT_TRUE(d->Submit(Req("7g.40gb", {"true"})).ok());
  d->StartWorker();
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kRunning); }));
  d->Stop();
  EXPECT_EQ(Get(*d, 1).state, JobState::kSucceeded);
  EXPECT_EQ(Get(*d, 2).state, JobState::kQueued);  // stays queued (durable)
  EXPECT_EQ(d->Submit(Req("1g.5gb", {"true"})).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace migsched
