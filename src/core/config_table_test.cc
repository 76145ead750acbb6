// Tests of ConfigTable (FragCost, §2): the 723 hand-checked A100 40GB cases,
// the worked values of docs/algorithms.md §2, and an independent brute-force reference on
// every bundled model (the inferred models of docs/mig-hardware.md §3 included).
#include "core/config_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/gpu_state.h"
#include "testing/brute_force.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::Model;
using ::migsched::testing::TestDataDir;

uint64_t MaskOf(const GpuModel& m, const std::vector<std::pair<std::string, int>>& instances) {
  uint64_t mask = 0;
  for (const auto& [name, start] : instances) {
    const int p = m.FindProfile(name);
    EXPECT_GE(p, 0) << name;
    const int slot = m.SlotOf(p, start);
    EXPECT_GE(slot, 0) << name << "@" << start;
    mask |= uint64_t{1} << slot;
  }
  return mask;
}

TEST(ConfigTableTest, A100HasThe723ValidConfigurationsOfTheSpec) {
  // §1: "An A100/H100 has 723 valid configurations over the six base profiles."
  auto table = ConfigTable::Build(Model("A100-40GB"));
  EXPECT_EQ(table->num_configs(), 723);
  EXPECT_EQ(table->num_slots(), 18);
  EXPECT_EQ(table->num_terms(), 6);
  EXPECT_EQ(table->slot_mask(kEmptyConfig), 0u);
  auto h100 = ConfigTable::Build(Model("H100-80GB"));
  EXPECT_EQ(h100->num_configs(), 723);
}

// Every case of tests/data/cases/fragcost-a100-40gb.json (worked by hand, independently of this
// code; docs/algorithms.md §2): the FragCost and every feasible/ideal term, |error| < 1e-9.
TEST(ConfigTableTest, ReproducesAll723HandCheckedA100Cases) {
  std::ifstream in(TestDataDir() + "/cases/fragcost-a100-40gb.json");
  ASSERT_TRUE(in.good());
  const nlohmann::json doc = nlohmann::json::parse(in);
  const GpuModel& m = Model("A100-40GB");
  auto table = ConfigTable::Build(m);
  ASSERT_EQ(doc["cases"].size(), 723u);
  std::vector<std::string> metric;
  for (const auto& p : doc["profiles_in_metric"]) metric.push_back(p.get<std::string>());
  // The metric's profiles are exactly our base profiles, in the same order.
  ASSERT_EQ(metric.size(), m.base_profiles().size());
  for (size_t t = 0; t < metric.size(); ++t)
    EXPECT_EQ(m.profile(m.base_profiles()[t]).name, metric[t]);

  std::vector<bool> seen(table->num_configs(), false);
  int checked = 0;
  for (const auto& c : doc["cases"]) {
    std::vector<std::pair<std::string, int>> inst;
    std::string label;
    for (const auto& i : c["instances"]) {
      inst.emplace_back(i["profile"].get<std::string>(), i["start"].get<int>());
      label += i["profile"].get<std::string>() + "@" + std::to_string(i["start"].get<int>()) + " ";
    }
    const ConfigId id = table->Find(MaskOf(m, inst));
    ASSERT_NE(id, kInvalidConfig) << label;
    EXPECT_FALSE(seen[id]) << "duplicate case " << label;
    seen[id] = true;
    // The file prints FragCost rounded to 6 decimals (e.g. 0.333333), so the
    // printed total is checked to half a unit of its last digit, and the exact
    // total recomputed from the file's own terms to 1e-9.
    EXPECT_NEAR(table->FragCost(id), c["fragcost"].get<double>(), 5e-7) << label;
    const auto& terms = c["terms"];
    double sum = 0;
    for (const auto& [name, term] : terms.items()) {
      sum += term["feasible"].get<double>() / term["ideal"].get<double>();
    }
    const double exact = terms.empty() ? 0.0 : 1.0 - sum / terms.size();
    EXPECT_NEAR(table->FragCost(id), exact, 1e-9) << label;
    for (size_t t = 0; t < metric.size(); ++t) {
      if (terms.contains(metric[t])) {
        EXPECT_EQ(table->Feasible(id, t), terms[metric[t]]["feasible"].get<int>())
            << label << metric[t];
        EXPECT_EQ(table->Ideal(id, t), terms[metric[t]]["ideal"].get<int>()) << label << metric[t];
      } else {
        // Left out of the file: ideal 0 (profile no longer fits by capacity).
        EXPECT_EQ(table->Ideal(id, t), 0) << label << metric[t];
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 723);
}

// The worked values of docs/algorithms.md §2 (1g = 1g.5gb).
TEST(ConfigTableTest, WorkedValuesOfTheSpec) {
  const GpuModel& m = Model("A100-40GB");
  auto table = ConfigTable::Build(m);
  struct Case {
    std::vector<std::pair<std::string, int>> busy;
    double fragcost;
  } cases[] = {
      {{}, 0.0},
      {{{"1g.5gb", 6}}, 0.0},
      // 1g@4: 7g no longer fits by capacity (ideal 0), so |M'| = 5; only 2g.10gb
      // loses (starts 0, 2 free: 2 of 3), the rest are 1 of 1 / n of n:
      // FragCost = 1 - (4 + 2/3)/5 = 1/15.
      {{{"1g.5gb", 4}}, 1.0 / 15},
      // 1g@0: 2g 2 of 3, 4g 0 of 1: 1 - (3 + 2/3 + 0)/5 = 0.2667.
      {{{"1g.5gb", 0}}, 1.0 - (3 + 2.0 / 3) / 5},
      {{{"3g.20gb", 4}}, 0.0},
      // 3g@0: 1g 3 of 4, 2g 1 of 2, 4g 0 of 1 (1g.10gb 2 of 2, 3g 1 of 1): 1-(0.75+1+0.5+1+0)/5 =
      // 0.35.
      {{{"3g.20gb", 0}}, 0.35},
      {{{"1g.5gb", 0}, {"1g.5gb", 4}}, 0.5666666666666667},
      {{{"1g.5gb", 0}, {"1g.5gb", 1}, {"1g.5gb", 5}}, 0.5},
      {{{"1g.10gb", 0}}, 0.3},
  };
  for (const Case& c : cases) {
    const ConfigId id = table->Find(MaskOf(m, c.busy));
    ASSERT_NE(id, kInvalidConfig);
    EXPECT_NEAR(table->FragCost(id), c.fragcost, 1e-9) << c.busy.size();
  }
}

TEST(ConfigTableTest, InvalidConfigurationsAreNotFound) {
  const GpuModel& m = Model("A100-40GB");
  auto table = ConfigTable::Build(m);
  // 3g@0 (units 0-3) and 2g@2 (units 2-3) overlap.
  EXPECT_EQ(table->Find(MaskOf(m, {{"3g.20gb", 0}, {"2g.10gb", 2}})), kInvalidConfig);
  // 7g@0 with anything overlaps.
  EXPECT_EQ(table->Find(MaskOf(m, {{"7g.40gb", 0}, {"1g.5gb", 6}})), kInvalidConfig);
}

TEST(ConfigTableTest, AddAndRemoveAreConsistentWithMasks) {
  for (const char* name : {"A100-40GB", "A30-24GB", "RTX-PRO-6000"}) {
    const GpuModel& m = Model(name);
    auto t = ConfigTable::Build(m);
    for (ConfigId c = 0; c < t->num_configs(); ++c) {
      for (int k = 0; k < t->num_slots(); ++k) {
        const uint64_t bit = uint64_t{1} << k;
        if (t->slot_mask(c) & bit) {
          ASSERT_EQ(t->Add(c, k), kInvalidConfig);
          ASSERT_EQ(t->slot_mask(t->Remove(c, k)), t->slot_mask(c) & ~bit);
        } else {
          ASSERT_EQ(t->Remove(c, k), kInvalidConfig);
          ASSERT_EQ(t->Add(c, k), t->Find(t->slot_mask(c) | bit));
        }
      }
    }
  }
}

// The brute-force reference (tests/testing/brute_force.h) is written from the
// §1/§2 text without the table's machinery.
using ::migsched::testing::BruteFeasible;
using ::migsched::testing::BruteFragCost;
using ::migsched::testing::BruteValid;
using Inst = ::migsched::testing::BruteInstance;

TEST(ConfigTableTest, MatchesBruteForceReferenceOnEveryBundledModel) {
  for (const GpuModel* m : migsched::testing::BundledCatalog().models()) {
    SCOPED_TRACE(m->name());
    auto t = ConfigTable::Build(*m);
    BruteFragCost brute(*m);
    for (ConfigId c = 0; c < t->num_configs(); ++c) {
      std::vector<Inst> busy;
      for (int k = 0; k < t->num_slots(); ++k) {
        if (t->slot_mask(c) & (uint64_t{1} << k)) {
          const Slot& s = m->slots()[k];
          busy.push_back({s.profile, s.start, s.size, s.compute_slices});
        }
      }
      ASSERT_TRUE(BruteValid(*m, busy));
      const std::vector<int> ideal_all = brute.Ideal(busy);
      double sum = 0;
      int mprime = 0;
      for (size_t term = 0; term < m->base_profiles().size(); ++term) {
        const int feasible = BruteFeasible(*m, busy, m->base_profiles()[term]);
        const int ideal = ideal_all[term];
        ASSERT_EQ(t->Feasible(c, term), feasible) << "config " << c << " term " << term;
        ASSERT_EQ(t->Ideal(c, term), ideal) << "config " << c << " term " << term;
        if (ideal > 0) {
          ++mprime;
          sum += static_cast<double>(feasible) / ideal;
        }
      }
      ASSERT_NEAR(t->FragCost(c), mprime == 0 ? 0.0 : 1.0 - sum / mprime, 1e-12) << "config " << c;
      ASSERT_NEAR(t->FragCost(c), brute.FragCost(busy), 1e-12) << "config " << c;
    }
  }
}

// The models added from docs/mig-hardware.md §3, counted by hand. The eight 8-unit, 7-slice
// models have H100's placements and instance limits (7/4/3/2/1/1 over the six base profiles), so
// the same 18 slots and 723 valid configurations as A100 40GB
// (ReproducesAll723HandCheckedA100Cases) and, slot for slot, the same FragCost and terms. RTX PRO
// 5000/4500 ({0,1}:1 at most 2, {0}:2): 3 slots and 5 configurations: empty, 1g@0, 1g@1, 1g@0 +
// 1g@1, 2g@0. On them FragCost is 0 in every state: with one 1g busy, the other 1g fits (1 of 1)
// and the 2g is left out by capacity.
TEST(ConfigTableTest, TableCountsOfTheInferredModels) {
  const GpuModel& a100 = Model("A100-40GB");
  auto reference = ConfigTable::Build(a100);
  for (const char* name :
       {"H200-141GB", "GH200-96GB", "GH200-144GB", "H20", "B200", "GB200", "B300", "GB300"}) {
    SCOPED_TRACE(name);
    const GpuModel& m = Model(name);
    auto t = ConfigTable::Build(m);
    EXPECT_EQ(t->num_slots(), 18);
    EXPECT_EQ(t->num_terms(), 6);
    ASSERT_EQ(t->num_configs(), 723);
    // The slots in the same order (base profile by slices, then start) on both models.
    ASSERT_EQ(m.slots().size(), a100.slots().size());
    for (size_t k = 0; k < m.slots().size(); ++k) {
      EXPECT_EQ(m.slots()[k].unit_mask, a100.slots()[k].unit_mask) << "slot " << k;
      EXPECT_EQ(m.slots()[k].compute_slices, a100.slots()[k].compute_slices) << "slot " << k;
    }
    for (ConfigId c = 0; c < t->num_configs(); ++c) {
      const ConfigId r = reference->Find(t->slot_mask(c));
      ASSERT_NE(r, kInvalidConfig) << "config " << c;
      ASSERT_DOUBLE_EQ(t->FragCost(c), reference->FragCost(r)) << "config " << c;
    }
  }
  for (const char* name : {"RTX-PRO-5000", "RTX-PRO-4500"}) {
    SCOPED_TRACE(name);
    auto t = ConfigTable::Build(Model(name));
    EXPECT_EQ(t->num_slots(), 3);
    ASSERT_EQ(t->num_configs(), 5);
    for (ConfigId c = 0; c < t->num_configs(); ++c) EXPECT_EQ(t->FragCost(c), 0.0) << c;
  }
}

// The worked values of §2, on B200 (inferred placements, same geometry): 1g = 1g.23gb.
TEST(ConfigTableTest, WorkedValuesHoldOnB200) {
  const GpuModel& m = Model("B200");
  auto table = ConfigTable::Build(m);
  const struct {
    std::vector<std::pair<std::string, int>> busy;
    double fragcost;
  } cases[] = {
      {{{"1g.23gb", 6}}, 0.0},
      {{{"1g.23gb", 4}}, 1.0 / 15},
      {{{"1g.23gb", 0}}, 1.0 - (3 + 2.0 / 3) / 5},
      {{{"3g.90gb", 0}}, 0.35},
      {{{"1g.23gb", 0}, {"1g.23gb", 1}, {"1g.23gb", 5}}, 0.5},
      {{{"1g.45gb", 0}}, 0.3},
  };
  for (const auto& c : cases) {
    const ConfigId id = table->Find(MaskOf(m, c.busy));
    ASSERT_NE(id, kInvalidConfig);
    EXPECT_NEAR(table->FragCost(id), c.fragcost, 1e-9) << c.busy.front().first;
  }
}

// B200 (docs/mig-hardware.md §3.5): a 3g.90gb takes 3 of the 7 compute slices but 4 of the 8
// memory slices (placements {0,4}:4, at most 2; the DRA driver's note). Worked by hand:
// two of them (at 0 and at 4) hold all 8 placement units and 6 compute slices, so the seventh
// compute slice is free yet no profile has a placement left: nothing else fits. §2 counts it as
// missing capacity, not fragmentation: every feasible_m and ideal_m is 0 (no arrangement of two
// 3g leaves a unit free), M' is empty and FragCost is 0. The demand-weighted metric counts it:
// for every profile m, free_cs - cs_m × feasible_m = 1 - 0 = 1, so F = sum of p_m × 1 = 1 compute
// slice whatever the demand. Contrast: 4g.90gb@0 + 3g.90gb@4 also holds all 8 units, with all 7
// compute slices (nothing stranded).
TEST(ConfigTableTest, B200TwoThreeGLeaveOneComputeSliceThatNothingCanUse) {
  const GpuModel& m = Model("B200");
  const int p3g = m.FindProfile("3g.90gb");
  ASSERT_GE(p3g, 0);
  EXPECT_EQ(m.profile(p3g).compute_slices, 3);
  EXPECT_EQ(m.profile(p3g).memory_slices, 4);
  EXPECT_EQ(m.profile(p3g).max_instances, 2);
  auto table = ConfigTable::Build(m);
  const ConfigId two = table->Find(MaskOf(m, {{"3g.90gb", 0}, {"3g.90gb", 4}}));
  ASSERT_NE(two, kInvalidConfig);
  EXPECT_EQ(table->compute_used(two), 6);
  EXPECT_EQ(m.compute_slices() - table->compute_used(two), 1);
  EXPECT_EQ(table->unit_mask(two), 0xFFu);
  for (int slot = 0; slot < table->num_slots(); ++slot) {
    EXPECT_EQ(table->Add(two, slot), kInvalidConfig) << "slot " << slot << " still fits";
  }
  for (int t = 0; t < table->num_terms(); ++t) {
    EXPECT_EQ(table->Feasible(two, t), 0) << "term " << t;
    EXPECT_EQ(table->Ideal(two, t), 0) << "term " << t;
    const int cs = m.profile(m.base_profiles()[t]).compute_slices;
    EXPECT_EQ(1 - cs * table->Feasible(two, t), 1) << "term " << t;  // demand-weighted term
  }
  EXPECT_EQ(table->FragCost(two), 0.0);

  // The same on the GPU state: one free compute slice, and every create refused.
  GpuState g(m, *table);
  ASSERT_TRUE(g.Create(p3g, 0).ok());
  ASSERT_TRUE(g.Create(p3g, 4).ok());
  ASSERT_TRUE(g.StartJob(p3g, 0, 1).ok());
  ASSERT_TRUE(g.StartJob(p3g, 4, 2).ok());
  EXPECT_EQ(g.free_compute_slices(), 1);
  EXPECT_NEAR(g.utilization(), 6.0 / 7, 1e-12);
  for (int p = 0; p < static_cast<int>(m.profiles().size()); ++p) {
    for (const Placement& pl : m.profile(p).placements) {
      EXPECT_FALSE(g.Create(p, pl.start).ok()) << m.profile(p).name << "@" << pl.start;
    }
  }

  const ConfigId full = table->Find(MaskOf(m, {{"4g.90gb", 0}, {"3g.90gb", 4}}));
  ASSERT_NE(full, kInvalidConfig);
  EXPECT_EQ(table->compute_used(full), 7);
  EXPECT_EQ(table->unit_mask(full), 0xFFu);
}

// Every valid configuration is enumerated: count subsets of slots that pass
// the brute-force validity check directly.
TEST(ConfigTableTest, EnumeratesExactlyTheValidSubsets) {
  for (const char* name : {"A30-24GB", "RTX-PRO-6000", "A100-40GB", "RTX-PRO-5000"}) {
    const GpuModel& m = Model(name);
    auto t = ConfigTable::Build(m);
    const int s = static_cast<int>(m.slots().size());
    int valid = 0;
    for (uint64_t mask = 0; mask < (uint64_t{1} << s); ++mask) {
      std::vector<Inst> set;
      for (int k = 0; k < s; ++k) {
        if (mask & (uint64_t{1} << k)) {
          const Slot& sl = m.slots()[k];
          set.push_back({sl.profile, sl.start, sl.size, sl.compute_slices});
        }
      }
      const bool ok = BruteValid(m, set);
      valid += ok;
      ASSERT_EQ(t->Find(mask) != kInvalidConfig, ok) << name << " mask " << mask;
    }
    EXPECT_EQ(valid, t->num_configs()) << name;
  }
}

}  // namespace
}  // namespace migsched
