// ScanReservations and LookAheadReservations (sched/scan_reservations.h): the §5/§13 look-ahead
// reservations of a queue scan, each rule worked by hand on A100 40GB GPUs (8 memory units, 7
// compute slices; 7g.40gb spans the GPU, 3g.20gb starts at 0 or 4, 4g.20gb at 0).
#include "sched/scan_reservations.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "core/numbers.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using testing::AJob;
using testing::BuildCluster;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::Model;

// Expected ends from a table; a job not in it has an unknown end.
ExpectedEndFn EndsFrom(std::map<JobId, double> ends) {
  return [ends = std::move(ends)](JobId j) {
    auto it = ends.find(j);
    return it == ends.end() ? kInf : it->second;
  };
}

TEST(LookAheadReservationsTest, AJobReservesThePlacementThatFreesSoonest) {
  ConfigTableCache tables;
  // GPU 0: jobs 1000 (3g@0, ends 500) and 1001 (3g@4, ends 300); GPU 1: job 1002 (1g@0, ends 200).
  auto c = BuildCluster({{"A100-40GB", "3g.20gb@0,3g.20gb@4", ""}, {"A100-40GB", "1g.5gb@0", ""}},
                        &tables);
  const auto ends = EndsFrom({{1000, 500}, {1001, 300}, {1002, 200}});
  const int p7 = Model("A100-40GB").FindProfile("7g.40gb");
  const Job one = AJob("7g.40gb").Limit(1000);
  // A 7g.40gb waits for every instance of a GPU: GPU 0 frees at 500 (6 slices waited for), GPU 1
  // at 200 (1 slice): GPU 1, starting at 200, slack 0.5 x 1000 s.
  std::vector<Reservation> r = LookAheadReservations(*c, 7, one, 100, ends, {true, 0.5});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].job, 7);
  EXPECT_EQ(r[0].gpu, 1);
  EXPECT_EQ(r[0].profile, p7);
  EXPECT_EQ(r[0].start, 0);
  EXPECT_EQ(r[0].free_at_s, 200);
  EXPECT_EQ(r[0].start_s, 200);
  EXPECT_EQ(r[0].slack_s, 500);
  EXPECT_FALSE(r[0].hold);
  // A gang of two takes both GPUs, soonest first, and starts when the last frees (500).
  r = LookAheadReservations(*c, 7, AJob("7g.40gb").Gang(2).Limit(1000), 100, ends, {true, 0.5});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].gpu, 1);
  EXPECT_EQ(r[1].gpu, 0);
  EXPECT_EQ(r[0].free_at_s, 200);
  EXPECT_EQ(r[1].free_at_s, 500);
  EXPECT_EQ(r[0].start_s, 500);
  EXPECT_EQ(r[1].start_s, 500);
  // A gang of three: two GPUs never hold it, no reservation.
  EXPECT_THAT(LookAheadReservations(*c, 7, AJob("7g.40gb").Gang(3), 100, ends, {true, 0.5}),
              IsEmpty());
  // A GPU reserved (or held) for another job is not looked at: GPU 0 then, at 500. No time limit:
  // no slack.
  c->SetReserved(1, true);
  r = LookAheadReservations(*c, 7, AJob("7g.40gb"), 100, ends, {true, 0.5});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].gpu, 0);
  EXPECT_EQ(r[0].start_s, 500);
  EXPECT_EQ(r[0].slack_s, 0);
}

TEST(LookAheadReservationsTest, TheSlotWhoseOverlapEndsFirstAndUnknownEnds) {
  ConfigTableCache tables;
  // One GPU: 1000 on 3g@0 (ends 500), 1001 on 1g@4 (ends 100), 1002 on 1g@5 (ends 900).
  auto c = BuildCluster({{"A100-40GB", "3g.20gb@0,1g.5gb@4,1g.5gb@5", ""}}, &tables);
  const Job three = AJob("3g.20gb");
  // 3g@0 overlaps 1000 alone: free at 500, and 3 + 1 + 1 slices then fit. 3g@4 overlaps 1001 and
  // 1002: free at 900. So 3g@0 at 500.
  std::vector<Reservation> r = LookAheadReservations(
      *c, 7, three, 0, EndsFrom({{1000, 500}, {1001, 100}, {1002, 900}}), {true, 0});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].start, 0);
  EXPECT_EQ(r[0].start_s, 500);
  // 1000's end unknown: 3g@0 never frees by itself, 3g@4 at 900.
  r = LookAheadReservations(*c, 7, three, 0, EndsFrom({{1001, 100}, {1002, 900}}), {true, 0});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].start, 4);
  EXPECT_EQ(r[0].start_s, 900);
  // Every end unknown: none with needs_ends (the strict guard), one starting at infinity without.
  EXPECT_THAT(LookAheadReservations(*c, 7, three, 0, EndsFrom({}), {true, 0}), IsEmpty());
  r = LookAheadReservations(*c, 7, three, 0, EndsFrom({}), {false, 0});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(std::isinf(r[0].start_s));
}

TEST(LookAheadReservationsTest, NoReservationForAStartBeyondTheHorizon) {
  ConfigTableCache tables;
  // GPU 0: job 1000 on 3g@0 (ends 5000), job 1001 on 3g@4 (ends 20000); GPU 1: job 1002 on 7g
  // (ends 25000).
  auto c = BuildCluster({{"A100-40GB", "3g.20gb@0,3g.20gb@4", ""}, {"A100-40GB", "7g.40gb@0", ""}},
                        &tables);
  const auto ends = EndsFrom({{1000, 5000}, {1001, 20000}, {1002, 25000}});
  const Job seven = AJob("7g.40gb");
  // A 7g.40gb at 1000 could start on GPU 0 at 20000, 19000 s from now. Horizon 4 h (14400 s):
  // too far, none; 19000 s exactly: made; negative: any start.
  EXPECT_THAT(LookAheadReservations(*c, 7, seven, 1000, ends, {true, 0, 14400}), IsEmpty());
  EXPECT_EQ(LookAheadReservations(*c, 7, seven, 1000, ends, {true, 0, 19000}).size(), 1u);
  EXPECT_EQ(LookAheadReservations(*c, 7, seven, 1000, ends, {true, 0, -1}).size(), 1u);
  // A gang starts when its last placement frees: a pair of 3g.20gb at 6000 gets 3g@0 on GPU 0
  // (free now) and a 3g on GPU 1 at 25000, 19000 s away.
  const Job pair = AJob("3g.20gb").Gang(2);
  EXPECT_THAT(LookAheadReservations(*c, 7, pair, 6000, ends, {true, 0, 18999}), IsEmpty());
  EXPECT_EQ(LookAheadReservations(*c, 7, pair, 6000, ends, {true, 0, 19000}).size(), 2u);
  // An unknown start is no prediction: the horizon leaves it to needs_ends (strict: reserved).
  const auto unknown = EndsFrom({});
  EXPECT_EQ(LookAheadReservations(*c, 7, seven, 1000, unknown, {false, 0, 14400}).size(), 1u);
  EXPECT_THAT(LookAheadReservations(*c, 7, seven, 1000, unknown, {true, 0, 14400}), IsEmpty());
  // A single 3g.20gb at 6000 starts now: within any horizon.
  EXPECT_EQ(LookAheadReservations(*c, 7, AJob("3g.20gb"), 6000, ends, {true, 0, 0}).size(), 1u);
}

TEST(KeepsReservationTest, ANewInstanceMustFitWithWhatStillRunsAndTheReservedPlacement) {
  ConfigTableCache tables;
  // Job 1000 on 3g@0; a 4g.20gb@0 is reserved from 100.
  auto c = BuildCluster({{"A100-40GB", "3g.20gb@0", ""}}, &tables);
  const GpuModel& m = Model("A100-40GB");
  Reservation r{7, 0, m.FindProfile("4g.20gb"), 0, 100, 100, false, 0};
  const int at4 = m.SlotOf(m.FindProfile("3g.20gb"), 4);
  const int at0 = m.SlotOf(m.FindProfile("1g.5gb"), 0);
  // 1000 ends at 100: then 3g@4 (units 4-7, 3 slices) beside 4g@0 (units 0-3, 4 slices) fits.
  EXPECT_TRUE(KeepsReservation(c->gpu(0), r, at4, EndsFrom({{1000, 100}})));
  // A 1g@0 overlaps the reserved 4g@0.
  EXPECT_FALSE(KeepsReservation(c->gpu(0), r, at0, EndsFrom({{1000, 100}})));
  // 1000 still runs at 100 (ends 200, or unknown): the 4g@0 does not fit beside it.
  EXPECT_FALSE(KeepsReservation(c->gpu(0), r, at4, EndsFrom({{1000, 200}})));
  EXPECT_FALSE(KeepsReservation(c->gpu(0), r, at4, EndsFrom({})));
}

TEST(ScanReservationsTest, ClosesTheGpusOfOtherJobsAndOpensThemForBackfill) {
  ConfigTableCache tables;
  auto c =
      BuildCluster({{"A100-40GB", "", ""}, {"A100-40GB", "", ""}, {"A100-40GB", "", ""}}, &tables);
  EvacuationHolds holds;
  holds.Hold(Reservation{3, 2, 0, 0, 0, 0, true, 0});  // job 3 holds GPU 2
  ScanReservations scan(c.get());
  scan.Begin();
  EXPECT_TRUE(scan.empty());
  // Job 1 reserves GPU 0 from 100 (no slack); job 2 GPU 1 from 200 with 50 s slack.
  scan.Add({Reservation{1, 0, 0, 0, 100, 100, false, 0}});
  scan.Add({Reservation{2, 1, 0, 0, 200, 200, false, 50}});
  scan.CloseFor(1, holds);  // open to job 1: its own GPU 0; closed: 1 (job 2's), 2 (held)
  EXPECT_FALSE(c->reserved(0));
  EXPECT_TRUE(c->reserved(1));
  EXPECT_TRUE(c->reserved(2));
  scan.CloseFor(kNoJob, holds);
  EXPECT_TRUE(c->reserved(0) && c->reserved(1) && c->reserved(2));
  // §13 (a) for job 4: ending by 100 it delays neither reservation (GPUs 0 and 1); by 150 only
  // job 2's (200 + 50); by 250 still that one; by 251 none. The hold is never opened.
  EXPECT_THAT(scan.BackfillGpus(4, 100, holds), ElementsAre(0, 1));
  EXPECT_THAT(scan.BackfillGpus(4, 150, holds), ElementsAre(1));
  EXPECT_THAT(scan.BackfillGpus(4, 250, holds), ElementsAre(1));
  EXPECT_THAT(scan.BackfillGpus(4, 251, holds), IsEmpty());
  // A job's own reservation is not among them (it is open to it already).
  EXPECT_THAT(scan.BackfillGpus(2, 100, holds), ElementsAre(0));
  // Every reservation on a GPU must allow it: job 5's on GPU 1 from 120 closes it by 150.
  scan.Add({Reservation{5, 1, 0, 0, 120, 120, false, 0}});
  EXPECT_THAT(scan.BackfillGpus(4, 150, holds), IsEmpty());
  EXPECT_THAT(scan.BackfillGpus(4, 100, holds), ElementsAre(0, 1));
  // A reservation on the held GPU does not open it to another job; the holder's is open.
  scan.Add({Reservation{6, 2, 0, 0, 1000, 1000, false, 0}});
  EXPECT_THAT(scan.BackfillGpus(4, 100, holds), ElementsAre(0, 1));
  EXPECT_THAT(scan.BackfillGpus(3, 100, holds), ElementsAre(0, 1, 2));
  // Open for one try, then back to what CloseFor set.
  scan.CloseFor(4, holds);
  scan.Open(1);
  EXPECT_FALSE(c->reserved(1));
  scan.Restore(1);
  EXPECT_TRUE(c->reserved(1));
  EXPECT_THAT(scan.OwnGpus(5), ElementsAre(0, 1, 0));
  // An evacuation hold supersedes job 5's reservations.
  scan.DropFor(5);
  EXPECT_THAT(scan.OwnGpus(5), ElementsAre(0, 0, 0));
  EXPECT_EQ(scan.all().size(), 3u);
  // The migration pass sees reserved and held GPUs closed, then open.
  scan.End(holds);
  EXPECT_FALSE(c->reserved(0) || c->reserved(1) || c->reserved(2));
  scan.SetFlags(true, holds);
  EXPECT_TRUE(c->reserved(0) && c->reserved(1) && c->reserved(2));
  scan.SetFlags(false, holds);
  EXPECT_FALSE(c->reserved(0) || c->reserved(1) || c->reserved(2));
  // A new scan forgets the last one's reservations.
  scan.Begin();
  EXPECT_TRUE(scan.empty());
  EXPECT_FALSE(scan.closed(0));
}

}  // namespace
}  // namespace migsched
