// Reasons worked out by hand on the A100 40GB grid (8 slices; docs/mig-hardware.md):
// 1g.5gb at 0..6 (size 1), 2g.10gb at 0, 2, 4 (size 2), 3g.20gb at 0, 4 (size 4),
// 4g.20gb at 0 (size 4), 7g.40gb at 0 (size 8); 7 compute slices.
#include "k8s/engine/fit_reason.h"

#include <gtest/gtest.h>

#include "core/config_table.h"
#include "testing/test_util.h"

namespace migsched::k8s {
namespace {

class FitReasonTest : public ::testing::Test {
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

TEST_F(FitReasonTest, AFreePlacementHasNoReason) {
  EXPECT_EQ(NoPlacementReason(Busy({}), P("7g.40gb")), "");
  EXPECT_EQ(NoPlacementReason(Busy({{"1g.5gb", 0}}), P("3g.20gb")), "");  // 3g.20gb at 4
}

TEST_F(FitReasonTest, SlicesFreeButTheOnlyPlacementIsTaken) {
  // 1g.5gb at 1 leaves slices 0 and 2-7 free; 4g.20gb goes only at 0-3.
  EXPECT_EQ(NoPlacementReason(Busy({{"1g.5gb", 1}}), P("4g.20gb")),
            "slices 0, 2-7 free but 4g.20gb goes only at 0-3 (1g.5gb at 1 busy)");
}

TEST_F(FitReasonTest, TheHolesOfStarts015) {
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

TEST_F(FitReasonTest, ComputeSlicesInstanceCountsAndAFullGpu) {
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

TEST_F(FitReasonTest, IdleInstancesAreFreeSpace) {
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

}  // namespace
}  // namespace migsched::k8s
