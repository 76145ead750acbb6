// Joint placement of waiting jobs (§12) through the whole simulator: the jobs
// of one decision point (simultaneous arrivals, a completion that frees room)
// start together where one at a time one of them waits. Every expected value
// is worked out in the comments; r = 0.023 s is one MIG create or destroy,
// serialised per GPU in the order of the decisions (queue order).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/simulator.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AJob;
using ::migsched::testing::Model;

constexpr double kJointR = 0.023;

SimResult Simulate(const std::vector<WorkloadJob>& jobs, const std::string& policy, bool joint) {
  static ManualClock clock;
  SimOptions o;
  o.clock = &clock;
  o.self_check = true;
  SchedulerOptions so;
  so.joint_placement = joint;
  auto r = RunSimulation({&Model("A100-40GB")}, jobs, policy, so, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : SimResult{};
}

// 1g.5gb, 1g.5gb, 2g.10gb, 3g.20gb (create order) or the reverse, 100 s each,
// all at t = 0 on one A100 40GB.
std::vector<WorkloadJob> FourTogether(bool reverse, double at = 0) {
  std::vector<std::string> p = {"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"};
  if (reverse) std::reverse(p.begin(), p.end());
  std::vector<WorkloadJob> jobs;
  for (size_t i = 0; i < p.size(); ++i)
    jobs.push_back(AJob(p[i]).Named("j" + std::to_string(i)).ArrivesAt(at).Runs(100));
  return jobs;
}

struct Case {
  std::string policy;
  bool reverse;
};
class JointSimTest : public ::testing::TestWithParam<Case> {};

// Jointly all four are placed at 0 (3g@4, the others in units 0-3): four
// creates one after the other, so job k (queue order) starts at k·r and ends
// 100 s later; makespan 100 + 4r.
TEST_P(JointSimTest, AllFourStartAtOnce) {
  const SimResult r = Simulate(FourTogether(GetParam().reverse), GetParam().policy, true);
  ASSERT_EQ(r.jobs.size(), 4u);
  for (size_t k = 0; k < 4; ++k) {
    SCOPED_TRACE(r.jobs[k].request);
    EXPECT_NEAR(r.jobs[k].placed_s, 0, 1e-12);
    EXPECT_NEAR(r.jobs[k].start_s, (k + 1) * kJointR, 1e-9);
    EXPECT_NEAR(r.jobs[k].end_s, 100 + (k + 1) * kJointR, 1e-9);
  }
  EXPECT_EQ(r.jobs[GetParam().reverse ? 0 : 3].instances, "0:3g.20gb@4");
  EXPECT_NEAR(r.metrics.makespan_s, 100 + 4 * kJointR, 1e-9);
  EXPECT_EQ(r.metrics.creates, 4);  // (first-fit also destroys each instance when its job ends)
}

INSTANTIATE_TEST_SUITE_P(Orders, JointSimTest,
                         ::testing::Values(Case{"lb+frag", false}, Case{"lb+frag", true},
                                           Case{"full", false}, Case{"full", true},
                                           Case{"first-fit", false}, Case{"first-fit", true}),
                         [](const auto& info) {
                           std::string n = info.param.policy == "lb+frag" ? "LbFrag"
                                           : info.param.policy == "full"  ? "Full"
                                                                          : "FirstFit";
                           return n + (info.param.reverse ? "Reverse" : "CreateOrder");
                         });

// One at a time (joint placement off), lb+frag in create order puts the 1g
// jobs at 6 and 5 and the 2g at 2, so the 3g waits: j0 (1g@6) ends at 100 + r
// and j1 (1g@5) at 100 + 2r; then 3g@4 needs both idle 1g instances destroyed
// and itself created (3 operations): it starts at 100 + 5r, ends 200 + 5r.
TEST(JointSimTest, OneAtATimeTheThreeGWaits) {
  const SimResult r = Simulate(FourTogether(false), "lb+frag", false);
  ASSERT_EQ(r.jobs.size(), 4u);
  EXPECT_EQ(r.jobs[0].instances, "0:1g.5gb@6");
  EXPECT_EQ(r.jobs[1].instances, "0:1g.5gb@5");
  EXPECT_EQ(r.jobs[2].instances, "0:2g.10gb@2");
  EXPECT_NEAR(r.jobs[3].start_s, 100 + 5 * kJointR, 1e-9);
  EXPECT_NEAR(r.metrics.makespan_s, 200 + 5 * kJointR, 1e-9);
}

// A completion that frees room: a 7g.40gb runs [r, 50 + r]; the four jobs
// arrive at 10 and wait. At 50 + r lb+frag keeps the 7g@0 idle; jointly the
// first job's plan destroys it and creates its instance, each later job one
// create: starts at 50 + 3r, 50 + 4r, 50 + 5r, 50 + 6r; makespan 150 + 6r.
TEST(JointSimTest, ACompletionStartsAllFour) {
  std::vector<WorkloadJob> jobs = {AJob("7g.40gb").Named("big").Runs(50)};
  for (const WorkloadJob& j : FourTogether(false, 10)) jobs.push_back(j);
  const SimResult r = Simulate(jobs, "lb+frag", true);
  ASSERT_EQ(r.jobs.size(), 5u);
  for (size_t k = 1; k < 5; ++k) {
    SCOPED_TRACE(r.jobs[k].request);
    EXPECT_NEAR(r.jobs[k].placed_s, 50 + kJointR, 1e-9);
    EXPECT_NEAR(r.jobs[k].start_s, 50 + (k + 2) * kJointR, 1e-9);
  }
  EXPECT_NEAR(r.metrics.makespan_s, 150 + 6 * kJointR, 1e-9);
  EXPECT_EQ(r.metrics.destroys, 1);
  EXPECT_EQ(r.metrics.creates, 5);
}

}  // namespace
}  // namespace migsched
