// Anchored jobs together (§4 step 2, SchedulerOptions::anchored_together): a job that can never
// leave its GPU (migratable `none`, or latency-sensitive) is placed on a GPU that already runs
// such a job whenever one has room, so that GPUs holding only jobs that can move stay GPUs that
// evacuation can drain, and empty GPUs stay empty for full-GPU jobs. Facts used (A100 40GB,
// docs/mig-hardware.md §2.2): 7 compute slices, 1g.5gb starts at 0-6, 7g.40gb only at 0 and
// needs an empty GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "sched/policy.h"
#include "sched/scheduler.h"
#include "testing/builders.h"
#include "testing/status_matchers.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AJob;
using ::migsched::testing::BuildCluster;

Job Anchoring(const std::string& profile) {
  Job j = AJob(profile);
  j.migratable = Migratable::kNone;
  return j;
}
Job LatencySensitive(const std::string& profile) {
  Job j = AJob(profile);
  j.migratable = Migratable::kCheckpoint;
  j.latency_sensitive = true;
  return j;
}
Job Movable(const std::string& profile) {
  Job j = AJob(profile);
  j.migratable = Migratable::kCheckpoint;
  return j;
}

TEST(JobAnchorsTest, NoneOrLatencySensitiveAnchors) {
  EXPECT_TRUE(Anchoring("1g.5gb").anchors());
  EXPECT_TRUE(LatencySensitive("1g.5gb").anchors());
  EXPECT_FALSE(Movable("1g.5gb").anchors());
  Job restart = AJob("1g.5gb");
  restart.migratable = Migratable::kRestart;
  EXPECT_FALSE(restart.anchors());
}

// The flag is part of a GPU's state group: two GPUs with the same instances, one running an
// anchored job, are two groups (a policy that looks at one GPU per group must see both), and one
// again once the job is forgotten.
TEST(ClusterAnchoredTest, TheFlagSplitsStateGroupsAndFollowsTheInstances) {
  ConfigTableCache tables;
  // Busy instances get job ids from 1000 in order: GPU 0's 1g.5gb is job 1000, GPU 1's 1001.
  auto cluster =
      BuildCluster({{"A100-40GB", "1g.5gb@0", ""}, {"A100-40GB", "1g.5gb@0", ""}}, &tables);
  EXPECT_EQ(cluster->num_groups(), 1);
  EXPECT_EQ(cluster->num_anchored(), 0);
  cluster->SetJobAnchored(1001, true, {1});
  EXPECT_TRUE(cluster->anchored(1));
  EXPECT_FALSE(cluster->anchored(0));
  EXPECT_EQ(cluster->num_anchored(), 1);
  EXPECT_EQ(cluster->num_groups(), 2);
  EXPECT_THAT(cluster->representatives(), ::testing::ElementsAre(0, 1));
  // The job ends: its instance is idle, the GPU no longer anchored (SetGpu recomputes it) though
  // the job is still registered.
  Plan release;
  release.steps.push_back({StepKind::kRelease, 1, cluster->gpu(1).instances()[0].profile, 0, 1001});
  ASSERT_OK(ApplyPlan(release, cluster.get()));
  EXPECT_FALSE(cluster->anchored(1));
  EXPECT_EQ(cluster->num_anchored(), 0);
  // A registered job's next placement anchors the GPU it lands on.
  Plan start;
  start.steps.push_back({StepKind::kStart, 1, cluster->gpu(1).instances()[0].profile, 0, 1001});
  ASSERT_OK(ApplyPlan(start, cluster.get()));
  EXPECT_TRUE(cluster->anchored(1));
  cluster->SetJobAnchored(1001, false, {1});
  EXPECT_FALSE(cluster->anchored(1));
  EXPECT_EQ(cluster->num_groups(), 1);
  // A copy carries the registry.
  cluster->SetJobAnchored(1000, true, {0});
  const Cluster copy = *cluster;
  EXPECT_TRUE(copy.anchored(0));
  EXPECT_TRUE(copy.job_anchored(1000));
}

// The case that made the rule (a user's trial: services that never move spread over every GPU;
// full-GPU jobs waited at p95 1,308 s where first-fit's waited 12 s). One of the ways they
// spread: GPU 0 runs a 1g.5gb service (job 1000) that cannot leave; GPUs 1-3 hold only an idle
// 1g.5gb@6 each, left by batch jobs that ended. Three more 1g.5gb services arrive, then a
// 7g.40gb (it needs a GPU with no busy instance; idle ones are destroyed). Without the rule,
// reuse first sends each service to an idle 1g.5gb (GPUs 1, 2, 3 by step 4's lower index) and
// the 7g.40gb finds no GPU. With it the services join job 1000 on GPU 0 (which has room for six
// more) and the 7g.40gb starts on GPU 1.
TEST(AnchoredTogetherTest, ServicesSpreadOverEveryGpuBlockFullGpuJobs) {
  for (bool on : {false, true}) {
    SCOPED_TRACE(on ? "anchored together" : "without the rule");
    ConfigTableCache tables;
    auto cluster = BuildCluster({{"A100-40GB", "1g.5gb@0", ""},
                                 {"A100-40GB", "", "1g.5gb@6"},
                                 {"A100-40GB", "", "1g.5gb@6"},
                                 {"A100-40GB", "", "1g.5gb@6"}},
                                &tables);
    cluster->SetJobAnchored(1000, true, {0});
    SchedulerOptions given;
    ExplicitOptions set;
    set.anchored_together = true;
    given.anchored_together = on;
    const SchedulerOptions o = OptionsForPolicy("full", given, set);
    ASSERT_EQ(o.anchored_together, on);
    ASSERT_TRUE(o.reuse_first);
    auto policy = MakePolicy("full", o);
    ASSERT_OK(policy);
    ManualClock clock;
    Scheduler sched(cluster.get(), std::move(*policy), o, &clock);
    std::vector<int> gpus;
    for (JobId id = 1; id <= 3; ++id) {
      ASSERT_OK_AND_ASSIGN(std::optional<Decision> d, sched.TryPlace(id, Anchoring("1g.5gb")));
      ASSERT_TRUE(d.has_value());
      gpus.push_back(d->instances[0].gpu);
    }
    ASSERT_OK_AND_ASSIGN(std::optional<Decision> big, sched.TryPlace(4, Movable("7g.40gb")));
    if (on) {
      EXPECT_THAT(gpus, ::testing::ElementsAre(0, 0, 0));
      EXPECT_EQ(cluster->num_anchored(), 1);
      ASSERT_TRUE(big.has_value());
      EXPECT_EQ(big->instances[0].gpu, 1);
    } else {
      EXPECT_THAT(gpus, ::testing::ElementsAre(1, 2, 3));
      EXPECT_FALSE(big.has_value());
    }
  }
}

// The rule's reach. GPUs 0 and 1 each run a 4g.20gb@0 (4 of 7 compute slices; room for three
// 1g.5gb at 4, 5 and 6): the same state, so every 1g.5gb scores alike on both and step 4 sends a
// tie to the lower index. GPU 1's job (1001) cannot leave. A job that can move is placed as
// without the rule (GPU 0); an anchored one goes to GPU 1 while it has room and to GPU 0 once it
// has none; a latency-sensitive job anchors like a `none` one.
TEST(AnchoredTogetherTest, OnlyJobsThatCannotLeaveAreKeptTogether) {
  ConfigTableCache tables;
  auto cluster =
      BuildCluster({{"A100-40GB", "4g.20gb@0", ""}, {"A100-40GB", "4g.20gb@0", ""}}, &tables);
  SchedulerOptions o = OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{});
  ASSERT_TRUE(o.anchored_together);  // full's default
  auto policy = MakePolicy("full", o);
  ASSERT_OK(policy);
  ManualClock clock;
  Scheduler sched(cluster.get(), std::move(*policy), o, &clock);
  cluster->SetJobAnchored(1001, true, {1});
  ASSERT_TRUE(cluster->anchored(1));
  auto place = [&](JobId id, const Job& job) {
    StatusOr<std::optional<Decision>> d = sched.TryPlace(id, job);
    EXPECT_TRUE(d.ok() && d->has_value()) << "job " << id;
    return d.ok() && d->has_value() ? (**d).instances[0].gpu : -1;
  };
  EXPECT_EQ(place(1, Movable("1g.5gb")), 0);
  EXPECT_EQ(place(2, LatencySensitive("1g.5gb")), 1);
  EXPECT_EQ(place(3, Anchoring("1g.5gb")), 1);
  EXPECT_EQ(place(4, Anchoring("1g.5gb")), 1);  // GPU 1 is full now (7 of 7)
  EXPECT_FALSE(cluster->anchored(0));
  EXPECT_EQ(place(5, Anchoring("1g.5gb")), 0);
  EXPECT_TRUE(cluster->anchored(0));
  // Released, a job is forgotten; GPU 0 keeps only jobs that can move (1000, 1).
  ASSERT_OK(sched.Release(5).status());
  EXPECT_FALSE(cluster->job_anchored(5));
  EXPECT_FALSE(cluster->anchored(0));
  for (JobId id : {2, 3, 4}) ASSERT_OK(sched.Release(id).status());
  EXPECT_TRUE(cluster->anchored(1));  // job 1001 still runs there
}

// A waiting job is registered while queued (joint placement applies its plan outside the
// scheduler's own decision) and forgotten when it leaves the queue without running.
TEST(AnchoredTogetherTest, AQueuedJobIsForgottenWhenItLeavesTheQueue) {
  ConfigTableCache tables;
  auto cluster = BuildCluster({{"A100-40GB", "7g.40gb@0", ""}}, &tables);
  SchedulerOptions o = OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{});
  auto policy = MakePolicy("full", o);
  ASSERT_OK(policy);
  ManualClock clock;
  Scheduler sched(cluster.get(), std::move(*policy), o, &clock);
  sched.Enqueue(7, Anchoring("1g.5gb"));
  EXPECT_TRUE(cluster->job_anchored(7));
  EXPECT_TRUE(sched.RemoveFromQueue(7));
  EXPECT_FALSE(cluster->job_anchored(7));
  sched.Enqueue(8, Movable("1g.5gb"));
  EXPECT_FALSE(cluster->job_anchored(8));
}

// A gang that cannot leave its GPUs is registered before its first instance is placed, so its
// later instances see the GPU the first one anchors; one that finds no room is forgotten again
// (a direct placement, not queued), so nothing stays registered for a job that holds nothing.
TEST(AnchoredTogetherTest, AGangThatFindsNoRoomIsForgotten) {
  ConfigTableCache tables;
  auto cluster = BuildCluster({{"A100-40GB", "", ""}, {"A100-40GB", "", ""}}, &tables);
  SchedulerOptions o = OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{});
  auto policy = MakePolicy("full", o);
  ASSERT_OK(policy);
  ManualClock clock;
  Scheduler sched(cluster.get(), std::move(*policy), o, &clock);
  Job three = Anchoring("7g.40gb");
  three.count = 3;  // two GPUs: never room for three 7g.40gb
  ASSERT_OK_AND_ASSIGN(std::optional<Decision> none, sched.TryPlace(1, three));
  EXPECT_FALSE(none.has_value());
  EXPECT_FALSE(cluster->job_anchored(1));
  EXPECT_EQ(cluster->num_anchored(), 0);
  // Two 3g.20gb that cannot leave: the first anchors a GPU, the second joins it there (3g.20gb
  // at 0 and 4 of one A100).
  Job pair = Anchoring("3g.20gb");
  pair.count = 2;
  ASSERT_OK_AND_ASSIGN(std::optional<Decision> two, sched.TryPlace(2, pair));
  ASSERT_TRUE(two.has_value());
  ASSERT_EQ(two->instances.size(), 2u);
  EXPECT_EQ(two->instances[0].gpu, two->instances[1].gpu);
  EXPECT_EQ(cluster->num_anchored(), 1);
}

}  // namespace
}  // namespace migsched
