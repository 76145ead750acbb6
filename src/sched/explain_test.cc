// Reasons worked out by hand on the A100 40GB grid (8 slices; docs/mig-hardware.md):
// 1g.5gb at 0..6 (size 1), 2g.10gb at 0, 2, 4 (size 2), 3g.20gb at 0, 4 (size 4),
// 4g.20gb at 0 (size 4), 7g.40gb at 0 (size 8); 7 compute slices.
#include "sched/explain.h"

#include <gtest/gtest.h>

#include "core/config_table.h"
#include "sched/policy.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

class ExplainTest : public ::testing::Test {
 protected:
  const GpuModel& m = migsched::testing::Model("A100-40GB");
  std::shared_ptr<const ConfigTable> table = ConfigTable::Build(m);
  int P(const std::string& name) { return m.FindProfile(name); }
  // A GPU with busy instances (profile, start), each its own job.
  GpuState Busy(const std::vector<std::pair<std::string, int>>& instances) {
    GpuState gs(m, *table);
    JobId job = 1;
    for (const auto& [name, start] : instances) {
      EXPECT_TRUE(gs.Create(P(name), start).ok());
      EXPECT_TRUE(gs.StartJob(P(name), start, job++).ok());
    }
    return gs;
  }
};

TEST_F(ExplainTest, AFreePlacementHasNoReason) {
  EXPECT_EQ(NoPlacementReason(Busy({}), P("7g.40gb")), "");
  EXPECT_EQ(NoPlacementReason(Busy({{"1g.5gb", 0}}), P("3g.20gb")), "");  // 3g.20gb at 4
}

TEST_F(ExplainTest, SlicesFreeButTheOnlyPlacementIsTaken) {
  // 1g.5gb at 1 leaves slices 0 and 2-7 free; 4g.20gb goes only at 0-3.
  EXPECT_EQ(NoPlacementReason(Busy({{"1g.5gb", 1}}), P("4g.20gb")),
            "slices 0, 2-7 free but 4g.20gb goes only at 0-3 (1g.5gb at 1 busy)");
}

TEST_F(ExplainTest, TheHolesOfStarts015) {
  // Three 1g.5gb at 0, 1, 5: slices 2-4 and 6-7 free, 3 compute slices busy, 4 free.
  // 3g.20gb (3 compute) goes at 0-3 or 4-7, both taken; 2g.10gb still fits at 2.
  const GpuState gs = Busy({{"1g.5gb", 0}, {"1g.5gb", 1}, {"1g.5gb", 5}});
  EXPECT_EQ(NoPlacementReason(gs, P("3g.20gb")),
            "slices 2-4, 6-7 free but 3g.20gb goes only at 0-3 or 4-7 (1g.5gb at 0, 1g.5gb at 1, "
            "1g.5gb at 5 busy)");
  EXPECT_EQ(NoPlacementReason(gs, P("2g.10gb")), "");
  // 4g.20gb needs 4 compute slices: 4 are free, so the placement is what is missing.
  EXPECT_EQ(NoPlacementReason(gs, P("4g.20gb")),
            "slices 2-4, 6-7 free but 4g.20gb goes only at 0-3 (1g.5gb at 0, 1g.5gb at 1 busy)");
}

TEST_F(ExplainTest, ComputeSlicesInstanceCountsAndAFullGpu) {
  // 4g.20gb at 0 + 2g.10gb at 4: 6 of 7 compute slices busy, slices 6-7 free.
  EXPECT_EQ(NoPlacementReason(Busy({{"4g.20gb", 0}, {"2g.10gb", 4}}), P("2g.10gb")),
            "only 1 of 7 compute slices free, 2g.10gb needs 2");
  // Seven 1g.5gb: slice 7 free, but 1g.5gb has 7 instances at most.
  EXPECT_EQ(NoPlacementReason(Busy({{"1g.5gb", 0},
                                    {"1g.5gb", 1},
                                    {"1g.5gb", 2},
                                    {"1g.5gb", 3},
                                    {"1g.5gb", 4},
                                    {"1g.5gb", 5},
                                    {"1g.5gb", 6}}),
                              P("1g.5gb")),
            "already 7 instances of 1g.5gb, the most a GPU has");
  EXPECT_EQ(NoPlacementReason(Busy({{"7g.40gb", 0}}), P("1g.5gb")), "no slice free");
}

TEST_F(ExplainTest, TheKindOfEachReason) {
  using Kind = GpuRoom::Kind;
  EXPECT_EQ(ExplainGpuRoom(Busy({}), P("7g.40gb")).kind, Kind::kFree);
  EXPECT_EQ(ExplainGpuRoom(Busy({{"7g.40gb", 0}}), P("1g.5gb")).kind, Kind::kNoSliceFree);
  // 4g.20gb (4 compute) and 2g.10gb (2) at 4: 1 compute slice free, 2g.10gb needs 2.
  EXPECT_EQ(ExplainGpuRoom(Busy({{"4g.20gb", 0}, {"2g.10gb", 4}}), P("2g.10gb")).kind,
            Kind::kComputeSlices);
  // 1g.5gb at 1: 4 compute slices and 7 slices free, but 4g.20gb goes only at 0-3.
  const GpuRoom frag = ExplainGpuRoom(Busy({{"1g.5gb", 1}}), P("4g.20gb"));
  EXPECT_EQ(frag.kind, Kind::kFragmented);
  EXPECT_EQ(frag.why, NoPlacementReason(Busy({{"1g.5gb", 1}}), P("4g.20gb")));
}

TEST_F(ExplainTest, IdleInstancesAreFreeSpace) {
  GpuState gs(m, *table);
  ASSERT_TRUE(gs.Create(P("4g.20gb"), 0).ok());  // idle: may be destroyed
  EXPECT_EQ(NoPlacementReason(gs, P("7g.40gb")), "");
}

TEST(UnitRangesTest, Ranges) {
  EXPECT_EQ(UnitRanges(0b11110000, 8), "4-7");
  EXPECT_EQ(UnitRanges(0b101, 8), "0, 2");
  EXPECT_EQ(UnitRanges(0, 8), "");
  EXPECT_EQ(UnitRanges(0xff, 8), "0-7");
}

// CanEverHold, by hand from the catalogs: an empty A100 40GB holds at most one 4g.20gb, two
// 3g.20gb, one 7g.40gb, seven 1g.5gb, and has 7 compute slices; an empty A30 24GB holds four
// 1g.6gb, offers no A100 profile, and has 4 compute slices.
class CanEverHoldTest : public ::testing::Test {
 protected:
  ConfigTableCache tables;
  std::unique_ptr<Cluster> c = migsched::testing::BuildCluster(
      {{"A100-40GB", "", ""}, {"A100-40GB", "", ""}, {"A30-24GB", "", ""}}, &tables);
  // A dynamic policy's capacity: as many as an empty GPU holds.
  std::unique_ptr<PlacementPolicy> first_fit = MakePolicy("first-fit", SchedulerOptions()).value();
  CapacityFn hardware = [this](int g, int p) { return first_fit->Capacity(*c, g, p); };
  NeverVerdict Hold(const std::vector<int>& gpus,
                    const std::vector<std::pair<std::string, int>>& asked) {
    std::vector<AskedPart> parts;
    for (const auto& [profile, count] : asked) parts.push_back(PartOfProfile(profile, count));
    return CanEverHold(*c, gpus, parts, hardware);
  }
};

TEST_F(CanEverHoldTest, RegressionNeverReasonBlamedOneProfileForSlicesTogether) {
  // One 4g.20gb and two 3g.20gb: each part alone fits one A100 (1 <= 1, 2 <= 2), but together
  // they need 4 + 2 x 3 = 10 compute slices of its 7.
  const NeverVerdict one = Hold({0}, {{"4g.20gb", 1}, {"3g.20gb", 2}});
  EXPECT_EQ(one.kind, NeverVerdict::Kind::kTooManySlices);
  EXPECT_EQ(one.need, 10);
  EXPECT_EQ(one.most, 7);
  // Two A100s have 14.
  EXPECT_TRUE(Hold({0, 1}, {{"4g.20gb", 1}, {"3g.20gb", 2}}).can());
}

TEST_F(CanEverHoldTest, TheFirstPartWithTooFewInstances) {
  const NeverVerdict v = Hold({0}, {{"1g.5gb", 7}, {"4g.20gb", 2}});
  EXPECT_EQ(v.kind, NeverVerdict::Kind::kTooFew);
  EXPECT_EQ(v.part, 1);
  EXPECT_EQ(v.most, 1);
  // Summed over the GPUs of the set: two A100s hold two 4g.20gb.
  EXPECT_TRUE(Hold({0, 1}, {{"4g.20gb", 2}}).can());
}

TEST_F(CanEverHoldTest, AProfileNoGpuOfTheSetOffers) {
  const NeverVerdict v = Hold({0, 1}, {{"1g.5gb", 1}, {"1g.6gb", 1}});
  EXPECT_EQ(v.kind, NeverVerdict::Kind::kNotOffered);
  EXPECT_EQ(v.part, 1);
  // The A30 offers it: one 1g.5gb (A100) and one 1g.6gb (A30) need 2 of 7 + 4 slices.
  EXPECT_TRUE(Hold({0, 2}, {{"1g.5gb", 1}, {"1g.6gb", 1}}).can());
  EXPECT_EQ(Hold({2}, {{"1g.6gb", 5}}).most, 4);
}

TEST_F(CanEverHoldTest, OnlyTheGpusThatOfferAPartCountTheirSlices) {
  // 7g.40gb and 4g.20gb need 7 + 4 = 11 compute slices; the A100 and the A30 have 11, but the
  // A30 offers neither, so only the A100's 7 count.
  const NeverVerdict v = Hold({0, 2}, {{"7g.40gb", 1}, {"4g.20gb", 1}});
  EXPECT_EQ(v.kind, NeverVerdict::Kind::kTooManySlices);
  EXPECT_EQ(v.need, 11);
  EXPECT_EQ(v.most, 7);
}

TEST_F(CanEverHoldTest, TheCapacityIsTheCallers) {
  // A layout without the profile (a static policy's): at most 0.
  const NeverVerdict v =
      CanEverHold(*c, {0, 1}, {PartOfProfile("3g.20gb", 1)}, [](int, int) { return 0; });
  EXPECT_EQ(v.kind, NeverVerdict::Kind::kTooFew);
  EXPECT_EQ(v.most, 0);
}

TEST(ExplainRoomTest, PerPartTheFreePlacesAndWhyTheOthersHaveNone) {
  ConfigTableCache tables;
  // GPU 0: 1g.5gb at 1 busy (4g.20gb's only placement, 0-3, taken); GPU 1: empty but drained;
  // GPU 2: empty.
  auto c = migsched::testing::BuildCluster(
      {{"A100-40GB", "1g.5gb@1", ""}, {"A100-40GB", "", ""}, {"A100-40GB", "", ""}}, &tables);
  const std::vector<PartRoom> room =
      ExplainRoom(*c, {0, 1, 2}, {PartOfProfile("4g.20gb", 1), PartOfProfile("1g.5gb", 2)},
                  [](int g) { return g == 1 ? std::string("drained") : std::string(); });
  ASSERT_EQ(room.size(), 2u);
  EXPECT_EQ(room[0].free_places, 1);  // GPU 2
  EXPECT_EQ(room[0].blocked,
            (std::vector<std::pair<int, std::string>>{
                {0, "slices 0, 2-7 free but 4g.20gb goes only at 0-3 (1g.5gb at 1 busy)"},
                {1, "drained"}}));
  EXPECT_EQ(room[1].free_places, 2);  // GPUs 0 and 2
  EXPECT_EQ(room[1].blocked, (std::vector<std::pair<int, std::string>>{{1, "drained"}}));
}

}  // namespace
}  // namespace migsched
