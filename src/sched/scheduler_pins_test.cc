// The scheduler's pins, holds and drains (scheduler.h "Pins, holds and
// binds"; cluster.h drains), on small hand-made A100 40GB states. Facts of
// docs/mig-hardware.md §2.2 and the §2 FragCost table used below: 3g.20gb
// starts at 0 or 4; 7g.40gb only at 0; a lone busy 3g.20gb@0 has FragCost
// 0.35, @4 has 0; 3/7 busy compute slices is at or above the 0.4 threshold
// (a busy GPU, §3).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "sched/policy.h"
#include "sched/scheduler.h"
#include "testing/builders.h"
#include "testing/status_matchers.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AJob;
using ::migsched::testing::BuildCluster;
using ::migsched::testing::GpuSetup;
using ::migsched::testing::JobOf;

class PinsTest : public ::testing::Test {
 protected:
  void Make(const std::vector<GpuSetup>& gpus, const std::string& policy = "lb+frag",
            SchedulerOptions options = {}) {
    cluster_ = BuildCluster(gpus, &tables_);
    auto p = MakePolicy(policy, options);
    ASSERT_OK(p);
    sched_ = std::make_unique<Scheduler>(cluster_.get(), std::move(*p), options, &clock_);
  }
  int P(const std::string& profile) const { return cluster_->gpu(0).model().FindProfile(profile); }
  InstanceRef At(int gpu, const std::string& profile, int start) const {
    return InstanceRef{gpu, P(profile), start};
  }
  // "3g.20gb@0[busy:job 1] 3g.20gb@4[idle]"
  std::string State(int gpu) const { return cluster_->gpu(gpu).DebugString(); }
  std::vector<std::string> Steps(const Plan& plan) const {
    std::vector<std::string> out;
    for (const Step& s : plan.steps) out.push_back(DescribeStep(s, *cluster_));
    return out;
  }

  ConfigTableCache tables_;
  ManualClock clock_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<Scheduler> sched_;
};

TEST_F(PinsTest, PlaceAtPinsAnExactPlacementOrSaysWhyNot) {
  Make({{"A100-40GB", "", "1g.5gb@0"}});
  // The idle 1g.5gb@0 is in 3g.20gb@0's way: destroyed, then 3g.20gb@0 is made.
  ASSERT_OK_AND_ASSIGN(Decision d, sched_->PlaceAt(1, JobOf("3g.20gb"), {At(0, "3g.20gb", 0)}));
  EXPECT_THAT(Steps(d.plan),
              ::testing::ElementsAre("destroy 1g.5gb@0 on GPU 0", "create 3g.20gb@0 on GPU 0",
                                     "start 3g.20gb@0 on GPU 0 (job 1)"));
  EXPECT_EQ(State(0), "3g.20gb@0[busy:job 1]");
  ASSERT_NE(sched_->InstancesOf(1), nullptr);
  EXPECT_EQ(*sched_->InstancesOf(1), (std::vector<InstanceRef>{At(0, "3g.20gb", 0)}));

  StatusOr<Decision> busy = sched_->PlaceAt(2, JobOf("3g.20gb"), {At(0, "3g.20gb", 0)});
  EXPECT_EQ(busy.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(busy.status().message(), "GPU 0: 3g.20gb@0 overlaps 3g.20gb@0 (job 1)");
  StatusOr<Decision> bad_start = sched_->PlaceAt(3, JobOf("3g.20gb"), {At(0, "3g.20gb", 2)});
  EXPECT_EQ(bad_start.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_start.status().message(),
            "GPU 0: 2 is not a placement of 3g.20gb on A100 40GB (starts: 0, 4)");
  StatusOr<Decision> wrong = sched_->PlaceAt(4, JobOf("1g.5gb"), {At(0, "3g.20gb", 4)});
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sched_->PlaceAt(1, JobOf("3g.20gb"), {At(0, "3g.20gb", 4)}).status().code(),
            StatusCode::kAlreadyExists);
  cluster_->SetDrained(0, true);
  StatusOr<Decision> drained = sched_->PlaceAt(5, JobOf("3g.20gb"), {At(0, "3g.20gb", 4)});
  EXPECT_EQ(drained.status().message(), "GPU 0 is drained");
  // Nothing of the refused calls was applied.
  EXPECT_EQ(State(0), "3g.20gb@0[busy:job 1]");
  // A job found running after a restart is adopted on its idle instance, drain or not.
  ASSERT_OK(sched_->ApplyExternal(Plan{{{StepKind::kCreate, 0, P("3g.20gb"), 4, kNoJob}}}));
  ASSERT_OK(sched_->Adopt(6, JobOf("3g.20gb"), {At(0, "3g.20gb", 4)}));
  EXPECT_EQ(State(0), "3g.20gb@0[busy:job 1] 3g.20gb@4[busy:job 6]");
}

// A job that names no profile (an allocation of given placements) takes any.
TEST_F(PinsTest, PlaceAtTakesAnyProfilesForAJobThatNamesNone) {
  Make({{"A100-40GB", "", ""}});
  Job any;
  any.count = 2;
  ASSERT_OK(sched_->PlaceAt(1, any, {At(0, "3g.20gb", 4), At(0, "1g.5gb", 0)}));
  EXPECT_EQ(State(0), "1g.5gb@0[busy:job 1] 3g.20gb@4[busy:job 1]");
  // Two placements of one call that overlap each other: the second is refused, none applied.
  StatusOr<Decision> overlap = sched_->PlaceAt(2, any, {At(0, "1g.5gb", 1), At(0, "1g.5gb", 1)});
  EXPECT_EQ(overlap.status().message(), "GPU 0: 1g.5gb@1 overlaps 1g.5gb@1 (job 2)");
  EXPECT_EQ(State(0), "1g.5gb@0[busy:job 1] 3g.20gb@4[busy:job 1]");
}

// Regression: a refusal after an earlier placement of the same call was
// applied rolls the GPU back; the refusal's message used to be built from the
// rolled-back state (a use after free, seen under AddressSanitizer).
TEST_F(PinsTest, RefusalAfterAnAppliedPlacementIsWordedBeforeTheRollback) {
  Make({{"A100-40GB", "", ""}});
  ASSERT_OK(sched_->Hold(Holder::kReservation, 7, {At(0, "1g.5gb", 6)}));
  Job any;
  any.count = 2;
  // 3g.20gb@0 is applied first; 1g.5gb@6 then meets the reservation.
  StatusOr<Decision> refused = sched_->PlaceAt(8, any, {At(0, "3g.20gb", 0), At(0, "1g.5gb", 6)});
  EXPECT_EQ(refused.status().message(), "GPU 0: 1g.5gb@6 overlaps 1g.5gb@6 (reservation 7)");
  EXPECT_EQ(State(0), "1g.5gb@6[busy:reservation 7]");
  // The same for existing instances: the idle 3g.20gb@0 is taken first, then
  // the reserved 1g.5gb@6 is refused and the placeholder's first part undone.
  ASSERT_OK(sched_->ApplyExternal(Plan{{{StepKind::kCreate, 0, P("3g.20gb"), 0, kNoJob}}}));
  StatusOr<Plan> held = sched_->Hold(Holder::kPlaceholder, 9,
                                     {At(0, "3g.20gb", 0), At(0, "1g.5gb", 6)}, /*existing=*/true);
  EXPECT_EQ(held.status().message(), "GPU 0: 1g.5gb@6 is held by reservation 7");
  EXPECT_EQ(State(0), "3g.20gb@0[idle] 1g.5gb@6[busy:reservation 7]");
}

TEST_F(PinsTest, HoldsAreBusyForEveryoneAndBindIntoJobs) {
  Make({{"A100-40GB", "", ""}, {"A100-40GB", "", ""}});
  ASSERT_OK(sched_->Hold(Holder::kReservation, 1, {At(0, "3g.20gb", 4)}));
  EXPECT_EQ(State(0), "3g.20gb@4[busy:reservation 1]");
  // The held placement counts as busy: GPU 0 is now busy (3/7 ≥ 0.4, §3),
  // so the next 3g.20gb goes to the lazy GPU 1 (§4 step 2), at @4 (FragCost 0).
  ASSERT_OK_AND_ASSIGN(std::optional<Decision> d, sched_->TryPlace(10, JobOf("3g.20gb")));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->instances, (std::vector<InstanceRef>{At(1, "3g.20gb", 4)}));
  EXPECT_NEAR(cluster_->gpu(0).utilization(), 3.0 / 7, 1e-12);
  EXPECT_NEAR(cluster_->gpu(0).fragcost(), 0, 1e-12);  // 3g@4 alone: FragCost 0 (§2)
  // Holding again under the same id, or on a busy placement, is refused.
  EXPECT_EQ(sched_->Hold(Holder::kReservation, 1, {At(0, "3g.20gb", 0)}).status().code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(sched_->Hold(Holder::kReservation, 2, {At(1, "3g.20gb", 4)}).status().message(),
            "GPU 1: 3g.20gb@4 overlaps 3g.20gb@4 (job 10)");
  EXPECT_EQ(sched_->Hold(Holder::kJob, 3, {At(0, "3g.20gb", 0)}).status().code(),
            StatusCode::kInvalidArgument);
  // Two placements held; one is bound to a job, the hold keeps the other.
  ASSERT_OK(sched_->Hold(Holder::kReservation, 4, {At(0, "3g.20gb", 0), At(1, "3g.20gb", 0)}));
  ASSERT_OK_AND_ASSIGN(Decision b, sched_->BindHold(Holder::kReservation, 4, 12, JobOf("3g.20gb"),
                                                    {At(1, "3g.20gb", 0)}));
  EXPECT_EQ(b.plan.reconfigurations(), 0);  // no reconfiguration: the instance is there
  EXPECT_THAT(Steps(b.plan), ::testing::ElementsAre("release 3g.20gb@0 on GPU 1 (reservation 4)",
                                                    "start 3g.20gb@0 on GPU 1 (job 12)"));
  ASSERT_NE(sched_->HeldBy(Holder::kReservation, 4), nullptr);
  EXPECT_EQ(*sched_->HeldBy(Holder::kReservation, 4),
            (std::vector<InstanceRef>{At(0, "3g.20gb", 0)}));
  EXPECT_EQ(State(1), "3g.20gb@0[busy:job 12] 3g.20gb@4[busy:job 10]");
  // Binding all of hold 1 ends it; the job then releases like any job (idle kept, §4 step 4).
  ASSERT_OK(sched_->BindHold(Holder::kReservation, 1, 13, JobOf("3g.20gb")));
  EXPECT_EQ(sched_->HeldBy(Holder::kReservation, 1), nullptr);
  ASSERT_OK(sched_->Release(13));
  ASSERT_OK(sched_->ReleaseHold(Holder::kReservation, 4));
  EXPECT_EQ(State(0), "3g.20gb@0[idle] 3g.20gb@4[idle]");
  EXPECT_EQ(sched_->ReleaseHold(Holder::kReservation, 4).status().code(), StatusCode::kNotFound);
  // A placeholder holds an idle instance that exists, even on a drained GPU, and
  // is destroyed when released with destroy = true.
  cluster_->SetDrained(0, true);
  ASSERT_OK(sched_->Hold(Holder::kPlaceholder, 1, {At(0, "3g.20gb", 0)}, /*existing=*/true));
  EXPECT_EQ(State(0), "3g.20gb@0[busy:placeholder 1] 3g.20gb@4[idle]");
  ASSERT_OK(sched_->ReleaseHold(Holder::kPlaceholder, 1, /*destroy=*/true));
  EXPECT_EQ(State(0), "3g.20gb@4[idle]");
}

// Regression (drain_reset_by_every_scan): the daemon drained a GPU by
// marking it reserved, and the §5 guard's scan cleared every reservation
// flag at its end, so the daemon had to set its drains again around every
// scheduler call. A drain is its own flag now.
TEST_F(PinsTest, DrainIsNotAReservation) {
  SchedulerOptions o;
  o.max_skip_seconds = 0;  // the guard reserves for the head at once
  Make({{"A100-40GB", "", ""}, {"A100-40GB", "7g.40gb@0", ""}}, "lb+frag", o);
  cluster_->SetDrained(0, true);
  EXPECT_FALSE(cluster_->accepts_placements(0));
  EXPECT_FALSE(cluster_->reserved(0));
  // The head (a 7g.40gb) fits nowhere: GPU 0 is drained, GPU 1 busy. The scan
  // reserves a GPU for it, then clears its reservations.
  sched_->SetExpectedEnd(1000, 10);
  sched_->Enqueue(1, AJob("7g.40gb").Limit(5));
  clock_.Advance(1);
  sched_->SetNow(1);
  ASSERT_OK_AND_ASSIGN(std::vector<Decision> placed, sched_->ScheduleQueue());
  EXPECT_TRUE(placed.empty());
  EXPECT_FALSE(sched_->reservations().empty());
  EXPECT_EQ(cluster_->num_reserved(), 0);
  EXPECT_TRUE(cluster_->drained(0)) << "the scan's end must leave the drain alone";
  // Reserved and drained at once: ending the reservation leaves the drain.
  cluster_->SetReserved(0, true);
  cluster_->SetReserved(0, false);
  EXPECT_TRUE(cluster_->drained(0));
  EXPECT_FALSE(cluster_->accepts_placements(0));
  // Undrained: a retry of the failed request sees GPU 0 again (the drain is
  // in the change journal) and the 7g.40gb starts there.
  cluster_->SetDrained(0, false);
  ASSERT_OK_AND_ASSIGN(placed, sched_->ScheduleQueue());
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].instances, (std::vector<InstanceRef>{At(0, "7g.40gb", 0)}));
}

// Joint placement (§12) searches the GPUs of the scan and the lowest-index
// others: a drained GPU is none of them. GPUs 0 and 1 are empty, GPU 2 holds a
// busy 4g.20gb@0 (busy by the §3 rule); GPU 1 is drained. One at a time the
// 1g.5gb takes lazy GPU 0 and the 7g.40gb finds no empty GPU that takes
// placements. Jointly the 1g moves beside the 4g (1g@6, as in
// scheduler_joint_test's GangStartsWhenAnEarlierJobMoves) and the 7g takes
// GPU 0; the drained GPU 1, which would spare the move, stays empty.
TEST_F(PinsTest, JointPlacementNeverUsesADrainedGpu) {
  SchedulerOptions o;
  o.joint_placement = true;
  Make({{"A100-40GB", "", ""}, {"A100-40GB", "", ""}, {"A100-40GB", "4g.20gb@0", ""}}, "lb+frag",
       o);
  cluster_->SetDrained(1, true);
  sched_->Enqueue(1, JobOf("1g.5gb"));
  sched_->Enqueue(2, JobOf("7g.40gb"));
  ASSERT_OK_AND_ASSIGN(std::vector<Decision> placed, sched_->ScheduleQueue());
  ASSERT_EQ(placed.size(), 2u);
  EXPECT_EQ(*sched_->InstancesOf(1), (std::vector<InstanceRef>{At(2, "1g.5gb", 6)}));
  EXPECT_EQ(*sched_->InstancesOf(2), (std::vector<InstanceRef>{At(0, "7g.40gb", 0)}));
  EXPECT_EQ(State(1), "(empty)");
}

// Regression (placeholder_ids_negative): placeholders were jobs with
// negative ids, and nothing stopped a hold and a job from being taken for
// each other. Holds are their own kind: the migration planner never moves
// one, even when a migratable job has the same number.
TEST_F(PinsTest, HoldsAreNeverMoved) {
  SchedulerOptions o;
  o.migration.passes = DefragPasses::kAlways;  // a tick pass with nothing waiting (§13)
  o.migration.enabled = true;                  // full's own default (these options are raw)
  Make({{"A100-40GB", "", ""}, {"A100-40GB", "", ""}}, "full", o);
  // A lone busy 3g.20gb@0 (FragCost 0.35) on a busy GPU is what an intra move
  // to @4 (FragCost 0) would fix, were it a job's.
  ASSERT_OK(sched_->Hold(Holder::kReservation, 3, {At(0, "3g.20gb", 0)}));
  Job restart = JobOf("3g.20gb");
  restart.migratable = Migratable::kRestart;
  ASSERT_OK(sched_->PlaceAt(3, restart, {At(1, "3g.20gb", 4)}));  // job 3: already at FragCost 0
  ASSERT_OK_AND_ASSIGN(std::vector<MigrationStart> moves,
                       sched_->RunMigrationPass(MigrationTrigger::kTick, nullptr));
  EXPECT_TRUE(moves.empty());
  EXPECT_EQ(State(0), "3g.20gb@0[busy:reservation 3]");
  // The same state with job 3 itself on GPU 0: it is moved (the planner works).
  ASSERT_OK(sched_->ReleaseHold(Holder::kReservation, 3, /*destroy=*/true));
  ASSERT_OK(sched_->Release(3));
  ASSERT_OK(sched_->PlaceAt(3, restart, {At(0, "3g.20gb", 0)}));
  ASSERT_OK_AND_ASSIGN(moves, sched_->RunMigrationPass(MigrationTrigger::kTick, nullptr));
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_EQ(moves[0].move.from, At(0, "3g.20gb", 0));
  EXPECT_EQ(moves[0].move.to, At(0, "3g.20gb", 4));
}

TEST_F(PinsTest, AbandonedMoveLeavesTheJobOnItsSource) {
  SchedulerOptions o;
  o.migration.passes = DefragPasses::kAlways;  // a tick pass with nothing waiting (§13)
  o.migration.enabled = true;                  // full's own default (these options are raw)
  Make({{"A100-40GB", "", ""}}, "full", o);
  Job restart = JobOf("3g.20gb");
  restart.migratable = Migratable::kRestart;
  ASSERT_OK(sched_->PlaceAt(5, restart, {At(0, "3g.20gb", 0)}));
  ASSERT_OK_AND_ASSIGN(std::vector<MigrationStart> moves,
                       sched_->RunMigrationPass(MigrationTrigger::kTick, nullptr));
  ASSERT_EQ(moves.size(), 1u);  // 3g@0 → 3g@4, as above
  EXPECT_EQ(State(0), "3g.20gb@0[source:job 5->0@4] 3g.20gb@4[target:job 5<-0@0]");
  ASSERT_OK_AND_ASSIGN(Plan abandon, sched_->AbandonMigration(5));
  EXPECT_THAT(Steps(abandon),
              ::testing::ElementsAre("migrate-abort 3g.20gb@4 on GPU 0 (job 5, from GPU 0 @0)"));
  EXPECT_EQ(State(0), "3g.20gb@0[busy:job 5] 3g.20gb@4[idle]");
  EXPECT_OK(cluster_->gpu(0).CheckInvariants());
  EXPECT_EQ(sched_->MigrationOf(5), nullptr);
  EXPECT_EQ(*sched_->InstancesOf(5), (std::vector<InstanceRef>{At(0, "3g.20gb", 0)}));
  EXPECT_EQ(sched_->FinishMigration(5).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(sched_->AbandonMigration(5).status().code(), StatusCode::kNotFound);
  // The settled configuration has the source back: releasing the job empties it.
  ASSERT_OK(sched_->Release(5));
  EXPECT_EQ(cluster_->gpu(0).settled_config(), kEmptyConfig);
}

TEST_F(PinsTest, RequeueKeepsTheQueueOrder) {
  Make({{"A100-40GB", "7g.40gb@0", ""}});
  for (JobId id : {1, 2, 3}) {
    sched_->SetNow(static_cast<double>(id));
    sched_->Enqueue(id, JobOf("1g.5gb"));
  }
  ASSERT_TRUE(sched_->RemoveFromQueue(2));
  EXPECT_EQ(sched_->EnqueuedAt(2), std::nullopt);
  sched_->Requeue(2, JobOf("1g.5gb"), 2.0);  // its own time: between 1 and 3
  sched_->Requeue(4, JobOf("1g.5gb"), 9.0);
  EXPECT_EQ(sched_->QueuedJobs(), (std::vector<JobId>{1, 2, 3, 4}));
  EXPECT_EQ(sched_->EnqueuedAt(2), 2.0);
}

// Regression (job_ids_32_bit): job ids were a 32-bit workload index; the
// daemon's ids (never reused) may pass 2^31 in a long life.
TEST_F(PinsTest, JobIdsAre64Bit) {
  Make({{"A100-40GB", "", ""}});
  const JobId big = 5'000'000'000;
  ASSERT_OK_AND_ASSIGN(std::optional<Decision> d, sched_->TryPlace(big, JobOf("1g.5gb")));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(cluster_->gpu(0).instances()[0].job, big);
  ASSERT_OK(sched_->Release(big));
}

TEST_F(PinsTest, ExternalChangesAreCreatesAndDestroysOnly) {
  Make({{"A100-40GB", "", ""}});
  ASSERT_OK(sched_->ApplyExternal(Plan{{{StepKind::kCreate, 0, P("1g.5gb"), 6, kNoJob}}}));
  EXPECT_EQ(State(0), "1g.5gb@6[idle]");
  Status st = sched_->ApplyExternal(Plan{{{StepKind::kStart, 0, P("1g.5gb"), 6, 1}}});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  ASSERT_OK(sched_->ApplyExternal(Plan{{{StepKind::kDestroy, 0, P("1g.5gb"), 6, kNoJob}}}));
  EXPECT_EQ(State(0), "(empty)");
}

}  // namespace
}  // namespace migsched
