// The daemon's metrics as the control loop fills them: free instances per
// profile, busy seconds per MIG instance, outcomes, the oldest wait, the last
// tick. A manual clock; values worked by hand.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

#include "core/clock.h"
#include "daemon/daemon.h"
#include "daemon/daemon_fixture.h"
#include "testing/status_matchers.h"

namespace migsched {
namespace {

TEST_F(DaemonTest, MetricsCountFreeInstancesBusyTimeOutcomesAndWaits) {
  ManualClock clock(1'800'000'000 * kSecond);
  clock_ = &clock;
  config_.node_name = "node-a";
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Submit(Req("3g.20gb", {"sleep", "30"})));  // job 1: 3g.20gb@4 (units 4-7)
  ASSERT_OK(d->Submit(Req("1g.5gb", {"true"})));          // job 2: ends at once
  ASSERT_TRUE(TickUntil(*d, [&] {
    return InState(*d, 1, JobState::kRunning) && InState(*d, 2, JobState::kSucceeded);
  }));
  DaemonMetrics m = d->Metrics();
  EXPECT_EQ(m.hostname, "node-a");
  EXPECT_EQ(m.last_tick_unix, 1'800'000'000);
  EXPECT_EQ((m.ended[{"job", "succeeded"}]), 1);
  ASSERT_EQ(m.gpus.size(), 1u);
  // A100 40GB with 3g.20gb@4 busy (3 of 7 compute slices, units 4-7), and job 2's 1g.5gb left
  // idle at some start s in 0-3 (retained). Free units: 0-3 less s. Per base profile, the
  // placements (data/gpus/a100-40gb.json) inside the free units, one after another:
  //   1g.5gb  starts 0-3 less s: 3;  1g.10gb (0,2): one of them holds s: 1;
  //   2g.10gb (0,2): 1;  3g.20gb and 4g.20gb (at 0, units 0-3): 0;  7g.40gb: 0.
  const GpuView& g = m.gpus[0];
  ASSERT_EQ(g.instances.size(), 2u) << "job 2's instance is kept idle";
  EXPECT_EQ(g.free_instances.at("1g.5gb"), 3);
  EXPECT_EQ(g.free_instances.at("1g.10gb"), 1);
  EXPECT_EQ(g.free_instances.at("2g.10gb"), 1);
  EXPECT_EQ(g.free_instances.at("3g.20gb"), 0);
  EXPECT_EQ(g.free_instances.at("4g.20gb"), 0);
  EXPECT_EQ(g.free_instances.at("7g.40gb"), 0);
  // Busy time: nothing yet (no time passed); 30 s later the 3g instance has 30 s, the idle 1g 0.
  // (Sampled at each tick: a tick after job 2's end records its instance idle before the clock
  // moves; else the whole gap would be credited to it, an error of one tick in a real loop.)
  ASSERT_OK(d->Tick());
  clock.Advance(30 * kSecond);
  ASSERT_OK(d->Settle());
  m = d->Metrics();
  for (const InstanceView& i : m.gpus[0].instances) {
    const double want = i.profile == "3g.20gb" ? 30 : 0;
    const InstanceKey key{0, i.gi_id, i.profile};
    EXPECT_EQ(m.busy_seconds[key], want) << i.profile;
  }
  EXPECT_EQ(m.last_tick_unix, 1'800'000'030);
  // The oldest wait: a 7g.40gb cannot start while job 1 runs; 12 s later it has waited 12 s.
  EXPECT_EQ(m.oldest_wait_s, 0);
  ASSERT_OK(d->Submit(Req("7g.40gb", {"true"})));
  ASSERT_OK(d->Settle());
  clock.Advance(12 * kSecond);
  ASSERT_OK(d->Settle());
  EXPECT_EQ(d->Metrics().oldest_wait_s, 12);
  // Job 1's `sleep 30` runs in real time: cancel it rather than wait for it at the daemon's end.
  ASSERT_OK(d->Cancel(1));
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kCancelled); }));
}

// Regression queue_waits_restarted_at_a_restart: a job still queued when the daemon restarted
// began its wait again at 0 (the oldest-wait gauge, the response-ratio order, the starvation guard
// and the overtaking guard all forgot it). By hand: job 2 (7g.40gb) waits behind job 1 from
// t = 0; 100 s later the daemon stops, 50 s after that it starts again: the wait is 150 s.
TEST_F(DaemonTest, AQueuedJobKeepsItsWaitAcrossARestart) {
  ManualClock clock(1'800'000'000 * kSecond);
  clock_ = &clock;
  config_.on_shutdown = "leave";
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_OK(d->Submit(Req("7g.40gb", {"sleep", "30"})));
    ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kRunning); }));
    ASSERT_OK(d->Submit(Req("7g.40gb", {"true"})));
    ASSERT_OK(d->Settle());
    clock.Advance(100 * kSecond);
    ASSERT_OK(d->Settle());
    EXPECT_EQ(d->Metrics().oldest_wait_s, 100);
  }
  clock.Advance(50 * kSecond);
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Settle());
  EXPECT_EQ(Get(*d, 2).state, JobState::kQueued);
  EXPECT_EQ(d->Metrics().oldest_wait_s, 150);
  ASSERT_OK(d->Cancel(1));
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kCancelled); }));
}

}  // namespace
// Limits weighed by what they predict (§5; `full`'s limit-power learned). Twenty 1g.5gb jobs with
// limits 60, 120, 240 and 480 s in turn run `true` while the manual clock stands still: every run
// is 0 s (counted as 1 ms), the same whatever the limit, so the slope of log run on log limit is
// 0 and the power learned is 0 (before the 20th ends it is 1: too few runs). A job that fails
// (exit 3) and one whose launch fails are no runs: still 20 (regression
// a_failed_run_swung_the_limit_power: each counted as a run of ~0 s). Regression
// limit_power_learned_again_after_a_restart: after a restart the daemon reads the same runs from
// its store and keeps power 0 from 20 runs (without that: 1, from none).
TEST_F(DaemonTest, LimitPowerIsLearnedFromEndedRunsAndAgainAfterARestart) {
  ManualClock clock(1'800'000'000 * kSecond);
  clock_ = &clock;
  config_.on_shutdown = "leave";
  // full's defaults, as the config loader applies them (the fixture's config is built by hand).
  config_.scheduler.queue_order = QueueOrder::kResponseRatio;
  config_.scheduler.limit_power = kLimitPowerLearned;
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->Metrics().limit_power, 1);
    EXPECT_EQ(d->Metrics().limit_power_runs, 0);
    for (int k = 0; k < 20; ++k) {
      JobRequest r = Req("1g.5gb", {"true"});
      r.time_limit_s = 60.0 * (1 << (k % 4));
      ASSERT_OK(d->Submit(r));
    }
    ASSERT_TRUE(TickUntil(*d, [&] {
      for (DaemonJobId id = 1; id <= 20; ++id) {
        if (!InState(*d, id, JobState::kSucceeded)) return false;
      }
      return true;
    }));
    EXPECT_EQ(d->Metrics().limit_power_runs, 20);
    EXPECT_EQ(d->Metrics().limit_power, 0);
    JobRequest fails = Req("1g.5gb", {"sh", "-c", "exit 3"});
    fails.time_limit_s = 3600;
    JobRequest unlaunchable = Req("1g.5gb", {"/nonexistent/command"});
    unlaunchable.time_limit_s = 3600;
    ASSERT_OK(d->Submit(fails));
    ASSERT_OK(d->Submit(unlaunchable));
    ASSERT_TRUE(TickUntil(*d, [&] {
      return InState(*d, 21, JobState::kFailed) && InState(*d, 22, JobState::kFailed);
    }));
    EXPECT_EQ(d->Metrics().limit_power_runs, 20);
    EXPECT_EQ(d->Metrics().limit_power, 0);
  }
  auto d = Start();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->Metrics().limit_power_runs, 20);
  EXPECT_EQ(d->Metrics().limit_power, 0);
}

}  // namespace migsched
