// Time limits: a job's time_limit_s is enforced (SIGTERM at the limit,
// SIGKILL after kill_grace_s; the job ends `timeout`), and the stop survives a
// daemon restart. A manual clock: the limits pass when the test says so.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdint>
#include <memory>

#include "core/clock.h"
#include "daemon/daemon.h"
#include "daemon/daemon_fixture.h"
#include "testing/status_matchers.h"

namespace migsched {
namespace {

class DaemonTimeLimitTest : public DaemonTest {
 protected:
  ManualClock clock_value_{1'800'000'000'000'000'000};
  void SetUp() override {
    DaemonTest::SetUp();
    clock_ = &clock_value_;
  }
  static JobRequest Limited(std::vector<std::string> cmd, double limit_s) {
    JobRequest r = Req("1g.5gb", std::move(cmd));
    r.time_limit_s = limit_s;
    return r;
  }
};

TEST_F(DaemonTimeLimitTest, JobPastItsTimeLimitEndsTimeoutOthersRunOn) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Submit(Limited({"sleep", "30"}, 60)));    // job 1: limit 1 min
  ASSERT_OK(d->Submit(Req("1g.5gb", {"sleep", "30"})));  // job 2: no limit
  ASSERT_OK(d->Submit(Limited({"true"}, 60)));           // job 3: ends well within its limit
  ASSERT_TRUE(TickUntil(*d, [&] {
    return InState(*d, 1, JobState::kRunning) && InState(*d, 2, JobState::kRunning) &&
           InState(*d, 3, JobState::kSucceeded);
  }));
  clock_value_.Advance(59 * kSecond);  // 1 s before the limit: nothing happens
  ASSERT_OK(d->Settle());
  EXPECT_EQ(Get(*d, 1).state, JobState::kRunning);
  EXPECT_FALSE(Get(*d, 1).cancel_requested);
  clock_value_.Advance(2 * kSecond);  // past it: SIGTERM (sleep dies of it)
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kTimeout); }));
  const DaemonJobRecord r = Get(*d, 1);
  EXPECT_EQ(r.reason, "time limit of 1:00 reached");
  EXPECT_EQ(r.exit_code, 128 + SIGTERM);
  EXPECT_TRUE(IsTerminal(r.state));
  EXPECT_EQ(Get(*d, 2).state, JobState::kRunning);  // no limit: never stopped
  EXPECT_EQ(Get(*d, 3).state, JobState::kSucceeded);
  // A cancel of a job without a limit still ends `cancelled`.
  ASSERT_OK(d->Cancel(2));
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 2, JobState::kCancelled); }));
  EXPECT_EQ(Get(*d, 2).reason, "cancelled");
}

// The stop at the limit is stored before it is carried out: a daemon that
// goes away right after it (its job's end not yet reaped) finds the job
// ended at its restart and records it as `timeout`, with the limit's reason.
TEST_F(DaemonTimeLimitTest, TimeLimitStopSurvivesARestart) {
  config_.on_shutdown = "leave";
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_OK(d->Submit(Limited({"sleep", "60"}, 3600)));
    ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kRunning); }));
    clock_value_.Advance(3601 * kSecond);
    ASSERT_TRUE(TickUntil(*d, [&] { return Get(*d, 1).cancel_requested; }));
    EXPECT_EQ(Get(*d, 1).reason, "time limit of 1:00:00 reached");
  }
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kTimeout); }));
  EXPECT_EQ(Get(*d, 1).exit_code, 128 + SIGTERM);
  EXPECT_EQ(Get(*d, 1).reason, "time limit of 1:00:00 reached");
}

// Regression: the daemon's clock for limits counts from its own start, and the end of a limit
// that passed while the daemon was down came out negative there, which read as "no limit": the
// re-adopted job ran on to its natural end (`succeeded`). Job 1's limit (60 s) passes during a
// 120 s downtime; job 2's (600 s) is 480 s ahead at the restart; job 3 has none.
TEST_F(DaemonTimeLimitTest, LimitThatPassedWhileTheDaemonWasDownIsEnforcedAtReadoption) {
  config_.on_shutdown = "leave";
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_OK(d->Submit(Limited({"sleep", "60"}, 60)));
    ASSERT_OK(d->Submit(Limited({"sleep", "60"}, 600)));
    ASSERT_OK(d->Submit(Req("1g.5gb", {"sleep", "60"})));
    ASSERT_TRUE(TickUntil(*d, [&] {
      return InState(*d, 1, JobState::kRunning) && InState(*d, 2, JobState::kRunning) &&
             InState(*d, 3, JobState::kRunning);
    }));
  }
  clock_value_.Advance(120 * kSecond);  // down for two minutes
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kTimeout); }));
  EXPECT_EQ(Get(*d, 1).reason, "time limit of 1:00 reached");
  EXPECT_EQ(Get(*d, 1).exit_code, 128 + SIGTERM);
  // Job 2 started 120 s ago with 600 s: 480 s left, counted from its first start.
  clock_value_.Advance(479 * kSecond);
  ASSERT_OK(d->Settle());
  EXPECT_EQ(Get(*d, 2).state, JobState::kRunning);
  EXPECT_FALSE(Get(*d, 2).cancel_requested);
  clock_value_.Advance(2 * kSecond);
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 2, JobState::kTimeout); }));
  EXPECT_EQ(Get(*d, 2).reason, "time limit of 10:00 reached");
  // No limit: still running after all that.
  EXPECT_EQ(Get(*d, 3).state, JobState::kRunning);
  EXPECT_FALSE(Get(*d, 3).cancel_requested);
  ASSERT_OK(d->Cancel(3));
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 3, JobState::kCancelled); }));
}

// Regression readopted_job_killed_by_a_stop: a job re-adopted after a restart is not the
// daemon's child, and the SIGKILL after kill_grace_s (1 s here) takes its monitor with it, so no
// exit file is written: the job ended `timeout` with no exit code where the docs promise the
// signal's (137). The job ignores SIGTERM, so only the SIGKILL ends it.
TEST_F(DaemonTimeLimitTest, ReadoptedJobKilledAtItsLimitEndsTimeoutWith137) {
  config_.on_shutdown = "leave";
  {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_OK(d->Submit(Limited({"sh", "-c", "trap '' TERM; exec sleep 60"}, 600)));
    ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kRunning); }));
  }
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Settle());
  ASSERT_EQ(Get(*d, 1).state, JobState::kRunning);  // re-adopted
  clock_value_.Advance(601 * kSecond);              // past the limit: SIGTERM, ignored
  ASSERT_TRUE(TickUntil(*d, [&] { return Get(*d, 1).cancel_requested; }));
  clock_value_.Advance(2 * kSecond);  // past kill_grace_s: SIGKILL
  ASSERT_TRUE(TickUntil(*d, [&] { return InState(*d, 1, JobState::kTimeout); }));
  EXPECT_EQ(Get(*d, 1).reason, "time limit of 10:00 reached");
  EXPECT_EQ(Get(*d, 1).exit_code, 128 + SIGKILL);
}

}  // namespace
}  // namespace migsched
