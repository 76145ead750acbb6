// PinnedHolds and ApplyPins (sched/pins.h), each rule worked by hand on A100 40GB GPUs (3g.20gb
// starts at 0 or 4; 1g.5gb at 0-6). Scheduler::PlaceAt, Adopt, Hold and BindHold, which call
// these, are tested in scheduler_test.cc.
#include "sched/pins.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/builders.h"
#include "testing/status_matchers.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using testing::BuildCluster;
using ::testing::ElementsAre;
using testing::Model;

TEST(PinnedHoldsTest, ABindTakesTheNamedInstancesAndTheHoldEndsWhenNoneIsLeft) {
  ConfigTableCache tables;
  auto c = BuildCluster({{"A100-40GB", "", ""}, {"A100-40GB", "", ""}}, &tables);
  const int p1 = Model("A100-40GB").FindProfile("1g.5gb");
  const InstanceRef a{0, p1, 0}, b{0, p1, 1}, d{1, p1, 0};
  PinnedHolds holds;
  EXPECT_EQ(holds.Find(Holder::kReservation, 5), nullptr);
  holds.Add(Holder::kReservation, 5, {a, b, d});
  // The same id under another holder is another hold.
  EXPECT_EQ(holds.Find(Holder::kPlaceholder, 5), nullptr);
  ASSERT_NE(holds.Find(Holder::kReservation, 5), nullptr);
  // All of them when none is named.
  auto all = holds.Select(Holder::kReservation, 5, {}, *c);
  ASSERT_TRUE(all.ok());
  EXPECT_THAT(*all, ElementsAre(a, b, d));
  // One named twice is held once: refused, naming it.
  auto twice = holds.Select(Holder::kReservation, 5, {b, b}, *c);
  EXPECT_EQ(twice.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(twice.status().message()), ::testing::HasSubstr("does not hold"));
  EXPECT_EQ(holds.Select(Holder::kPlaceholder, 5, {}, *c).status().code(), StatusCode::kNotFound);
  // Selecting changes nothing; taking b leaves a and d; taking them ends the hold.
  auto one = holds.Select(Holder::kReservation, 5, {b}, *c);
  ASSERT_TRUE(one.ok());
  EXPECT_THAT(*holds.Find(Holder::kReservation, 5), ElementsAre(a, b, d));
  holds.Take(Holder::kReservation, 5, *one);
  EXPECT_THAT(*holds.Find(Holder::kReservation, 5), ElementsAre(a, d));
  holds.Take(Holder::kReservation, 5, {d, a});
  EXPECT_EQ(holds.Find(Holder::kReservation, 5), nullptr);
  holds.Add(Holder::kPlaceholder, 6, {a});
  holds.End(Holder::kPlaceholder, 6);
  EXPECT_EQ(holds.Find(Holder::kPlaceholder, 6), nullptr);
}

TEST(ApplyPinsTest, AllOrNothing) {
  ConfigTableCache tables;
  // GPU 0: job 1000 on 1g@6 (units 6); GPU 1 empty.
  auto c = BuildCluster({{"A100-40GB", "1g.5gb@6", ""}, {"A100-40GB", "", ""}}, &tables);
  const GpuModel& m = Model("A100-40GB");
  const int p3 = m.FindProfile("3g.20gb");
  // 3g@0 on GPU 1 is free; 3g@4 on GPU 0 overlaps 1g@6: the call fails and GPU 1 is rolled back.
  auto refused = ApplyPins(c.get(), Holder::kJob, 7, {{1, p3, 0}, {0, p3, 4}}, false);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()), ::testing::HasSubstr("overlaps 1g.5gb@6"));
  EXPECT_TRUE(c->gpu(1).instances().empty());
  // 3g@0 on both GPUs fits (units 0-3 beside 6 on GPU 0): created and started for job 7.
  auto placed = ApplyPins(c.get(), Holder::kJob, 7, {{1, p3, 0}, {0, p3, 0}}, false);
  ASSERT_TRUE(placed.ok()) << placed.status().message();
  EXPECT_EQ(c->gpu(0).instances().size(), 2u);
  EXPECT_EQ(c->gpu(1).instances().size(), 1u);
  // Not a placement of the profile: 3g.20gb starts at 0 or 4 only.
  EXPECT_EQ(ApplyPins(c.get(), Holder::kJob, 8, {{1, p3, 2}}, false).status().code(),
            StatusCode::kInvalidArgument);
  // Adopting needs an idle instance there: 3g@4 on GPU 1 does not exist.
  EXPECT_EQ(ApplyPins(c.get(), Holder::kJob, 8, {{1, p3, 4}}, true).status().code(),
            StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace migsched
