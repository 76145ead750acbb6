// §13 evacuation and the look-ahead reservation in the daemon: moves begun inside a queue scan
// are carried out by the daemon's MoveExecutor (make-before-break, restart on the target), and
// a job's time_limit_s is its expected end. Fake backend, cases worked by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "daemon/daemon.h"
#include "daemon/daemon_fixture.h"
#include "io/scheduler_options_yaml.h"
#include "testing/status_matchers.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

class DaemonLargeJobsTest : public DaemonTest {
 protected:
  // The daemon's options as `serve` reads its `scheduler:` mapping.
  void UseScheduler(const std::string& yaml) {
    StatusOr<SchedulerConfig> sc = ParseSchedulerYaml(yaml, "test.yaml");
    ASSERT_OK(sc);
    config_.policy = sc->policy;
    config_.scheduler = sc->options;
    config_.explicit_options = sc->given;
  }

  // A restart job of one 1g.5gb that logs each run and sleeps (ended by SIGTERM when moved).
  static JobRequest Small() {
    JobRequest r = Req("1g.5gb", {"sh", "-c",
                                  "echo run restarted=${MIGSCHED_RESTARTED:-0}; "
                                  "exec sleep 30"});
    r.migratable = Migratable::kRestart;
    return r;
  }

  // 2x A100-40GB. GPU 1 holds allocations (not jobs: they never move) 4g.20gb@0 and 1g.5gb@4,
  // and, while jobs 1 and 2 (two 1g.5gb `restart` jobs) are placed, 1g.5gb@5 and @6 as well, so
  // both jobs go to GPU 0. Then 1g@5 and 1g@6 are released and job 3, a 7g.40gb (`none`), is
  // submitted: no GPU is empty, so it waits, and GPU 1 has room for two 1g.
  std::unique_ptr<Daemon> StartBlockedSevenG() {
    auto d = Start("2xA100-40GB");
    if (d == nullptr) return nullptr;
    EXPECT_OK(d->Allocate(Alloc("fixed", {{1, "4g.20gb", 0}, {1, "1g.5gb", 4}}), "").status());
    StatusOr<SubmitResult> room =
        d->Allocate(Alloc("room", {{1, "1g.5gb", 5}, {1, "1g.5gb", 6}}), "");
    EXPECT_OK(room.status());
    EXPECT_OK(d->Submit(Small()).status());  // job 3 (ids: the allocations are 1 and 2)
    EXPECT_OK(d->Submit(Small()).status());  // job 4
    EXPECT_TRUE(TickUntil(*d, [&] {
      return InState(*d, 3, JobState::kRunning) && InState(*d, 4, JobState::kRunning);
    }));
    EXPECT_EQ(Get(*d, 3).instances.at(0).gpu, NvmlIndex{0});
    EXPECT_EQ(Get(*d, 4).instances.at(0).gpu, NvmlIndex{0});
    if (room.ok()) EXPECT_OK(d->ReleaseAllocation(room->record.id).status());
    EXPECT_OK(d->Submit(Req("7g.40gb", {"sleep", "30"})).status());  // job 5
    EXPECT_OK(d->Settle());
    return d;
  }
};

// With `evacuation: queue` (by hand, §13): the only candidate placement of the 7g is 7g@0 on
// GPU 0 (GPU 1's allocations cannot move), blocked by jobs 3 and 4. Within GPU 0 every 1g
// overlaps 7g@0, so their targets are GPU 1's free 1g@5 and 1g@6. The blockers are tried by
// more compute slices (both 1), then lower start: the job at the lower start on GPU 0 goes
// first and takes 1g@5 (it leaves 1g.5gb@6 and 1g.10gb@6 placeable on GPU 1; 1g@6 would leave
// only 1g.5gb@5), the other 1g@6. Each is stopped and restarted there (MIGSCHED_RESTARTED=1),
// and once both sources are destroyed the 7g starts at 7g@0 on GPU 0. Those two targets are the
// cluster's last free 1-slice placements, which `full` keeps for small jobs by default
// (SevenGWaitsTest below), so this test turns that off.
TEST_F(DaemonLargeJobsTest, TwoSmallJobsMoveAndTheSevenGStarts) {
  UseScheduler("policy: full\nevacuation: queue\nevacuation-keeps-room: off\n");
  auto d = StartBlockedSevenG();
  ASSERT_NE(d, nullptr);
  const int start3 = Get(*d, 3).instances.at(0).start;
  const int start4 = Get(*d, 4).instances.at(0).start;
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 5, JobState::kRunning); }))
      << Get(*d, 5).reason;
  const DaemonJobRecord seven = Get(*d, 5);
  ASSERT_EQ(seven.instances.size(), 1u);
  EXPECT_EQ(seven.instances[0].gpu, NvmlIndex{0});
  EXPECT_EQ(seven.instances[0].start, 0);
  ASSERT_TRUE(TickUntil(*d, [&] {
    return InState(*d, 3, JobState::kRunning) && InState(*d, 4, JobState::kRunning);
  }));
  const DaemonJobRecord first = Get(*d, start3 < start4 ? 3 : 4);
  const DaemonJobRecord second = Get(*d, start3 < start4 ? 4 : 3);
  for (const DaemonJobRecord* r : {&first, &second}) {
    EXPECT_EQ(r->migrations, 1) << r->id;
    EXPECT_EQ(r->restarts, 1) << r->id;
    ASSERT_EQ(r->instances.size(), 1u);
    EXPECT_EQ(r->instances[0].gpu, NvmlIndex{1}) << r->id;
    EXPECT_EQ(ReadFile(d->LogPath(r->id)), "run restarted=0\nrun restarted=1\n");
  }
  EXPECT_EQ(first.instances[0].start, 5);
  EXPECT_EQ(second.instances[0].start, 6);
  EXPECT_EQ(d->Metrics().migrations_inter, 2);
  for (DaemonJobId id : {3, 4, 5}) (void)d->Cancel(id);
  EXPECT_TRUE(WaitTerminal(*d, 5));
  d->Stop();
}

// The same cluster where the scheduler opens no placement for the 7g: after 20 ticks it still
// waits, and no job has moved.
class SevenGWaitsTest : public DaemonLargeJobsTest,
                        public ::testing::WithParamInterface<const char*> {};

TEST_P(SevenGWaitsTest, NothingMoves) {
  UseScheduler(GetParam());
  auto d = StartBlockedSevenG();
  ASSERT_NE(d, nullptr);
  for (int i = 0; i < 20; ++i) {
    ASSERT_OK(d->Tick());
    d->WaitIdle();
  }
  EXPECT_EQ(Get(*d, 5).state, JobState::kQueued);
  EXPECT_EQ(Get(*d, 3).migrations + Get(*d, 4).migrations, 0);
  EXPECT_EQ(d->Metrics().migrations_inter, 0);
  EXPECT_EQ(Get(*d, 3).instances.at(0).gpu, NvmlIndex{0});
  for (DaemonJobId id : {3, 4, 5}) (void)d->Cancel(id);
  EXPECT_TRUE(WaitTerminal(*d, 3));
  d->Stop();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SevenGWaitsTest,
    ::testing::Values(
        // Evacuation off: nothing opens a placement for the 7g (GPU 0 has 5 free compute slices
        // of the 7 it needs, so no §4 step 6 pass either).
        "policy: full\nevacuation: off\n",
        // `full`'s defaults, which keep room for small jobs (§13): the only plan moves the two 1g
        // jobs (the smallest size among the arrivals) to GPU 1's 1g@5 and 1g@6, after which no
        // GPU has a free 1-slice placement (GPU 1: 4g@0 and 1g@4-6; GPU 0: the 7g), where GPU 0
        // and GPU 1 have some now. So no evacuation.
        "policy: full\n"));

// Jobs that may not move, inside a scan too, for two reasons: a `none` job never moves (the
// scheduler's rule), and a `checkpoint` job without checkpoint/restore commands configured is
// one whose move the MoveExecutor cannot run (the daemon's rule, given to the scheduler as its
// move filter; without it the job would be restarted, losing its work). Either way one blocker of
// 7g@0 cannot move, so the 7g waits even with evacuation on, and nothing moves.
TEST_F(DaemonLargeJobsTest, JobsThatMayNotMoveAreNeverEvacuated) {
  for (Migratable m : {Migratable::kNone, Migratable::kCheckpoint}) {
    SCOPED_TRACE(MigratableName(m));
    fake_.reset();
    config_.state_dir = MakeTempDir("migsched-daemon");
    UseScheduler("policy: full\nevacuation: queue\n");
    auto d = Start("2xA100-40GB");
    ASSERT_NE(d, nullptr);
    ASSERT_OK(d->Allocate(Alloc("fixed", {{1, "4g.20gb", 0}, {1, "1g.5gb", 4}}), "").status());
    ASSERT_OK_AND_ASSIGN(SubmitResult room,
                         d->Allocate(Alloc("room", {{1, "1g.5gb", 5}, {1, "1g.5gb", 6}}), ""));
    ASSERT_OK(d->Submit(Small()).status());  // job 3, restart: may move
    JobRequest stuck = Req("1g.5gb", {"sleep", "30"});
    stuck.migratable = m;
    ASSERT_OK(d->Submit(stuck).status());  // job 4
    ASSERT_TRUE(TickUntil(*d, [&] {
      return InState(*d, 3, JobState::kRunning) && InState(*d, 4, JobState::kRunning);
    }));
    ASSERT_OK(d->ReleaseAllocation(room.record.id).status());
    ASSERT_OK(d->Submit(Req("7g.40gb", {"sleep", "30"})).status());  // job 5
    for (int i = 0; i < 20; ++i) {
      ASSERT_OK(d->Tick());
      d->WaitIdle();
    }
    EXPECT_EQ(Get(*d, 5).state, JobState::kQueued);
    EXPECT_EQ(Get(*d, 3).migrations + Get(*d, 4).migrations, 0);
    for (DaemonJobId id : {3, 4, 5}) (void)d->Cancel(id);
    EXPECT_TRUE(WaitTerminal(*d, 4));
    d->Stop();
  }
}

// §13 look-ahead reservation with the daemon's time limits, by hand. One A100-40GB: job 1, a
// 4g.20gb with time_limit_s 100, runs; job 2, a 7g.40gb, waits for the whole GPU; then come
// job 3, a 1g.5gb with a limit of 1000 s, job 4, a 1g.5gb without a limit, and job 5, a 1g.5gb
// with a limit of 50 s. With max-skip-seconds 0 the 7g, overdue at once, reserves 7g@0, expected
// free when job 1's run ends (its start + 100 s). A later job may use the reserved GPU only if
// it ends by then (EASY backfilling): job 5 (now + 50 s) does; job 3 (now + 1000 s) does not,
// nor job 4 (no known end: never); no placement beside a 7g@0 exists. Without the reservation
// (max-skip-seconds -1) all three start at once. In arrival order (queue-order fifo): by response
// ratio the short jobs 5 and 3 would be tried before the 7g, and start before it reserves.
TEST_F(DaemonLargeJobsTest, ReservationBackfillsOnlyJobsThatEndInTime) {
  for (const std::string skip : {"0", "-1"}) {
    SCOPED_TRACE("max-skip-seconds " + skip);
    fake_.reset();
    config_.state_dir = MakeTempDir("migsched-daemon");
    UseScheduler("policy: full\nqueue-order: fifo\nmax-skip-seconds: " + skip + "\n");
    auto d = Start("1xA100-40GB");
    ASSERT_NE(d, nullptr);
    auto limited = [](const std::string& profile, double limit) {
      JobRequest r = Req(profile, {"sleep", "30"});
      r.time_limit_s = limit;
      return r;
    };
    ASSERT_OK(d->Submit(limited("4g.20gb", 100)).status());  // job 1
    ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kRunning); }));
    ASSERT_OK(d->Submit(Req("7g.40gb", {"sleep", "30"})).status());  // job 2
    ASSERT_OK(d->Submit(limited("1g.5gb", 1000)).status());          // job 3
    ASSERT_OK(d->Submit(Req("1g.5gb", {"sleep", "30"})).status());   // job 4
    ASSERT_OK(d->Submit(limited("1g.5gb", 50)).status());            // job 5
    ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 5, JobState::kRunning); }));
    for (int i = 0; i < 10; ++i) {
      ASSERT_OK(d->Tick());
      d->WaitIdle();
    }
    EXPECT_EQ(Get(*d, 2).state, JobState::kQueued);
    const JobState later = skip == "0" ? JobState::kQueued : JobState::kRunning;
    EXPECT_EQ(Get(*d, 3).state, later);
    EXPECT_EQ(Get(*d, 4).state, later);
    for (DaemonJobId id : {1, 2, 3, 4, 5}) (void)d->Cancel(id);
    EXPECT_TRUE(WaitTerminal(*d, 5));
    d->Stop();
  }
}

// §13 order at a completion, by hand (one A100-40GB, as RestartJobIsMigratedAndRestarted in
// daemon_test.cc): job 1 (3g.20gb, `none`, ends soon) takes 3g@4, job 2 (3g.20gb, `restart`)
// 3g@0, and job 3 (3g.20gb, `none`) waits: the GPU has 1 free compute slice. When job 1 ends its
// 3g@4 is left idle, and the GPU with job 2 at @0 has FragCost 0.35 against 0 with it at @4.
//   after-scan (the default): the scan first gives the idle 3g@4 to job 3; the pass then finds
//     nowhere to move job 2: it stays at @0, never moved.
//   before-scan: the pass first moves job 2 to the idle 3g@4 (make-before-break: its source @0
//     stays busy until the switch-over); job 3 then starts at 3g@0, the source freed.
TEST_F(DaemonLargeJobsTest, MigrationOrderDecidesWhoGetsTheFreedRoom) {
  for (const std::string order : {"after-scan", "before-scan"}) {
    SCOPED_TRACE(order);
    fake_.reset();
    config_.state_dir = MakeTempDir("migsched-daemon");
    // The completion pass runs while a job waits (`full` runs none by default, §13).
    UseScheduler("policy: full\nevacuation: off\ndefrag-passes: while-waiting\nmigration-order: " +
                 order + "\n");
    auto d = Start("1xA100-40GB");
    ASSERT_NE(d, nullptr);
    ASSERT_OK(d->Submit(Req("3g.20gb", {"sleep", "0.3"})).status());  // job 1
    JobRequest two = Req("3g.20gb", {"sleep", "30"});
    two.migratable = Migratable::kRestart;
    ASSERT_OK(d->Submit(two).status());  // job 2
    ASSERT_OK(d->Settle());
    ASSERT_EQ(Get(*d, 1).instances.at(0).start, 4);
    ASSERT_EQ(Get(*d, 2).instances.at(0).start, 0);
    ASSERT_OK(d->Submit(Req("3g.20gb", {"sleep", "30"})).status());  // job 3
    ASSERT_TRUE(TickUntil(*d, [&] {
      return InState(*d, 3, JobState::kRunning) && InState(*d, 2, JobState::kRunning);
    }));
    const bool before = order == "before-scan";
    EXPECT_EQ(Get(*d, 2).migrations, before ? 1 : 0);
    EXPECT_EQ(Get(*d, 2).instances.at(0).start, before ? 4 : 0);
    EXPECT_EQ(Get(*d, 3).instances.at(0).start, before ? 0 : 4);
    for (DaemonJobId id : {2, 3}) (void)d->Cancel(id);
    EXPECT_TRUE(WaitTerminal(*d, 3));
    d->Stop();
  }
}

}  // namespace
}  // namespace migsched
