// The defaults of `full` (sched/full_policy.h OptionsForPolicy): the
// combination chosen in docs/results.md (section 3), each option
// still overridable by the user, and no other policy affected.
#include "sched/full_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sched/policy.h"

namespace migsched {
namespace {

struct DefaultsCase {
  std::string name;
  std::string policy;
  ExplicitOptions set;
  // The options as given (every other field at its SchedulerOptions default).
  std::string given_metric;
  int given_reserve_full;
  double given_max_skip_seconds;
  // Expected effective values.
  std::string metric;
  int reserve_full;
  double max_skip_seconds;
};

// Expectations from the choice documented in docs/results.md: `full` runs
// with the demand-weighted metric, no full-size reserve and no starvation
// guard unless the user says otherwise; other policies take what is given.
const std::vector<DefaultsCase> kCases = {
    // Nothing set: full's defaults replace the (global) values given.
    {"FullTakesItsDefaults", "full", {}, "fragcost", 0, -1, "demand-weighted", 0, -1},
    // Nothing set but unusual given values (as if a caller had filled them):
    // still replaced, because the user did not ask for them.
    {"FullReplacesUnsetValues", "full", {}, "blocked-placements", 3, 60, "demand-weighted", 0, -1},
    // Each option the user set keeps the user's value.
    {"FullKeepsAnExplicitMetric", "full", {.metric = true}, "fragcost", 0, -1, "fragcost", 0, -1},
    {"FullKeepsAnExplicitReserve",
     "full",
     {.reserve_full = true},
     "fragcost",
     1,
     -1,
     "demand-weighted",
     1,
     -1},
    {"FullKeepsAnExplicitGuard",
     "full",
     {.max_skip_seconds = true},
     "fragcost",
     0,
     1800,
     "demand-weighted",
     0,
     1800},
    {"FullKeepsAllExplicit",
     "full",
     {true, true, true},
     "blocked-placements",
     2,
     600,
     "blocked-placements",
     2,
     600},
    // Other policies, aliases included: unchanged, set or not.
    {"LbFragUnchanged", "lb+frag", {}, "fragcost", 0, -1, "fragcost", 0, -1},
    {"FragAwareAliasUnchanged", "frag-aware", {}, "fragcost", 0, -1, "fragcost", 0, -1},
    {"FirstFitUnchanged",
     "first-fit",
     {},
     "blocked-placements",
     1,
     300,
     "blocked-placements",
     1,
     300},
};

class FullDefaultsTest : public ::testing::TestWithParam<DefaultsCase> {};

TEST_P(FullDefaultsTest, EffectiveOptions) {
  const DefaultsCase& c = GetParam();
  SchedulerOptions given;
  given.threshold = 0.3;  // a field full has no default for: passed through
  given.metric = c.given_metric;
  given.reserve_full = c.given_reserve_full;
  given.max_skip_seconds = c.given_max_skip_seconds;
  const SchedulerOptions got = OptionsForPolicy(c.policy, given, c.set);
  EXPECT_EQ(got.metric, c.metric);
  EXPECT_EQ(got.reserve_full, c.reserve_full);
  EXPECT_EQ(got.max_skip_seconds, c.max_skip_seconds);
  EXPECT_EQ(got.threshold, 0.3);
  EXPECT_EQ(got.migration.defrag_interval_s, given.migration.defrag_interval_s);
  // The result is a valid configuration for the policy.
  EXPECT_TRUE(got.Validate().ok()) << got.Validate().ToString();
  auto policy = MakePolicy(c.policy, got);
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
}

INSTANTIATE_TEST_SUITE_P(Cases, FullDefaultsTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.name; });

// The constants are the documented choice (docs/results.md, docs/policies.md);
// changing them must change the documentation too.
TEST(FullDefaultsTest, DocumentedChoice) {
  EXPECT_EQ(kFullDefaultMetric, "demand-weighted");
  EXPECT_EQ(kFullDefaultReserveFull, 0);
  EXPECT_LT(kFullDefaultMaxSkipSeconds, 0);
  // They differ from the global defaults only in the metric.
  const SchedulerOptions global;
  EXPECT_NE(global.metric, kFullDefaultMetric);
  EXPECT_EQ(global.reserve_full, kFullDefaultReserveFull);
  EXPECT_EQ(global.max_skip_seconds, kFullDefaultMaxSkipSeconds);
}

// Joint placement (§12): on for lb+frag (and its alias) and full unless the
// user says otherwise; off for the baselines unless the user turns it on.
TEST(JointPlacementDefaultsTest, OnForOurPoliciesOffForTheBaselines) {
  for (const std::string& policy : PolicyNames()) {
    const bool ours = policy == "lb+frag" || policy == "full";
    SCOPED_TRACE(policy);
    EXPECT_EQ(JointPlacementByDefault(policy), ours);
    SchedulerOptions given;
    EXPECT_EQ(OptionsForPolicy(policy, given, {}).joint_placement, ours);
    for (bool value : {true, false}) {
      given.joint_placement = value;
      EXPECT_EQ(OptionsForPolicy(policy, given, {.joint_placement = true}).joint_placement, value);
    }
  }
  EXPECT_TRUE(JointPlacementByDefault("frag-aware"));
  EXPECT_FALSE(SchedulerOptions{}.joint_placement);
}

}  // namespace
}  // namespace migsched
