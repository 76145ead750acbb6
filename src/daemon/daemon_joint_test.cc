// The daemon (fake backend) places the jobs waiting at one tick jointly (§12,
// scheduler.joint_placement), as the simulator does: the create-order case on
// one A100 40GB, in both orders.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "daemon/daemon.h"
#include "daemon/fake_backend.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::BundledCatalog;
using ::migsched::testing::MakeTempDir;

std::unique_ptr<Daemon> StartDaemon(const std::string& policy, bool joint) {
  DaemonConfig config;
  config.state_dir = MakeTempDir("migsched-daemon-joint");
  config.kill_grace_s = 1;
  config.policy = policy;
  config.scheduler.joint_placement = joint;
  StatusOr<std::vector<const GpuModel*>> models = ParseClusterSpec("1xA100-40GB", BundledCatalog());
  EXPECT_TRUE(models.ok()) << models.status().ToString();
  StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(config, std::make_unique<FakeBackend>(*models), &BundledCatalog());
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? std::move(*d) : nullptr;
}

// Submits one `sleep 30` job per profile, in order; their ids.
std::vector<DaemonJobId> SubmitAll(Daemon& d, const std::vector<std::string>& profiles) {
  std::vector<DaemonJobId> ids;
  for (const std::string& p : profiles) {
    JobRequest r;
    r.profile = p;
    r.command = {"sleep", "30"};
    StatusOr<DaemonJobRecord> rec = d.Submit(r);
    EXPECT_TRUE(rec.ok()) << rec.status().ToString();
    if (rec.ok()) ids.push_back(rec->id);
  }
  return ids;
}

// 1g.5gb, 1g.5gb, 2g.10gb, 3g.20gb (or the reverse) submitted before one
// tick fit together only with the 3g at 4 (3g@0 leaves units 4-7: 2g@4, 1g@6
// and no start for the second 1g). One tick starts all four; the fake node
// then holds exactly those four instances, each running its job.
TEST(DaemonJointTest, OneTickStartsAllFourInBothOrders) {
  for (bool reverse : {false, true}) {
    for (const std::string policy : {"lb+frag", "full"}) {
      SCOPED_TRACE(policy + (reverse ? " reverse" : " create order"));
      auto d = StartDaemon(policy, /*joint=*/true);
      ASSERT_NE(d, nullptr);
      std::vector<std::string> profiles = {"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"};
      if (reverse) std::reverse(profiles.begin(), profiles.end());
      const std::vector<DaemonJobId> ids = SubmitAll(*d, profiles);
      ASSERT_EQ(ids.size(), 4u);
      ASSERT_TRUE(d->Tick().ok());
      for (DaemonJobId id : ids) {
        StatusOr<DaemonJobRecord> rec = d->GetJob(id);
        ASSERT_TRUE(rec.ok());
        EXPECT_EQ(rec->state, JobState::kRunning) << "job " << id;
      }
      const std::vector<GpuView> gpus = d->Gpus();
      ASSERT_EQ(gpus.size(), 1u);
      std::vector<std::string> busy;
      for (const InstanceView& in : gpus[0].instances) {
        EXPECT_TRUE(in.busy) << in.profile << "@" << in.start;
        busy.push_back(in.profile + "@" + std::to_string(in.start));
      }
      EXPECT_EQ(busy.size(), 4u);
      EXPECT_NE(std::find(busy.begin(), busy.end(), "3g.20gb@4"), busy.end());
      for (DaemonJobId id : ids) ASSERT_TRUE(d->Cancel(id).ok());
    }
  }
}

// Without joint placement, lb+frag in create order leaves the 3g.20gb queued
// after the tick (1g@6, 1g@5, 2g@2 leave no 3g start).
TEST(DaemonJointTest, OneAtATimeTheThreeGStaysQueued) {
  auto d = StartDaemon("lb+frag", /*joint=*/false);
  ASSERT_NE(d, nullptr);
  const std::vector<DaemonJobId> ids = SubmitAll(*d, {"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"});
  ASSERT_EQ(ids.size(), 4u);
  ASSERT_TRUE(d->Tick().ok());
  EXPECT_EQ(d->GetJob(ids[3])->state, JobState::kQueued);
  for (DaemonJobId id : ids) ASSERT_TRUE(d->Cancel(id).ok());
}

}  // namespace
}  // namespace migsched
