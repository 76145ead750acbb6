// The static baselines through the simulator: `static` is told the workload
// before its setup (PlacementPolicy::KnowWorkload) and lays out what the mix
// asks for; `static-all-balanced` keeps mig-parted's layout, which lacks
// 4g.20gb (A100 40GB: 2g@0, 1g@2, 1g@3, 3g@4).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sched/policy.h"
#include "sim/simulator.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AJob;
using ::migsched::testing::Model;

SimResult Simulate(const std::vector<WorkloadJob>& jobs, const std::string& policy) {
  static ManualClock clock;
  SimOptions o;
  o.clock = &clock;
  o.self_check = true;
  auto r = RunSimulation({&Model("A100-40GB"), &Model("A100-40GB")}, jobs, policy,
                         OptionsForPolicy(policy, {}, {}), o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : SimResult{};
}

// Four 4g jobs of 100 s at t = 0 on 2 GPUs: the target is 14 slices of 4g;
// an A100 holds one 4g at most, so each GPU takes a full configuration with
// 4g@0 (gain 4, the most). Two jobs run at once, none is rejected, nothing is
// reconfigured after the setup, and a reused instance starts at once:
// makespan 2 x 100 s.
TEST(StaticMixSimTest, StaticLaysOutTheMixAndAllBalancedRejectsWhatItLacks) {
  std::vector<WorkloadJob> jobs;
  for (int i = 0; i < 4; ++i)
    jobs.push_back(AJob("4g.20gb").Named("j" + std::to_string(i)).Runs(100));
  const SimResult best = Simulate(jobs, "static");
  EXPECT_EQ(best.metrics.policy, "static");
  EXPECT_EQ(best.metrics.rejected, 0);
  EXPECT_EQ(best.metrics.jobs_completed, 4);
  EXPECT_DOUBLE_EQ(best.metrics.makespan_s, 200);
  EXPECT_EQ(best.metrics.reconfigurations, 0);
  const SimResult balanced = Simulate(jobs, "static-all-balanced");
  EXPECT_EQ(balanced.metrics.policy, "static-all-balanced");
  EXPECT_EQ(balanced.metrics.rejected, 4);
  ASSERT_EQ(balanced.jobs.size(), 4u);
  EXPECT_EQ(balanced.jobs[0].reason,
            "the static-all-balanced policy's layout has no 4g.20gb instance");
}

}  // namespace
}  // namespace migsched
