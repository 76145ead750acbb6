// The §6 defragmentation planner on hand-made states: which moves one pass
// begins, and the FragCost that results. Every expected move is derived by
// hand in the comments (FragCost values of A100 40GB configurations as in
// tests/data/cases/fragcost-a100-40gb.json and the §2 table).
//
// A100 40GB: 1g.5gb at 0..6 (1 unit), 1g.10gb/2g.10gb at 0,2,4(,6) (2 units),
// 3g.20gb at 0,4 (4 units), 4g.20gb at 0, 7g at 0; 7 compute slices. For
// three busy 1g.5gb the ideal counts are 1g.5gb 4, 1g.10gb 2, 2g 2, 3g 1,
// 4g 1 (7g does not fit by capacity), so
//   FragCost = 1 - (f1/4 + f10/2 + f2/2 + f3 + f4) / 5.
#include "sched/migration_planner.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/instance_list.h"
#include "core/numbers.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AJob;
using ::migsched::testing::Model;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::StartsWith;

struct RunningJob {
  int gpu;
  std::string instance;  // PROFILE@START
  Migratable migratable = Migratable::kCheckpoint;
  bool latency_sensitive = false;
  double expected_end_s = kInf;
  int same_job_as = -1;  // >= 0: another instance of that earlier job (a gang, `count` > 1)
};

// A cluster whose busy instances run the given jobs (ids 0, 1, ... in order),
// and a pass of the planner over it.
class PlannerBench {
 public:
  PlannerBench(const std::vector<std::string>& models, const std::vector<RunningJob>& jobs) {
    std::vector<const GpuModel*> ms;
    for (const std::string& m : models) ms.push_back(&Model(m));
    cluster_ = std::make_unique<Cluster>(ms, &tables_);
    Start(jobs);
  }

  // Starts more jobs (ids continue), one plan for all of them.
  void Start(const std::vector<RunningJob>& jobs) {
    Plan plan;
    for (const RunningJob& r : jobs) {
      const GpuModel& m = cluster_->gpu(r.gpu).model();
      auto list = ParseInstanceList(r.instance, m);
      EXPECT_TRUE(list.ok() && list->size() == 1u) << r.instance;
      const InstanceSpec in = list->front();
      if (r.same_job_as >= 0) {
        const JobId id = static_cast<JobId>(r.same_job_as);
        ++specs_[id].count;
        plan.steps.push_back({StepKind::kCreate, r.gpu, in.profile, in.start, kNoJob});
        plan.steps.push_back({StepKind::kStart, r.gpu, in.profile, in.start, id});
        continue;
      }
      const JobId id = static_cast<JobId>(specs_.size());
      plan.steps.push_back({StepKind::kCreate, r.gpu, in.profile, in.start, kNoJob});
      plan.steps.push_back({StepKind::kStart, r.gpu, in.profile, in.start, id});
      specs_.push_back(AJob(m.profile(in.profile).name)
                           .Named("j" + std::to_string(id))
                           .Moves(r.migratable)
                           .LatencySensitive(r.latency_sensitive));
      ends_.push_back(r.expected_end_s);
    }
    Status st = ApplyPlan(plan, cluster_.get());
    EXPECT_TRUE(st.ok()) << st.ToString();
  }

  // Runs one pass (of `planner`, or of a new planner); returns the moves as
  // "job J: G:profile@S -> G:profile@S".
  std::vector<std::string> Pass(MigrationTrigger trigger, const SchedulerOptions& options,
                                std::vector<Reservation> reservations = {},
                                std::vector<Job> fragmented = {},
                                MigrationPlanner* planner = nullptr) {
    MigrationContext ctx;
    ctx.trigger = trigger;
    ctx.options = &options;
    ctx.now_s = 0;
    ctx.rights = [&](JobId id) {
      const Job& j = specs_[id];
      if (j.migratable == Migratable::kNone) return MoveRights::kNone;
      return j.latency_sensitive ? MoveRights::kIntra : MoveRights::kAny;
    };
    ctx.job = [&](JobId id) { return &specs_[id]; };
    ctx.expected_end_s = [&](JobId id) { return ends_[id]; };
    ctx.reservations = std::move(reservations);
    for (const Job& j : fragmented) ctx.fragmented.push_back(&j);
    for (const Reservation& r : ctx.reservations) cluster_->SetReserved(r.gpu, true);
    std::unique_ptr<MigrationPlanner> own = NewDefragPlanner();
    if (planner == nullptr) planner = own.get();
    auto starts = planner->RunPass(cluster_.get(), ctx);
    for (const Reservation& r : ctx.reservations) cluster_->SetReserved(r.gpu, false);
    EXPECT_TRUE(starts.ok()) << starts.status().ToString();
    std::vector<std::string> out;
    if (!starts.ok()) return out;
    std::set<JobId> moved;  // one move in flight per job (§6)
    for (const MigrationStart& s : *starts) {
      EXPECT_TRUE(moved.insert(s.move.job).second) << "a second move of job " << s.move.job;
      out.push_back(fmt::format("job {}: {} -> {}", s.move.job, Ref(s.move.from), Ref(s.move.to)));
    }
    for (int g = 0; g < cluster_->size(); ++g) {
      Status inv = cluster_->gpu(g).CheckInvariants();
      EXPECT_TRUE(inv.ok()) << inv.ToString();
    }
    return out;
  }

  // FragCost of GPU g once the copies in flight have switched over.
  double SettledFragCost(int g) const {
    const GpuState& s = cluster_->gpu(g);
    return s.table().FragCost(s.settled_config());
  }
  const Cluster& cluster() const { return *cluster_; }
  // Off: the naive O(GPUs) scan instead of the state groups.
  void SetGrouping(bool on) { cluster_->set_grouping(on); }

 private:
  std::string Ref(const InstanceRef& r) const {
    return fmt::format("{}:{}@{}", r.gpu, cluster_->gpu(r.gpu).model().profile(r.profile).name,
                       r.start);
  }

  ConfigTableCache tables_;
  std::unique_ptr<Cluster> cluster_;
  std::vector<Job> specs_;
  std::vector<double> ends_;
};

SchedulerOptions Opts(double threshold = 0.4, int max_moves = 8) {
  SchedulerOptions o;
  o.threshold = threshold;
  o.migration.max_moves_per_pass = max_moves;
  return o;
}

// Busy 1g@0, 1g@1, 1g@5 on one A100: FragCost 0.5 (§2 table), util 3/7 >= 0.4: busy.
// Single moves (settled FragCost after):
//   1g@5 -> 2 or 3: {0,1,2}/{0,1,3}: 1g 4/4, 1g.10gb 2/2 (4-5, 6-7), 2g 1/2 (4),
//                   3g 1/1 (4), 4g 0/1 -> 1 - 3.5/5 = 0.3
//   1g@5 -> 4: {0,1,4}: 1g.10gb 2/2, 2g 1/2, 3g 0, 4g 0 -> 0.5
//   1g@5 -> 6: {0,1,6}: 1g.10gb 2/2, 2g 2/2, 3g 0, 4g 0 -> 0.4
//   1g@0 or 1g@1 -> 2/3: {1,5,x}: 1g.10gb 1/2 (6-7), 2g 0 -> 0.7; -> 4: 0.5; -> 6: 0.6
// Best: 1g@5 -> 2 or 3 (decrease 0.2); tie to the higher target start: 3.
// Then, with 1g@5 still busy during the copy, the free targets are 2, 4, 6
// and the movable sources 0 and 1: {1,2,3}: 0.3 (no decrease), {1,3,4}: 0.7,
// {1,3,6}: 0.6 (and the same for 1g@1): the pass stops after one move.
TEST(MigrationPlannerTest, IntraMoveTakesTheLargestFragCostDecrease) {
  PlannerBench b({"A100-40GB"}, {{0, "1g.5gb@0"}, {0, "1g.5gb@1"}, {0, "1g.5gb@5"}});
  EXPECT_NEAR(b.SettledFragCost(0), 0.5, 1e-9);
  EXPECT_THAT(b.Pass(MigrationTrigger::kCompletion, Opts()),
              ElementsAre("job 2: 0:1g.5gb@5 -> 0:1g.5gb@3"));
  EXPECT_NEAR(b.SettledFragCost(0), 0.3, 1e-9);
  // Make-before-break: source and target both busy until the switch-over.
  EXPECT_EQ(b.cluster().gpu(0).busy_compute_slices(), 4);
}

// The planner keeps what it learnt of GPU states between passes (StateScan)
// and must look again at GPUs changed in between, and at every GPU of a
// cluster it has not seen. Busy 1g@0, 1g@1 alone: util 2/7 < 0.4, lazy, no
// move. Adding 1g@5 gives the case above: job 2 moves 5 -> 3.
TEST(MigrationPlannerTest, AKeptPlannerSeesStatesChangedBetweenPasses) {
  std::unique_ptr<MigrationPlanner> planner = NewDefragPlanner();
  PlannerBench b({"A100-40GB"}, {{0, "1g.5gb@0"}, {0, "1g.5gb@1"}});
  EXPECT_THAT(b.Pass(MigrationTrigger::kTick, Opts(), {}, {}, planner.get()), IsEmpty());
  b.Start({{0, "1g.5gb@5"}});
  EXPECT_THAT(b.Pass(MigrationTrigger::kTick, Opts(), {}, {}, planner.get()),
              ElementsAre("job 2: 0:1g.5gb@5 -> 0:1g.5gb@3"));
  // The same planner on another cluster of the same size and as many changes
  // (one plan each): it must not take that cluster's GPU 0 for the one it saw.
  std::unique_ptr<MigrationPlanner> fresh = NewDefragPlanner();
  PlannerBench lazy({"A100-40GB"}, {{0, "1g.5gb@0"}, {0, "1g.5gb@1"}});
  EXPECT_THAT(lazy.Pass(MigrationTrigger::kTick, Opts(), {}, {}, fresh.get()), IsEmpty());
  PlannerBench other({"A100-40GB"}, {{0, "1g.5gb@0"}, {0, "1g.5gb@1"}, {0, "1g.5gb@5"}});
  EXPECT_THAT(other.Pass(MigrationTrigger::kTick, Opts(), {}, {}, fresh.get()),
              ElementsAre("job 2: 0:1g.5gb@5 -> 0:1g.5gb@3"));
  // Another threshold: every GPU again. At t = 0.5 util 3/7 is lazy: no
  // move; then at t = 0.4, nothing changed in between, the move of job 2.
  std::unique_ptr<MigrationPlanner> third = NewDefragPlanner();
  PlannerBench same({"A100-40GB"}, {{0, "1g.5gb@0"}, {0, "1g.5gb@1"}, {0, "1g.5gb@5"}});
  EXPECT_THAT(same.Pass(MigrationTrigger::kTick, Opts(0.5), {}, {}, third.get()), IsEmpty());
  EXPECT_THAT(same.Pass(MigrationTrigger::kTick, Opts(0.4), {}, {}, third.get()),
              ElementsAre("job 2: 0:1g.5gb@5 -> 0:1g.5gb@3"));
}

TEST(MigrationPlannerTest, IntraMovesNeedABusyGpuAndAMoveBudget) {
  // util 3/7 = 0.43 < t = 0.5: lazy, no intra move.
  PlannerBench lazy({"A100-40GB"}, {{0, "1g.5gb@0"}, {0, "1g.5gb@1"}, {0, "1g.5gb@5"}});
  EXPECT_THAT(lazy.Pass(MigrationTrigger::kTick, Opts(0.5)), IsEmpty());
  // max_moves_per_pass 0: none either.
  PlannerBench capped({"A100-40GB"}, {{0, "1g.5gb@0"}, {0, "1g.5gb@1"}, {0, "1g.5gb@5"}});
  EXPECT_THAT(capped.Pass(MigrationTrigger::kTick, Opts(0.4, 0)), IsEmpty());
}

TEST(MigrationPlannerTest, RepeatsIntraMovesWhileFragCostFalls) {
  // Busy 1g@1, 1g@3 (j0, j1) and 3g@4 (j2, not movable): util 5/7. Ideal for
  // {1g, 1g, 3g}: 1g.5gb 2, 1g.10gb 1, 2g 1; 3g and 4g do not fit by capacity.
  //   now {1,3,3g@4}: 1g 2/2 (0, 2), 1g.10gb 0/1, 2g 0/1 -> 1 - 1/3 = 0.6667
  //   1g@1 -> 2: {2,3}: 1g 2/2, 1g.10gb 1/1 (0-1), 2g 1/1 (0) -> 0
  //   1g@3 -> 0: {0,1}: 1g.10gb 1/1 (2-3), 2g 1/1 (2) -> 0
  //   others: 1g@1 -> 0 or 1g@3 -> 2: still one 1g per pair -> 0.6667
  // Both best moves reach 0; tie to the lower source start: 1g@1 -> 2. Then
  // FragCost 0 cannot fall further: one move.
  PlannerBench b({"A100-40GB"},
                 {{0, "1g.5gb@1"}, {0, "1g.5gb@3"}, {0, "3g.20gb@4", Migratable::kNone}});
  EXPECT_NEAR(b.SettledFragCost(0), 2.0 / 3, 1e-9);
  EXPECT_THAT(b.Pass(MigrationTrigger::kCompletion, Opts()),
              ElementsAre("job 0: 0:1g.5gb@1 -> 0:1g.5gb@2"));
  EXPECT_NEAR(b.SettledFragCost(0), 0, 1e-9);
}

// GPU 0 as above (FragCost 0.5, util 3/7: busy), GPU 1 empty (lazy).
// Leaving GPU 0: 1g@0 -> {1,5}: 0.5667, 1g@1 -> {0,5}: 0.5667 (FragCost
// rises: not candidates), 1g@5 -> {0,1}: 0.2 (decrease 0.3). On the empty
// GPU a 1g goes to 6 (ΔFragCost 0, §2 table). Sum 0.5 + 0 -> 0.2 + 0:
// accepted. GPU 0 is then lazy (2/7), no more candidates.
struct CrossGpuCase {
  std::string name;
  Migratable migratable;
  bool latency_sensitive;
  int max_moves;
  std::vector<std::string> expected;
};

class CrossGpuTest : public ::testing::TestWithParam<CrossGpuCase> {};

TEST_P(CrossGpuTest, OnlyJobsThatMayLeaveTheirGpuArePulled) {
  const CrossGpuCase& c = GetParam();
  PlannerBench b(
      {"A100-40GB", "A100-40GB"},
      {{0, "1g.5gb@0"}, {0, "1g.5gb@1"}, {0, "1g.5gb@5", c.migratable, c.latency_sensitive}});
  EXPECT_EQ(b.Pass(MigrationTrigger::kCompletion, Opts(0.4, c.max_moves)), c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CrossGpuTest,
    ::testing::Values(
        // Intra off (budget 0): the pull above.
        CrossGpuCase{"CheckpointJobIsPulled",
                     Migratable::kCheckpoint,
                     false,
                     0,
                     {"job 2: 0:1g.5gb@5 -> 1:1g.5gb@6"}},
        CrossGpuCase{"RestartJobIsPulled",
                     Migratable::kRestart,
                     false,
                     0,
                     {"job 2: 0:1g.5gb@5 -> 1:1g.5gb@6"}},
        CrossGpuCase{"NoneJobStays", Migratable::kNone, false, 0, {}},
        CrossGpuCase{"LatencySensitiveJobStaysOnItsGpu", Migratable::kCheckpoint, true, 0, {}},
        // Intra on: the latency-sensitive job still moves within GPU 0 (5 -> 3,
        // as in IntraMoveTakesTheLargestFragCostDecrease); then 1g@0 and 1g@1
        // leaving {0,1,3} would raise its FragCost (0.3 -> 0.3667): no pull.
        CrossGpuCase{"LatencySensitiveJobMovesWithinItsGpu",
                     Migratable::kCheckpoint,
                     true,
                     8,
                     {"job 2: 0:1g.5gb@5 -> 0:1g.5gb@3"}},
        // The `none` job cannot move; 1g@0 / 1g@1 have no decreasing move
        // ({1,5,x} >= 0.5) and their leaving raises FragCost: nothing.
        CrossGpuCase{"NoneJobNeverMoves", Migratable::kNone, false, 8, {}}),
    [](const auto& info) { return info.param.name; });

TEST(MigrationPlannerTest, AReservedGpuIsNeverATarget) {
  // The pull of CrossGpuTest with GPU 1 reserved: no target left.
  PlannerBench b({"A100-40GB", "A100-40GB"}, {{0, "1g.5gb@0"}, {0, "1g.5gb@1"}, {0, "1g.5gb@5"}});
  Reservation r;
  r.gpu = 1;
  r.profile = Model("A100-40GB").FindProfile("7g.40gb");
  r.start = 0;
  EXPECT_THAT(b.Pass(MigrationTrigger::kCompletion, Opts(0.4, 0), {r}), IsEmpty());
  // GPU 0 reserved (for a 1g.5gb@6, which is free: nothing to evacuate):
  // its intra move would target GPU 0 itself, so it is not made; the pull to
  // GPU 1 still is.
  PlannerBench c({"A100-40GB", "A100-40GB"}, {{0, "1g.5gb@0"}, {0, "1g.5gb@1"}, {0, "1g.5gb@5"}});
  r.gpu = 0;
  r.profile = Model("A100-40GB").FindProfile("1g.5gb");
  r.start = 6;
  EXPECT_THAT(c.Pass(MigrationTrigger::kCompletion, Opts(), {r}),
              ElementsAre("job 2: 0:1g.5gb@5 -> 1:1g.5gb@6"));
}

TEST(MigrationPlannerTest, EvacuatesAReservedGpuWhenThatFreesItSooner) {
  // GPU 0 reserved for a 7g.40gb@0; its blockers: j0 (1g@0, `none`, ends at
  // 100) and j1 (1g@5, checkpoint, ends at 1000). Moving j1 frees the
  // placement at 100 instead of 1000: j1 goes to GPU 1 by §4 (empty GPU:
  // 1g@6, ΔFragCost 0).
  Reservation r;
  r.gpu = 0;
  r.profile = Model("A100-40GB").FindProfile("7g.40gb");
  r.start = 0;
  PlannerBench b({"A100-40GB", "A100-40GB"},
                 {{0, "1g.5gb@0", Migratable::kNone, false, 100},
                  {0, "1g.5gb@5", Migratable::kCheckpoint, false, 1000}});
  EXPECT_THAT(b.Pass(MigrationTrigger::kTick, Opts(), {r}),
              ElementsAre("job 1: 0:1g.5gb@5 -> 1:1g.5gb@6"));
  // j0 ending after j1: moving j1 gains nothing (the `none` job holds the
  // placement longer anyway).
  PlannerBench late({"A100-40GB", "A100-40GB"},
                    {{0, "1g.5gb@0", Migratable::kNone, false, 2000},
                     {0, "1g.5gb@5", Migratable::kCheckpoint, false, 1000}});
  EXPECT_THAT(late.Pass(MigrationTrigger::kTick, Opts(), {r}), IsEmpty());
}

// Regression (a crash of `full`: "migration planner began a second move"): GPU 0 is reserved for a
// 7g.40gb@0; its blockers are j0, a gang (`count` 2) with both instances here (1g@0 and 1g@5,
// checkpoint, ends at 1000), and j1 (1g@3, `none`, ends at 100). Each of j0's instances alone is a
// mover, but a job has one move in flight at most, so j0 may move neither: it holds the placement
// until 1000 whatever moves, and the evacuation begins nothing. (Before the fix it began both of
// j0's moves.) The pass is a kFragmented one with no fragmented request: the evacuation of the
// reservations is all it does (the intra and inter passes of the other triggers may move one
// instance of j0 on their own, which is allowed).
TEST(MigrationPlannerTest, AGangWithTwoBlockersOnAReservedGpuMovesNeither) {
  Reservation r;
  r.gpu = 0;
  r.profile = Model("A100-40GB").FindProfile("7g.40gb");
  r.start = 0;
  PlannerBench b({"A100-40GB", "A100-40GB"},
                 {{0, "1g.5gb@0", Migratable::kCheckpoint, false, 1000},
                  {0, "1g.5gb@3", Migratable::kNone, false, 100},
                  {0, "1g.5gb@5", Migratable::kCheckpoint, false, 1000, /*same_job_as=*/0}});
  EXPECT_THAT(b.Pass(MigrationTrigger::kFragmented, Opts(), {r}), IsEmpty());
  // The same with j0's second instance on GPU 1: j0 has one blocker here, and moving it frees the
  // placement at 100 instead of 1000, so exactly that one move begins, to GPU 1 (GPU 0 is
  // reserved; which 1g.5gb placement there is §4's choice, tested above).
  PlannerBench split({"A100-40GB", "A100-40GB"},
                     {{0, "1g.5gb@0", Migratable::kCheckpoint, false, 1000},
                      {0, "1g.5gb@3", Migratable::kNone, false, 100},
                      {1, "1g.5gb@5", Migratable::kCheckpoint, false, 1000, /*same_job_as=*/0}});
  EXPECT_THAT(split.Pass(MigrationTrigger::kFragmented, Opts(), {r}),
              ElementsAre(StartsWith("job 0: 0:1g.5gb@0 -> 1:1g.5gb@")));
}

// Several GPUs in the same state: the planner looks at one per state group
// (Cluster::representatives) and must still pick the GPU the naive scan
// picks, the lowest index among equals; both ways are run.
TEST(MigrationPlannerTest, AmongGpusInTheSameStateTheLowestIndexWins) {
  for (bool grouping : {true, false}) {
    SCOPED_TRACE(grouping ? "grouping on" : "grouping off");
    // The evacuation of EvacuatesAReservedGpuWhenThatFreesItSooner with three
    // empty GPUs 1..3: 1g@6 on each of them is the same §4 score (ΔFragCost
    // 0), reuse, destroys and util tie, so the lower GPU index wins: GPU 1.
    Reservation r;
    r.gpu = 0;
    r.profile = Model("A100-40GB").FindProfile("7g.40gb");
    r.start = 0;
    PlannerBench evac({"A100-40GB", "A100-40GB", "A100-40GB", "A100-40GB"},
                      {{0, "1g.5gb@0", Migratable::kNone, false, 100},
                       {0, "1g.5gb@5", Migratable::kCheckpoint, false, 1000}});
    evac.SetGrouping(grouping);
    EXPECT_THAT(evac.Pass(MigrationTrigger::kTick, Opts(), {r}),
                ElementsAre("job 1: 0:1g.5gb@5 -> 1:1g.5gb@6"));
    // The pull of CrossGpuTest (1g@5 leaves GPU 0, decrease 0.3) with lazy
    // GPU 1 = {1g@6 (`none`)} (util 1/7) and empty GPUs 2, 3 (util 0): lazy
    // GPUs are offered the pull by lower util first, then lower index: GPU 2,
    // where the 1g goes to 6 (ΔFragCost 0; 0.5 + 0 -> 0.2 + 0, accepted).
    // GPU 0 is then lazy (2/7): no more pulls.
    PlannerBench pull(
        {"A100-40GB", "A100-40GB", "A100-40GB", "A100-40GB"},
        {{0, "1g.5gb@0"}, {0, "1g.5gb@1"}, {0, "1g.5gb@5"}, {1, "1g.5gb@6", Migratable::kNone}});
    pull.SetGrouping(grouping);
    EXPECT_THAT(pull.Pass(MigrationTrigger::kCompletion, Opts(0.4, 0)),
                ElementsAre("job 2: 0:1g.5gb@5 -> 2:1g.5gb@6"));
  }
}

TEST(MigrationPlannerTest, FragmentedArrivalGetsAMoveThatMakesRoom) {
  // A 3g.20gb arrives at GPU 0 = {1g@0, 1g@1, 1g@5}: 4 free compute slices and
  // 5 free units, but 3g@0 (units 0-3) and 3g@4 (4-7) are both blocked.
  // Moves after which a 3g fits: 1g@5 -> 2 or 3 (3g@4 free), FragCost 0.3
  // both; 1g@0/1g@1 anywhere still block both halves. Tie to the higher
  // target start: 1g@5 -> 3.
  Job want;
  want.profile = "3g.20gb";
  want.time_limit_s = 1;
  PlannerBench b({"A100-40GB"}, {{0, "1g.5gb@0"}, {0, "1g.5gb@1"}, {0, "1g.5gb@5"}});
  EXPECT_THAT(b.Pass(MigrationTrigger::kFragmented, Opts(), {}, {want}),
              ElementsAre("job 2: 0:1g.5gb@5 -> 0:1g.5gb@3"));
  // With j2 `none` no move makes room: 1g@0 and 1g@1 anywhere still block both halves.
  PlannerBench stuck({"A100-40GB"},
                     {{0, "1g.5gb@0"}, {0, "1g.5gb@1"}, {0, "1g.5gb@5", Migratable::kNone}});
  EXPECT_THAT(stuck.Pass(MigrationTrigger::kFragmented, Opts(), {}, {want}), IsEmpty());
}

TEST(MigrationPlannerTest, FragmentedRoomMayComeFromAnotherGpu) {
  // GPU 0 = {1g@0, 1g@2 (both `none`), 2g@4}: 4 slices used, 3 free; free
  // units 1, 3, 6, 7; 3g@0 and 3g@4 blocked: fragmented for a 3g. The 2g
  // cannot move within GPU 0 (2g@0 and 2g@2 overlap the 1g's), so it leaves:
  // on the empty GPU 1, 2g@4 keeps every other profile's ideal count
  // (1g 5/5, 1g.10gb 3/3, 2g 2/2, 3g@0, 4g@0: FragCost 0) while 2g@0 or 2g@2
  // block the 4g (0.2). Afterwards 3g@4 fits on GPU 0.
  Job want;
  want.profile = "3g.20gb";
  want.time_limit_s = 1;
  PlannerBench b(
      {"A100-40GB", "A100-40GB"},
      {{0, "1g.5gb@0", Migratable::kNone}, {0, "1g.5gb@2", Migratable::kNone}, {0, "2g.10gb@4"}});
  EXPECT_THAT(b.Pass(MigrationTrigger::kFragmented, Opts(), {}, {want}),
              ElementsAre("job 2: 0:2g.10gb@4 -> 1:2g.10gb@4"));
  // Latency-sensitive, the 2g may not leave its GPU: no move.
  PlannerBench ls({"A100-40GB", "A100-40GB"}, {{0, "1g.5gb@0", Migratable::kNone},
                                               {0, "1g.5gb@2", Migratable::kNone},
                                               {0, "2g.10gb@4", Migratable::kCheckpoint, true}});
  EXPECT_THAT(ls.Pass(MigrationTrigger::kFragmented, Opts(), {}, {want}), IsEmpty());
}

// A made-up 4-unit model whose 2g placements overlap (0-1, 1-2, 2-3), so
// that the only better place for a 2g overlaps the 2g itself.
TEST(MigrationPlannerTest, ATargetOverlappingItsOwnSourceIsNotMade) {
  GpuModel::Spec s;
  s.name = "Overlap 4U";
  s.short_names = {"OVERLAP-4U"};
  s.compute_slices = 4;
  s.memory_slices = 4;
  s.placement_units = 4;
  s.profiles = {Profile{"1g", 1, 0, 1, 1, 1024, 4, {{0, 1}, {1, 1}, {2, 1}, {3, 1}}, ""},
                Profile{"2g", 2, 1, 2, 2, 2048, 2, {{0, 2}, {1, 2}, {2, 2}}, ""}};
  StatusOr<GpuModel> model = GpuModel::Create(s);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ConfigTableCache tables;
  Cluster cluster({&*model}, &tables);
  const int two = model->FindProfile("2g");
  ASSERT_TRUE(
      ApplyPlan({{{StepKind::kCreate, 0, two, 1, kNoJob}, {StepKind::kStart, 0, two, 1, 0}}},
                &cluster)
          .ok());
  // 2g@1: free units 0 and 3; 1g 2/2, 2g 0/1 (ideal 1: 2g@0 + 2g@2) ->
  // FragCost 1 - (1 + 0)/2 = 0.5. 2g@0 or 2g@2 would give 0, but both
  // overlap 2g@1, which stays busy during the copy: no move.
  EXPECT_NEAR(cluster.gpu(0).fragcost(), 0.5, 1e-9);
  Job job;
  job.profile = "2g";
  job.time_limit_s = 1;
  job.migratable = Migratable::kCheckpoint;
  SchedulerOptions o = Opts();
  MigrationContext ctx;
  ctx.options = &o;
  ctx.rights = [](JobId) { return MoveRights::kAny; };
  ctx.job = [&](JobId) { return &job; };
  ctx.expected_end_s = [](JobId) { return kInf; };
  auto starts = NewDefragPlanner()->RunPass(&cluster, ctx);
  ASSERT_TRUE(starts.ok()) << starts.status().ToString();
  EXPECT_THAT(*starts, IsEmpty());
  // ApplyPlan agrees: the target cannot be created next to its source.
  Status st =
      ApplyPlan(MigrationBeginPlan(cluster, MigrationMove{0, {0, two, 1}, {0, two, 0}}), &cluster);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_THAT(st.message(), ::testing::HasSubstr("create 2g@0: overlaps 2g@1"));
}

}  // namespace
}  // namespace migsched
