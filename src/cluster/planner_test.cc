#include "cluster/planner.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "cluster/testing/nodes.h"
#include "core/plan.h"
#include "sched/full_policy.h"
#include "sched/scheduler.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using migsched::testing::AddReservation;
using migsched::testing::BundledCatalog;
using migsched::testing::MakeNode;

ClusterJob Single(const std::string& key, const std::string& profile, int count = 1,
                  int nodes = 1) {
  ClusterJob j;
  j.key = key;
  j.num_nodes = nodes;
  j.per_node = {{profile, count}};
  return j;
}

struct Fixture {
  explicit Fixture(std::vector<NodeInput> nodes, const std::string& policy = "first-fit") {
    view = ClusterView::Build(nodes, BundledCatalog(), &tables);
    options.policy = policy;
    options.scheduler = OptionsForPolicy(policy, SchedulerOptions{}, ExplicitOptions{});
    input.view = view.get();
  }
  ClusterPlan Plan() {
    auto plan = PlanCluster(input, options);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    return plan.ok() ? *plan : ClusterPlan{};
  }
  ConfigTableCache tables;
  std::unique_ptr<ClusterView> view;
  PlannerOptions options;
  PlannerInput input;
};

NodePlacement At(int node, std::vector<PlacementRef> refs) { return {node, std::move(refs)}; }

// first-fit (lowest GPU index, then lowest start), 2 nodes x 2 A100 40GB, empty:
// 1g.5gb -> n1 GPU 0 @0; 3g.20gb ({0,4}; 0 overlaps) -> n1 GPU 0 @4;
// 7g.40gb (GPU 0 taken) -> n1 GPU 1 @0; a second 7g.40gb -> n2 GPU 0 @0.
TEST(PlannerTest, FirstFitAcrossNodesWorkedByHand) {
  Fixture f({{"n1", MakeNode("n1", 2, "A100 40GB", {}), ""},
             {"n2", MakeNode("n2", 2, "A100 40GB", {}), ""}});
  f.input.waiting = {Single("a", "1g.5gb"), Single("b", "3g.20gb"), Single("c", "7g.40gb"),
                     Single("d", "7g.40gb")};
  ClusterPlan p = f.Plan();
  ASSERT_EQ(p.jobs.size(), 4u);
  for (const JobPlan& j : p.jobs) EXPECT_EQ(j.outcome, Outcome::kPlaced) << j.key << j.reason;
  EXPECT_EQ(p.jobs[0].placements, (std::vector{At(0, {{0, "1g.5gb", 0}})}));
  EXPECT_EQ(p.jobs[1].placements, (std::vector{At(0, {{0, "3g.20gb", 4}})}));
  EXPECT_EQ(p.jobs[2].placements, (std::vector{At(0, {{1, "7g.40gb", 0}})}));
  EXPECT_EQ(p.jobs[3].placements, (std::vector{At(1, {{0, "7g.40gb", 0}})}));
  ASSERT_EQ(p.create.size(), 4u);
  EXPECT_EQ(p.create[3], (NewReservation{1, "d", {0, "7g.40gb", 0}}));
  EXPECT_TRUE(p.release.empty());
  EXPECT_TRUE(p.migrations.empty());
}

// Anchored together (§4 step 2) in the controller: the engine's running jobs that can never leave
// their GPU anchor the GPUs their allocations hold. n1's GPUs 0 and 1 each hold a 3g.20gb@4, the
// same state: without the rule, `full` sends a 1g.5gb to GPU 0 (a tie, the lower index). GPU 1's
// holder, slurm:2, cannot move (migratable none); GPU 0's, slurm:1, can (restart). A waiting
// 1g.5gb that cannot move either goes to GPU 1 with the rule and to GPU 0 without it; one that can
// move goes to GPU 0 either way.
TEST(PlannerTest, RunningJobsThatCannotMoveAnchorTheirGpus) {
  for (bool on : {false, true}) {
    for (Migratable waiting : {Migratable::kNone, Migratable::kRestart}) {
      SCOPED_TRACE(::testing::Message() << "rule " << on << ", waiting job "
                                        << (waiting == Migratable::kNone ? "none" : "restart"));
      Fixture f({{"n1",
                  MakeNode("n1", 2, "A100 40GB",
                           {"0:3g.20gb@4=alloc:slurm:1", "1:3g.20gb@4=alloc:slurm:2"}),
                  ""}},
                "full");
      ASSERT_TRUE(f.options.scheduler.anchored_together);  // full's default
      f.options.scheduler.anchored_together = on;
      ClusterJob one = Single("slurm:1", "3g.20gb");
      one.migratable = Migratable::kRestart;
      const ClusterJob two = Single("slurm:2", "3g.20gb");  // migratable none
      f.input.running = {EngineRunningJob{one, false}, EngineRunningJob{two, false}};
      ClusterJob w = Single("slurm:3", "1g.5gb");
      w.migratable = waiting;
      f.input.waiting = {w};
      ClusterPlan p = f.Plan();
      ASSERT_EQ(p.jobs.size(), 1u);
      ASSERT_EQ(p.jobs[0].outcome, Outcome::kPlaced) << p.jobs[0].reason;
      ASSERT_EQ(p.jobs[0].placements.size(), 1u);
      ASSERT_EQ(p.jobs[0].placements[0].placements.size(), 1u);
      const int gpu = p.jobs[0].placements[0].placements[0].gpu.value();
      EXPECT_EQ(gpu, on && waiting == Migratable::kNone ? 1 : 0);
    }
  }
}

// The 4g.20gb case: n1 has 12 free compute slices (two GPUs with a 1g.5gb at
// start 2), n2 has 4 (GPU 0 full, GPU 1 with 3g.20gb@4). Counting free slices
// per node would pick n1, where 4g.20gb (only placement: start 0, units 0-3)
// is blocked by the instance at unit 2 on both GPUs. The only free 4g.20gb
// placement is n2 GPU 1 @0; the default policy (`full`) finds it.
TEST(PlannerTest, FourGTwentyGoesWhereAPlacementIsFreeNotWhereSlicesAre) {
  Fixture f(
      {{"n1",
        MakeNode("n1", 2, "A100 40GB", {"0:1g.5gb@2=alloc:slurm:1", "1:1g.5gb@2=alloc:slurm:2"}),
        ""},
       {"n2",
        MakeNode("n2", 2, "A100 40GB", {"0:7g.40gb@0=alloc:slurm:3", "1:3g.20gb@4=alloc:slurm:4"}),
        ""}},
      "full");
  EXPECT_EQ(f.view->cluster().gpu(0).free_compute_slices() +
                f.view->cluster().gpu(1).free_compute_slices(),
            12);
  EXPECT_EQ(f.view->cluster().gpu(2).free_compute_slices() +
                f.view->cluster().gpu(3).free_compute_slices(),
            4);
  f.input.waiting = {Single("slurm:9", "4g.20gb")};
  ClusterPlan p = f.Plan();
  ASSERT_EQ(p.jobs[0].outcome, Outcome::kPlaced) << p.jobs[0].reason;
  EXPECT_EQ(p.jobs[0].placements, (std::vector{At(1, {{1, "4g.20gb", 0}})}));
  // A second one finds no placement: both n1 GPUs are fragmented.
  f.input.waiting.push_back(Single("slurm:10", "4g.20gb"));
  p = f.Plan();
  ASSERT_EQ(p.jobs[1].outcome, Outcome::kWaiting);
  EXPECT_EQ(p.jobs[1].reason,
            "no room now for 4g.20gb (2 usable nodes); fragmented: n1 GPU 0, n1 GPU 1 have "
            "enough free slices but no free placement");
}

// 1g.5gb x2 on one node, 3 nodes x 1 A100: n1 has one 1g.5gb placement left
// (6 busy at 0-5). first-fit's first instance would go to n1 @6, but the two
// do not fit there together: n2 gets both, @0 and @1.
TEST(PlannerTest, InstancesOfOneNodeStayTogether) {
  std::vector<std::string> six;
  for (int s = 0; s < 6; ++s)
    six.push_back("0:1g.5gb@" + std::to_string(s) + "=job:" + std::to_string(s));
  Fixture f({{"n1", MakeNode("n1", 1, "A100 40GB", six), ""},
             {"n2", MakeNode("n2", 1, "A100 40GB", {}), ""},
             {"n3", MakeNode("n3", 1, "A100 40GB", {}), ""}});
  f.input.waiting = {Single("a", "1g.5gb", 2)};
  ClusterPlan p = f.Plan();
  ASSERT_EQ(p.jobs[0].outcome, Outcome::kPlaced) << p.jobs[0].reason;
  EXPECT_EQ(p.jobs[0].placements, (std::vector{At(1, {{0, "1g.5gb", 0}, {0, "1g.5gb", 1}})}));
}

// Regression (multi_profile_request_refused_on_an_empty_node): a per-node request of 2x 3g.20gb
// and one 7g.40gb on one empty node of two A100s was refused ("do not fit ... together now"):
// placed as listed, `full` spread the 3g pair over both GPUs (lazy GPUs first), leaving no whole
// GPU for the 7g. By hand it fits: the 7g on one GPU, the 3g pair at 0 and 4 on the other (the
// only two 3g.20gb placements of an A100). Placed largest first, it does; placements come back
// in the request's order.
TEST(PlannerTest, AMultiProfileRequestFitsWhereSomeOrderOfItsPartsDoes) {
  Fixture f({{"n1", MakeNode("n1", 2, "A100 40GB", {}), ""}}, "full");
  ClusterJob j;
  j.key = "mixed";
  j.num_nodes = 1;
  j.per_node = {{"3g.20gb", 2}, {"7g.40gb", 1}};
  f.input.waiting = {j};
  ClusterPlan p = f.Plan();
  ASSERT_EQ(p.jobs[0].outcome, Outcome::kPlaced) << p.jobs[0].reason;
  ASSERT_EQ(p.jobs[0].placements.size(), 1u);
  const std::vector<PlacementRef>& refs = p.jobs[0].placements[0].placements;
  ASSERT_EQ(refs.size(), 3u);
  EXPECT_EQ(refs[0].profile, "3g.20gb");
  EXPECT_EQ(refs[1].profile, "3g.20gb");
  EXPECT_EQ(refs[2].profile, "7g.40gb");
  EXPECT_EQ(refs[0].gpu, refs[1].gpu);
  EXPECT_NE(refs[0].gpu, refs[2].gpu);
  EXPECT_EQ(std::set<int>({refs[0].start, refs[1].start}), (std::set<int>{0, 4}));
  EXPECT_EQ(refs[2].start, 0);
}

// -N2 7g.40gb: 3 nodes x 1 A100 with n2 busy -> n1 and n3. -N3 cannot run
// now (n2 busy) and leaves nothing behind: a following 1g.5gb still lands on
// n1 @0 (first-fit), where -N3 would have put its first instance.
TEST(PlannerTest, MultiNodeJobsAreAllOrNothing) {
  Fixture f({{"n1", MakeNode("n1", 1, "A100 40GB", {}), ""},
             {"n2", MakeNode("n2", 1, "A100 40GB", {"0:7g.40gb@0=job:1"}), ""},
             {"n3", MakeNode("n3", 1, "A100 40GB", {}), ""}});
  f.input.waiting = {Single("two", "7g.40gb", 1, 2)};
  ClusterPlan p = f.Plan();
  ASSERT_EQ(p.jobs[0].outcome, Outcome::kPlaced) << p.jobs[0].reason;
  EXPECT_EQ(p.jobs[0].placements,
            (std::vector{At(0, {{0, "7g.40gb", 0}}), At(2, {{0, "7g.40gb", 0}})}));

  f.input.waiting = {Single("three", "7g.40gb", 1, 3), Single("small", "1g.5gb")};
  p = f.Plan();
  EXPECT_EQ(p.jobs[0].outcome, Outcome::kWaiting);
  EXPECT_EQ(p.jobs[0].reason, "no room now for 7g.40gb on each of 3 nodes (3 usable nodes)");
  ASSERT_EQ(p.jobs[1].outcome, Outcome::kPlaced);
  EXPECT_EQ(p.jobs[1].placements, (std::vector{At(0, {{0, "1g.5gb", 0}})}));
  EXPECT_EQ(p.create.size(), 1u);
}

// Regression (a_drained_node_is_not_usable): the wait reason counted every usable node of the
// view, also those the job may not use. 3 nodes x 1 A100, n2 busy; a 7g.40gb that excludes n3
// cannot start (n1 is taken by the first job): it was told "3 usable nodes", by hand 2 (n1, n2;
// n3 excluded). A drained node: ADrainedGpuStaysClosedForTheWholeRound.
TEST(PlannerTest, TheWaitReasonCountsOnlyTheNodesTheJobMayUse) {
  Fixture f({{"n1", MakeNode("n1", 1, "A100 40GB", {}), ""},
             {"n2", MakeNode("n2", 1, "A100 40GB", {"0:7g.40gb@0=job:1"}), ""},
             {"n3", MakeNode("n3", 1, "A100 40GB", {}), ""}});
  ClusterJob first = Single("first", "7g.40gb");
  first.allowed_nodes = {"n1"};
  ClusterJob second = Single("second", "7g.40gb");
  second.excluded_nodes = {"n3"};
  f.input.waiting = {first, second};
  ClusterPlan p = f.Plan();
  ASSERT_EQ(p.jobs[0].outcome, Outcome::kPlaced) << p.jobs[0].reason;
  ASSERT_EQ(p.jobs[1].outcome, Outcome::kWaiting);
  EXPECT_EQ(p.jobs[1].reason, "no room now for 7g.40gb (2 usable nodes)");
}

// Reservations held: a pooled one covering a job is taken (nothing new is
// reserved for it); a claimed one stays and is not released; an unused one
// and a timed-out one are released; the next job is placed around all of
// them (they are occupied this round).
TEST(PlannerTest, HeldReservationsAreTakenKeptOrReleased) {
  NodeView n1 = MakeNode("n1", 1, "A100 40GB", {});
  AddReservation(&n1, "room-a", 0, "3g.20gb", 4);
  AddReservation(&n1, "room-b", 0, "1g.10gb", 0);  // unused
  NodeView n2 = MakeNode("n2", 1, "A100 40GB", {});
  AddReservation(&n2, "room-c", 0, "1g.5gb", 0);   // claimed
  AddReservation(&n2, "room-d", 0, "3g.20gb", 4);  // timed out
  Fixture f({{"n1", n1, ""}, {"n2", n2, ""}});
  f.input.reservations = {{0, "room-a", {{0, "3g.20gb", 4}}, "", false, false},
                          {0, "room-b", {{0, "1g.10gb", 0}}, "", false, false},
                          {1, "room-c", {{0, "1g.5gb", 0}}, "", true, false},
                          {1, "room-d", {{0, "3g.20gb", 4}}, "", false, true}};
  f.input.waiting = {Single("x", "3g.20gb"), Single("y", "2g.10gb")};
  ClusterPlan p = f.Plan();
  ASSERT_EQ(p.jobs[0].outcome, Outcome::kPlaced);
  EXPECT_EQ(p.jobs[0].reservations, std::vector<std::string>{"room-a"});
  EXPECT_EQ(p.jobs[0].placements, (std::vector{At(0, {{0, "3g.20gb", 4}})}));
  // y: n1 GPU 0 has 3g.20gb@4 and 1g.10gb@0 occupied: 2g.10gb {0,2,4}: 0 and 4
  // overlap, 2 is free (units 2-3) -> n1 GPU 0 @2.
  ASSERT_EQ(p.jobs[1].outcome, Outcome::kPlaced) << p.jobs[1].reason;
  EXPECT_EQ(p.jobs[1].placements, (std::vector{At(0, {{0, "2g.10gb", 2}})}));
  EXPECT_EQ(p.create, (std::vector<NewReservation>{{0, "y", {0, "2g.10gb", 2}}}));
  EXPECT_EQ(p.release, (std::vector<std::pair<int, std::string>>{{0, "room-b"}, {1, "room-d"}}));
}

// A reservation owned by a job key is that job's only.
TEST(PlannerTest, OwnedReservationsServeOnlyTheirJob) {
  NodeView n1 = MakeNode("n1", 1, "A100 40GB", {});
  AddReservation(&n1, "k8s:pod-1", 0, "3g.20gb", 0);
  Fixture f({{"n1", n1, ""}});
  f.input.reservations = {{0, "k8s:pod-1", {{0, "3g.20gb", 0}}, "k8s:pod-1", false, false}};
  f.input.waiting = {Single("k8s:pod-2", "3g.20gb"), Single("k8s:pod-1", "3g.20gb")};
  ClusterPlan p = f.Plan();
  ASSERT_EQ(p.jobs[0].outcome, Outcome::kPlaced);
  EXPECT_EQ(p.jobs[0].placements, (std::vector{At(0, {{0, "3g.20gb", 4}})}));  // fresh
  ASSERT_EQ(p.jobs[1].outcome, Outcome::kPlaced);
  EXPECT_EQ(p.jobs[1].reservations, std::vector<std::string>{"k8s:pod-1"});
}

TEST(PlannerTest, JobsThatCanNeverRunSayWhy) {
  Fixture f({{"n1", MakeNode("n1", 1, "A100 40GB", {}), ""},
             {"n2", MakeNode("n2", 1, "A100 40GB", {}), ""}});
  f.input.waiting = {Single("a", "9g.9gb"), Single("b", "1g.5gb", 8), Single("c", "7g.40gb", 1, 3),
                     Single("d", "1g.5gb", 7)};
  ClusterPlan p = f.Plan();
  EXPECT_EQ(p.jobs[0].outcome, Outcome::kNever);
  EXPECT_EQ(p.jobs[0].reason.rfind("no GPU of the cluster offers profile 9g.9gb (profiles: ", 0),
            0u)
      << p.jobs[0].reason;
  EXPECT_EQ(p.jobs[1].outcome, Outcome::kNever);
  EXPECT_EQ(p.jobs[1].reason,
            "no node can ever hold 8x 1g.5gb at once (a node holds at most 7 1g.5gb)");
  EXPECT_EQ(p.jobs[2].outcome, Outcome::kNever);
  EXPECT_EQ(p.jobs[2].reason, "needs 3 nodes that can each hold 7g.40gb; 2 can");
  EXPECT_EQ(p.jobs[3].outcome, Outcome::kPlaced);

  // Regression (a_mixed_request_told_the_wrong_limit): one 4g.20gb and two 3g.20gb on one node
  // fit one profile at a time (a 1-GPU A100 40GB node holds one 4g.20gb and two 3g.20gb), but
  // need 4 + 2 x 3 = 10 compute slices together, of 7. The reason said "a node holds at most 1
  // 4g.20gb".
  ClusterJob mixed;
  mixed.key = "e";
  mixed.num_nodes = 1;
  mixed.per_node = {{"4g.20gb", 1}, {"3g.20gb", 2}};
  f.input.waiting = {mixed};
  ClusterPlan q = f.Plan();
  EXPECT_EQ(q.jobs[0].outcome, Outcome::kNever);
  EXPECT_THAT(q.jobs[0].reason,
              ::testing::HasSubstr("(they need 10 compute slices together; a node has at most 7)"));

  // With a node out of reach nobody can tell: such jobs wait, saying so.
  Fixture g({{"n1", MakeNode("n1", 1, "A100 40GB", {}), ""}, {"n2", std::nullopt, "timed out"}});
  g.input.waiting = {Single("c", "7g.40gb", 1, 2)};
  p = g.Plan();
  EXPECT_EQ(p.jobs[0].outcome, Outcome::kWaiting);
  EXPECT_EQ(p.jobs[0].reason,
            "needs 2 nodes that can each hold 7g.40gb; 1 can; not usable now: n2 (timed out)");

  // Regression (trial_never_wording_for_an_unreachable_node): a job that may use only n2, which
  // is out of reach, was told "no node can ever hold 1g.5gb at once (no node holds all of them
  // together)". No node it may use could be judged: it waits, with no room on a usable node.
  ClusterJob only_n2 = Single("d", "1g.5gb", 1, 1);
  only_n2.allowed_nodes = {"n2"};
  g.input.waiting = {only_n2};
  p = g.Plan();
  EXPECT_EQ(p.jobs[0].outcome, Outcome::kWaiting);
  EXPECT_THAT(p.jobs[0].reason, ::testing::StartsWith("no room now for 1g.5gb (0 usable nodes)"));
  EXPECT_THAT(p.jobs[0].reason, ::testing::HasSubstr("not usable now: n2 (timed out)"));
  EXPECT_THAT(p.jobs[0].reason, ::testing::Not(::testing::HasSubstr("can ever")));
}

TEST(PlannerTest, AvoidedAllowedAndExcludedNodesAreRespected) {
  Fixture f({{"n1", MakeNode("n1", 1, "A100 40GB", {}), ""},
             {"n2", MakeNode("n2", 1, "A100 40GB", {}), ""},
             {"n3", MakeNode("n3", 1, "A100 40GB", {}), ""}});
  f.input.avoid = {{"n1", "1g.5gb"}};
  ClusterJob only3 = Single("b", "1g.5gb");
  only3.allowed_nodes = {"n3"};
  ClusterJob not2 = Single("c", "2g.10gb", 2);
  not2.excluded_nodes = {"n1", "n2"};
  f.input.waiting = {Single("a", "1g.5gb"), only3, not2, Single("d", "2g.10gb")};
  ClusterPlan p = f.Plan();
  EXPECT_EQ(p.jobs[0].placements, (std::vector{At(1, {{0, "1g.5gb", 0}})}));  // n1 avoided
  EXPECT_EQ(p.jobs[1].placements, (std::vector{At(2, {{0, "1g.5gb", 0}})}));
  // c: n3 GPU 0 has 1g.5gb@0: 2g.10gb {0,2,4} -> @2 and @4.
  EXPECT_EQ(p.jobs[2].placements, (std::vector{At(2, {{0, "2g.10gb", 2}, {0, "2g.10gb", 4}})}));
  EXPECT_EQ(p.jobs[3].placements,
            (std::vector{At(0, {{0, "2g.10gb", 0}})}));  // avoid is per profile
}

// 2 nodes x 1 A100. n1: a movable 1g.5gb job; n2: an unmovable 1g.5gb job
// and a movable 3g.20gb job. A 7g.40gb fits nowhere. Options: n1 GPU 0
// (move slurm:5, 1 slice) or n2 (slurm:6 is not movable: none). slurm:5
// fits again on n2 (first-fit @1). So slurm:5 is requeued for slurm:9.
// Regression drained_gpu_after_the_first_scan: the view closed a drained GPU with the reserved
// flag alone, which the first queue scan of a round opened again at its end; the jobs planned
// after it (a gang, another one-instance job) could be placed on the drained GPU, and the
// requeue search could open room there. 2 nodes x 1 A100 (first-fit); n1's GPU is drained, both
// are empty. a (7g.40gb, one instance: the first scan) goes to n2. b (2 x 1g.5gb on one node)
// and c (1g.5gb, a second scan) find n2 full and n1 drained: both wait.
TEST(PlannerTest, ADrainedGpuStaysClosedForTheWholeRound) {
  NodeView n1 = MakeNode("n1", 1, "A100 40GB", {});
  n1.gpus[0].draining = true;
  Fixture f({{"n1", n1, ""}, {"n2", MakeNode("n2", 1, "A100 40GB", {}), ""}});
  f.input.waiting = {Single("a", "7g.40gb"), Single("b", "1g.5gb", 2), Single("c", "1g.5gb")};
  ClusterPlan p = f.Plan();
  ASSERT_EQ(p.jobs.size(), 3u);
  EXPECT_EQ(p.jobs[0].outcome, Outcome::kPlaced);
  EXPECT_EQ(p.jobs[0].placements, (std::vector{At(1, {{0, "7g.40gb", 0}})}));
  EXPECT_EQ(p.jobs[1].outcome, Outcome::kWaiting) << p.jobs[1].reason;
  EXPECT_EQ(p.jobs[2].outcome, Outcome::kWaiting) << p.jobs[2].reason;
  // Regression a_drained_node_is_not_usable: "2 usable nodes" counted the drained n1.
  EXPECT_EQ(p.jobs[2].reason, "no room now for 1g.5gb (1 usable node)");
  EXPECT_EQ(p.create.size(), 1u);
}

TEST(PlannerTest, RequeuesAMovableJobToOpenRoom) {
  Fixture f(
      {{"n1", MakeNode("n1", 1, "A100 40GB", {"0:1g.5gb@0=alloc:slurm:5"}), ""},
       {"n2",
        MakeNode("n2", 1, "A100 40GB", {"0:1g.5gb@0=alloc:slurm:6", "0:3g.20gb@4=alloc:slurm:7"}),
        ""}});
  ClusterJob five = Single("slurm:5", "1g.5gb");
  five.migratable = Migratable::kRestart;
  ClusterJob six = Single("slurm:6", "1g.5gb");
  ClusterJob seven = Single("slurm:7", "3g.20gb");
  seven.migratable = Migratable::kRestart;
  f.input.running = {{five, true}, {six, false}, {seven, true}};
  f.input.waiting = {Single("slurm:9", "7g.40gb")};
  ClusterPlan p = f.Plan();
  ASSERT_EQ(p.migrations.size(), 1u);
  EXPECT_EQ(p.migrations[0].job, "slurm:5");
  EXPECT_EQ(p.migrations[0].for_job, "slurm:9");
  EXPECT_EQ(p.migrations[0].room, At(0, {{0, "7g.40gb", 0}}));
  EXPECT_EQ(p.migrations[0].reason, "requeued to open room for slurm:9 (7g.40gb on n1 GPU 0)");
  EXPECT_EQ(p.jobs[0].outcome, Outcome::kMigrating);
  EXPECT_TRUE(p.create.empty());

  // Latency-sensitive jobs never move; nor jobs the engine may not move now.
  f.input.running[0].job.latency_sensitive = true;
  EXPECT_TRUE(f.Plan().migrations.empty());
  f.input.running[0].job.latency_sensitive = false;
  f.input.running[0].may_move = false;
  EXPECT_TRUE(f.Plan().migrations.empty());
  // Not before the job has waited migrate_after_s.
  f.input.running[0].may_move = true;
  f.options.migrate_after_s = 60;
  f.input.now_s = 59;
  EXPECT_TRUE(f.Plan().migrations.empty());
  f.input.now_s = 60;
  EXPECT_EQ(f.Plan().migrations.size(), 1u);
}

// §13 evacuation carried out by requeues: the evacuation options say which waiting jobs may get
// room. 2 nodes x 1 A100 (`full`). n1 runs slurm:6 (1g.5gb@0, not movable); n2 runs slurm:5
// (1g.5gb@0, restart) and slurm:7 (1g.5gb@6, not movable). Waiting, in priority order: slurm:9
// (7g.40gb: every GPU has a job that cannot move) and slurm:10 (4g.20gb: its only placement
// 4g@0 is taken on both; on n2 only by slurm:5, which fits again on n1). By hand:
//   off    §14.5: the first stuck job, slurm:9, finds no requeue: nothing moves;
//   head   the same job: nothing;
//   queue  slurm:9 finds none, slurm:10 does: slurm:5 is requeued for it (room 4g@0 on n2);
//   queue with evacuation-min-slices 5: slurm:10 (4 slices) may not trigger: nothing.
TEST(PlannerTest, EvacuationScopeSaysWhichWaitingJobsGetRequeueRoom) {
  Fixture f(
      {{"n1", MakeNode("n1", 1, "A100 40GB", {"0:1g.5gb@0=alloc:slurm:6"}), ""},
       {"n2",
        MakeNode("n2", 1, "A100 40GB", {"0:1g.5gb@0=alloc:slurm:5", "0:1g.5gb@6=alloc:slurm:7"}),
        ""}},
      "full");
  ClusterJob five = Single("slurm:5", "1g.5gb");
  five.migratable = Migratable::kRestart;
  f.input.running = {
      {five, true}, {Single("slurm:6", "1g.5gb"), false}, {Single("slurm:7", "1g.5gb"), false}};
  f.input.waiting = {Single("slurm:9", "7g.40gb"), Single("slurm:10", "4g.20gb")};
  struct Case {
    EvacuationScope scope;
    int min_slices;
    bool moves;
  };
  for (const Case& c :
       {Case{EvacuationScope::kOff, 0, false}, Case{EvacuationScope::kHead, 0, false},
        Case{EvacuationScope::kQueue, 0, true}, Case{EvacuationScope::kQueue, 5, false}}) {
    SCOPED_TRACE(fmt::format("{} min-slices {}", EvacuationScopeName(c.scope), c.min_slices));
    f.options.scheduler.evacuation = c.scope;
    f.options.scheduler.evacuation_min_slices = c.min_slices;
    ClusterPlan p = f.Plan();
    if (!c.moves) {
      EXPECT_TRUE(p.migrations.empty());
      EXPECT_EQ(p.jobs[1].outcome, Outcome::kWaiting);
      continue;
    }
    ASSERT_EQ(p.migrations.size(), 1u);
    EXPECT_EQ(p.migrations[0].job, "slurm:5");
    EXPECT_EQ(p.migrations[0].for_job, "slurm:10");
    EXPECT_EQ(p.migrations[0].room, At(1, {{0, "4g.20gb", 0}}));
    EXPECT_EQ(p.jobs[0].outcome, Outcome::kWaiting);
    EXPECT_EQ(p.jobs[1].outcome, Outcome::kMigrating);
  }
  // evacuation-min-wait: not before slurm:10 has waited that long.
  f.options.scheduler.evacuation = EvacuationScope::kQueue;
  f.options.scheduler.evacuation_min_slices = 0;
  f.options.scheduler.evacuation_min_wait_s = 30;
  f.input.now_s = 29;
  EXPECT_TRUE(f.Plan().migrations.empty());
  f.input.now_s = 30;
  EXPECT_EQ(f.Plan().migrations.size(), 1u);
}

// The look-ahead reservation cases below: 1 node x 1 A100 (`full`, now 1000), where slurm:5 runs
// 4g.20gb@0, expected to end at 1100 (its start plus its TimeLimit).
std::vector<NodeInput> FourGNode() {
  return {{"n1", MakeNode("n1", 1, "A100 40GB", {"0:4g.20gb@0=alloc:slurm:5"}), ""}};
}
void RunFourGUntil1100(Fixture* f) {
  EngineRunningJob five{Single("slurm:5", "4g.20gb"), false};
  five.expected_end_s = 1100;
  f->input.running = {five};
  f->input.now_s = 1000;
}

// A waiting job eligible since 990 with time limit `limit` (0: none).
ClusterJob WaitingSince990(const std::string& key, const std::string& profile, double limit) {
  ClusterJob j = Single(key, profile);
  j.waiting_since_s = 990;
  j.time_limit_s = limit;
  return j;
}

// §13 look-ahead reservation with Slurm's time limits, by hand. 1 node x 1 A100 (`full`, now
// 1000): slurm:5 runs 4g.20gb@0, expected to end at 1100 (its start plus its TimeLimit). Waiting
// since 990: slurm:9, a 7g.40gb (needs the whole GPU), then three 1g.5gb: slurm:10 with a limit
// of 50 s, slurm:11 with 1000 s, slurm:12 with none. With max-skip-seconds 0 the 7g, overdue,
// reserves 7g@0, expected free at 1100: only a job that ends by then may use the GPU (EASY):
// slurm:10 (1000 + 50 <= 1100) is placed, slurm:11 (2000) and slurm:12 (no known end) wait; no
// placement beside 7g@0 exists. Without it (max-skip-seconds -1) all three are placed.
// The round keeps Slurm's order whatever the options' queue order: `full`'s own is by response
// ratio, by which slurm:10 and slurm:11, both waiting 10 s, rank (10 + 50) / 50 = 1.2 and
// (10 + 1000) / 1000 = 1.01 above the 7g.40gb without a limit ((10 + 3600) / 3600 = 1.003) and
// would start before it reserves: slurm:11 would then be placed with max-skip-seconds 0 too.
TEST(PlannerTest, ReservationUsesTheEnginesTimeLimits) {
  Fixture f(FourGNode(), "full");
  RunFourGUntil1100(&f);
  ASSERT_EQ(f.options.scheduler.queue_order, QueueOrder::kResponseRatio);
  f.input.waiting = {
      WaitingSince990("slurm:9", "7g.40gb", 0), WaitingSince990("slurm:10", "1g.5gb", 50),
      WaitingSince990("slurm:11", "1g.5gb", 1000), WaitingSince990("slurm:12", "1g.5gb", 0)};
  for (double skip : {0.0, -1.0}) {
    SCOPED_TRACE(fmt::format("max-skip-seconds {}", skip));
    f.options.scheduler.max_skip_seconds = skip;
    ClusterPlan p = f.Plan();
    ASSERT_EQ(p.jobs.size(), 4u);
    EXPECT_EQ(p.jobs[0].outcome, Outcome::kWaiting);
    EXPECT_EQ(p.jobs[1].outcome, Outcome::kPlaced);
    const Outcome later = skip >= 0 ? Outcome::kWaiting : Outcome::kPlaced;
    EXPECT_EQ(p.jobs[2].outcome, later);
    EXPECT_EQ(p.jobs[3].outcome, later);
  }
}

// §13 reservation keeping across rounds, by hand. 1 node x 1 A100 (`full`, now 1000): slurm:5
// runs 4g.20gb@0, expected to end at 1100. Waiting since 990 (max-skip-seconds 0), in Slurm's
// order: slurm:9, a 7g.40gb; slurm:10, a 4g.20gb (placement 4g@0 only); slurm:11, a 1g.5gb of
// 1000 s (ends at 2000, after 1100). Neither large job fits while slurm:5 runs.
// - No holder given: slurm:9, the first overdue job that does not fit, reserves 7g@0 from 1100
//   and is the plan's holder. slurm:11 cannot end by 1100, and a 7g leaves no room beside it: it
//   waits.
// - The last round's holder was slurm:10 and keeping is on: the scan reserves 4g@0 for it first
//   (slurm:9 then gets none: EASY, one job), slurm:10 stays the holder, and slurm:11 starts
//   beside 4g@0 (1g@4, 5 or 6 keep it valid).
// - The same with keeping off: the holder given is ignored, as in the first case.
TEST(PlannerTest, ReservationHolderIsCarriedFromRoundToRound) {
  Fixture f(FourGNode(), "full");
  RunFourGUntil1100(&f);
  ASSERT_TRUE(f.options.scheduler.reservation_keep);
  f.options.scheduler.max_skip_seconds = 0;
  f.input.waiting = {WaitingSince990("slurm:9", "7g.40gb", 0),
                     WaitingSince990("slurm:10", "4g.20gb", 0),
                     WaitingSince990("slurm:11", "1g.5gb", 1000)};
  ClusterPlan first = f.Plan();
  ASSERT_EQ(first.jobs.size(), 3u);
  EXPECT_EQ(first.reservation_holder, "slurm:9");
  EXPECT_EQ(first.jobs[2].outcome, Outcome::kWaiting);

  f.input.reservation_holder = "slurm:10";
  ClusterPlan kept = f.Plan();
  EXPECT_EQ(kept.reservation_holder, "slurm:10");
  EXPECT_EQ(kept.jobs[0].outcome, Outcome::kWaiting);
  EXPECT_EQ(kept.jobs[1].outcome, Outcome::kWaiting);
  ASSERT_EQ(kept.jobs[2].outcome, Outcome::kPlaced) << kept.jobs[2].reason;
  ASSERT_EQ(kept.jobs[2].placements.size(), 1u);
  ASSERT_EQ(kept.jobs[2].placements[0].placements.size(), 1u);
  EXPECT_GE(kept.jobs[2].placements[0].placements[0].start, 4);

  f.options.scheduler.reservation_keep = false;
  ClusterPlan off = f.Plan();
  EXPECT_EQ(off.reservation_holder, "slurm:9");
  EXPECT_EQ(off.jobs[2].outcome, Outcome::kWaiting);
}

// No move if the moved job would find no room again.
TEST(PlannerTest, NoRequeueWhenTheMovedJobCannotBePlacedAgain) {
  Fixture f({{"n1", MakeNode("n1", 1, "A100 40GB", {"0:4g.20gb@0=alloc:slurm:5"}), ""},
             {"n2", MakeNode("n2", 1, "A100 40GB", {"0:4g.20gb@0=alloc:slurm:6"}), ""}});
  ClusterJob five = Single("slurm:5", "4g.20gb");
  five.migratable = Migratable::kRestart;
  f.input.running = {{five, true}};
  f.input.waiting = {Single("slurm:9", "7g.40gb")};
  ClusterPlan p = f.Plan();
  EXPECT_TRUE(p.migrations.empty());
  EXPECT_EQ(p.jobs[0].outcome, Outcome::kWaiting);
}

// A migration in flight: no new one; its job goes first, ahead of a job of
// higher priority that would take the room.
TEST(PlannerTest, InFlightMigrationsGoFirstAndAreNotRepeated) {
  Fixture f({{"n1", MakeNode("n1", 1, "A100 40GB", {"0:1g.5gb@3=alloc:slurm:5"}), ""}});
  ClusterJob five = Single("slurm:5", "1g.5gb");
  five.migratable = Migratable::kRestart;
  f.input.running = {{five, true}};
  f.input.in_flight = {{"slurm:9", {"slurm:5"}}};
  f.input.waiting = {Single("slurm:8", "1g.5gb"), Single("slurm:9", "7g.40gb")};
  ClusterPlan p = f.Plan();
  // slurm:5 still holds its instance: slurm:9 waits for it; slurm:8 is placed.
  EXPECT_EQ(p.jobs[1].outcome, Outcome::kMigrating);
  EXPECT_NE(p.jobs[1].reason.find("waiting for slurm:5 to release"), std::string::npos);
  EXPECT_TRUE(p.migrations.empty());
  EXPECT_EQ(p.jobs[0].outcome, Outcome::kPlaced);

  // Released: slurm:9 takes the GPU before slurm:8.
  Fixture g({{"n1", MakeNode("n1", 1, "A100 40GB", {"0:1g.5gb@3=idle"}), ""}});
  g.input.in_flight = {{"slurm:9", {"slurm:5"}}};
  g.input.waiting = {Single("slurm:8", "1g.5gb"), Single("slurm:9", "7g.40gb")};
  p = g.Plan();
  ASSERT_EQ(p.jobs[1].outcome, Outcome::kPlaced);
  EXPECT_EQ(p.jobs[1].placements, (std::vector{At(0, {{0, "7g.40gb", 0}})}));
  EXPECT_EQ(p.jobs[0].outcome, Outcome::kWaiting);
}

TEST(PlannerTest, RefusesInputItCannotUse) {
  Fixture f({{"n1", MakeNode("n1", 1, "A100 40GB", {}), ""}});
  f.input.waiting = {Single("a", "1g.5gb"), Single("a", "1g.5gb")};
  auto p = PlanCluster(f.input, f.options);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "job 'a' is listed twice");
  f.input.waiting.pop_back();
  f.input.reservations = {{3, "r", {}, "", false, false}};
  p = PlanCluster(f.input, f.options);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "reservation 'r' names node 3, not in the view");
}

// Randomized, against the simulator's core: for one-instance jobs on any
// node, the planner's placements equal those of one queue scan (§5, with §12
// joint placement where the policy has it) of a Scheduler on one flat
// cluster of the same GPUs, built here without the view, for the same
// policy (full, lb+frag, first-fit), node states and job order. Seed printed.
TEST(PlannerTest, OneInstanceJobsMatchTheFlatScheduler) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  const GpuModel& a100 = migsched::testing::Model("A100-40GB");
  const std::vector<std::string> profiles = {"1g.5gb",  "1g.10gb", "2g.10gb",
                                             "3g.20gb", "4g.20gb", "7g.40gb"};
  for (const std::string policy : {"full", "lb+frag", "first-fit"}) {
    for (int round = 0; round < 20; ++round) {
      const int nodes = 1 + static_cast<int>(rng() % 4);
      const int per_node = 1 + static_cast<int>(rng() % 3);
      // Random busy/idle instances, first-fit style so they are valid.
      ConfigTableCache tables;
      Cluster flat(std::vector<const GpuModel*>(nodes * per_node, &a100), &tables);
      std::vector<NodeInput> inputs;
      JobId next = 1;
      for (int n = 0; n < nodes; ++n) {
        std::vector<std::string> inst;
        for (int k = 0; k < per_node; ++k) {
          const int g = n * per_node + k;
          for (int t = 0; t < 4; ++t) {
            const std::string& pn = profiles[rng() % 4];
            const int p = a100.FindProfile(pn);
            for (int slot : a100.SlotsOfProfile(p)) {
              const int start = a100.slots()[slot].start;
              Plan pl{{{StepKind::kCreate, g, p, start}}};
              const bool busy = rng() % 3 != 0;
              if (busy) pl.steps.push_back({StepKind::kStart, g, p, start, next});
              if (ApplyPlan(pl, &flat).ok()) {
                inst.push_back(fmt::format("{}:{}@{}={}", k, pn, start,
                                           busy ? fmt::format("alloc:o{}", next) : "idle"));
                ++next;
                break;
              }
            }
          }
        }
        const std::string name = "n" + std::to_string(n + 1);
        inputs.push_back({name, MakeNode(name, per_node, "A100 40GB", inst), ""});
      }
      Fixture f(inputs, policy);
      ASSERT_EQ(f.view->cluster().size(), flat.size());
      for (int g = 0; g < flat.size(); ++g) {
        ASSERT_EQ(f.view->cluster().gpu(g).all_config(), flat.gpu(g).all_config()) << g;
        ASSERT_EQ(f.view->cluster().gpu(g).busy_config(), flat.gpu(g).busy_config()) << g;
      }
      SchedulerOptions so = f.options.scheduler;
      auto ref_policy = MakePolicy(policy, so);
      ASSERT_TRUE(ref_policy.ok());
      Scheduler ref(&flat, std::move(*ref_policy), so, SteadyClock());
      std::vector<ClusterJob> jobs;
      for (int j = 0; j < 12; ++j) {
        jobs.push_back(Single("j" + std::to_string(j), profiles[rng() % 6]));
        Job rj;
        rj.name = jobs.back().key;
        rj.profile = jobs.back().per_node[0].profile;
        ref.Enqueue(1000 + j, rj);
      }
      f.input.waiting = jobs;
      ClusterPlan p = f.Plan();
      auto decisions = ref.ScheduleQueue();
      ASSERT_TRUE(decisions.ok()) << decisions.status().ToString();
      std::map<JobId, InstanceRef> placed;
      for (const Decision& d : *decisions) placed[d.job] = d.instances[0];
      for (size_t j = 0; j < jobs.size(); ++j) {
        const JobPlan& jp = p.jobs[j];
        auto it = placed.find(1000 + static_cast<JobId>(j));
        if (it == placed.end()) {
          EXPECT_EQ(jp.outcome, Outcome::kWaiting) << policy << " job " << j;
          continue;
        }
        ASSERT_EQ(jp.outcome, Outcome::kPlaced) << policy << " job " << j << ": " << jp.reason;
        const InstanceRef& in = it->second;
        EXPECT_EQ(jp.placements[0].node, in.gpu / per_node) << policy << " job " << j;
        EXPECT_EQ(
            jp.placements[0].placements[0],
            (PlacementRef{NvmlIndex::Of(in.gpu % per_node), jobs[j].per_node[0].profile, in.start}))
            << policy << " job " << j;
      }
    }
  }
}

}  // namespace
}  // namespace migsched
