// The §2 alternative metrics (sched/metrics.h): blocked-placements and
// demand-weighted on hand-worked A100 states, both checked against a naive
// reference on every configuration of every bundled model, and the sliding
// demand window.
#include "sched/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/instance_list.h"
#include "testing/brute_force.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::BruteFeasible;
using ::migsched::testing::BruteInstance;
using ::migsched::testing::BundledCatalog;
using ::migsched::testing::JobOf;
using ::migsched::testing::MakeBruteInstance;
using ::migsched::testing::Model;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The configuration of the busy instances `list` ("PROFILE@START,...") on `model`.
ConfigId ConfigOf(const ConfigTable& table, const std::string& list) {
  auto specs = ParseInstanceList(list, table.model());
  EXPECT_TRUE(specs.ok()) << specs.status().ToString();
  uint64_t mask = 0;
  for (const InstanceSpec& s : *specs)
    mask |= uint64_t{1} << table.model().SlotOf(s.profile, s.start);
  const ConfigId c = table.Find(mask);
  EXPECT_NE(c, kInvalidConfig) << list;
  return c;
}

struct BlockedCase {
  std::string name;
  std::string busy;
  int expected;
};

class BlockedPlacementsTest : public ::testing::TestWithParam<BlockedCase> {};

TEST_P(BlockedPlacementsTest, A100HandValues) {
  const auto table = ConfigTable::Build(Model("A100-40GB"));
  const BlockedPlacementsTable blocked(*table);
  const ConfigId c = ConfigOf(*table, GetParam().busy);
  EXPECT_EQ(blocked.Value(c), GetParam().expected);
  EXPECT_EQ(ComputeBlockedPlacements(*table, c), GetParam().expected);
}

// A100 40GB base profiles (memory slices; placements): 1g.5gb (1; 0..6),
// 1g.10gb (2; 0,2,4,6 size 2), 2g.10gb (2; 0,2,4 size 2), 3g.20gb (4; 0,4
// size 4), 4g.20gb (4; 0 size 4), 7g.40gb (8; 0 size 8).
const BlockedCase kBlockedCases[] = {
    {"Empty", "", 0},
    // Units {0} busy, 6 slices and 7 units free: 7g no longer fits. Blocked:
    // 1g.5gb@0 (1), 1g.10gb@0 (2), 2g@0 (2), 3g@0 (4), 4g@0 (4) = 13.
    {"OneSliceAt0", "1g.5gb@0", 13},
    // Units {6}: 1g.5gb@6 (1), 1g.10gb@6 (2), 3g@4 (4); no 2g or 4g placement
    // covers unit 6 = 7.
    {"OneSliceAt6", "1g.5gb@6", 7},
    // Units {4}: 1g.5gb@4 (1), 1g.10gb@4 (2), 2g@4 (2), 3g@4 (4) = 9.
    {"OneSliceAt4", "1g.5gb@4", 9},
    // Units {0,1}, memory of the busy one does not matter: 1g.5gb@0,@1 (2),
    // 1g.10gb@0 (2), 2g@0 (2), 3g@0 (4), 4g@0 (4) = 14.
    {"OneSliceTenGbAt0", "1g.10gb@0", 14},
    // Units 4-7, 4 slices and 4 units free (7g out): 1g.5gb@4,5,6 (3),
    // 1g.10gb@4,6 (4), 2g@4 (2), 3g@4 (4); 4g@0 is free = 13.
    {"ThreeSliceAt4", "3g.20gb@4", 13},
    // Units 0-3, 3 slices free: 4g (4 slices) and 7g out. 1g.5gb@0..3 (4),
    // 1g.10gb@0,2 (4), 2g@0,2 (4), 3g@0 (4) = 16.
    {"FourSliceAt0", "4g.20gb@0", 16},
    // Units 0-5 busy, 1 slice and 2 units free: only 1g.5gb (placements 0..5
    // blocked: 6) and 1g.10gb (0,2,4 blocked: 3 x 2 = 6) still fit = 12.
    {"SixSlicesBusy", "4g.20gb@0,2g.10gb@4", 12},
    // Full GPU: nothing fits any more, nothing is counted.
    {"Full", "7g.40gb@0", 0},
    {"FullBySevenOnes", "1g.5gb@0,1g.5gb@1,1g.5gb@2,1g.5gb@3,1g.5gb@4,1g.5gb@5,1g.5gb@6", 0},
};

INSTANTIATE_TEST_SUITE_P(Cases, BlockedPlacementsTest, ::testing::ValuesIn(kBlockedCases),
                         [](const auto& info) { return info.param.name; });

// The instances of configuration c, as the brute-force helpers take them.
std::vector<BruteInstance> InstancesOf(const ConfigTable& t, ConfigId c) {
  std::vector<BruteInstance> out;
  const uint64_t mask = t.slot_mask(c);
  for (int k = 0; k < t.num_slots(); ++k) {
    if (mask & (uint64_t{1} << k)) {
      const Slot& s = t.model().slots()[k];
      out.push_back(MakeBruteInstance(t.model(), s.profile, s.start));
    }
  }
  return out;
}

// blocked-placements straight from the text of §2, with interval arithmetic
// on the catalog's placements instead of unit masks and slot tables.
int BruteBlocked(const GpuModel& m, const std::vector<BruteInstance>& busy) {
  int cs = 0, units = 0;
  std::map<int, int> count;
  for (const BruteInstance& b : busy) {
    cs += b.cs;
    units += b.size;
    ++count[b.base];
  }
  int total = 0;
  for (int i = 0; i < static_cast<int>(m.profiles().size()); ++i) {
    const Profile& p = m.profile(i);
    if (!p.is_base()) continue;
    if (p.compute_slices > m.compute_slices() - cs) continue;
    if (p.placements.front().size > m.placement_units() - units) continue;
    if (count[i] >= p.max_instances) continue;
    for (const Placement& pl : p.placements) {
      const bool hit = std::any_of(busy.begin(), busy.end(), [&](const BruteInstance& b) {
        return pl.start < b.start + b.size && b.start < pl.start + pl.size;
      });
      total += hit ? p.memory_slices : 0;
    }
  }
  return total;
}

TEST(BlockedPlacementsTest, MatchesBruteForceOnEveryBundledModel) {
  int models = 0;
  for (const GpuModel* m : BundledCatalog().models()) {
    const auto table = ConfigTable::Build(*m);
    const BlockedPlacementsTable blocked(*table);
    for (ConfigId c = 0; c < table->num_configs(); ++c) {
      ASSERT_EQ(blocked.Value(c), BruteBlocked(*m, InstancesOf(*table, c)))
          << m->name() << " configuration " << c;
    }
    ++models;
  }
  EXPECT_EQ(models, 16);  // every bundled model (data/gpus/*.json)
}

TEST(DemandWeightedTest, A100HandValues) {
  const GpuModel& a100 = Model("A100-40GB");
  ConfigTableCache tables;
  Cluster cluster({&a100}, &tables);
  const ConfigTable& t = cluster.gpu(0).table();
  // Arrivals 1g.5gb, 1g.5gb, 7g, 3g: p(1g.5gb) = 0.5, p(3g) = p(7g) = 0.25.
  DemandWindow w(1000);
  for (const char* p : {"1g.5gb", "1g.5gb", "7g.40gb", "3g.20gb"}) w.Observe(cluster, JobOf(p));
  const std::vector<double>& p = w.Shares(a100);
  EXPECT_THAT(p, ElementsAre(0.5, 0.0, 0.0, 0.25, 0.0, 0.25));
  // Empty: 1g.5gb 7 - 1*7 = 0; 3g 7 - 3*2 = 1; 7g 7 - 7*1 = 0.
  // F = 0.25 * 1 = 0.25.
  EXPECT_DOUBLE_EQ(DemandWeightedValue(t, kEmptyConfig, p), 0.25);
  // 1g@0 (6 slices free): 1g.5gb 6 - 6 = 0; 3g only @4: 6 - 3 = 3; 7g: 6 - 0 = 6.
  // F = 0.25 * 3 + 0.25 * 6 = 2.25.
  EXPECT_DOUBLE_EQ(DemandWeightedValue(t, ConfigOf(t, "1g.5gb@0"), p), 2.25);
  // 3g@4 (4 free): 1g.5gb 4 - 4 = 0; 3g@0: 4 - 3 = 1; 7g: 4. F = 0.25 + 1 = 1.25.
  EXPECT_DOUBLE_EQ(DemandWeightedValue(t, ConfigOf(t, "3g.20gb@4"), p), 1.25);
  // Full: nothing free, nothing stranded.
  EXPECT_DOUBLE_EQ(DemandWeightedValue(t, ConfigOf(t, "7g.40gb@0"), p), 0.0);

  // Only full-GPU jobs arriving: a 1g on an empty GPU strands 6 slices
  // (§2: "putting a 1g on an empty GPU costs p_7g * 6").
  MetricScorer s(MetricKind::kDemandWeighted, 10);
  s.ObserveArrival(cluster, JobOf("7g.40gb"));
  EXPECT_DOUBLE_EQ(s.Delta(t, kEmptyConfig, ConfigOf(t, "1g.5gb@6")), 6.0);
}

// F(B) from the text of §2 with brute-force feasible_m.
double BruteDemandWeighted(const GpuModel& m, const std::vector<BruteInstance>& busy,
                           const std::vector<double>& shares) {
  int cs = 0;
  for (const BruteInstance& b : busy) cs += b.cs;
  double f = 0;
  for (size_t term = 0; term < m.base_profiles().size(); ++term) {
    const int base = m.base_profiles()[term];
    f += shares[term] * ((m.compute_slices() - cs) -
                         m.profile(base).compute_slices * BruteFeasible(m, busy, base));
  }
  return f;
}

TEST(DemandWeightedTest, MatchesBruteForceOnEveryBundledModel) {
  for (const GpuModel* m : BundledCatalog().models()) {
    const auto table = ConfigTable::Build(*m);
    // Shares 1, 2, 3, ... normalised: every term weighs differently.
    std::vector<double> shares;
    const int n = static_cast<int>(m->base_profiles().size());
    for (int i = 0; i < n; ++i) shares.push_back((i + 1.0) / (n * (n + 1) / 2.0));
    for (ConfigId c = 0; c < table->num_configs(); ++c) {
      ASSERT_NEAR(DemandWeightedValue(*table, c, shares),
                  BruteDemandWeighted(*m, InstancesOf(*table, c), shares), 1e-9)
          << m->name() << " configuration " << c;
    }
  }
}

TEST(DemandWindowTest, SlidesAndCountsPerModel) {
  const GpuModel& a100 = Model("A100-40GB");
  const GpuModel& a30 = Model("A30-24GB");
  ConfigTableCache tables;
  Cluster cluster({&a100, &a30}, &tables);
  DemandWindow w(2);
  // Nothing seen yet: uniform over the 6 A100 base profiles.
  EXPECT_THAT(w.Shares(a100), ElementsAre(1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6));
  w.Observe(cluster, JobOf("7g.40gb"));
  w.Observe(cluster, JobOf("7g.40gb"));
  EXPECT_THAT(w.Shares(a100), ElementsAre(0.0, 0.0, 0.0, 0.0, 0.0, 1.0));
  // A30 offers no 7g.40gb: nothing counted there yet, still uniform over its
  // 3 base profiles (1g.6gb, 2g.12gb, 4g.24gb).
  EXPECT_THAT(w.Shares(a30), ElementsAre(1.0 / 3, 1.0 / 3, 1.0 / 3));
  // The window holds 2 arrivals: the first 7g leaves. A variant counts for its base, a gang by
  // its instances (regression gang_counted_once): 3 of 1g.5gb against 1 of 7g.40gb.
  w.Observe(cluster, JobOf("1g.5gb+me", 3));
  EXPECT_EQ(w.size(), 2);
  EXPECT_THAT(w.Shares(a100), ElementsAre(0.75, 0.0, 0.0, 0.0, 0.0, 0.25));
  // 1g.6gb exists on A30 only.
  w.Observe(cluster, JobOf("1g.6gb"));
  EXPECT_THAT(w.Shares(a100), ElementsAre(1.0, 0.0, 0.0, 0.0, 0.0, 0.0));
  EXPECT_THAT(w.Shares(a30), ElementsAre(1.0, 0.0, 0.0));
}

TEST(MetricsTest, ParsesNames) {
  EXPECT_EQ(*ParseMetric("fragcost"), MetricKind::kFragCost);
  EXPECT_EQ(*ParseMetric("blocked-placements"), MetricKind::kBlockedPlacements);
  EXPECT_EQ(*ParseMetric("demand-weighted"), MetricKind::kDemandWeighted);
  for (const std::string& n : MetricNames()) EXPECT_EQ(MetricName(*ParseMetric(n)), n);
  auto bad = ParseMetric("frag");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "metric 'frag' is not one of fragcost, blocked-placements, demand-weighted");
}

TEST(MetricsTest, ScorerUsesTheChosenMetric) {
  const GpuModel& a100 = Model("A100-40GB");
  ConfigTableCache tables;
  Cluster cluster({&a100}, &tables);
  const ConfigTable& t = cluster.gpu(0).table();
  const ConfigId one_at_0 = ConfigOf(t, "1g.5gb@0");
  MetricScorer frag(MetricKind::kFragCost, 1000);
  MetricScorer blocked(MetricKind::kBlockedPlacements, 1000);
  // §2 table: FragCost(1g@0) = 0.2667 (4/15); blocked-placements 13 (above).
  EXPECT_NEAR(frag.Delta(t, kEmptyConfig, one_at_0), 4.0 / 15, 1e-9);
  EXPECT_DOUBLE_EQ(blocked.Delta(t, kEmptyConfig, one_at_0), 13.0);
}

}  // namespace
}  // namespace migsched
