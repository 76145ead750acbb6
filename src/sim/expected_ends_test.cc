// SimOptions::knowledge (`--expected-ends limits|known|unknown`): with
// unknown ends the scheduler is told neither a job's duration nor a running
// job's expected end (as the daemon is for jobs without time_limit_s), so
// `full`'s look-ahead reservation (§13, its registry defaults: guard after
// 1800 s, slack 1) is not made (reservation-unknown-ends skip, full's
// default), or, when made anyway (strict), admits no backfill into the
// reserved placement; jobs still run for their real durations. Hand-worked trace on one A100 40GB,
// contention off, r = 0.023 s per MIG create or destroy (serialised per GPU).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cluster.h"
#include "sched/policy.h"
#include "sim/simulator.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::BundledCatalog;

constexpr double kR = 0.023;

const JobRecord& Named(const SimResult& r, const std::string& name) {
  for (const JobRecord& j : r.jobs) {
    if (j.name == name) return j;
  }
  ADD_FAILURE() << "no job " << name;
  static const JobRecord none;
  return none;
}

// `strict`: --reservation-unknown-ends strict instead of full's skip.
SimResult RunThreeJobs(Knowledge knowledge, bool strict = false) {
  // a: 4g.20gb at t = 0 for 10000 s (4g@0, running from r);
  // b: 7g.40gb at t = 1 for 10000 s: needs the whole GPU, waits;
  // c: 3g.20gb at t = 2000 for 100 s: fits beside a at 3g@4.
  const std::vector<WorkloadJob> jobs = {testing::JobOf("4g.20gb", 1, 10000, 0, "a"),
                                         testing::JobOf("7g.40gb", 1, 10000, 1, "b"),
                                         testing::JobOf("3g.20gb", 1, 100, 2000, "c")};
  StatusOr<std::vector<const GpuModel*>> models = ParseClusterSpec("1xA100-40GB", BundledCatalog());
  EXPECT_TRUE(models.ok());
  SimOptions so;
  so.contention = false;
  so.self_check = true;
  so.knowledge = knowledge;
  // full's registry defaults: the guard reserves for a head waiting longer than 1800 s.
  SchedulerOptions o = OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{});
  EXPECT_EQ(o.max_skip_seconds, 1800);
  EXPECT_EQ(o.reservation_slack, 1);
  EXPECT_TRUE(o.reservation_needs_ends);
  if (strict) o.reservation_needs_ends = false;
  StatusOr<SimResult> r = RunSimulation(*models, jobs, "full", o, so);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : SimResult{};
}

// At t = 2000 b has waited 1999 s > 1800 s and does not fit: it reserves 7g@0
// on GPU 0, the whole GPU. Known ends: its expected start is a's end,
// 10000 + r, and its slack 1 × 10000 s; c ends at 2000 + 100 = 2100 <= that
// (rule (a)), so c starts at once: created at 2000, running 2000 + r to
// 2100 + r. At a's end (10000 + r) b gets the GPU after a's 4g and the idle
// 3g are destroyed and its 7g created: at most 3r later.
// c runs 2000 + r to 2100 + r beside a; b starts within 3r after a's end.
void ExpectCStartsAtOnceAndBAfterA(const SimResult& r) {
  ASSERT_EQ(r.jobs.size(), 3u);
  EXPECT_NEAR(Named(r, "a").end_s, 10000 + kR, 1e-6);
  EXPECT_NEAR(Named(r, "c").start_s, 2000 + kR, 1e-6);
  EXPECT_NEAR(Named(r, "c").end_s, 2100 + kR, 1e-6);
  EXPECT_GT(Named(r, "b").start_s, 10000 + kR);
  EXPECT_LE(Named(r, "b").start_s, 10000 + 4 * kR + 1e-6);
}

TEST(ExpectedEndsTest, KnownEndsLetAShortJobBackfillBeforeTheReservation) {
  ExpectCStartsAtOnceAndBAfterA(RunThreeJobs(Knowledge::kKnown));
}

// Unknown ends, full's defaults: b's reservation would start at a's end,
// which is unknown, so b gets none (reservation-unknown-ends skip). c fits
// beside a (3g@4) and starts at once, as with known ends; b starts after a's
// end as there.
TEST(ExpectedEndsTest, UnknownEndsMakeNoReservationUnderFullsDefaults) {
  ExpectCStartsAtOnceAndBAfterA(RunThreeJobs(Knowledge::kUnknown));
}

// Unknown ends, --reservation-unknown-ends strict: the reservation is made;
// its start is unknown and c's duration too, so rule (a) never admits c, and nothing fits beside a
// reservation of the whole GPU (rule (b)): c waits. At a's end (10000 + r) b, the head, is placed
// first (a's 4g destroyed, 7g created: starts 10000 + 3r, ends 20000 + 3r); c gets the GPU only
// then (7g destroyed, 3g created: starts 20000 + 5r) and still runs its real 100 s.
TEST(ExpectedEndsTest, UnknownEndsKeepTheReservationStrict) {
  const SimResult r = RunThreeJobs(Knowledge::kUnknown, /*strict=*/true);
  ASSERT_EQ(r.jobs.size(), 3u);
  EXPECT_NEAR(Named(r, "a").end_s, 10000 + kR, 1e-6);
  EXPECT_NEAR(Named(r, "b").start_s, 10000 + 3 * kR, 1e-6);
  EXPECT_NEAR(Named(r, "b").end_s, 20000 + 3 * kR, 1e-6);
  EXPECT_NEAR(Named(r, "c").start_s, 20000 + 5 * kR, 1e-6);
  EXPECT_NEAR(Named(r, "c").end_s - Named(r, "c").start_s, 100, 1e-6);
}

}  // namespace
}  // namespace migsched
