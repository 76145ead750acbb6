// Evacuation (docs/algorithms.md §13): PlanEvacuation on hand-made states,
// each expected plan derived by hand in the comments, and a randomized test
// against a naive reference that tries every set of running jobs and every
// target for each (the seed is printed on failure).
//
// A100 40GB: 1g.5gb at 0..6 (one memory unit each), 2g.10gb at 0, 2, 4,
// 3g.20gb at 0 and 4 (four units), 4g.20gb at 0 only (units 0-3), 7g.40gb at
// 0 (every unit); 7 compute slices.
#include "sched/evacuation.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/instance_list.h"
#include "core/rng.h"
#include "sched/candidates.h"
#include "sched/migration_planner.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AJob;
using ::migsched::testing::Model;

struct Running {
  int gpu;
  std::string instance;  // PROFILE@START
  MoveRights rights = MoveRights::kAny;
  int same_job_as = -1;  // >= 0: another instance of that earlier job (a gang, `count` > 1)
};

// A cluster of A100 40GB whose busy instances run jobs 0, 1, ... in order.
class Bench {
 public:
  Bench(int gpus, const std::vector<Running>& jobs) {
    std::vector<const GpuModel*> ms(gpus, &Model("A100-40GB"));
    cluster_ = std::make_unique<Cluster>(ms, &tables_);
    Plan plan;
    for (const Running& r : jobs) {
      const GpuModel& m = cluster_->gpu(r.gpu).model();
      auto list = ParseInstanceList(r.instance, m);
      EXPECT_TRUE(list.ok() && list->size() == 1u) << r.instance;
      const InstanceSpec in = list->front();
      const bool gang = r.same_job_as >= 0;
      const JobId id = static_cast<JobId>(gang ? r.same_job_as : specs_.size());
      plan.steps.push_back({StepKind::kCreate, r.gpu, in.profile, in.start, kNoJob});
      plan.steps.push_back({StepKind::kStart, r.gpu, in.profile, in.start, id});
      if (gang) {
        ++specs_[id].count;
        continue;
      }
      specs_.push_back(AJob(m.profile(in.profile).name).Limit(100));
      rights_.push_back(r.rights);
    }
    Status st = ApplyPlan(plan, cluster_.get());
    EXPECT_TRUE(st.ok()) << st.ToString();
  }

  EvacuationQuery Query(const Job* waiting) const {
    EvacuationQuery q;
    q.job = waiting;
    q.rights = [this](JobId id) { return rights_[id]; };
    q.job_of = [this](JobId id) { return &specs_[id]; };
    q.source_ok = [](int) { return true; };
    q.target_ok = [](int) { return true; };
    return q;
  }

  // "J: G:profile@S -> G:profile@S" per move, in order.
  std::vector<std::string> Moves(const EvacuationPlan& p) const {
    std::vector<std::string> out;
    for (const MigrationMove& mv : p.moves) {
      out.push_back(fmt::format("{}: {} -> {}", mv.job, Ref(mv.from), Ref(mv.to)));
    }
    return out;
  }

  const Cluster& cluster() const { return *cluster_; }

 private:
  std::string Ref(const InstanceRef& r) const {
    return fmt::format("{}:{}@{}", r.gpu, cluster_->gpu(r.gpu).model().profile(r.profile).name,
                       r.start);
  }

  ConfigTableCache tables_;
  std::unique_ptr<Cluster> cluster_;
  std::vector<Job> specs_;
  std::vector<MoveRights> rights_;
};

// A hand-worked evacuation case (docs/algorithms.md §13): GPU 0 runs two 1g.5gb jobs (at 0 and 6),
// which block a 7g.40gb; GPU 1 runs 4g.20gb@0 and 1g.5gb@4, neither movable, so its free 1g.5gb
// placements are 5 and 6. The only candidate is 7g@0 on GPU 0, with both jobs as blockers (two
// moves, 2 x 4864 MiB). Blockers are assigned in order (equal size: lower start first): job 0
// (1g@0) takes the target with the lower FragCost after: {4g@0, 1g@4, 1g@5} still leaves 1g.5gb@6
// and 1g.10gb@6 placeable, {4g@0, 1g@4, 1g@6} only 1g.5gb@5, so 5; job 1 gets 6.
TEST(EvacuationTest, TwoSmallJobsLeaveForASevenSliceJob) {
  Bench b(2, {{0, "1g.5gb@0"},
              {0, "1g.5gb@6"},
              {1, "4g.20gb@0", MoveRights::kNone},
              {1, "1g.5gb@4", MoveRights::kNone}});
  const Job seven = AJob("7g.40gb").Limit(100);
  std::optional<EvacuationPlan> p = PlanEvacuation(b.cluster(), b.Query(&seven));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->gpu, 0);
  EXPECT_EQ(p->start, 0);
  EXPECT_EQ(p->memory_mib, 2 * 4864);
  EXPECT_EQ(b.Moves(*p), (std::vector<std::string>{"0: 0:1g.5gb@0 -> 1:1g.5gb@5",
                                                   "1: 0:1g.5gb@6 -> 1:1g.5gb@6"}));
}

// Regression (a crash of `full`: "evacuation began a second move of job N"): GPU 0 runs one gang
// job (`count` 2) on 1g.5gb@0 and 1g.5gb@6, in the way of a 7g.40gb; GPU 1 runs 4g.20gb@0 and
// 1g.5gb@4, neither movable, with room for both instances at 5 and 6. Clearing GPU 0 would move
// job 0 twice at once, and a job has at most one move in flight (§6): no plan. GPU 2, added with
// a single movable 1g.5gb@3 (job 3), is the one candidate left: one move, of job 3, off GPU 2.
TEST(EvacuationTest, AGangWithTwoBlockersOnOneGpuIsNotEvacuated) {
  const Job seven = AJob("7g.40gb").Limit(100);
  Bench b(2, {{0, "1g.5gb@0"},
              {0, "1g.5gb@6", MoveRights::kAny, /*same_job_as=*/0},
              {1, "4g.20gb@0", MoveRights::kNone},
              {1, "1g.5gb@4", MoveRights::kNone}});
  EXPECT_FALSE(PlanEvacuation(b.cluster(), b.Query(&seven)).has_value());
  Bench c(3, {{0, "1g.5gb@0"},
              {0, "1g.5gb@6", MoveRights::kAny, /*same_job_as=*/0},
              {1, "4g.20gb@0", MoveRights::kNone},
              {1, "1g.5gb@4", MoveRights::kNone},
              {2, "1g.5gb@3"}});
  std::optional<EvacuationPlan> p = PlanEvacuation(c.cluster(), c.Query(&seven));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->gpu, 2);
  ASSERT_EQ(p->moves.size(), 1u);
  EXPECT_EQ(p->moves[0].job, 3);
  EXPECT_NE(p->moves[0].to.gpu, 2);
}

// The cheapest set: GPU 0 has two movable 1g.5gb in the way of 7g, GPU 1 one
// (at 3), GPU 2 a 3g.20gb@0 that may not move (room for 1g.5gb at 4..6). The
// candidate with one move (GPU 1) wins; its job 2 goes to GPU 0 or 2.
TEST(EvacuationTest, FewestMovesWin) {
  Bench b(3,
          {{0, "1g.5gb@0"}, {0, "1g.5gb@6"}, {1, "1g.5gb@3"}, {2, "3g.20gb@0", MoveRights::kNone}});
  const Job seven = AJob("7g.40gb").Limit(100);
  std::optional<EvacuationPlan> p = PlanEvacuation(b.cluster(), b.Query(&seven));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->gpu, 1);
  ASSERT_EQ(p->moves.size(), 1u);
  EXPECT_EQ(p->moves[0].job, 2);
  EXPECT_NE(p->moves[0].to.gpu, 1);
}

// A query's `accept` passes over the plans it refuses, in the cost order. In FewestMovesWin's
// state the one-move candidate (GPU 1) comes first; refusing plans on GPU 1 leaves GPU 0's, with
// its two blockers (jobs 0 and 1; GPU 2's 3g.20gb may not move, so it is no candidate); refusing
// every plan leaves none.
TEST(EvacuationTest, AcceptPassesOverTheRefusedPlans) {
  Bench b(3,
          {{0, "1g.5gb@0"}, {0, "1g.5gb@6"}, {1, "1g.5gb@3"}, {2, "3g.20gb@0", MoveRights::kNone}});
  const Job seven = AJob("7g.40gb").Limit(100);
  EvacuationQuery q = b.Query(&seven);
  q.accept = [](const EvacuationPlan& p) { return p.gpu != 1; };
  std::optional<EvacuationPlan> p = PlanEvacuation(b.cluster(), q);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->gpu, 0);
  ASSERT_EQ(p->moves.size(), 2u);
  EXPECT_EQ(p->moves[0].job, 0);
  EXPECT_EQ(p->moves[1].job, 1);
  q.accept = [](const EvacuationPlan&) { return false; };
  EXPECT_FALSE(PlanEvacuation(b.cluster(), q).has_value());
}

// Room kept for small jobs (§13). GPU 0 runs 3g.20gb@0, 2g.10gb@4 and 1g.5gb@6, none movable:
// units 0-6 busy, no 1-slice placement (1g.5gb at 0..6, 1g.10gb at 0, 2, 4, 6 all overlap). GPU 1
// runs one movable 1g.5gb@0 (job 3). GPU 2 runs 3g.20gb@0 and 2g.10gb@4 (not movable): its one
// free 1-slice placement is 1g.5gb@6 (unit 6; compute 5 of 7 used). The only candidate for a
// 7g.40gb is GPU 1 (the others' blockers may not move), and job 3's only target is GPU 2's
// 1g.5gb@6: after the plan no GPU has a 1-slice placement, where GPU 1 and 2 have them now.
// Without GPU 2's 2g.10gb, job 3 takes one of 1g.5gb@4..6 there and two stay free: room kept.
TEST(EvacuationTest, KeepsRoomForTheSmallestSizeOnlyWhereAPlanLeavesSome) {
  Bench b(3, {{0, "3g.20gb@0", MoveRights::kNone},
              {0, "2g.10gb@4", MoveRights::kNone},
              {0, "1g.5gb@6", MoveRights::kNone},
              {1, "1g.5gb@0"},
              {2, "3g.20gb@0", MoveRights::kNone},
              {2, "2g.10gb@4", MoveRights::kNone}});
  const Job seven = AJob("7g.40gb").Limit(100);
  std::optional<EvacuationPlan> p = PlanEvacuation(b.cluster(), b.Query(&seven));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(b.Moves(*p), (std::vector<std::string>{"3: 1:1g.5gb@0 -> 2:1g.5gb@6"}));
  EXPECT_FALSE(KeepsRoomFor(b.cluster(), *p, 1));
  // 3 slices: GPU 1 offers 3g.20gb@4 now, no GPU after: not kept either.
  EXPECT_FALSE(KeepsRoomFor(b.cluster(), *p, 3));
  // 7 slices: no GPU offers one now (GPU 1 runs a job), so there is no room to keep.
  EXPECT_TRUE(KeepsRoomFor(b.cluster(), *p, 7));
  EXPECT_TRUE(KeepsRoomFor(b.cluster(), *p, 0));
  // The scheduler's query refuses that plan, and there is no other.
  EvacuationQuery q = b.Query(&seven);
  q.accept = [&b](const EvacuationPlan& plan) { return KeepsRoomFor(b.cluster(), plan, 1); };
  EXPECT_FALSE(PlanEvacuation(b.cluster(), q).has_value());

  Bench c(3, {{0, "3g.20gb@0", MoveRights::kNone},
              {0, "2g.10gb@4", MoveRights::kNone},
              {0, "1g.5gb@6", MoveRights::kNone},
              {1, "1g.5gb@0"},
              {2, "3g.20gb@0", MoveRights::kNone}});
  std::optional<EvacuationPlan> k = PlanEvacuation(c.cluster(), c.Query(&seven));
  ASSERT_TRUE(k.has_value());
  ASSERT_EQ(k->moves.size(), 1u);
  EXPECT_EQ(k->moves[0].to.gpu, 2);
  EXPECT_TRUE(KeepsRoomFor(c.cluster(), *k, 1));
}

TEST(RecentArrivalSizesTest, TheSmallestOfTheLastWindowArrivals) {
  RecentArrivalSizes w(3);
  EXPECT_EQ(w.Smallest(), 0);
  w.Observe(0);  // a job no model offers: not counted
  EXPECT_EQ(w.Smallest(), 0);
  w.Observe(3);
  w.Observe(1);
  w.Observe(7);
  EXPECT_EQ(w.Smallest(), 1);  // {3, 1, 7}
  w.Observe(7);
  EXPECT_EQ(w.Smallest(), 1);  // {1, 7, 7}
  w.Observe(4);
  EXPECT_EQ(w.Smallest(), 4);  // {7, 7, 4}: the 1 has left
  w.Observe(4);
  w.Observe(4);
  EXPECT_EQ(w.Smallest(), 4);
}

// A latency-sensitive job only moves within its GPU. 1g.5gb@0 (latency-
// sensitive) blocks 4g.20gb (units 0-3); GPU 1 is full of jobs that stay.
// Intra targets disjoint from 0-3: 1g.5gb at 4, 5, 6. With 4g@0 in place,
// 1g@6 leaves 1g@4, 1g@5, 1g.10gb@4 and 2g@4 placeable, 1g@5 only 1g@4,
// 1g@6, 1g.10gb@6, 1g@4 only 1g@5, 1g@6, 1g.10gb@6: 6 has the lowest FragCost.
TEST(EvacuationTest, ALatencySensitiveJobMovesWithinItsGpu) {
  Bench b(2, {{0, "1g.5gb@0", MoveRights::kIntra},
              {1, "4g.20gb@0", MoveRights::kNone},
              {1, "3g.20gb@4", MoveRights::kNone}});
  const Job four = AJob("4g.20gb").Limit(100);
  std::optional<EvacuationPlan> p = PlanEvacuation(b.cluster(), b.Query(&four));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(b.Moves(*p), std::vector<std::string>{"0: 0:1g.5gb@0 -> 0:1g.5gb@6"});
  // A 7g.40gb leaves no room on the GPU: nothing to do.
  const Job seven = AJob("7g.40gb").Limit(100);
  EXPECT_FALSE(PlanEvacuation(b.cluster(), b.Query(&seven)).has_value());
}

// `none` jobs never move; the same state with a movable job has a plan (so
// the refusal is the rights', not the room's).
TEST(EvacuationTest, JobsThatMayNotMoveStay) {
  for (MoveRights rights : {MoveRights::kNone, MoveRights::kAny}) {
    Bench b(2, {{0, "1g.5gb@2", rights}, {1, "3g.20gb@0", MoveRights::kNone}});
    const Job seven = AJob("7g.40gb").Limit(100);
    EXPECT_EQ(PlanEvacuation(b.cluster(), b.Query(&seven)).has_value(), rights == MoveRights::kAny);
  }
}

// GPUs the caller closes are neither sources nor targets.
TEST(EvacuationTest, ClosedGpusAreLeftAlone) {
  Bench b(2, {{0, "1g.5gb@2"}, {1, "3g.20gb@0", MoveRights::kNone}});
  const Job seven = AJob("7g.40gb").Limit(100);
  EvacuationQuery q = b.Query(&seven);
  q.target_ok = [](int g) { return g != 1; };
  EXPECT_FALSE(PlanEvacuation(b.cluster(), q).has_value());
  q = b.Query(&seven);
  q.source_ok = [](int g) { return g != 0; };
  EXPECT_FALSE(PlanEvacuation(b.cluster(), q).has_value());
}

// ---- Randomized: against every set of moves ----

const char* const kProfiles[] = {"1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb"};

// The fewest moves that open some placement of `profile` (not free now) on
// some GPU: every GPU g, every placement s, every set S of g's busy instances
// whose removal frees s (all of them may move), every target for each job of
// S in turn (another GPU where it is free with the targets before it, for
// kAny; on g, disjoint from s, valid with what runs now and with what stays,
// for kAny and kIntra). -1 when none.
int ReferenceMinMoves(const Cluster& c, const std::vector<MoveRights>& rights, int profile) {
  int best = -1;
  for (int g = 0; g < c.size(); ++g) {
    const GpuState& gs = c.gpu(g);
    const GpuModel& m = gs.model();
    const ConfigTable& t = gs.table();
    std::vector<const Instance*> busy;
    for (const Instance& in : gs.instances()) {
      if (in.busy()) busy.push_back(&in);
    }
    for (int slot : m.SlotsOfProfile(profile)) {
      if (t.Add(gs.busy_config(), slot) != kInvalidConfig) continue;  // free now
      for (unsigned mask = 1; mask < (1u << busy.size()); ++mask) {
        const int n = __builtin_popcount(mask);
        if (best >= 0 && n >= best) continue;
        std::vector<const Instance*> movers;
        ConfigId stay = kEmptyConfig;
        bool ok = true;
        for (size_t i = 0; i < busy.size(); ++i) {
          if (mask & (1u << i)) {
            movers.push_back(busy[i]);
            ok = ok && rights[busy[i]->job] != MoveRights::kNone;
          } else {
            stay = t.Add(stay, busy[i]->slot);
          }
        }
        if (!ok) continue;
        const ConfigId final_cfg = t.Add(stay, slot);
        if (final_cfg == kInvalidConfig) continue;
        // Depth-first over the movers' targets.
        std::vector<ConfigId> now(c.size());
        for (int h = 0; h < c.size(); ++h) now[h] = c.gpu(h).busy_config();
        ConfigId after = final_cfg;
        const uint64_t units = m.slots()[slot].unit_mask;
        std::function<bool(size_t)> walk = [&](size_t i) {
          if (i == movers.size()) return true;
          const Instance& in = *movers[i];
          for (int h = 0; h < c.size(); ++h) {
            if (h != g && rights[in.job] != MoveRights::kAny) continue;
            const ConfigTable& ht = c.gpu(h).table();
            for (int ts : c.gpu(h).model().SlotsOfProfile(in.profile)) {
              const ConfigId n_now = ht.Add(now[h], ts);
              if (n_now == kInvalidConfig) continue;
              ConfigId n_after = after;
              if (h == g) {
                if (m.slots()[ts].unit_mask & units) continue;
                n_after = t.Add(after, ts);
                if (n_after == kInvalidConfig) continue;
              }
              const ConfigId old_now = now[h], old_after = after;
              now[h] = n_now;
              after = n_after;
              if (walk(i + 1)) return true;
              now[h] = old_now;
              after = old_after;
            }
          }
          return false;
        };
        if (walk(0)) best = n;
      }
    }
  }
  return best;
}

TEST(EvacuationRandomTest, MatchesEveryMoveSetAndKeepsTheInvariants) {
  const uint64_t seed = testing::TestSeed(20261201);
  std::printf("EvacuationRandomTest seed %llu (set MIGSCHED_SEED to repeat)\n",
              static_cast<unsigned long long>(seed));
  Rng rng(seed);
  auto pick = [&rng](size_t n) {
    return static_cast<size_t>(rng.UniformInt(0, static_cast<int64_t>(n) - 1));
  };
  const GpuModel& a100 = Model("A100-40GB");
  int planned = 0;
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE(fmt::format("seed {} round {}", seed, round));
    ConfigTableCache tables;
    const int gpus = 2 + static_cast<int>(pick(2));
    Cluster c(std::vector<const GpuModel*>(gpus, &a100), &tables);
    std::vector<Job> specs;
    std::vector<MoveRights> rights;
    for (int k = 0; k < 12; ++k) {
      const int g = static_cast<int>(pick(gpus));
      const int profile = a100.FindProfile(kProfiles[pick(4)]);
      const std::vector<int>& slots = a100.SlotsOfProfile(profile);
      const int slot = slots[pick(slots.size())];
      const GpuState& gs = c.gpu(g);
      if (gs.table().Add(gs.busy_config(), slot) == kInvalidConfig) continue;
      const JobId id = static_cast<JobId>(specs.size());
      Status st = ApplyPlan(PlacementPlan(c, g, profile, a100.slots()[slot].start, id), &c);
      ASSERT_TRUE(st.ok()) << st.ToString();
      specs.push_back(AJob(a100.profile(profile).name).Limit(100));
      const uint64_t r = pick(4);
      rights.push_back(r == 0 ? MoveRights::kNone : r == 1 ? MoveRights::kIntra : MoveRights::kAny);
    }
    const char* const waiting_names[] = {"2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"};
    const Job waiting = AJob(waiting_names[pick(4)]).Limit(100);
    const int wp = a100.FindProfile(waiting.profile);
    EvacuationQuery q;
    q.job = &waiting;
    q.rights = [&](JobId id) { return rights[id]; };
    q.job_of = [&](JobId id) { return &specs[id]; };
    q.source_ok = [](int) { return true; };
    q.target_ok = [](int) { return true; };
    const std::optional<EvacuationPlan> p = PlanEvacuation(c, q);
    const int ref = ReferenceMinMoves(c, rights, wp);
    ASSERT_EQ(p.has_value(), ref >= 0);
    if (!p) continue;
    ++planned;
    EXPECT_EQ(static_cast<int>(p->moves.size()), ref);
    // The moves, begun in order on a copy, keep every GPU valid; no job that
    // may not leave its GPU does; after the switch-overs the placement is free.
    Cluster copy = c;
    for (const MigrationMove& mv : p->moves) {
      ASSERT_NE(rights[mv.job], MoveRights::kNone);
      if (rights[mv.job] == MoveRights::kIntra) {
        ASSERT_EQ(mv.to.gpu, mv.from.gpu);
      }
      ASSERT_EQ(mv.from.gpu, p->gpu);
      Status st = ApplyPlan(MigrationBeginPlan(copy, mv), &copy);
      ASSERT_TRUE(st.ok()) << st.ToString();
      for (int g = 0; g < gpus; ++g) ASSERT_TRUE(copy.gpu(g).CheckInvariants().ok());
    }
    for (const MigrationMove& mv : p->moves) {
      Status st = ApplyPlan(MigrationEndPlan(mv), &copy);
      ASSERT_TRUE(st.ok()) << st.ToString();
    }
    for (int g = 0; g < gpus; ++g) ASSERT_TRUE(copy.gpu(g).CheckInvariants().ok());
    const GpuState& opened = copy.gpu(p->gpu);
    ASSERT_NE(opened.table().Add(opened.busy_config(), a100.SlotOf(wp, p->start)), kInvalidConfig);
  }
  // The test means something only if plans were found and compared.
  EXPECT_GT(planned, 30);
}

}  // namespace
}  // namespace migsched
