// The daemon (fake backend) places the jobs waiting at one tick jointly (§12,
// scheduler.joint_placement), as the simulator does: the create-order case on
// one A100 40GB, in both orders.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/daemon_fixture.h"
#include "sched/policy.h"

namespace migsched {
namespace {

class DaemonJointTest : public DaemonTest {
 protected:
  // A daemon on a fresh 1xA100-40GB node with `policy`'s registry defaults,
  // joint placement set to `joint`, and the queue paused (so that the jobs
  // submitted next wait for one scan together).
  std::unique_ptr<Daemon> StartWith(const std::string& policy, bool joint) {
    fake_.reset();
    config_.state_dir = MakeTempDir("migsched-daemon-joint");
    config_.policy = policy;
    config_.scheduler = OptionsForPolicy(policy, SchedulerOptions{}, {.joint_placement = true});
    config_.scheduler.joint_placement = joint;
    std::unique_ptr<Daemon> d = Start();
    if (d) EXPECT_OK(d->Pause());
    return d;
  }

  // Submits one `sleep 30` job per profile, in order; their ids.
  static std::vector<DaemonJobId> SubmitAll(Daemon& d, const std::vector<std::string>& profiles) {
    std::vector<DaemonJobId> ids;
    for (const std::string& p : profiles) {
      StatusOr<DaemonJobRecord> rec = d.Submit(Req(p, {"sleep", "30"}));
      EXPECT_TRUE(rec.ok()) << rec.status().ToString();
      if (rec.ok()) ids.push_back(rec->id);
    }
    return ids;
  }
};

// 1g.5gb, 1g.5gb, 2g.10gb, 3g.20gb (or the reverse) waiting at one scan fit
// together only with the 3g at 4 (3g@0 leaves units 4-7: 2g@4, 1g@6 and no
// start for the second 1g). One scan starts all four; the fake node then
// holds exactly those four instances, each running its job.
TEST_F(DaemonJointTest, OneTickStartsAllFourInBothOrders) {
  for (bool reverse : {false, true}) {
    for (const std::string policy : {"lb+frag", "full"}) {
      SCOPED_TRACE(policy + (reverse ? " reverse" : " create order"));
      auto d = StartWith(policy, /*joint=*/true);
      ASSERT_NE(d, nullptr);
      std::vector<std::string> profiles = {"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"};
      if (reverse) std::reverse(profiles.begin(), profiles.end());
      const std::vector<DaemonJobId> ids = SubmitAll(*d, profiles);
      ASSERT_EQ(ids.size(), 4u);
      ASSERT_OK(d->Resume());
      ASSERT_OK(d->Settle());
      for (DaemonJobId id : ids) EXPECT_EQ(Get(*d, id).state, JobState::kRunning) << "job " << id;
      const std::vector<GpuView> gpus = d->Gpus();
      ASSERT_EQ(gpus.size(), 1u);
      std::vector<std::string> busy;
      for (const InstanceView& in : gpus[0].instances) {
        EXPECT_TRUE(in.busy) << in.profile << "@" << in.start;
        busy.push_back(in.profile + "@" + std::to_string(in.start));
      }
      EXPECT_EQ(busy.size(), 4u);
      EXPECT_NE(std::find(busy.begin(), busy.end(), "3g.20gb@4"), busy.end());
      for (DaemonJobId id : ids) ASSERT_OK(d->Cancel(id).status());
      ASSERT_OK(d->Settle());
    }
  }
}

// Without joint placement, lb+frag in create order leaves the 3g.20gb queued
// after the scan (1g@6, 1g@5, 2g@2 leave no 3g start).
TEST_F(DaemonJointTest, OneAtATimeTheThreeGStaysQueued) {
  auto d = StartWith("lb+frag", /*joint=*/false);
  ASSERT_NE(d, nullptr);
  const std::vector<DaemonJobId> ids = SubmitAll(*d, {"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"});
  ASSERT_EQ(ids.size(), 4u);
  ASSERT_OK(d->Resume());
  ASSERT_OK(d->Settle());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Get(*d, ids[i]).state, JobState::kRunning);
  EXPECT_EQ(Get(*d, ids[3]).state, JobState::kQueued);
  for (DaemonJobId id : ids) ASSERT_OK(d->Cancel(id).status());
  ASSERT_OK(d->Settle());
}

// The registry turns joint placement on for lb+frag and full when the config
// does not say, and the daemon runs with what /v1/node shows.
TEST_F(DaemonJointTest, ConfigDefaultsComeFromTheRegistry) {
  for (const std::string policy : {"lb+frag", "full", "first-fit"}) {
    SCOPED_TRACE(policy);
    ASSERT_OK_AND_ASSIGN(
        DaemonConfig c,
        ParseDaemonConfig("state_dir: /tmp/x\nscheduler:\n  policy: " + policy + "\n", "c.yaml"));
    EXPECT_EQ(c.scheduler.joint_placement, JointPlacementByDefault(policy));
    ASSERT_OK_AND_ASSIGN(DaemonConfig off,
                         ParseDaemonConfig("state_dir: /tmp/x\nscheduler:\n  policy: " + policy +
                                               "\n  joint-placement: off\n",
                                           "c.yaml"));
    EXPECT_FALSE(off.scheduler.joint_placement);
  }
}

}  // namespace
}  // namespace migsched
