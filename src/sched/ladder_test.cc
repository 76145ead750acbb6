// Decisions of the ladder and baseline policies added with the §2 metrics
// (lb, lb+frag with --metric, mfi) and of the full-size reserve (§4 step 7)
// on small hand-made states. Expected placements are worked out by hand in the
// comments (blocked-placements values: see sched/metrics_test.cc).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sched/policies/policies.h"
#include "sched/scheduler.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::BuildCluster;
using ::migsched::testing::GpuSetup;
using ::migsched::testing::JobOf;
using ::migsched::testing::Model;
using ::testing::HasSubstr;

// A cluster in a given state (busy instances only: GpuSetup's idle lists are
// empty here) and a scheduler over it.
class World {
 public:
  World(const std::vector<GpuSetup>& gpus, const std::string& policy, SchedulerOptions options) {
    cluster_ = BuildCluster(gpus, &tables_);
    auto p = MakePolicy(policy, options);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    scheduler_ = std::make_unique<Scheduler>(cluster_.get(), std::move(*p), options, &clock_);
  }

  // Places one instance of `profile`; "gpu:profile@start", or "" if none fits.
  std::string Place(const std::string& profile) {
    auto d = scheduler_->TryPlace(next_id_++, JobOf(profile));
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    if (!d.ok() || !d->has_value()) return "";
    const InstanceRef& in = (*d)->instances.front();
    return fmt::format("{}:{}@{}", in.gpu, cluster_->gpu(in.gpu).model().profile(in.profile).name,
                       in.start);
  }

  Scheduler& scheduler() { return *scheduler_; }

 private:
  ConfigTableCache tables_;
  ManualClock clock_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<Scheduler> scheduler_;
  JobId next_id_ = 0;
};

struct LadderCase {
  std::string name;
  std::vector<GpuSetup> gpus;
  std::string policy;
  std::string metric;
  int reserve_full;
  std::vector<std::string> arrivals;  // observed before placing (demand window)
  std::string profile;
  std::string expected;  // "gpu:profile@start"
};

class LadderDecisionTest : public ::testing::TestWithParam<LadderCase> {};

TEST_P(LadderDecisionTest, ChoosesTheExpectedPlacement) {
  const LadderCase& c = GetParam();
  SchedulerOptions o;
  o.metric = c.metric;
  o.reserve_full = c.reserve_full;
  World w(c.gpus, c.policy, o);
  for (const std::string& a : c.arrivals) w.scheduler().ObserveArrival(JobOf(a));
  EXPECT_EQ(w.Place(c.profile), c.expected);
}

const std::vector<GpuSetup> kOneA100 = {{"A100-40GB", "", ""}};
// GPU 0 holds 1g@6 (util 1/7, lazy), GPU 1 is empty.
const std::vector<GpuSetup> kOneSliceAnd0 = {{"A100-40GB", "1g.5gb@6", ""}, {"A100-40GB", "", ""}};
// GPU 0 has 6 slices busy (units 0-5), GPU 1 is empty.
const std::vector<GpuSetup> kAlmostFullAnd0 = {{"A100-40GB", "4g.20gb@0,2g.10gb@4", ""},
                                               {"A100-40GB", "", ""}};
// GPU 0 is empty, GPU 1 holds 3g@4 (util 3/7 = 0.43: busy at t = 0.4).
const std::vector<GpuSetup> kEmptyAndThree = {{"A100-40GB", "", ""},
                                              {"A100-40GB", "3g.20gb@4", ""}};

const LadderCase kLadderCases[] = {
    // ---- mfi: minimum blocked-placements increase, no lazy/busy split.
    // Empty A100, 1g.5gb at start s raises blocked-placements by 13 (s = 0..3),
    // 9 (s = 4, 5) or 7 (s = 6): start 6.
    {"MfiOneSliceGoesTo6", kOneA100, "mfi", "fragcost", 0, {}, "1g.5gb", "0:1g.5gb@6"},
    // GPU 1 (empty) would rise by 7. GPU 0 = 1g@6 (7): adding 1g@4 or 1g@5
    // blocks 1g.5gb x2, 1g.10gb@4,@6, 2g@4, 3g@4 = 2 + 4 + 2 + 4 = 12 (+5);
    // 1g@0..3 reach 20 (+13). Minimum +5 at starts 4 and 5: lower start 4.
    {"MfiPacksNextToTheFirst", kOneSliceAnd0, "mfi", "fragcost", 0, {}, "1g.5gb", "0:1g.5gb@4"},
    // GPU 0 has 12 blocked (metrics_test SixSlicesBusy); a 1g at 6 fills it:
    // 0 (-12). GPU 1 would rise by 7.
    {"MfiFillsTheLastSlice", kAlmostFullAnd0, "mfi", "fragcost", 0, {}, "1g.5gb", "0:1g.5gb@6"},
    // ---- lb: lazy/busy split, first-fit inside.
    // GPU 1 is busy (3/7 >= 0.4), GPU 0 lazy: lowest start on GPU 0.
    {"LbLazyFirst",
     {{"A100-40GB", "3g.20gb@4", ""}, {"A100-40GB", "", ""}},
     "lb",
     "fragcost",
     0,
     {},
     "1g.5gb",
     "1:1g.5gb@0"},
    // Both lazy (1/7 and 0): first-fit among them, GPU 0 start 0.
    {"LbBothLazyFirstFit", kOneSliceAnd0, "lb", "fragcost", 0, {}, "1g.5gb", "0:1g.5gb@0"},
    // GPU 0 busy (6/7), GPU 1 lazy: GPU 1, start 0 (mfi filled GPU 0 instead).
    {"LbLeavesTheBusyGpu", kAlmostFullAnd0, "lb", "fragcost", 0, {}, "1g.5gb", "1:1g.5gb@0"},
    // Both busy (4/7): first-fit among busy GPUs, GPU 0, first free start 4.
    {"LbAllBusyFirstFit",
     {{"A100-40GB", "4g.20gb@0", ""}, {"A100-40GB", "4g.20gb@0", ""}},
     "lb",
     "fragcost",
     0,
     {},
     "1g.5gb",
     "0:1g.5gb@4"},
    // ---- lb+frag with each metric, both GPUs lazy (kOneSliceAnd0).
    // fragcost: GPU 0 at 5 or 4 keeps every profile's ideal count (ΔFragCost
    // 0), as does GPU 1 at 6: tie -> lower util -> GPU 1.
    {"LbFragFragCostSpreads", kOneSliceAnd0, "lb+frag", "fragcost", 0, {}, "1g.5gb", "1:1g.5gb@6"},
    {"FragAwareIsLbFrag", kOneSliceAnd0, "frag-aware", "fragcost", 0, {}, "1g.5gb", "1:1g.5gb@6"},
    // blocked-placements: GPU 0 at 4 or 5 +5, GPU 1 at 6 +7: GPU 0, higher start 5.
    {"LbFragBlockedPacks",
     kOneSliceAnd0,
     "lb+frag",
     "blocked-placements",
     0,
     {},
     "1g.5gb",
     "0:1g.5gb@5"},
    // demand-weighted, only 7g arriving (p_7g = 1): on GPU 1 the 1g strands
    // 6 slices for the 7g (ΔF = 6 - 0); on GPU 0 F goes from 6 to 5 (ΔF = -1)
    // at any free start: GPU 0, higher start 5.
    {"LbFragDemandWeightedPacks",
     kOneSliceAnd0,
     "lb+frag",
     "demand-weighted",
     0,
     {"7g.40gb"},
     "1g.5gb",
     "0:1g.5gb@5"},
    // demand-weighted, only 1g arriving (p_1g.5gb = 1): F = free - 1 x
    // feasible is 0 everywhere (every free slice can take a 1g), ties: lower
    // util -> GPU 1, higher start 6.
    {"LbFragDemandWeightedSmallOnly",
     kOneSliceAnd0,
     "lb+frag",
     "demand-weighted",
     0,
     {"1g.5gb"},
     "1g.5gb",
     "1:1g.5gb@6"},
    // ---- full-size reserve (§4 step 7). kEmptyAndThree: only GPU 0 can host
    // a 7g; with --reserve-full 1 a candidate there would leave 0.
    {"FirstFitWithoutReserve",
     kEmptyAndThree,
     "first-fit",
     "fragcost",
     0,
     {},
     "1g.5gb",
     "0:1g.5gb@0"},
    {"FirstFitReserveKeepsTheEmptyGpu",
     kEmptyAndThree,
     "first-fit",
     "fragcost",
     1,
     {},
     "1g.5gb",
     "1:1g.5gb@0"},
    // lb+frag without the reserve: GPU 0 is lazy, GPU 1 busy -> GPU 0, start 6.
    {"LbFragWithoutReserve", kEmptyAndThree, "lb+frag", "fragcost", 0, {}, "1g.5gb", "0:1g.5gb@6"},
    // With it only GPU 1 remains: every 1g at 0..3 next to 3g@4 has ΔFragCost
    // 0 (3g and 4g no longer fit by capacity), higher start 3.
    {"LbFragReserveUsesTheBusyGpu",
     kEmptyAndThree,
     "lb+frag",
     "fragcost",
     1,
     {},
     "1g.5gb",
     "1:1g.5gb@3"},
    // best-fit, driver-default, mfi (+1 at every start 0..3) also keep GPU 0.
    {"BestFitReserve", kEmptyAndThree, "best-fit", "fragcost", 1, {}, "1g.5gb", "1:1g.5gb@0"},
    // driver order 6, 4, 5, 0..3: on GPU 1 the first free start is 0.
    {"DriverDefaultReserve",
     kEmptyAndThree,
     "driver-default",
     "fragcost",
     1,
     {},
     "1g.5gb",
     "1:1g.5gb@0"},
    {"MfiReserve", kEmptyAndThree, "mfi", "fragcost", 1, {}, "1g.5gb", "1:1g.5gb@0"},
    // A 4g fits on GPU 1 at 0, which already cannot host a 7g: reserve kept.
    {"LbReserveFourSlice", kEmptyAndThree, "lb", "fragcost", 1, {}, "4g.20gb", "1:4g.20gb@0"},
    // Every candidate breaks the reserve (one empty GPU): used anyway.
    {"ReserveYieldsWhenNothingElseFits",
     kOneA100,
     "first-fit",
     "fragcost",
     1,
     {},
     "1g.5gb",
     "0:1g.5gb@0"},
    // Reserve 2 with 2 empty GPUs: any 1g leaves 1 < 2, so all break it alike.
    {"ReserveAboveWhatIsLeft",
     {{"A100-40GB", "", ""}, {"A100-40GB", "", ""}},
     "lb",
     "fragcost",
     2,
     {},
     "1g.5gb",
     "0:1g.5gb@0"},
};

INSTANTIATE_TEST_SUITE_P(Cases, LadderDecisionTest, ::testing::ValuesIn(kLadderCases),
                         [](const auto& info) { return info.param.name; });

TEST(LadderTest, EnqueueFeedsTheDemandWindow) {
  // As LbFragDemandWeightedPacks, but the 7g arrives through the queue.
  SchedulerOptions o;
  o.metric = "demand-weighted";
  World w(kOneSliceAnd0, "lb+frag", o);
  w.scheduler().Enqueue(500, JobOf("7g.40gb"));
  EXPECT_EQ(w.Place("1g.5gb"), "0:1g.5gb@5");
}

TEST(LadderTest, NamesAndInstanceRetention) {
  // compare's default order: the ladder first, then the other baselines.
  const std::vector<std::string> names = PolicyNames();
  ASSERT_GE(names.size(), 3u);
  EXPECT_EQ(names[0], "first-fit");
  EXPECT_EQ(names[1], "lb");
  EXPECT_EQ(names[2], "lb+frag");
  for (const char* n : {"mfi", "best-fit", "driver-default", "static"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
  SchedulerOptions o;
  for (const auto& [name, keeps] : std::vector<std::pair<std::string, bool>>{
           {"lb", false}, {"mfi", false}, {"lb+frag", true}, {"frag-aware", true}}) {
    auto p = MakePolicy(name, o);
    ASSERT_TRUE(p.ok()) << name;
    EXPECT_EQ((*p)->name(), name);
    EXPECT_EQ((*p)->KeepIdleInstances(), keeps) << name;
  }
}

TEST(LadderTest, BadOptionsAreRejected) {
  SchedulerOptions o;
  o.metric = "frag";
  auto p = MakePolicy("lb+frag", o);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "metric 'frag' is not one of fragcost, blocked-placements, demand-weighted");
  o = SchedulerOptions();
  o.reserve_full = -1;
  EXPECT_EQ(MakePolicy("lb", o).status().message(), "reserve-full must be >= 0 GPUs, got -1");
  o = SchedulerOptions();
  o.demand_window = 0;
  EXPECT_EQ(MakePolicy("lb", o).status().message(), "demand window must be >= 1 jobs, got 0");
  auto unknown = MakePolicy("nope", SchedulerOptions());
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(),
              HasSubstr("unknown policy 'nope' (known: first-fit, lb, "));
  EXPECT_THAT(unknown.status().message(), HasSubstr("frag-aware (= lb+frag)"));
}

TEST(FullSizeReserveTest, CountsGpusThatCanHostTheLargestProfile) {
  // GPU 0 empty, GPU 1 3g@4, GPU 2 1g@6 (7g blocked: it needs all 8 units).
  World w({{"A100-40GB", "", ""}, {"A100-40GB", "3g.20gb@4", ""}, {"A100-40GB", "1g.5gb@6", ""}},
          "first-fit", SchedulerOptions());
  const Cluster& c = w.scheduler().cluster();
  const FullSizeReserve r(c, 1);
  EXPECT_EQ(r.Hosts(Model("A100-40GB")), 1);
  std::vector<Candidate> cands;
  AppendCandidates(c, 0, Model("A100-40GB").FindProfile("1g.5gb"), true, &cands);
  ASSERT_FALSE(cands.empty());
  EXPECT_FALSE(r.Keeps(c, cands.front()));  // leaves 0 GPUs for a 7g
  cands.clear();
  AppendCandidates(c, 1, Model("A100-40GB").FindProfile("1g.5gb"), true, &cands);
  ASSERT_FALSE(cands.empty());
  EXPECT_TRUE(r.Keeps(c, cands.front()));  // GPU 1 could not host a 7g anyway
  EXPECT_TRUE(FullSizeReserve(c, 0).Keeps(c, cands.front()));
}

}  // namespace
}  // namespace migsched
