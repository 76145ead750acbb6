// InertOptionNotes (cli/sim_flags.h): an option given that does nothing for a policy is said.
#include "cli/sim_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace migsched::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// --evacuation queue given: `full` migrates by its own defaults, so it acts there; lb+frag and
// first-fit run with migration off, so it does nothing for them; the fragmentation-free
// reference is not a policy.
TEST(InertOptionNotesTest, EvacuationGivenToPoliciesWithoutMigration) {
  SimSetup s;
  s.scheduler.evacuation = EvacuationScope::kQueue;
  s.explicit_options.evacuation = true;
  const std::vector<std::string> policies = {"full", "lb+frag", "first-fit", "frag-free-reference"};
  EXPECT_THAT(InertOptionNotes(s, policies),
              ElementsAre("--evacuation queue has no effect on lb+frag, first-fit (migration "
                          "off; --migration on turns it on)"));
  // With --migration on given, every policy here migrates: nothing to say.
  s.scheduler.migration.enabled = true;
  s.explicit_options.migration = true;
  EXPECT_THAT(InertOptionNotes(s, policies), IsEmpty());
  // `full --migration off`: its evacuation default is not the user's, so only a given one counts.
  SimSetup off;
  off.explicit_options.migration = true;
  EXPECT_THAT(InertOptionNotes(off, {"full"}), IsEmpty());
  off.explicit_options.evacuation = true;
  off.scheduler.evacuation = EvacuationScope::kHead;
  EXPECT_THAT(InertOptionNotes(off, {"full"}),
              ElementsAre("--evacuation head has no effect on full (migration off; --migration on "
                          "turns it on)"));
  // --evacuation off given: nothing to say.
  off.scheduler.evacuation = EvacuationScope::kOff;
  EXPECT_THAT(InertOptionNotes(off, {"lb+frag"}), IsEmpty());
}

}  // namespace
}  // namespace migsched::cli
