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
// reference is not a policy: it gets its own note (it reads no option but --max-wait).
TEST(InertOptionNotesTest, EvacuationGivenToPoliciesWithoutMigration) {
  SimSetup s;
  s.scheduler.evacuation = EvacuationScope::kQueue;
  s.explicit_options.evacuation = true;
  const std::vector<std::string> policies = {"full", "lb+frag", "first-fit", "frag-free-reference"};
  const std::string reference_tail =
      " no effect on frag-free-reference (it has no placement rules and runs FIFO with backfill; "
      "of the scheduler's options it reads only --max-wait)";
  EXPECT_THAT(InertOptionNotes(s, policies),
              ElementsAre("--evacuation queue has no effect on lb+frag, first-fit (migration "
                          "off; --migration on turns it on)",
                          "--evacuation queue has" + reference_tail));
  // With --migration on given, every policy here migrates: nothing to say but of the reference.
  s.scheduler.migration.enabled = true;
  s.explicit_options.migration = true;
  EXPECT_THAT(InertOptionNotes(s, policies),
              ElementsAre("--evacuation queue, --migration on have" + reference_tail));
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

// --reservation-horizon or --reservation-slack given: they shape a look-ahead reservation, which
// `full` makes by its own --max-skip-seconds 1800 and the other policies do not make (no guard);
// with --max-skip-seconds -1 given, not `full` either (both flags used to be silent there).
TEST(InertOptionNotesTest, ReservationShapeGivenWhereNoReservationIsMade) {
  SimSetup s;
  s.explicit_options.reservation_horizon = true;
  s.scheduler.reservation_horizon_s = 3600;
  EXPECT_THAT(InertOptionNotes(s, {"full", "first-fit"}),
              ElementsAre("--reservation-horizon has no effect on first-fit (no look-ahead "
                          "reservation; --max-skip-seconds S turns it on)"));
  s.explicit_options.reservation_slack = true;
  s.explicit_options.max_skip_seconds = true;
  s.scheduler.max_skip_seconds = -1;
  EXPECT_THAT(InertOptionNotes(s, {"full", "lb+frag"}),
              ElementsAre("--reservation-slack and --reservation-horizon have no effect on full, "
                          "lb+frag (no look-ahead reservation; --max-skip-seconds S turns it on)"));
  // The guard given: every policy reserves, nothing to say.
  s.scheduler.max_skip_seconds = 600;
  EXPECT_THAT(InertOptionNotes(s, {"full", "first-fit"}), IsEmpty());
  // Neither given: nothing to say, whatever the policies.
  EXPECT_THAT(InertOptionNotes(SimSetup{}, {"first-fit"}), IsEmpty());
}

// --defrag-interval or --max-moves-per-pass given: they shape the completion and periodic passes
// of §6, which `full` does not run by its own default (--defrag-passes off); lb+frag with
// --migration on runs them while a job waits (the default of the other policies), so they act
// there. With --defrag-passes while-waiting given, `full` runs them too.
TEST(InertOptionNotesTest, DefragPassShapeGivenWhereNoPassRuns) {
  SimSetup s;
  s.scheduler.migration.enabled = true;
  s.explicit_options.migration = true;
  s.scheduler.migration.defrag_interval_s = 60;  // default 300
  EXPECT_THAT(
      InertOptionNotes(s, {"full", "lb+frag"}),
      ElementsAre("--defrag-interval has no effect on full (no completion or periodic "
                  "pass: --defrag-passes off; --defrag-passes while-waiting turns them on)"));
  s.scheduler.migration.max_moves_per_pass = 2;  // default 8
  EXPECT_THAT(InertOptionNotes(s, {"full"}),
              ElementsAre("--defrag-interval and --max-moves-per-pass have no effect on full (no "
                          "completion or periodic pass: --defrag-passes off; --defrag-passes "
                          "while-waiting turns them on)"));
  s.scheduler.migration.max_moves_per_pass = 8;
  s.explicit_options.migration_order = true;  // the completion pass's place in an instant
  EXPECT_THAT(InertOptionNotes(s, {"full"}),
              ElementsAre("--defrag-interval and --migration-order have no effect on full (no "
                          "completion or periodic pass: --defrag-passes off; --defrag-passes "
                          "while-waiting turns them on)"));
  s.explicit_options.defrag_passes = true;
  s.scheduler.migration.passes = DefragPasses::kWhileWaiting;
  EXPECT_THAT(InertOptionNotes(s, {"full", "lb+frag"}), IsEmpty());
  // Neither given: nothing to say.
  EXPECT_THAT(InertOptionNotes(SimSetup{}, {"full"}), IsEmpty());
}

// The fragmentation-free reference reads only --max-wait: every other option set to a value
// other than its default (--demand-window 7, default 1000; --migration on, default off) is named
// with its value, in table order; --max-wait alone or nothing set says nothing, and a run without
// the reference says nothing of it.
TEST(InertOptionNotesTest, OptionsGivenToTheFragFreeReferenceHaveNoEffectOnIt) {
  SimSetup s;
  EXPECT_THAT(InertOptionNotes(s, {"frag-free-reference"}), IsEmpty());
  s.scheduler.max_wait_s = 0;
  EXPECT_THAT(InertOptionNotes(s, {"frag-free-reference"}), IsEmpty());
  s.scheduler.demand_window = 7;
  s.explicit_options.migration = true;
  s.scheduler.migration.enabled = true;
  EXPECT_THAT(InertOptionNotes(s, {"full", "frag-free-reference"}),
              ElementsAre("--demand-window 7, --migration on have no effect on "
                          "frag-free-reference (it has no placement rules and runs FIFO with "
                          "backfill; of the scheduler's options it reads only --max-wait)"));
  EXPECT_THAT(InertOptionNotes(s, {"full", "first-fit"}), IsEmpty());
}

}  // namespace
}  // namespace migsched::cli
