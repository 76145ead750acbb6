#include "sched/idle_retention.h"

#include <gtest/gtest.h>

#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::Model;

// One A100: a 3g.20gb made idle at 0 s for nobody, another made at 0 s and run by job 1, which
// ends at 10 s (kept: idle since 10 s). By hand, with ttl 60 s: at 65 s only the first is due
// (0 + 60 <= 65, 10 + 60 > 65); at 70 s both, oldest first; a start onto the kept one at 20 s
// is one kept reuse and takes it off the books.
TEST(IdleRetentionTest, IdleTimeBeginsWhenAStepLeavesAnInstanceIdleAndEndsWithAStart) {
  ConfigTableCache tables;
  auto cluster = testing::BuildCluster({{"A100-40GB", "", ""}}, &tables);
  const int p3 = Model("A100-40GB").FindProfile("3g.20gb");
  IdleRetention books;
  Plan made{{{StepKind::kCreate, 0, p3, 0, kNoJob},
             {StepKind::kCreate, 0, p3, 4, kNoJob},
             {StepKind::kStart, 0, p3, 4, 1}}};
  ASSERT_TRUE(ApplyPlan(made, cluster.get()).ok());
  books.Track(made, 0);
  Plan ended{{{StepKind::kRelease, 0, p3, 4, 1}}};
  ASSERT_TRUE(ApplyPlan(ended, cluster.get()).ok());
  books.Track(ended, 10);

  EXPECT_EQ(books.OldestSince(), 0);
  auto due = books.Due(*cluster, 65, 60);
  ASSERT_TRUE(due.ok()) << due.status().message();
  ASSERT_EQ(due->steps.size(), 1u);
  EXPECT_EQ(due->steps[0], (Step{StepKind::kDestroy, 0, p3, 0, kNoJob}));
  due = books.Due(*cluster, 70, 60);
  ASSERT_TRUE(due.ok());
  ASSERT_EQ(due->steps.size(), 2u);
  EXPECT_EQ(due->steps[1].start, 4);

  Plan reused{{{StepKind::kStart, 0, p3, 4, 2}}};
  ASSERT_TRUE(ApplyPlan(reused, cluster.get()).ok());
  books.Track(reused, 20);
  EXPECT_EQ(books.kept_reuses(), 1);
  due = books.Due(*cluster, 1000, 60);
  ASSERT_TRUE(due.ok());
  ASSERT_EQ(due->steps.size(), 1u);  // the busy one is not idle any more
  EXPECT_EQ(due->steps[0].start, 0);
  // A start onto an instance made for it (not kept) is no reuse.
  EXPECT_EQ(books.expirations(), 0);
  books.CountExpired(1);
  EXPECT_EQ(books.expirations(), 1);
}

// The books and the cluster disagree (an instance the books hold idle is busy): a bug, said as
// kInternal, never a destroy of a busy instance.
TEST(IdleRetentionTest, AnInstanceTheBooksThinkIdleButIsBusyIsAnInternalError) {
  ConfigTableCache tables;
  auto cluster = testing::BuildCluster({{"A100-40GB", "3g.20gb@0", ""}}, &tables);
  const int p3 = Model("A100-40GB").FindProfile("3g.20gb");
  IdleRetention books;
  books.Track(Plan{{{StepKind::kCreate, 0, p3, 0, kNoJob}}}, 0);
  auto due = books.Due(*cluster, 100, 60);
  ASSERT_FALSE(due.ok());
  EXPECT_EQ(due.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace migsched
