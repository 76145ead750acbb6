#include "daemon/mig_backend.h"

#include <gtest/gtest.h>

#include "daemon/process_runner.h"

namespace migsched {
namespace {

// Regression (backend_trouble_told_by_text): whether a failure was the hardware's was decided by
// looking for "in use" in the message, so the fake backend's refusal of a create that would
// exceed the GPU's compute slices ("3 compute slices in use + 4 exceeds the GPU's 7", the
// request's fault) counted as the backend's trouble and never against the job. The reason
// decides now, not the wording.
TEST(MigBackendTest, RegressionBackendTroubleToldByTextComputeSlicesInUse) {
  EXPECT_FALSE(IsBackendTrouble(ResourceExhaustedError(
      "GPU 0: create 4g.20gb at 0: 3 compute slices in use + 4 exceeds the GPU's 7")));
  EXPECT_FALSE(IsBackendTrouble(UnavailableError("job 'driver fault drill': in use")));
  EXPECT_TRUE(
      IsBackendTrouble(Status(StatusCode::kUnavailable, "destroy: busy", StatusReason::kInUse)));
  EXPECT_TRUE(IsBackendTrouble(
      Status(StatusCode::kUnavailable, "create: reset first", StatusReason::kNeedsReset)));
  EXPECT_TRUE(IsBackendTrouble(
      Status(StatusCode::kFailedPrecondition, "rollback failed", StatusReason::kDriverFault)));
  // A lost GPU is not trouble by its reason alone: the sync marks it unreachable first.
  EXPECT_FALSE(IsBackendTrouble(
      Status(StatusCode::kUnavailable, "fell off the bus", StatusReason::kDeviceLost)));
}

// The exit code of a launch error follows its reason: a message that merely reads like one
// (here a made-up status with the same words) stands for no exit code.
TEST(MigBackendTest, TheLaunchExitCodeIsTheReasonsNotTheWordings) {
  EXPECT_EQ(ProcessRunner::ExitCodeOf(NotFoundError("command not found: 'x'")), -1);
  EXPECT_EQ(ProcessRunner::ExitCodeOf(
                NotFoundError("command not found: 'x'").WithReason(StatusReason::kCommandNotFound)),
            127);
  EXPECT_EQ(
      ProcessRunner::ExitCodeOf(
          FailedPreconditionError("not executable: 'x'").WithReason(StatusReason::kNotExecutable)),
      126);
}

}  // namespace
}  // namespace migsched
