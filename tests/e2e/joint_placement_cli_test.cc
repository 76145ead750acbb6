// End-to-end: `migsched simulate` with joint placement of waiting jobs (§12,
// --joint-placement) on hand-written traces, outcomes worked out by hand.
// r = 0.023 s per MIG create or destroy, serialised per GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e/simulate.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::RunMigsched;
using ::migsched::testing::Simulate;
using ::migsched::testing::SimulateArgs;
using ::migsched::testing::WriteTempFile;
using ::testing::HasSubstr;

// Four 100 s jobs at t = 0 on one A100 40GB that fit together only as 3g@4
// plus 2g, 1g, 1g in units 0-3 (NVIDIA's create-order example).
const char kCreateOrder[] =
    "id,arrival_s,profile,duration_s\n"
    "a,0,1g.5gb,100\n"
    "b,0,1g.5gb,100\n"
    "c,0,2g.10gb,100\n"
    "d,0,3g.20gb,100\n";
const char kReverse[] =
    "id,arrival_s,profile,duration_s\n"
    "d,0,3g.20gb,100\n"
    "c,0,2g.10gb,100\n"
    "a,0,1g.5gb,100\n"
    "b,0,1g.5gb,100\n";

const char kOneA100[] = "1xA100-40GB";

// Jointly all four start at 0 (four creates: the last starts at 4r):
// makespan 100 + 4r = 100.092 s, mean JCT 100 + 2.5r = 100.0575 s. It is
// lb+frag's and full's default, in both orders.
TEST(JointPlacementCliTest, AllFourStartAtOnceInBothOrders) {
  for (const char* text : {kCreateOrder, kReverse}) {
    const std::string trace = WriteTempFile("four.csv", text);
    for (const std::string policy : {"lb+frag", "full"}) {
      SCOPED_TRACE(policy + (text == kReverse ? " reverse" : " create order"));
      const nlohmann::json m = Simulate(kOneA100, trace, {"--policy", policy});
      EXPECT_EQ(m["settings"]["joint_placement"], true);
      EXPECT_NEAR(m["makespan_s"].get<double>(), 100.092, 1e-6);
      EXPECT_NEAR(m["jct_mean_s"].get<double>(), 100.0575, 1e-6);
      EXPECT_EQ(m["jobs_completed"].get<int>(), 4);
    }
  }
}

// Off, lb+frag in create order places 1g@6, 1g@5, 2g@2 and the 3g waits until
// the 1g jobs end (100 + r, 100 + 2r) and their idle instances are destroyed
// and 3g@4 created: it starts at 100 + 5r, makespan 200 + 5r = 200.115 s.
// first-fit (off by default) in reverse order: 3g@0, 2g@4, 1g@6, and the last
// 1g waits for the 3g (ends 100 + r; its destroy, then 1g@0 created: starts
// 100 + 3r), makespan 200 + 3r = 200.069 s; with --joint-placement on it is
// 100.092 s.
TEST(JointPlacementCliTest, OneAtATimeAJobWaits) {
  const std::string create_order = WriteTempFile("four.csv", kCreateOrder);
  nlohmann::json m =
      Simulate(kOneA100, create_order, {"--policy", "lb+frag", "--joint-placement", "off"});
  EXPECT_EQ(m["settings"]["joint_placement"], false);
  EXPECT_NEAR(m["makespan_s"].get<double>(), 200.115, 1e-6);
  const std::string reverse = WriteTempFile("reverse.csv", kReverse);
  m = Simulate(kOneA100, reverse, {"--policy", "first-fit"});
  EXPECT_EQ(m["settings"]["joint_placement"], false);
  EXPECT_NEAR(m["makespan_s"].get<double>(), 200.069, 1e-6);
  m = Simulate(kOneA100, reverse, {"--policy", "first-fit", "--joint-placement", "on"});
  EXPECT_NEAR(m["makespan_s"].get<double>(), 100.092, 1e-6);
}

TEST(JointPlacementCliTest, BadValueIsRejected) {
  const std::string trace = WriteTempFile("four.csv", kCreateOrder);
  auto r = RunMigsched(SimulateArgs(kOneA100, trace, {"--joint-placement", "maybe"}));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--joint-placement"));
}

}  // namespace
}  // namespace migsched
