#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace migsched {
namespace {

TEST(EventQueueTest, EarliestFirstThenInsertionOrder) {
  EventQueue q;
  q.Push(5, EventKind::kCompletion, /*job=*/10, 0);
  q.Push(1, EventKind::kStart, 11, 0);
  q.Push(5, EventKind::kStart, 12, 0);
  q.Push(1, EventKind::kCompletion, 13, 7);
  q.Push(0.5, EventKind::kCompletion, 14, 0);
  // Times 0.5 < 1 = 1 < 5 = 5; equal times in push order (11 before 13, 10 before 12).
  std::vector<JobId> order;
  while (!q.empty()) {
    order.push_back(q.Top().job);
    q.Pop();
  }
  EXPECT_EQ(order, (std::vector<JobId>{14, 11, 13, 10, 12}));
}

TEST(EventQueueTest, KeepsTheEventFields) {
  EventQueue q;
  q.Push(2.5, EventKind::kCompletion, 3, 9);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q.Top().time_s, 2.5);
  EXPECT_EQ(q.Top().kind, EventKind::kCompletion);
  EXPECT_EQ(q.Top().job, 3);
  EXPECT_EQ(q.Top().generation, 9u);
}

}  // namespace
}  // namespace migsched
