// EvacuationHolds (sched/evacuation_holds.h): the §13 holds, each rule worked by hand.
#include "sched/evacuation_holds.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

namespace migsched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

Reservation HoldOn(JobId job, int gpu) { return Reservation{job, gpu, 0, 0, 0, 0, true}; }

TEST(EvacuationHoldsTest, AHoldClosesItsGpuToOtherJobsUntilItsMovesAreDone) {
  EvacuationHolds holds;
  EXPECT_FALSE(holds.Holds(10));
  holds.Hold(HoldOn(10, 2));
  holds.AddMover(10, 1);
  holds.AddMover(10, 3);
  holds.Hold(HoldOn(11, 0));
  holds.AddMover(11, 4);
  EXPECT_TRUE(holds.Holds(10));
  EXPECT_TRUE(holds.Holds(11));
  // GPU 2 is held for job 10: closed to job 11 and to kNoJob (every job), open to 10 itself.
  EXPECT_TRUE(holds.HeldForOther(2, 11));
  EXPECT_TRUE(holds.HeldForOther(2, kNoJob));
  EXPECT_FALSE(holds.HeldForOther(2, 10));
  EXPECT_FALSE(holds.HeldForOther(1, kNoJob));  // nobody holds GPU 1
  ASSERT_EQ(holds.placements().size(), 2u);
  EXPECT_EQ(holds.placements()[0].job, 10);
  EXPECT_EQ(holds.placements()[1].job, 11);
  // Jobs 1 and 4 still moving: no hold is over. Job 3 alone moving: 11's is (its mover 4 is
  // done), 10's is not.
  std::set<JobId> moving = {1, 4};
  auto is_moving = [&](JobId m) { return moving.count(m) > 0; };
  EXPECT_THAT(holds.Over(is_moving), IsEmpty());
  moving = {3};
  EXPECT_THAT(holds.Over(is_moving), ElementsAre(11));
  moving = {};
  EXPECT_THAT(holds.Over(is_moving), ElementsAre(10, 11));
  holds.Drop(11);
  EXPECT_FALSE(holds.Holds(11));
  EXPECT_FALSE(holds.HeldForOther(0, kNoJob));
  ASSERT_EQ(holds.placements().size(), 1u);
  holds.Drop(11);  // no hold: nothing happens
  holds.Drop(10);
  EXPECT_THAT(holds.placements(), IsEmpty());
  EXPECT_THAT(holds.Over(is_moving), IsEmpty());
}

}  // namespace
}  // namespace migsched
