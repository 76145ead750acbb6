// The exact per-GPU layouts of joint placement (§12): hand-worked cases on an
// A100 40GB (placements from docs/mig-hardware.md: 1g.5gb at 0..6, 2g.10gb at
// 0, 2, 4, 3g.20gb at 0 and 4, 4g.20gb at 0, 7g.40gb at 0), and randomized
// checks against a brute-force enumeration of layouts (tests/testing/brute_force.h)
// with the plans replayed through ApplyPlan.
#include "sched/gpu_layout.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/rng.h"
#include "testing/brute_force.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::GpuStateOf;
using ::migsched::testing::Model;

std::vector<int> Profiles(const GpuModel& m, const std::vector<std::string>& names) {
  std::vector<int> out;
  for (const std::string& n : names) out.push_back(m.FindProfile(n));
  SortForLayout(m, &out);
  return out;
}

struct LayoutCase {
  std::string name;
  std::string busy, idle;
  std::vector<std::string> place;
  bool feasible;
  std::vector<int> starts;  // in canonical order (more compute slices first)
  int reconfigurations;
};

class LayoutTest : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(LayoutTest, BestLayout) {
  const LayoutCase& c = GetParam();
  const GpuModel& m = Model("A100-40GB");
  ConfigTableCache tables;
  const ConfigTable& t = tables.Get(m);
  const GpuState g = GpuStateOf(m, t, c.busy, c.idle);
  MetricScorer scorer(MetricKind::kFragCost, 1000);
  LayoutSolver solver(&scorer);
  const GpuLayout& lay = solver.Solve(g, "k", Profiles(m, c.place), false);
  ASSERT_EQ(lay.feasible, c.feasible);
  if (!c.feasible) return;
  EXPECT_EQ(lay.starts, c.starts);
  EXPECT_EQ(lay.cost.reconfigurations, c.reconfigurations);
}

const LayoutCase kLayoutCases[] = {
    // The create-order case: 3g@0 leaves units 4-7, where 2g@4 and 1g@6 fit
    // but no second 1g (1g starts end at 6), so the 3g takes 4; the walk then
    // takes the lowest free starts: 2g@0, 1g@2, 1g@3. A full GPU has FragCost
    // 0 whatever the layout, so the first layout walked wins.
    {"CreateOrderFourFitTogether",
     "",
     "",
     {"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"},
     true,
     {4, 0, 2, 3},
     4},
    // 4g.20gb has only start 0; 3g@4 overlaps the busy 1g@6.
    {"BusyInstanceBlocks", "1g.5gb@6", "", {"4g.20gb", "3g.20gb"}, false, {}, 0},
    // 8 compute slices do not fit 7.
    {"ComputeSlicesShort", "", "", {"4g.20gb", "4g.20gb"}, false, {}, 0},
    // Fewer reconfigurations before the metric: reusing the idle 2g@2 costs
    // nothing although 2g@4 would keep FragCost lower (0 against 0.2).
    {"ReuseBeforeMetric", "", "2g.10gb@2", {"2g.10gb"}, true, {2}, 0},
    // 3g@4 would destroy the idle 1g@4 and 1g@5 (3 reconfigurations); 3g@0
    // only creates (1).
    {"FewestDestroys", "", "1g.5gb@4,1g.5gb@5", {"3g.20gb"}, true, {0}, 1},
    // Both idle 1g instances reused (0 each), the 2g and the 3g created (2).
    {"IdleReusedInTheJointLayout",
     "",
     "1g.5gb@0,1g.5gb@1",
     {"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"},
     true,
     {4, 2, 0, 1},
     2},
    // Equal reconfigurations (1 create): the metric decides. Beside a busy
    // 3g@0, FragCost after 1g@6 is 0.111, after 1g@4 or 1g@5 0.444
    // (tests/data/cases/fragcost-a100-40gb.json).
    {"MetricBreaksTies", "3g.20gb@0", "", {"1g.5gb"}, true, {6}, 1},
};

INSTANTIATE_TEST_SUITE_P(Cases, LayoutTest, ::testing::ValuesIn(kLayoutCases),
                         [](const auto& info) { return info.param.name; });

// Random states and multisets on every bundled model: the solver finds a
// layout exactly when a brute-force enumeration of every placement of every
// instance does, its reconfigurations are the least over those layouts, and
// RelayPlans realises it: every plan step applies (ApplyPlan checks §1), the
// reconfigurations add up, and the GPU ends with the busy instances plus the
// new ones at the solver's starts.
TEST(LayoutRandomTest, ExactAgainstBruteForceAndPlansApply) {
  const uint64_t seed = testing::TestSeed(20261210);
  SCOPED_TRACE("seed " + std::to_string(seed) +
               " (rerun with MIGSCHED_SEED=" + std::to_string(seed) + ")");
  Rng rng(seed);
  const std::vector<std::string> names = {"A100-40GB",     "A100-80GB",  "A30-24GB",    "H100-80GB",
                                          "H100-NVL-94GB", "H200-141GB", "RTX-PRO-6000"};
  ConfigTableCache tables;
  int feasible_cases = 0;
  for (int round = 0; round < 400; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const GpuModel& m = Model(names[rng.UniformInt(0, names.size() - 1)]);
    const ConfigTable& t = tables.Get(m);
    // Busy: some instances of a random configuration; new: some more of
    // another (so that both fitting and not fitting occur); idle: random
    // instances beside the busy ones.
    const auto slots_of = [&](ConfigId c) {
      std::vector<int> s;
      for (int k = 0; k < t.num_slots(); ++k) {
        if (t.slot_mask(c) >> k & 1) s.push_back(k);
      }
      return s;
    };
    GpuState g(m, t);
    JobId next = 1;
    for (int k : slots_of(static_cast<ConfigId>(rng.UniformInt(0, t.num_configs() - 1)))) {
      if (rng.Uniform01() < 0.4) {
        const Slot& s = m.slots()[k];
        ASSERT_TRUE(g.Create(s.profile, s.start).ok());
        ASSERT_TRUE(g.StartJob(s.profile, s.start, next++).ok());
      }
    }
    for (int k : slots_of(static_cast<ConfigId>(rng.UniformInt(0, t.num_configs() - 1)))) {
      const Slot& s = m.slots()[k];
      if (rng.Uniform01() < 0.5 && t.Add(g.all_config(), k) != kInvalidConfig) {
        ASSERT_TRUE(g.Create(s.profile, s.start).ok());
      }
    }
    std::vector<int> profiles;
    for (int k : slots_of(static_cast<ConfigId>(rng.UniformInt(0, t.num_configs() - 1)))) {
      if (rng.Uniform01() < 0.6) profiles.push_back(m.slots()[k].profile);
    }
    if (profiles.empty()) continue;
    SortForLayout(m, &profiles);

    // Brute force: every placement of every new instance, valid with the busy ones.
    std::vector<testing::BruteInstance> busy;
    for (const Instance& in : g.instances()) {
      if (in.busy()) busy.push_back(testing::MakeBruteInstance(m, in.profile, in.start));
    }
    bool brute_feasible = false;
    int brute_best = 1 << 30;
    std::vector<int> starts(profiles.size());
    std::function<void(size_t, std::vector<testing::BruteInstance>&)> walk =
        [&](size_t i, std::vector<testing::BruteInstance>& cur) {
          if (i == profiles.size()) {
            brute_feasible = true;
            brute_best = std::min(brute_best, RelayReconfigurations(g, profiles, starts));
            return;
          }
          for (const Placement& pl : m.profile(profiles[i]).placements) {
            cur.push_back(testing::MakeBruteInstance(m, profiles[i], pl.start));
            starts[i] = pl.start;
            if (testing::BruteValid(m, cur)) walk(i + 1, cur);
            cur.pop_back();
          }
        };
    std::vector<testing::BruteInstance> cur = busy;
    walk(0, cur);

    MetricScorer scorer(MetricKind::kFragCost, 1000);
    LayoutSolver solver(&scorer);
    const GpuLayout lay = solver.Solve(g, "k", profiles, false);
    ASSERT_EQ(lay.feasible, brute_feasible) << g.DebugString();
    if (!lay.feasible) continue;
    ++feasible_cases;
    EXPECT_EQ(lay.cost.reconfigurations, brute_best) << g.DebugString();

    // The plans, in a random order of the instances.
    std::vector<RelayInstance> order;
    for (size_t i = 0; i < profiles.size(); ++i) {
      order.push_back({static_cast<JobId>(1000 + i), lay.profiles[i], lay.starts[i]});
    }
    for (size_t i = order.size(); i > 1; --i)
      std::swap(order[i - 1], order[rng.UniformInt(0, i - 1)]);
    auto plans = RelayPlans(g, 0, order);
    ASSERT_TRUE(plans.ok()) << plans.status().ToString() << " " << g.DebugString();
    Cluster cluster({&m}, &tables);
    cluster.SetGpu(0, g);
    int reconfigurations = 0;
    for (const std::vector<Step>& steps : *plans) {
      Plan p;
      p.steps = steps;
      reconfigurations += p.reconfigurations();
      Status st = ApplyPlan(p, &cluster);
      ASSERT_TRUE(st.ok()) << st.ToString() << " on " << g.DebugString();
    }
    EXPECT_EQ(reconfigurations, lay.cost.reconfigurations);
    EXPECT_EQ(cluster.gpu(0).busy_config(), lay.busy_after);
  }
  EXPECT_GT(feasible_cases, 100);
}

}  // namespace
}  // namespace migsched
