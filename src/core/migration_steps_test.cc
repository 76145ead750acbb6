// The §6 migration steps of a plan (kMigrateBegin / kMigrateEnd) as ApplyPlan
// applies them: make-before-break (both instances busy during the copy), the
// invariants that reject impossible moves, and the reservation flag of a GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/plan.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::Model;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class MigrationStepsTest : public ::testing::Test {
 protected:
  MigrationStepsTest() : cluster_({&Model("A100-40GB"), &Model("A100-40GB")}, &tables_) {}

  int P(const std::string& name) const { return cluster_.gpu(0).model().FindProfile(name); }

  // Creates `profile`@start on `gpu` and runs `job` there.
  void Run(int gpu, const std::string& profile, int start, JobId job) {
    Status st = ApplyPlan({{{StepKind::kCreate, gpu, P(profile), start, kNoJob},
                            {StepKind::kStart, gpu, P(profile), start, job}}},
                          &cluster_);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  Step Begin(int gpu, const std::string& profile, int start, JobId job, int from_gpu,
             int from_start) {
    return {StepKind::kMigrateBegin, gpu, P(profile), start, job, from_gpu, from_start};
  }
  Step End(int gpu, const std::string& profile, int start, JobId job, int from_gpu,
           int from_start) {
    return {StepKind::kMigrateEnd, gpu, P(profile), start, job, from_gpu, from_start};
  }

  ConfigTableCache tables_;
  Cluster cluster_;
};

TEST_F(MigrationStepsTest, IntraGpuMoveIsMakeBeforeBreak) {
  // Busy 1g@0, 1g@1, 1g@5 (FragCost 0.5, §2 table); job 2 moves 1g@5 -> 1g@3.
  Run(0, "1g.5gb", 0, 0);
  Run(0, "1g.5gb", 1, 1);
  Run(0, "1g.5gb", 5, 2);
  Status st =
      ApplyPlan({{{StepKind::kCreate, 0, P("1g.5gb"), 3, kNoJob}, Begin(0, "1g.5gb", 3, 2, 0, 5)}},
                &cluster_);
  ASSERT_TRUE(st.ok()) << st.ToString();
  const GpuState& g = cluster_.gpu(0);
  // During the copy both ends are busy: 4 busy slices; settled (source gone)
  // = {0, 1, 3}: 3 slices.
  EXPECT_EQ(g.busy_compute_slices(), 4);
  EXPECT_EQ(g.table().compute_used(g.settled_config()), 3);
  EXPECT_EQ(g.DebugString(),
            "1g.5gb@0[busy:job 0] 1g.5gb@1[busy:job 1] 1g.5gb@3[target:job 2<-0@5] "
            "1g.5gb@5[source:job 2->0@3]");
  // Switch-over, then the source is destroyed.
  st = ApplyPlan({{End(0, "1g.5gb", 3, 2, 0, 5), {StepKind::kDestroy, 0, P("1g.5gb"), 5, kNoJob}}},
                 &cluster_);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(cluster_.gpu(0).DebugString(),
            "1g.5gb@0[busy:job 0] 1g.5gb@1[busy:job 1] 1g.5gb@3[busy:job 2]");
  EXPECT_EQ(cluster_.gpu(0).settled_config(), cluster_.gpu(0).busy_config());
}

TEST_F(MigrationStepsTest, InterGpuMoveTouchesBothGpus) {
  Run(0, "3g.20gb", 0, 7);
  Status st = ApplyPlan(
      {{{StepKind::kCreate, 1, P("3g.20gb"), 4, kNoJob}, Begin(1, "3g.20gb", 4, 7, 0, 0)}},
      &cluster_);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(cluster_.gpu(0).DebugString(), "3g.20gb@0[source:job 7->1@4]");
  EXPECT_EQ(cluster_.gpu(1).DebugString(), "3g.20gb@4[target:job 7<-0@0]");
  // GPU 0 settles to empty (FragCost 0), GPU 1 to 3g@4 (FragCost 0, §2 table).
  EXPECT_EQ(cluster_.gpu(0).settled_config(), kEmptyConfig);
  st =
      ApplyPlan({{End(1, "3g.20gb", 4, 7, 0, 0), {StepKind::kDestroy, 0, P("3g.20gb"), 0, kNoJob}}},
                &cluster_);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(cluster_.gpu(0).empty());
  EXPECT_EQ(cluster_.gpu(1).DebugString(), "3g.20gb@4[busy:job 7]");
}

TEST_F(MigrationStepsTest, AJobEndingMidCopyReleasesBothEnds) {
  Run(0, "1g.5gb", 5, 2);
  ASSERT_TRUE(
      ApplyPlan({{{StepKind::kCreate, 1, P("1g.5gb"), 6, kNoJob}, Begin(1, "1g.5gb", 6, 2, 0, 5)}},
                &cluster_)
          .ok());
  // Releasing only the source would leave the target pointing at nothing.
  Status half = ApplyPlan({{{StepKind::kRelease, 0, P("1g.5gb"), 5, 2}}}, &cluster_);
  EXPECT_EQ(half.code(), StatusCode::kInternal);
  EXPECT_EQ(
      half.message(),
      "plan leaves a move unmatched: 1g.5gb@6 on GPU 1 (job 2) and its migration peer on GPU 0 "
      "@5 do not match");
  Status both = ApplyPlan(
      {{{StepKind::kRelease, 0, P("1g.5gb"), 5, 2}, {StepKind::kRelease, 1, P("1g.5gb"), 6, 2}}},
      &cluster_);
  ASSERT_TRUE(both.ok()) << both.ToString();
  EXPECT_EQ(cluster_.gpu(0).DebugString(), "1g.5gb@5[idle]");
  EXPECT_EQ(cluster_.gpu(1).DebugString(), "1g.5gb@6[idle]");
}

struct BadStepCase {
  std::string name;
  std::vector<Step> steps;
  std::string error;  // essential part of the message
};

TEST_F(MigrationStepsTest, ImpossibleMovesAreRejectedAndChangeNothing) {
  Run(0, "1g.5gb", 5, 2);
  Run(0, "2g.10gb", 0, 3);
  const int me = P("1g.5gb+me");
  // A 1g.5gb+me (at most 1 per GPU) on GPU 1.
  ASSERT_TRUE(ApplyPlan({{{StepKind::kCreate, 1, me, 0, kNoJob}, {StepKind::kStart, 1, me, 0, 4}}},
                        &cluster_)
                  .ok());
  const std::string before0 = cluster_.gpu(0).DebugString(),
                    before1 = cluster_.gpu(1).DebugString();
  const BadStepCase cases[] = {
      {"TargetIsItsOwnSource",
       {Begin(0, "1g.5gb", 5, 2, 0, 5)},
       "a move's target cannot be its own source"},
      // The target must exist (an earlier kCreate) and be idle.
      {"NoTargetInstance",
       {Begin(0, "1g.5gb", 3, 2, 0, 5)},
       "migration target: start job 2 @3: no instance"},
      {"TargetBusy",
       {Begin(0, "2g.10gb", 0, 2, 0, 5)},
       "migration target: start job 2 on 2g.10gb@0: already busy with job 3"},
      // Make-before-break: the target overlaps the running 2g@0.
      {"TargetOverlapsBusy",
       {{StepKind::kCreate, 0, P("1g.5gb"), 1, kNoJob}, Begin(0, "1g.5gb", 1, 2, 0, 5)},
       "create 1g.5gb@1: overlaps 2g.10gb@0"},
      {"SourceRunsAnotherJob",
       {{StepKind::kCreate, 0, P("1g.5gb"), 3, kNoJob}, Begin(0, "1g.5gb", 3, 9, 0, 5)},
       "migration source 1g.5gb@5: runs job 2, not job 9"},
      {"NoSuchSourceGpu",
       {{StepKind::kCreate, 0, P("1g.5gb"), 3, kNoJob}, Begin(0, "1g.5gb", 3, 2, 7, 5)},
       "no such source GPU"},
      // During the copy both ends exist: two 1g.5gb+me exceed max_instances 1.
      {"VariantCountDuringCopy",
       {{StepKind::kCreate, 1, me, 3, kNoJob}, Begin(1, "1g.5gb+me", 3, 4, 1, 0)},
       "create 1g.5gb+me@3: 1g.5gb+me allows at most 1 instance(s)"},
      {"EndWithoutBegin",
       {{StepKind::kCreate, 0, P("1g.5gb"), 3, kNoJob}, End(0, "1g.5gb", 3, 2, 0, 5)},
       "1g.5gb@3 is not the migration target of job 2 paired with GPU 0 @5"},
      // A busy instance with a job on it cannot be destroyed mid-copy.
      {"DestroySourceBeforeSwitch",
       {{StepKind::kCreate, 0, P("1g.5gb"), 3, kNoJob},
        Begin(0, "1g.5gb", 3, 2, 0, 5),
        {StepKind::kDestroy, 0, P("1g.5gb"), 5, kNoJob}},
       "destroy 1g.5gb@5: busy with job 2"},
  };
  for (const BadStepCase& c : cases) {
    SCOPED_TRACE(c.name);
    Status st = ApplyPlan({c.steps}, &cluster_);
    EXPECT_EQ(st.code(), StatusCode::kInternal);
    EXPECT_THAT(st.message(), HasSubstr(c.error));
    EXPECT_EQ(cluster_.gpu(0).DebugString(), before0);
    EXPECT_EQ(cluster_.gpu(1).DebugString(), before1);
  }
}

TEST_F(MigrationStepsTest, DescribeNamesBothEnds) {
  EXPECT_EQ(DescribeStep(Begin(1, "1g.5gb", 6, 2, 0, 5), cluster_),
            "migrate-begin 1g.5gb@6 on GPU 1 (job 2, from GPU 0 @5)");
  EXPECT_EQ(DescribeStep(End(1, "1g.5gb", 6, 2, 0, 5), cluster_),
            "migrate-end 1g.5gb@6 on GPU 1 (job 2, from GPU 0 @5)");
}

TEST(ClusterReservationTest, AReservedGpuIsAGroupOfItsOwn) {
  ConfigTableCache tables;
  Cluster c({&Model("A100-40GB"), &Model("A100-40GB"), &Model("A100-40GB")}, &tables);
  EXPECT_THAT(c.representatives(), ElementsAre(0));
  // GPU 0 reserved: it cannot stand for the empty GPUs any more.
  c.SetReserved(0, true);
  EXPECT_TRUE(c.reserved(0));
  EXPECT_THAT(c.representatives(), ElementsAre(0, 1));
  c.SetReserved(0, false);
  EXPECT_THAT(c.representatives(), ElementsAre(0));
}

}  // namespace
}  // namespace migsched
