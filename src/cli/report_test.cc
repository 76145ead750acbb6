// The simulator's terminal summary (cli/report.h): the limit power of §5 is said where it
// weighed anything.

#include "cli/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

namespace migsched::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A run whose order weighed the limits of equal requests with power 0.25 says so; one with the
// limits as given (1: every FIFO policy, or too few runs ended) prints no line for it.
TEST(SummaryTest, TheLimitPowerIsSaidWhereItWeighedLimits) {
  Metrics m;
  m.limit_power = 0.25;
  std::ostringstream weighed;
  PrintSummary(m, weighed);
  EXPECT_THAT(weighed.str(), HasSubstr("  limit power       0.25 at the end (§5: the jobs of one "
                                       "request ordered by wait / limit^0.25)\n"));
  m.limit_power = 1;
  std::ostringstream as_given;
  PrintSummary(m, as_given);
  EXPECT_THAT(as_given.str(), Not(HasSubstr("limit power")));
}

}  // namespace
}  // namespace migsched::cli
