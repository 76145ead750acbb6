// The defaults of `full` (sched/full_policy.h, applied by OptionsForPolicy):
// the combination chosen in docs/results.md (section 3), each option still
// overridable by the user, and no other policy affected.
#include "sched/full_policy.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "sched/option_table.h"
#include "sched/policy.h"
#include "testing/builders.h"

namespace migsched {
namespace {

struct DefaultsCase {
  std::string name;
  std::string policy;
  ExplicitOptions set;
  // The options as given (every other field at its SchedulerOptions default).
  std::string given_metric;
  int given_reserve_full;
  double given_max_skip_seconds;
  double given_reservation_slack;
  // Expected effective values.
  std::string metric;
  int reserve_full;
  double max_skip_seconds;
  double reservation_slack;
  EvacuationScope evacuation;
};

constexpr EvacuationScope kOff = EvacuationScope::kOff;
constexpr EvacuationScope kQueue = EvacuationScope::kQueue;

// Expectations from the choice documented in docs/results.md (section 3): `full`
// runs with the demand-weighted metric, no full-size reserve, evacuation for any
// waiting job, and the look-ahead reservation after 1800 s with slack 1 unless
// the user says otherwise; other policies take what is given.
const std::vector<DefaultsCase> kCases = {
    // Nothing set: full's defaults replace the (global) values given.
    {"FullTakesItsDefaults",
     "full",
     {},
     "fragcost",
     0,
     -1,
     0,
     "demand-weighted",
     0,
     1800,
     1,
     kQueue},
    // Nothing set but unusual given values (as if a caller had filled them):
    // still replaced, because the user did not ask for them.
    {"FullReplacesUnsetValues",
     "full",
     {},
     "blocked-placements",
     3,
     60,
     4,
     "demand-weighted",
     0,
     1800,
     1,
     kQueue},
    // Each option the user set keeps the user's value; the others take full's.
    {"FullKeepsAnExplicitMetric",
     "full",
     {.metric = true},
     "fragcost",
     0,
     -1,
     0,
     "fragcost",
     0,
     1800,
     1,
     kQueue},
    {"FullKeepsAnExplicitReserve",
     "full",
     {.reserve_full = true},
     "fragcost",
     1,
     -1,
     0,
     "demand-weighted",
     1,
     1800,
     1,
     kQueue},
    {"FullKeepsAnExplicitGuard",
     "full",
     {.max_skip_seconds = true},
     "fragcost",
     0,
     600,
     0,
     "demand-weighted",
     0,
     600,
     1,
     kQueue},
    // --max-skip-seconds -1 given: the guard stays off (the slack is then unused).
    {"FullKeepsTheGuardTurnedOff",
     "full",
     {.max_skip_seconds = true},
     "fragcost",
     0,
     -1,
     0,
     "demand-weighted",
     0,
     -1,
     1,
     kQueue},
    {"FullKeepsAnExplicitSlack",
     "full",
     {.reservation_slack = true},
     "fragcost",
     0,
     -1,
     0,
     "demand-weighted",
     0,
     1800,
     0,
     kQueue},
    {"FullKeepsAllExplicit",
     "full",
     {.metric = true, .reserve_full = true, .max_skip_seconds = true, .reservation_slack = true},
     "blocked-placements",
     2,
     600,
     0.5,
     "blocked-placements",
     2,
     600,
     0.5,
     kQueue},
    // Other policies, aliases included: unchanged, set or not.
    {"LbFragUnchanged", "lb+frag", {}, "fragcost", 0, -1, 0, "fragcost", 0, -1, 0, kOff},
    {"FragAwareAliasUnchanged", "frag-aware", {}, "fragcost", 0, -1, 0, "fragcost", 0, -1, 0, kOff},
    {"FirstFitUnchanged",
     "first-fit",
     {},
     "blocked-placements",
     1,
     300,
     2,
     "blocked-placements",
     1,
     300,
     2,
     kOff},
};

class FullDefaultsTest : public ::testing::TestWithParam<DefaultsCase> {};

TEST_P(FullDefaultsTest, EffectiveOptions) {
  const DefaultsCase& c = GetParam();
  SchedulerOptions given;
  given.demand_window = 123;  // a field full has no default for: passed through
  given.metric = c.given_metric;
  given.reserve_full = c.given_reserve_full;
  given.max_skip_seconds = c.given_max_skip_seconds;
  given.reservation_slack = c.given_reservation_slack;
  const SchedulerOptions got = OptionsForPolicy(c.policy, given, c.set);
  EXPECT_EQ(got.metric, c.metric);
  EXPECT_EQ(got.reserve_full, c.reserve_full);
  EXPECT_EQ(got.max_skip_seconds, c.max_skip_seconds);
  EXPECT_EQ(got.reservation_slack, c.reservation_slack);
  EXPECT_EQ(got.evacuation, c.evacuation);
  EXPECT_EQ(got.reservation, ReservationMode::kEasy);  // no policy changes it
  EXPECT_EQ(got.demand_window, 123);
  EXPECT_EQ(got.migration.defrag_interval_s, given.migration.defrag_interval_s);
  // The result is a valid configuration for the policy.
  EXPECT_TRUE(got.Validate().ok()) << got.Validate().ToString();
  auto policy = MakePolicy(c.policy, got);
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
}

INSTANTIATE_TEST_SUITE_P(Cases, FullDefaultsTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.name; });

// The constants are the documented choice (docs/results.md section 3,
// docs/policies.md); changing them must change the documentation too.
TEST(FullDefaultsTest, DocumentedChoice) {
  EXPECT_EQ(kFullDefaultMetric, "demand-weighted");
  EXPECT_EQ(kFullDefaultReserveFull, 0);
  EXPECT_EQ(kFullDefaultMaxSkipSeconds, 1800);
  EXPECT_EQ(kFullDefaultReservationSlack, 1);
  EXPECT_EQ(kFullDefaultReservationHorizonS, 1800);
  EXPECT_TRUE(kFullDefaultReservationKeep);
  EXPECT_TRUE(kFullDefaultReservationOldest);
  EXPECT_TRUE(kFullDefaultReservationNeedsEnds);
  EXPECT_EQ(kFullDefaultEvacuation, EvacuationScope::kQueue);
  EXPECT_TRUE(kFullDefaultReuseFirst);
  EXPECT_TRUE(kFullDefaultAnchoredTogether);
  EXPECT_EQ(kFullDefaultQueueOrder, QueueOrder::kResponseRatio);
  EXPECT_EQ(kFullDefaultLimitPower, kLimitPowerLearned);
  EXPECT_EQ(kFullDefaultDefragPasses, DefragPasses::kOff);
  // SchedulerOptions' own defaults (the baselines') keep the guard, the slack and evacuation off.
  const SchedulerOptions global;
  EXPECT_NE(global.metric, kFullDefaultMetric);
  EXPECT_EQ(global.reserve_full, kFullDefaultReserveFull);
  EXPECT_LT(global.max_skip_seconds, 0);
  EXPECT_EQ(global.reservation_slack, 0);
  EXPECT_LT(global.reservation_horizon_s, 0);
  EXPECT_FALSE(global.reservation_needs_ends);  // strict, the §5 starvation guard
  EXPECT_EQ(global.evacuation, EvacuationScope::kOff);
  EXPECT_FALSE(global.reuse_first);
  EXPECT_FALSE(global.anchored_together);
  EXPECT_EQ(global.queue_order, QueueOrder::kFifo);
  EXPECT_LT(global.overtake_guard, 0);
  EXPECT_EQ(global.limit_power, 1);  // the ratio's own order
  EXPECT_EQ(global.migration.passes, DefragPasses::kWhileWaiting);
}

// Room kept for small jobs (§13): on for `full` unless `--evacuation-keeps-room off` is given;
// off for lb+frag and the baselines unless asked.
TEST(FullDefaultsTest, EvacuationKeepsRoomOnForFullOnlyUnlessGiven) {
  EXPECT_TRUE(kFullDefaultEvacuationKeepsRoom);
  EXPECT_FALSE(SchedulerOptions{}.evacuation_keeps_room);
  EXPECT_TRUE(
      OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{}).evacuation_keeps_room);
  EXPECT_FALSE(
      OptionsForPolicy("lb+frag", SchedulerOptions{}, ExplicitOptions{}).evacuation_keeps_room);
  SchedulerOptions flags;
  ExplicitOptions given;
  ASSERT_NE(FindSchedulerOption("evacuation-keeps-room"), nullptr);
  ASSERT_TRUE(FindSchedulerOption("evacuation-keeps-room")->Apply("off", &flags, &given).ok());
  EXPECT_TRUE(given.evacuation_keeps_room);
  EXPECT_FALSE(OptionsForPolicy("full", flags, given).evacuation_keeps_room);
  ASSERT_TRUE(FindSchedulerOption("evacuation-keeps-room")->Apply("on", &flags, &given).ok());
  EXPECT_TRUE(OptionsForPolicy("first-fit", flags, given).evacuation_keeps_room);
}

// Reservation keeping (§13): on for `full` unless `--reservation-keep off` is given; off for
// lb+frag and the baselines unless asked.
TEST(FullDefaultsTest, ReservationKeepOnForFullOnlyUnlessGiven) {
  EXPECT_FALSE(SchedulerOptions{}.reservation_keep);
  EXPECT_TRUE(OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{}).reservation_keep);
  EXPECT_FALSE(OptionsForPolicy("lb+frag", SchedulerOptions{}, ExplicitOptions{}).reservation_keep);
  SchedulerOptions flags;
  ExplicitOptions given;
  const SchedulerOptionSpec* keep = FindSchedulerOption("reservation-keep");
  ASSERT_NE(keep, nullptr);
  ASSERT_TRUE(keep->Apply("off", &flags, &given).ok());
  EXPECT_TRUE(given.reservation_keep);
  EXPECT_FALSE(OptionsForPolicy("full", flags, given).reservation_keep);
  ASSERT_TRUE(keep->Apply("on", &flags, &given).ok());
  EXPECT_TRUE(OptionsForPolicy("first-fit", flags, given).reservation_keep);
  EXPECT_FALSE(keep->Apply("sometimes", &flags, &given).ok());
}

// The reservation for the job that has waited longest (§13): on for `full` unless
// `--reservation-oldest off` is given; off for lb+frag and the baselines unless asked.
TEST(FullDefaultsTest, ReservationOldestOnForFullOnlyUnlessGiven) {
  EXPECT_FALSE(SchedulerOptions{}.reservation_oldest);
  EXPECT_TRUE(OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{}).reservation_oldest);
  EXPECT_FALSE(
      OptionsForPolicy("lb+frag", SchedulerOptions{}, ExplicitOptions{}).reservation_oldest);
  SchedulerOptions flags;
  ExplicitOptions given;
  const SchedulerOptionSpec* oldest = FindSchedulerOption("reservation-oldest");
  ASSERT_NE(oldest, nullptr);
  ASSERT_TRUE(oldest->Apply("off", &flags, &given).ok());
  EXPECT_TRUE(given.reservation_oldest);
  EXPECT_FALSE(OptionsForPolicy("full", flags, given).reservation_oldest);
  ASSERT_TRUE(oldest->Apply("on", &flags, &given).ok());
  EXPECT_TRUE(OptionsForPolicy("first-fit", flags, given).reservation_oldest);
  EXPECT_FALSE(oldest->Apply("yes please", &flags, &given).ok());
}

// Reuse first (§4 step 2): on for `full` unless `--reuse-first off` is given; off for lb+frag
// (the ladder's rung without it) and the baselines.
TEST(FullDefaultsTest, ReuseFirstOnForFullOnlyUnlessGiven) {
  EXPECT_TRUE(OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{}).reuse_first);
  EXPECT_FALSE(OptionsForPolicy("lb+frag", SchedulerOptions{}, ExplicitOptions{}).reuse_first);
  EXPECT_FALSE(OptionsForPolicy("first-fit", SchedulerOptions{}, ExplicitOptions{}).reuse_first);
  SchedulerOptions flags;
  ExplicitOptions given;
  ASSERT_NE(FindSchedulerOption("reuse-first"), nullptr);
  ASSERT_TRUE(FindSchedulerOption("reuse-first")->Apply("off", &flags, &given).ok());
  EXPECT_TRUE(given.reuse_first);
  EXPECT_FALSE(OptionsForPolicy("full", flags, given).reuse_first);
  ASSERT_TRUE(FindSchedulerOption("reuse-first")->Apply("on", &flags, &given).ok());
  EXPECT_TRUE(OptionsForPolicy("lb+frag", flags, given).reuse_first);
}

// Anchored together (§4 step 2): on for `full` unless `--anchored-together off` is given; off for
// lb+frag and the baselines.
TEST(FullDefaultsTest, AnchoredTogetherOnForFullOnlyUnlessGiven) {
  EXPECT_TRUE(OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{}).anchored_together);
  EXPECT_FALSE(
      OptionsForPolicy("lb+frag", SchedulerOptions{}, ExplicitOptions{}).anchored_together);
  EXPECT_FALSE(
      OptionsForPolicy("first-fit", SchedulerOptions{}, ExplicitOptions{}).anchored_together);
  SchedulerOptions flags;
  ExplicitOptions given;
  ASSERT_NE(FindSchedulerOption("anchored-together"), nullptr);
  ASSERT_TRUE(FindSchedulerOption("anchored-together")->Apply("off", &flags, &given).ok());
  EXPECT_TRUE(given.anchored_together);
  EXPECT_FALSE(OptionsForPolicy("full", flags, given).anchored_together);
  ASSERT_TRUE(FindSchedulerOption("anchored-together")->Apply("on", &flags, &given).ok());
  EXPECT_TRUE(OptionsForPolicy("lb+frag", flags, given).anchored_together);
}

// The reservation horizon (§13): 30 min for `full` unless `--reservation-horizon` is given (a
// negative value: any start); any start for lb+frag and the baselines unless asked.
TEST(FullDefaultsTest, ReservationHorizonForFullOnlyUnlessGiven) {
  EXPECT_EQ(OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{}).reservation_horizon_s,
            1800);
  EXPECT_LT(
      OptionsForPolicy("lb+frag", SchedulerOptions{}, ExplicitOptions{}).reservation_horizon_s, 0);
  EXPECT_LT(
      OptionsForPolicy("first-fit", SchedulerOptions{}, ExplicitOptions{}).reservation_horizon_s,
      0);
  SchedulerOptions flags;
  ExplicitOptions given;
  const SchedulerOptionSpec* horizon = FindSchedulerOption("reservation-horizon");
  ASSERT_NE(horizon, nullptr);
  ASSERT_TRUE(horizon->Apply("-1", &flags, &given).ok());
  EXPECT_TRUE(given.reservation_horizon);
  EXPECT_LT(OptionsForPolicy("full", flags, given).reservation_horizon_s, 0);
  ASSERT_TRUE(horizon->Apply("3600", &flags, &given).ok());
  EXPECT_EQ(OptionsForPolicy("full", flags, given).reservation_horizon_s, 3600);
  EXPECT_EQ(OptionsForPolicy("first-fit", flags, given).reservation_horizon_s, 3600);
  EXPECT_FALSE(horizon->Apply("inf", &flags, &given).ok());
}

// Migration (§6, §13): what `full` adds to lb+frag on the ladder (§11) is an option among its
// defaults, on unless `--migration off` is given; off for lb+frag and the baselines unless asked.
TEST(FullDefaultsTest, MigrationOnForFullOnlyUnlessGiven) {
  EXPECT_TRUE(OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{}).migration.enabled);
  EXPECT_FALSE(
      OptionsForPolicy("lb+frag", SchedulerOptions{}, ExplicitOptions{}).migration.enabled);
  EXPECT_FALSE(
      OptionsForPolicy("first-fit", SchedulerOptions{}, ExplicitOptions{}).migration.enabled);
  SchedulerOptions flags;
  ExplicitOptions given;
  ASSERT_NE(FindSchedulerOption("migration"), nullptr);
  ASSERT_TRUE(FindSchedulerOption("migration")->Apply("off", &flags, &given).ok());
  EXPECT_TRUE(given.migration);
  EXPECT_FALSE(OptionsForPolicy("full", flags, given).migration.enabled);
  ASSERT_TRUE(FindSchedulerOption("migration")->Apply("on", &flags, &given).ok());
  EXPECT_TRUE(OptionsForPolicy("lb+frag", flags, given).migration.enabled);
  EXPECT_FALSE(FindSchedulerOption("migration")->Apply("sometimes", &flags, &given).ok());
}

// `full` is the lb+frag policy under its own name; migration lives in the options, so a policy
// made with it on is no different from one made with it off, except that MakePolicy refuses it
// for a policy that never creates instances (a move creates one at its target).
TEST(FullDefaultsTest, MigrationNeedsAPolicyThatCreatesInstances) {
  SchedulerOptions on;
  on.migration.enabled = true;
  for (const std::string name : {"first-fit", "lb+frag", "full", "best-fit", "mfi"}) {
    StatusOr<std::unique_ptr<PlacementPolicy>> p = MakePolicy(name, on);
    ASSERT_TRUE(p.ok()) << name << ": " << p.status().ToString();
    EXPECT_EQ((*p)->name(), name);
  }
  for (const std::string name : {"static", "static-all-balanced"}) {
    StatusOr<std::unique_ptr<PlacementPolicy>> p = MakePolicy(name, on);
    ASSERT_FALSE(p.ok()) << name;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find("'" + name + "' never reconfigures"), std::string::npos)
        << p.status().ToString();
    EXPECT_TRUE(MakePolicy(name, SchedulerOptions{}).ok()) << name;
  }
}

// The queue order (§5): by response ratio for `full` unless `--queue-order fifo` is given; FIFO
// for the others unless asked.
TEST(FullDefaultsTest, QueueOrderByResponseRatioForFullOnlyUnlessGiven) {
  EXPECT_EQ(OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{}).queue_order,
            QueueOrder::kResponseRatio);
  EXPECT_EQ(OptionsForPolicy("lb+frag", SchedulerOptions{}, ExplicitOptions{}).queue_order,
            QueueOrder::kFifo);
  EXPECT_EQ(OptionsForPolicy("first-fit", SchedulerOptions{}, ExplicitOptions{}).queue_order,
            QueueOrder::kFifo);
  SchedulerOptions flags;
  ExplicitOptions given;
  ASSERT_NE(FindSchedulerOption("queue-order"), nullptr);
  ASSERT_TRUE(FindSchedulerOption("queue-order")->Apply("fifo", &flags, &given).ok());
  EXPECT_TRUE(given.queue_order);
  EXPECT_EQ(OptionsForPolicy("full", flags, given).queue_order, QueueOrder::kFifo);
  ASSERT_TRUE(FindSchedulerOption("queue-order")->Apply("response-ratio", &flags, &given).ok());
  EXPECT_EQ(OptionsForPolicy("first-fit", flags, given).queue_order, QueueOrder::kResponseRatio);
  EXPECT_FALSE(FindSchedulerOption("queue-order")->Apply("lifo", &flags, &given).ok());
}

// The overtaking guard (§5): off for every policy, `full` included (docs/results.md "Overtaking
// among equal requests": on the tuning set it was chosen at 2, and the evaluation set's Alibaba
// trace then lost), unless `--overtake-guard` is given; a value that is not a finite number is
// refused.
TEST(FullDefaultsTest, OvertakeGuardIsOffUnlessGiven) {
  EXPECT_LT(OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{}).overtake_guard, 0);
  EXPECT_LT(OptionsForPolicy("lb+frag", SchedulerOptions{}, ExplicitOptions{}).overtake_guard, 0);
  const SchedulerOptionSpec* spec = FindSchedulerOption("overtake-guard");
  ASSERT_NE(spec, nullptr);
  SchedulerOptions flags;
  ExplicitOptions given;
  ASSERT_TRUE(spec->Apply("-1", &flags, &given).ok());
  EXPECT_TRUE(given.overtake_guard);
  EXPECT_LT(OptionsForPolicy("full", flags, given).overtake_guard, 0);
  ASSERT_TRUE(spec->Apply("0", &flags, &given).ok());
  EXPECT_EQ(OptionsForPolicy("full", flags, given).overtake_guard, 0);
  EXPECT_EQ(OptionsForPolicy("first-fit", flags, given).overtake_guard, 0);
  EXPECT_FALSE(spec->Apply("often", &flags, &given).ok());
  SchedulerOptions inf;
  inf.overtake_guard = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(inf.Validate().ok());
}

// Reservation ageing (§13) is off for every policy, `full` included (docs/results.md
// "Reservations beyond the horizon": not kept as a default); a value given is kept; a negative,
// infinite or NaN value is refused, programmatically as at the command line.
TEST(FullPolicyTest, ReservationAgeingIsOffUnlessGiven) {
  EXPECT_EQ(OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{}).reservation_ageing, 0);
  const SchedulerOptionSpec* spec = FindSchedulerOption("reservation-ageing");
  ASSERT_NE(spec, nullptr);
  SchedulerOptions flags;
  ExplicitOptions given;
  ASSERT_TRUE(spec->Apply("1", &flags, &given).ok());
  EXPECT_TRUE(given.reservation_ageing);
  EXPECT_EQ(OptionsForPolicy("full", flags, given).reservation_ageing, 1);
  EXPECT_FALSE(spec->Apply("-1", &flags, &given).ok());
  for (const double bad :
       {-0.5, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    SchedulerOptions o;
    o.reservation_ageing = bad;
    const Status st = o.Validate();
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find("reservation_ageing (--reservation-ageing)"), std::string::npos)
        << st.message();
  }
}

// Limits weighed by what they predict (§5): `full` learns the power from the jobs that ended,
// every other policy keeps the ratio's own order (1) where it orders by ratio at all; a value
// given is kept for every policy; values outside [0, 1], and words other than learned, are
// refused with what is taken.
TEST(FullDefaultsTest, LimitPowerIsLearnedForFullUnlessGiven) {
  EXPECT_EQ(OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{}).limit_power,
            kLimitPowerLearned);
  EXPECT_EQ(OptionsForPolicy("lb+frag", SchedulerOptions{}, ExplicitOptions{}).limit_power, 1);
  EXPECT_EQ(OptionsForPolicy("first-fit", SchedulerOptions{}, ExplicitOptions{}).limit_power, 1);
  const SchedulerOptionSpec* spec = FindSchedulerOption("limit-power");
  ASSERT_NE(spec, nullptr);
  SchedulerOptions flags;
  ExplicitOptions given;
  ASSERT_TRUE(spec->Apply("1", &flags, &given).ok());
  EXPECT_TRUE(given.limit_power);
  EXPECT_EQ(OptionsForPolicy("full", flags, given).limit_power, 1);
  ASSERT_TRUE(spec->Apply("0.5", &flags, &given).ok());
  EXPECT_EQ(OptionsForPolicy("full", flags, given).limit_power, 0.5);
  ASSERT_TRUE(spec->Apply("learned", &flags, &given).ok());
  EXPECT_EQ(OptionsForPolicy("first-fit", flags, given).limit_power, kLimitPowerLearned);
  EXPECT_EQ(spec->get(flags), "learned");
  for (const char* bad : {"1.5", "-1", "-0.1", "nan", "auto", ""}) {
    SCOPED_TRACE(bad);
    Status st = spec->Apply(bad, &flags, &given);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.message(), fmt::format("must be a number in [0, 1] or learned, got '{}'", bad));
  }
  SchedulerOptions out;
  out.limit_power = 2;
  EXPECT_FALSE(out.Validate().ok());
  out.limit_power = kLimitPowerLearned;
  EXPECT_TRUE(out.Validate().ok());
}

// The completion and periodic passes (§6, §13): never for `full` unless `--defrag-passes` is
// given; while a job waits for the others.
TEST(FullDefaultsTest, DefragPassesOffForFullOnlyUnlessGiven) {
  EXPECT_EQ(OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{}).migration.passes,
            DefragPasses::kOff);
  EXPECT_EQ(OptionsForPolicy("lb+frag", SchedulerOptions{}, ExplicitOptions{}).migration.passes,
            DefragPasses::kWhileWaiting);
  SchedulerOptions flags;
  ExplicitOptions given;
  ASSERT_NE(FindSchedulerOption("defrag-passes"), nullptr);
  ASSERT_TRUE(FindSchedulerOption("defrag-passes")->Apply("always", &flags, &given).ok());
  EXPECT_TRUE(given.defrag_passes);
  EXPECT_EQ(OptionsForPolicy("full", flags, given).migration.passes, DefragPasses::kAlways);
  ASSERT_TRUE(FindSchedulerOption("defrag-passes")->Apply("while-waiting", &flags, &given).ok());
  EXPECT_EQ(OptionsForPolicy("full", flags, given).migration.passes, DefragPasses::kWhileWaiting);
  EXPECT_FALSE(FindSchedulerOption("defrag-passes")->Apply("on", &flags, &given).ok());
}

// Three A100 40GB (7 compute slices each). GPU 0 runs a 4g.20gb at 0 (util 4/7 = 0.57 >= t = 0.4:
// busy) beside an idle 3g.20gb at 4; GPUs 1 and 2 are empty (util 0: lazy). A 3g.20gb arrives.
// Without reuse first, step 2 keeps the lazy GPUs' candidates (3g.20gb at 0 or 4 on GPU 1 or 2),
// so the job costs a create. With it, the idle instance on the busy GPU is reused: no
// reconfiguration. With --reserve-full 1 (the policy's other branch) the same holds: a lazy GPU
// taken still leaves the other able to host a 7g.40gb.
TEST(ReuseFirstTest, AnIdleInstanceOnABusyGpuBeatsACreateOnALazyOne) {
  ConfigTableCache tables;
  auto cluster = testing::BuildCluster(
      {{"A100-40GB", "4g.20gb@0", "3g.20gb@4"}, {"A100-40GB", "", ""}, {"A100-40GB", "", ""}},
      &tables);
  const Job job = testing::AJob("3g.20gb");
  for (int reserve : {0, 1}) {
    for (bool reuse_first : {false, true}) {
      SchedulerOptions o;
      o.reuse_first = reuse_first;
      o.reserve_full = reserve;
      auto policy = MakePolicy("lb+frag", o);
      ASSERT_TRUE(policy.ok());
      const std::optional<Candidate> c = (*policy)->Choose(*cluster, MakeRequest(*cluster, 7, job));
      ASSERT_TRUE(c.has_value());
      SCOPED_TRACE(::testing::Message() << "reserve " << reserve << " reuse_first " << reuse_first);
      if (reuse_first) {
        EXPECT_EQ(c->gpu, 0);
        EXPECT_EQ(c->start, 4);
        EXPECT_TRUE(c->reuse);
      } else {
        EXPECT_NE(c->gpu, 0);
        EXPECT_FALSE(c->reuse);
      }
    }
  }
}

// `full` with no option given resolves to the criterion's pick (guard after
// 1800 s, slack 1, evacuation queue), and the flags as the CLI and the config
// files read them (the one table of scheduler options) still override it: an
// explicit `max-skip-seconds: -1` turns the guard off.
TEST(FullDefaultsTest, TableFlagsOverrideTheRegistryDefaults) {
  const SchedulerOptions plain = OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{});
  EXPECT_EQ(plain.max_skip_seconds, 1800);
  EXPECT_EQ(plain.reservation_slack, 1);
  EXPECT_EQ(plain.evacuation, EvacuationScope::kQueue);
  SchedulerOptions flags;
  ExplicitOptions given;
  ASSERT_NE(FindSchedulerOption("max-skip-seconds"), nullptr);
  ASSERT_TRUE(FindSchedulerOption("max-skip-seconds")->Apply("-1", &flags, &given).ok());
  EXPECT_TRUE(given.max_skip_seconds);
  SchedulerOptions off = OptionsForPolicy("full", flags, given);
  EXPECT_LT(off.max_skip_seconds, 0);
  EXPECT_EQ(off.reservation_slack, 1);
  ASSERT_TRUE(FindSchedulerOption("reservation-slack")->Apply("0", &flags, &given).ok());
  off = OptionsForPolicy("full", flags, given);
  EXPECT_LT(off.max_skip_seconds, 0);
  EXPECT_EQ(off.reservation_slack, 0);
  // full skips a reservation of unknown start unless told `strict`.
  EXPECT_TRUE(plain.reservation_needs_ends);
  ASSERT_TRUE(
      FindSchedulerOption("reservation-unknown-ends")->Apply("strict", &flags, &given).ok());
  EXPECT_TRUE(given.reservation_unknown_ends);
  EXPECT_FALSE(OptionsForPolicy("full", flags, given).reservation_needs_ends);
  EXPECT_FALSE(
      OptionsForPolicy("first-fit", SchedulerOptions{}, ExplicitOptions{}).reservation_needs_ends);
}

// `full` has no lazy/busy split (t = 1, docs/policies.md "Defaults of `full`"), in queue and in
// admission mode (--max-wait >= 0); a --threshold given wins in both; the baselines and lb+frag
// keep the global 0.4. The admission move budget is every policy's: 0.02 (docs/algorithms.md §13).
TEST(FullDefaultsTest, FullHasNoLazyBusySplitUnlessAThresholdIsGiven) {
  EXPECT_EQ(kFullDefaultThreshold, 1);
  EXPECT_EQ(SchedulerOptions().threshold, 0.4);
  EXPECT_EQ(SchedulerOptions().migration.admission_move_budget, 0.02);
  EXPECT_EQ(OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{}).threshold, 1);
  EXPECT_EQ(OptionsForPolicy("lb+frag", SchedulerOptions{}, ExplicitOptions{}).threshold, 0.4);
  // With the completion or periodic passes on, whose rules 3 and 4 act on busy GPUs only: 0.4.
  {
    SchedulerOptions passes;
    ExplicitOptions given;
    ASSERT_TRUE(FindSchedulerOption("defrag-passes")->Apply("always", &passes, &given).ok());
    EXPECT_EQ(OptionsForPolicy("full", passes, given).threshold, 0.4);
  }
  SchedulerOptions admission;
  ExplicitOptions given;
  ASSERT_TRUE(FindSchedulerOption("max-wait")->Apply("0", &admission, &given).ok());
  EXPECT_EQ(OptionsForPolicy("full", admission, given).threshold, 1);
  EXPECT_EQ(OptionsForPolicy("best-fit", admission, given).threshold, 0.4);
  EXPECT_EQ(OptionsForPolicy("lb+frag", admission, given).threshold, 0.4);
  ASSERT_TRUE(FindSchedulerOption("threshold")->Apply("0.3", &admission, &given).ok());
  EXPECT_TRUE(given.threshold);
  EXPECT_EQ(OptionsForPolicy("full", admission, given).threshold, 0.3);
}

// Joint placement (§12): on for lb+frag (and its alias) and full unless the
// user says otherwise; off for the baselines unless the user turns it on.
TEST(JointPlacementDefaultsTest, OnForOurPoliciesOffForTheBaselines) {
  for (const std::string& policy : PolicyNames()) {
    const bool ours = policy == "lb+frag" || policy == "full";
    SCOPED_TRACE(policy);
    EXPECT_EQ(JointPlacementByDefault(policy), ours);
    SchedulerOptions given;
    EXPECT_EQ(OptionsForPolicy(policy, given, {}).joint_placement, ours);
    for (bool value : {true, false}) {
      given.joint_placement = value;
      EXPECT_EQ(OptionsForPolicy(policy, given, {.joint_placement = true}).joint_placement, value);
    }
  }
  EXPECT_TRUE(JointPlacementByDefault("frag-aware"));
  EXPECT_FALSE(SchedulerOptions{}.joint_placement);
}

}  // namespace
}  // namespace migsched
