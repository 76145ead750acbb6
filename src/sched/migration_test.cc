// MoveBook (sched/migration.h): the scheduler's books of moves, each rule worked by hand.
#include "sched/migration.h"

#include <gtest/gtest.h>

namespace migsched {
namespace {

MigrationMove Move(JobId job, int from_gpu, int to_gpu) {
  return MigrationMove{job, InstanceRef{from_gpu, 0, 0}, InstanceRef{to_gpu, 0, 0}};
}

TEST(MoveBookTest, OneMoveInFlightPerJobAndTheCoolDownCountsFromItsBegin) {
  MoveBook book;
  book.Started(1, 0);
  EXPECT_FALSE(book.Moving(1));
  EXPECT_EQ(book.InFlight(1), nullptr);
  ASSERT_TRUE(book.Begin(Move(1, 0, 1), 100));
  EXPECT_TRUE(book.Moving(1));
  EXPECT_EQ(*book.InFlight(1), Move(1, 0, 1));
  // A second move of the same job while the first is in flight: refused, nothing booked.
  EXPECT_FALSE(book.Begin(Move(1, 1, 2), 110));
  EXPECT_EQ(*book.InFlight(1), Move(1, 0, 1));
  // Cool-down 120 s from the begin at 100: cooling at 219.9, over at 220.
  EXPECT_TRUE(book.CoolingDown(1, 219.9, 120));
  EXPECT_FALSE(book.CoolingDown(1, 220, 120));
  EXPECT_FALSE(book.CoolingDown(2, 0, 120));  // never moved
  StatusOr<MigrationMove> done = book.Finish(1, 130, /*restarted=*/false);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(*done, Move(1, 0, 1));
  EXPECT_FALSE(book.Moving(1));
  EXPECT_EQ(book.Finish(1, 140, false).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(book.Abandon(1).status().code(), StatusCode::kNotFound);
  // The cool-down still runs after the switch-over (it counts from the begin).
  EXPECT_TRUE(book.CoolingDown(1, 200, 120));
}

TEST(MoveBookTest, CheckpointsStartAtTheStartAndAgainAtARestart) {
  MoveBook book;
  EXPECT_EQ(book.SinceCheckpointOrigin(7, 50), std::nullopt);  // not started
  book.Started(7, 10);
  EXPECT_EQ(book.SinceCheckpointOrigin(7, 50), 40);
  ASSERT_TRUE(book.Begin(Move(7, 0, 1), 60));
  // A checkpointed move keeps the origin; a restart sets it to the switch-over.
  ASSERT_TRUE(book.Finish(7, 70, /*restarted=*/false).ok());
  EXPECT_EQ(book.SinceCheckpointOrigin(7, 80), 70);
  ASSERT_TRUE(book.Begin(Move(7, 1, 0), 300));
  ASSERT_TRUE(book.Finish(7, 310, /*restarted=*/true).ok());
  EXPECT_EQ(book.SinceCheckpointOrigin(7, 320), 10);
  // An abandoned move: the job stays where it was, still counted as moved for the cool-down.
  ASSERT_TRUE(book.Begin(Move(7, 0, 1), 500));
  ASSERT_TRUE(book.Abandon(7).ok());
  EXPECT_FALSE(book.Moving(7));
  EXPECT_TRUE(book.CoolingDown(7, 510, 120));
  // The job ends: every book of it goes, its move in flight included.
  ASSERT_TRUE(book.Begin(Move(7, 1, 2), 700));
  book.Ended(7);
  EXPECT_FALSE(book.Moving(7));
  EXPECT_FALSE(book.CoolingDown(7, 701, 120));
  EXPECT_EQ(book.SinceCheckpointOrigin(7, 701), std::nullopt);
}

// The admission move budget (§13): moves begun + k <= B × (jobs started + 1).
TEST(MoveBookTest, TheBudgetCountsMovesPerStartedJob) {
  MoveBook book;
  // Nothing started, B = 0.5: one move would be 1 > 0.5 × 1; unbounded with B < 0.
  EXPECT_FALSE(book.BudgetAllows(1, 0.5));
  EXPECT_TRUE(book.BudgetAllows(1, -1));
  EXPECT_TRUE(book.BudgetAllows(0, 0.5));
  for (JobId id = 0; id < 3; ++id) book.Started(id, 0);
  // 3 started: 0.5 × 4 = 2 moves allowed.
  EXPECT_TRUE(book.BudgetAllows(2, 0.5));
  EXPECT_FALSE(book.BudgetAllows(3, 0.5));
  ASSERT_TRUE(book.Begin(Move(0, 0, 1), 1));
  EXPECT_TRUE(book.BudgetAllows(1, 0.5));   // 1 + 1 <= 2
  EXPECT_FALSE(book.BudgetAllows(2, 0.5));  // 1 + 2 > 2
  // A refused Begin counts nothing.
  EXPECT_FALSE(book.Begin(Move(0, 1, 2), 2));
  EXPECT_TRUE(book.BudgetAllows(1, 0.5));
  // Ends do not give moves back: the budget is over the run.
  book.Ended(0);
  EXPECT_FALSE(book.BudgetAllows(2, 0.5));
}

}  // namespace
}  // namespace migsched
