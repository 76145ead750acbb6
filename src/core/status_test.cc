#include "core/status.h"

#include <gtest/gtest.h>

namespace migsched {
namespace {

TEST(StatusTest, AnErrorHasNoReasonUnlessItsMakerGivesOne) {
  EXPECT_EQ(UnavailableError("busy").reason(), StatusReason::kNone);
  const Status st(StatusCode::kUnavailable, "destroy: in use", StatusReason::kInUse);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_EQ(st.reason(), StatusReason::kInUse);
}

TEST(StatusTest, WithPrefixKeepsTheCodeAndTheReason) {
  const Status st =
      Status(StatusCode::kUnavailable, "it needs a GPU reset", StatusReason::kNeedsReset)
          .WithPrefix("GPU 0: create 3g.20gb");
  EXPECT_EQ(st.message(), "GPU 0: create 3g.20gb: it needs a GPU reset");
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_EQ(st.reason(), StatusReason::kNeedsReset);
}

TEST(StatusTest, WithReasonSetsItOnAnErrorAndLeavesOkAlone) {
  const Status st =
      NotFoundError("command not found: 'x'").WithReason(StatusReason::kCommandNotFound);
  EXPECT_EQ(st.reason(), StatusReason::kCommandNotFound);
  EXPECT_EQ(st.message(), "command not found: 'x'");
  EXPECT_EQ(Status().WithReason(StatusReason::kInUse).reason(), StatusReason::kNone);
  EXPECT_TRUE(Status().WithReason(StatusReason::kInUse).ok());
}

}  // namespace
}  // namespace migsched
