// InertOptionNotes (cli/sim_flags.h): an option given that does nothing for a policy is said.
// ParsePolicyList / AddPoliciesFlag: the --policies list of compare and report.
#include "cli/sim_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sched/option_table.h"
#include "sched/policy.h"

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

// --overtake-guard given: it reorders the response-ratio order, which `full` has by its own
// default and the baselines do not (arrival order); with --queue-order fifo given, not `full`
// either. Off (< 0) given: nothing is promised.
TEST(InertOptionNotesTest, OvertakeGuardGivenWhereTheQueueIsInArrivalOrder) {
  SimSetup s;
  s.scheduler.overtake_guard = 2;
  s.explicit_options.overtake_guard = true;
  const std::string tail =
      " (arrival order: no job passes an older one of its request; --queue-order response-ratio "
      "turns it on)";
  EXPECT_THAT(InertOptionNotes(s, {"full", "first-fit"}),
              ElementsAre("--overtake-guard 2 has no effect on first-fit" + tail));
  s.scheduler.queue_order = QueueOrder::kFifo;
  s.explicit_options.queue_order = true;
  EXPECT_THAT(InertOptionNotes(s, {"full"}),
              ElementsAre("--overtake-guard 2 has no effect on full" + tail));
  s.scheduler.overtake_guard = -1;
  EXPECT_THAT(InertOptionNotes(s, {"full", "first-fit"}), IsEmpty());
  // The same for a daemon config (regression inert_config_option_unsaid), in its key names.
  SchedulerOptions fifo;
  fifo.overtake_guard = 2;
  ExplicitOptions given;
  given.overtake_guard = true;
  given.queue_order = true;
  EXPECT_THAT(InertConfigNotes(fifo, given, "full"),
              ElementsAre("scheduler.overtake-guard 2 has no effect on full (arrival order: no job "
                          "passes an older one of its request; scheduler.queue-order "
                          "response-ratio turns it on)"));
  EXPECT_THAT(InertConfigNotes(fifo, ExplicitOptions{}, "full"), IsEmpty());  // none given
}

// Regression (trial_printed_config_warned): the config `serve --print-default-config --policy P`
// prints writes every key with P's own value, and its start warned about 2 to 6 of them ("has no
// effect on first-fit"). A key given with the value the policy runs with anyway says nothing; one
// given another value still does.
TEST(InertOptionNotesTest, AConfigKeyAtThePolicysOwnValueSaysNothing) {
  for (const std::string& name : PolicyNames()) {
    SCOPED_TRACE(name);
    const SchedulerOptions own = OptionsForPolicy(name, SchedulerOptions{}, ExplicitOptions{});
    ExplicitOptions all;
    for (const SchedulerOptionSpec& spec : SchedulerOptionTable()) {
      if (spec.given != nullptr) all.*(spec.given) = true;
    }
    EXPECT_THAT(InertConfigNotes(own, all, name), IsEmpty());
  }
  SchedulerOptions first_fit = OptionsForPolicy("first-fit", SchedulerOptions{}, ExplicitOptions{});
  first_fit.threshold = 0.2;  // not first-fit's own value, and first-fit reads no threshold
  ExplicitOptions given;
  given.threshold = true;
  EXPECT_THAT(InertConfigNotes(first_fit, given, "first-fit"),
              ElementsAre(::testing::StartsWith("scheduler.threshold 0.2 has no effect on "
                                                "first-fit")));
}

// --limit-power given: it orders the jobs of one request within the response-ratio order, which
// first-fit does not have; 1 (the ratio's own order) given promises nothing, so nothing is said.
TEST(InertOptionNotesTest, LimitPowerGivenWhereTheQueueIsInArrivalOrder) {
  SimSetup s;
  s.scheduler.limit_power = kLimitPowerLearned;
  s.explicit_options.limit_power = true;
  EXPECT_THAT(InertOptionNotes(s, {"full", "first-fit"}),
              ElementsAre("--limit-power learned has no effect on first-fit (arrival order: no job "
                          "passes an older one of its request; --queue-order response-ratio "
                          "turns it on)"));
  s.scheduler.limit_power = 0.5;
  EXPECT_THAT(InertOptionNotes(s, {"first-fit"}),
              ElementsAre(::testing::StartsWith("--limit-power 0.5 has no effect on first-fit")));
  s.scheduler.limit_power = 1;
  EXPECT_THAT(InertOptionNotes(s, {"full", "first-fit"}), IsEmpty());
}

// --reservation-horizon or --reservation-slack given: they shape a look-ahead reservation, which
// `full` makes by its own --max-skip-seconds 1800 and the other policies do not make (no guard);
// with --max-skip-seconds -1 given, not `full` either (both flags used to be silent there).
// --evacuation-keeps-room on given: it shapes evacuations, which `full` makes by its own defaults
// (--evacuation queue, --migration on) and lb+frag and first-fit do not (evacuation off by
// default); `full --evacuation off` makes none either. Off given: nothing is promised.
TEST(InertOptionNotesTest, EvacuationKeepsRoomGivenWhereNoEvacuationHappens) {
  SimSetup s;
  s.scheduler.evacuation_keeps_room = true;
  s.explicit_options.evacuation_keeps_room = true;
  EXPECT_THAT(InertOptionNotes(s, {"full", "lb+frag", "first-fit"}),
              ElementsAre("--evacuation-keeps-room on has no effect on lb+frag, first-fit (no "
                          "evacuation; --evacuation queue with --migration on turns it on)"));
  s.explicit_options.evacuation = true;  // --evacuation off given
  EXPECT_THAT(InertOptionNotes(s, {"full"}),
              ElementsAre("--evacuation-keeps-room on has no effect on full (no evacuation; "
                          "--evacuation queue with --migration on turns it on)"));
  s.scheduler.evacuation_keeps_room = false;
  EXPECT_THAT(InertOptionNotes(s, {"full", "first-fit"}), IsEmpty());
}

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

// --reservation-ageing grows a horizon: without a reservation (first-fit's no guard) or without
// a horizon (lb+frag's default: any start) it has nothing to act on; `full` has both (its own
// --max-skip-seconds 1800 and --reservation-horizon 1800). 0 given is off: nothing promised.
TEST(InertOptionNotesTest, ReservationAgeingGivenWhereThereIsNoHorizon) {
  SimSetup s;
  s.explicit_options.reservation_ageing = true;
  s.scheduler.reservation_ageing = 1;
  EXPECT_THAT(InertOptionNotes(s, {"full", "first-fit"}),
              ElementsAre("--reservation-ageing 1 has no effect on first-fit (no look-ahead "
                          "reservation; --max-skip-seconds S turns it on)"));
  s.explicit_options.max_skip_seconds = true;
  s.scheduler.max_skip_seconds = 600;
  EXPECT_THAT(InertOptionNotes(s, {"full", "first-fit"}),
              ElementsAre("--reservation-ageing 1 has no effect on first-fit (no reservation "
                          "horizon to grow; --reservation-horizon H sets one)"));
  s.scheduler.reservation_ageing = 0;
  EXPECT_THAT(InertOptionNotes(s, {"full", "first-fit"}), IsEmpty());
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
  // Three: "a, b and c" (it read "a and b and c").
  s.scheduler.migration.max_moves_per_pass = 2;
  EXPECT_THAT(InertOptionNotes(s, {"full"}),
              ElementsAre("--defrag-interval, --max-moves-per-pass and --migration-order have no "
                          "effect on full (no completion or periodic pass: --defrag-passes off; "
                          "--defrag-passes while-waiting turns them on)"));
  s.explicit_options.defrag_passes = true;
  s.scheduler.migration.passes = DefragPasses::kWhileWaiting;
  EXPECT_THAT(InertOptionNotes(s, {"full", "lb+frag"}), IsEmpty());
  // Neither given: nothing to say.
  EXPECT_THAT(InertOptionNotes(SimSetup{}, {"full"}), IsEmpty());
}

// Regression (trial_inert_move_options): the options of moves and evacuations given to a policy
// that never moves a job were taken without a note, and the pass options' note needed migration on
// and --defrag-passes off, so first-fit (migration off) got none. Derived from §6 and §13: with
// migration off nothing moves; `full` migrates by its own default (its passes off), first-fit does
// not (its passes while-waiting, once migration is on).
TEST(InertOptionNotesTest, MoveOptionsGivenWhereNoJobMoves) {
  SimSetup s;
  s.scheduler.evacuation_min_wait_s = 3;
  s.explicit_options.evacuation_min_wait = true;
  s.scheduler.migration.cooldown_s = 5;          // default 120
  s.scheduler.migration.defrag_interval_s = 10;  // default 300
  EXPECT_THAT(
      InertOptionNotes(s, {"full", "first-fit"}),
      ElementsAre("--evacuation-min-wait has no effect on first-fit (no evacuation; --evacuation "
                  "queue with --migration on turns it on)",
                  "--migration-cooldown has no effect on first-fit (no job moves: migration off; "
                  "--migration on turns it on)",
                  "--defrag-interval has no effect on full (no completion or periodic pass: "
                  "--defrag-passes off; --defrag-passes while-waiting turns them on)",
                  "--defrag-interval has no effect on first-fit (no completion or periodic pass: "
                  "migration off; --migration on turns them on)"));
  // A sweep of one says so for each policy that does not read it.
  EXPECT_EQ(InertSweptOptionNote(s, "first-fit", "switch-s"),
            "--switch-s has no effect on first-fit (no job moves: migration off; --migration on "
            "turns it on): every value runs the same");
  EXPECT_EQ(InertSweptOptionNote(s, "full", "switch-s"), "");
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

// Regression: --threshold, --metric, --reuse-first and --idle-ttl given to first-fit changed
// nothing and said nothing. Which policy's choice reads which (policies/*.cc): lb the threshold;
// lb+frag and full the threshold, the metric, reuse first, and idle instances; static none of
// them. lb+frag runs with joint placement (which reads the metric), the others without; full with
// migration (which reads the threshold).
TEST(InertOptionNotesTest, PlacementOptionsGivenToAPolicyThatDoesNotReadThem) {
  SimSetup s;
  s.scheduler.threshold = 0.2;
  s.explicit_options.threshold = true;
  s.scheduler.metric = "blocked-placements";
  s.explicit_options.metric = true;
  s.scheduler.reuse_first = true;
  s.explicit_options.reuse_first = true;
  s.scheduler.idle_ttl_s = 5;
  const std::vector<std::string> policies = {"first-fit", "lb", "lb+frag", "full", "static"};
  EXPECT_THAT(
      InertOptionNotes(s, policies),
      ElementsAre("--threshold 0.2 has no effect on first-fit, static (no lazy/busy split; read "
                  "by lb, lb+frag and full, and by the migration planner with --migration on)",
                  "--metric blocked-placements has no effect on first-fit, lb, static (it scores "
                  "no candidate by --metric; read by lb+frag and full, and by joint placement "
                  "with --joint-placement on)",
                  "--reuse-first on has no effect on first-fit, lb, static (read only by lb+frag "
                  "and full)",
                  "--idle-ttl 5 has no effect on first-fit, lb, static (read only by lb+frag and "
                  "full: the others destroy an instance when its job ends, or keep a layout)"));
  // The migration planner reads the threshold, joint placement the metric, for any policy.
  s.scheduler.migration.enabled = true;
  s.explicit_options.migration = true;
  s.scheduler.joint_placement = true;
  s.explicit_options.joint_placement = true;
  s.scheduler.reuse_first = false;
  s.explicit_options.reuse_first = false;
  s.scheduler.idle_ttl_s = -1;
  EXPECT_THAT(InertOptionNotes(s, {"first-fit", "lb"}), IsEmpty());
  EXPECT_THAT(InertOptionNotes(s, {"lb+frag", "full"}), IsEmpty());
}

// --static-layout is read by the static policies only; --reserve-full by every policy but them.
TEST(InertOptionNotesTest, LayoutAndReserveGivenWhereNotRead) {
  SimSetup s;
  s.scheduler.static_layout = "all-balanced";
  s.explicit_options.static_layout = true;
  s.scheduler.reserve_full = 1;
  s.explicit_options.reserve_full = true;
  EXPECT_THAT(InertOptionNotes(s, {"first-fit", "static", "static-all-balanced"}),
              ElementsAre("--static-layout all-balanced has no effect on first-fit (it lays no "
                          "layout; read only by static and static-all-balanced)",
                          "--reserve-full 1 has no effect on static, static-all-balanced (it "
                          "never creates an instance; every other policy reads it)"));
}

// Regression: `sweep --param threshold=0.2,0.4 --policy first-fit` printed identical rows and no
// note. A swept option the policy does not read says so; one it reads, or one every policy
// reads (max-wait), says nothing.
TEST(InertOptionNotesTest, SweptOptionThePolicyDoesNotRead) {
  SimSetup s;
  EXPECT_EQ(InertSweptOptionNote(s, "first-fit", "threshold"),
            "--threshold has no effect on first-fit (no lazy/busy split; read by lb, lb+frag and "
            "full, and by the migration planner with --migration on): every value runs the same");
  EXPECT_EQ(InertSweptOptionNote(s, "lb", "threshold"), "");
  EXPECT_EQ(InertSweptOptionNote(s, "first-fit", "reservation-slack"),
            "--reservation-slack has no effect on first-fit (no look-ahead reservation; "
            "--max-skip-seconds S turns it on): every value runs the same");
  EXPECT_EQ(InertSweptOptionNote(s, "full", "reservation-slack"), "");  // full: 1800 s
  EXPECT_EQ(InertSweptOptionNote(s, "first-fit", "max-wait"), "");
  EXPECT_EQ(InertSweptOptionNote(s, "frag-free-reference", "threshold"), "");
}

// Regression (`compare --policies first-fit,,lb` ran first-fit and lb, the empty name skipped,
// while `--policies ''` was refused; a policy named by its name and its alias ran twice): every
// entry of the list is a name, each policy once, whatever name it is given by.
TEST(PolicyListTest, EmptyEntriesAndAPolicyGivenTwiceAreRefused) {
  using V = std::vector<std::string>;
  auto ok = ParsePolicyList({"first-fit,lb+frag", "full"});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_THAT(*ok, ElementsAre("first-fit", "lb+frag", "full"));
  // An alias is kept as written; an unknown name is left to MakePolicy (it lists the known).
  auto alias = ParsePolicyList({"frag-aware,frag-free-reference,bogus"});
  ASSERT_TRUE(alias.ok()) << alias.status().ToString();
  EXPECT_THAT(*alias, ElementsAre("frag-aware", "frag-free-reference", "bogus"));
  const std::pair<V, std::string> refused[] = {
      {{"first-fit,,lb"},
       "entry 2 of 'first-fit,,lb' is empty: give comma-separated policy names, each once"},
      {{""}, "entry 1 of '' is empty: give comma-separated policy names, each once"},
      {{"first-fit,"},
       "entry 2 of 'first-fit,' is empty: give comma-separated policy names, "
       "each once"},
      {{",lb"}, "entry 1 of ',lb' is empty: give comma-separated policy names, each once"},
      {{"first-fit", ""}, "entry 1 of '' is empty: give comma-separated policy names, each once"},
      {{"first-fit,first-fit"}, "'first-fit' is given twice"},
      {{"first-fit,full", "first-fit"}, "'first-fit' is given twice"},  // over repeated flags
      {{"frag-aware,lb+frag"},
       "'frag-aware' and 'lb+frag' are the same policy (lb+frag), given "
       "twice"},
      {{"lb+frag,full,frag-aware"},
       "'lb+frag' and 'frag-aware' are the same policy (lb+frag), given twice"},
      {{"frag-free-reference,frag-free-reference"}, "'frag-free-reference' is given twice"},
  };
  for (const auto& [values, want] : refused) {
    SCOPED_TRACE(want);
    auto r = ParsePolicyList(values);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), want);
  }
}

// The flag's refusal is a usage error (CLI11's ValidationError: "--policies: ...", exit 2 in
// main), raised while parsing, before anything runs.
TEST(PolicyListTest, TheFlagRefusesWhileParsing) {
  CLI::App app;
  std::vector<std::string> policies;
  AddPoliciesFlag(&app, &policies, "help");
  app.parse(std::vector<std::string>{"first-fit,lb", "--policies"});  // reversed, as CLI11 takes
  EXPECT_THAT(policies, ElementsAre("first-fit", "lb"));
  CLI::App bad;
  std::vector<std::string> unused;
  AddPoliciesFlag(&bad, &unused, "help");
  try {
    bad.parse(std::vector<std::string>{"first-fit,,lb", "--policies"});
    ADD_FAILURE() << "not refused";
  } catch (const CLI::ValidationError& e) {
    EXPECT_STREQ(e.what(),
                 "--policies: entry 2 of 'first-fit,,lb' is empty: give comma-separated policy "
                 "names, each once");
  }
}

}  // namespace
}  // namespace migsched::cli
