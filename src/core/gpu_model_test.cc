#include "core/gpu_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::Model;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

std::vector<std::string> BaseProfileNames(const GpuModel& m) {
  std::vector<std::string> out;
  for (int b : m.base_profiles()) out.push_back(m.profile(b).name);
  return out;
}

// Slot counts per base profile = number of placements in docs/mig-hardware.md §2
// (A100 40GB: {0..6}:1, {0,2,4,6}:2, {0,2,4}:2, {0,4}:4, {0}:4, {0}:8 -> 7+4+3+2+1+1 = 18, §1 of
// algorithms.md says 18; A30: {0..3}:1, {0,2}:2, {0}:4 -> 4+2+1; RTX PRO 6000: {0,3,6,9}:3,
// {0,6}:6, {0}:12 -> 4+2+1).
struct SlotCase {
  std::string gpu;
  std::vector<std::string> base_order;
  std::vector<size_t> slots_per_base;
  size_t total_slots;
};

class SlotTableTest : public ::testing::TestWithParam<SlotCase> {};

TEST_P(SlotTableTest, BaseProfilesAndSlots) {
  const SlotCase& c = GetParam();
  const GpuModel& m = Model(c.gpu);
  EXPECT_THAT(BaseProfileNames(m), ElementsAreArray(c.base_order));
  ASSERT_EQ(m.base_profiles().size(), c.slots_per_base.size());
  for (size_t i = 0; i < c.slots_per_base.size(); ++i) {
    EXPECT_EQ(m.SlotsOfProfile(m.base_profiles()[i]).size(), c.slots_per_base[i])
        << c.base_order[i];
  }
  EXPECT_EQ(m.slots().size(), c.total_slots);
  // Slots are grouped by base profile in base_profiles() order, starts ascending.
  int expected = 0;
  for (int b : m.base_profiles()) {
    int last_start = -1;
    for (int s : m.SlotsOfProfile(b)) {
      EXPECT_EQ(s, expected++);
      EXPECT_EQ(m.slots()[s].profile, b);
      EXPECT_GT(m.slots()[s].start, last_start);
      last_start = m.slots()[s].start;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Bundled, SlotTableTest,
    ::testing::Values(SlotCase{"A100-40GB",
                               {"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"},
                               {7, 4, 3, 2, 1, 1},
                               18},
                      SlotCase{"H100-80GB",
                               {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
                               {7, 4, 3, 2, 1, 1},
                               18},
                      SlotCase{"A30", {"1g.6gb", "2g.12gb", "4g.24gb"}, {4, 2, 1}, 7},
                      SlotCase{"RTX-PRO-6000", {"1g.24gb", "2g.48gb", "4g.96gb"}, {4, 2, 1}, 7},
                      // docs/mig-hardware.md §3: the inferred 8-unit models have H100's placements
                      // (7+4+3+2+1+1 = 18); RTX PRO 5000/4500 {0,1}:1, {0}:2 -> 2+1 = 3.
                      SlotCase{"B200",
                               {"1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"},
                               {7, 4, 3, 2, 1, 1},
                               18},
                      SlotCase{
                          "GB300",
                          {"1g.35gb", "1g.70gb", "2g.70gb", "3g.139gb", "4g.139gb", "7g.278gb"},
                          {7, 4, 3, 2, 1, 1},
                          18},
                      SlotCase{"RTX-PRO-5000", {"1g.24gb", "2g.48gb"}, {2, 1}, 3},
                      SlotCase{"RTX-PRO-4500", {"1g.16gb", "2g.32gb"}, {2, 1}, 3}));

TEST(GpuModelTest, SlotMasksAreTheOccupiedUnits) {
  const GpuModel& a100 = Model("A100-40GB");
  // 3g.20gb@4 occupies units 4..7 -> bits 4..7 = 0xF0; 1g.10gb@6 occupies 6,7 -> 0xC0;
  // 7g.40gb@0 occupies all 8 -> 0xFF.
  EXPECT_EQ(a100.slots()[a100.SlotOf(a100.FindProfile("3g.20gb"), 4)].unit_mask, 0xF0u);
  EXPECT_EQ(a100.slots()[a100.SlotOf(a100.FindProfile("1g.10gb"), 6)].unit_mask, 0xC0u);
  EXPECT_EQ(a100.slots()[a100.SlotOf(a100.FindProfile("7g.40gb"), 0)].unit_mask, 0xFFu);
  EXPECT_EQ(a100.all_units_mask(), 0xFFu);
  const GpuModel& rtx = Model("RTX-PRO-6000");
  // 2g.48gb@6 occupies units 6..11 of the 12-unit grid -> 0xFC0.
  EXPECT_EQ(rtx.slots()[rtx.SlotOf(rtx.FindProfile("2g.48gb"), 6)].unit_mask, 0xFC0u);
  EXPECT_EQ(rtx.all_units_mask(), 0xFFFu);
}

TEST(GpuModelTest, VariantsMapToTheirBase) {
  const GpuModel& m = Model("A100-40GB");
  const int me = m.FindProfile("1g.5gb+me");
  const int base = m.FindProfile("1g.5gb");
  ASSERT_GE(me, 0);
  ASSERT_GE(base, 0);
  EXPECT_EQ(m.BaseOf(me), base);
  EXPECT_EQ(m.BaseOf(base), base);
  EXPECT_EQ(m.SlotOf(me, 3), m.SlotOf(base, 3));
  EXPECT_EQ(m.slots()[m.SlotOf(me, 3)].start, 3);
  EXPECT_EQ(m.SlotsOfProfile(me), m.SlotsOfProfile(base));

  const GpuModel& rtx = Model("RTX-PRO-6000");
  for (const char* v : {"1g.24gb+me", "1g.24gb+gfx", "1g.24gb+me.all", "1g.24gb-me"}) {
    EXPECT_EQ(rtx.BaseOf(rtx.FindProfile(v)), rtx.FindProfile("1g.24gb")) << v;
  }
  EXPECT_EQ(rtx.BaseOf(rtx.FindProfile("2g.48gb-me")), rtx.FindProfile("2g.48gb"));
  EXPECT_EQ(rtx.BaseOf(rtx.FindProfile("4g.96gb+gfx")), rtx.FindProfile("4g.96gb"));
}

TEST(GpuModelTest, SlotOfRejectsStartsThatAreNotPlacements) {
  const GpuModel& m = Model("A100-40GB");
  EXPECT_EQ(m.SlotOf(m.FindProfile("2g.10gb"), 1), -1);  // {0,2,4}:2
  EXPECT_EQ(m.SlotOf(m.FindProfile("2g.10gb"), 6), -1);  // 6:2 is not offered for 2g
  EXPECT_EQ(m.SlotOf(m.FindProfile("1g.5gb"), 7), -1);   // {0..6}:1
  EXPECT_EQ(m.SlotOf(m.FindProfile("4g.20gb"), 4), -1);  // {0}:4
  EXPECT_EQ(m.SlotOf(-1, 0), -1);
  EXPECT_EQ(m.FindProfile("9g.99gb"), -1);
}

struct OrderCase {
  std::string gpu;
  std::string profile;
  std::vector<int> order;
};

class DriverDefaultOrderTest : public ::testing::TestWithParam<OrderCase> {};

// docs/mig-hardware.md §6 / docs/algorithms.md §11: on 8-unit A100/H100/H200 the first 1g goes to
// 6, then 4, 5, 0..3, and other profiles take the highest start first; A30 and RTX PRO 6000 fill
// from 0.
TEST_P(DriverDefaultOrderTest, MatchesTheObservedDriver) {
  const OrderCase& c = GetParam();
  const GpuModel& m = Model(c.gpu);
  const int p = m.FindProfile(c.profile);
  ASSERT_GE(p, 0) << c.profile;
  EXPECT_THAT(m.DriverDefaultOrder(p), ElementsAreArray(c.order));
}

INSTANTIATE_TEST_SUITE_P(
    Bundled, DriverDefaultOrderTest,
    ::testing::Values(OrderCase{"A100-40GB", "1g.5gb", {6, 4, 5, 0, 1, 2, 3}},
                      OrderCase{"A100-40GB", "1g.5gb+me", {6, 4, 5, 0, 1, 2, 3}},
                      OrderCase{"A100-40GB", "2g.10gb", {4, 2, 0}},
                      OrderCase{"A100-40GB", "1g.10gb", {6, 4, 2, 0}},
                      OrderCase{"A100-40GB", "3g.20gb", {4, 0}},
                      OrderCase{"A100-40GB", "7g.40gb", {0}},
                      OrderCase{"H100-80GB", "1g.10gb", {6, 4, 5, 0, 1, 2, 3}},
                      OrderCase{"H200-141GB", "2g.35gb", {4, 2, 0}},
                      OrderCase{"A30", "1g.6gb", {0, 1, 2, 3}}, OrderCase{"A30", "2g.12gb", {0, 2}},
                      OrderCase{"RTX-PRO-6000", "1g.24gb", {0, 3, 6, 9}},
                      OrderCase{"RTX-PRO-6000", "2g.48gb-me", {0, 6}},
                      // Inferred by analogy (docs/mig-hardware.md §6): the A100/H100 order on the
                      // 8-unit models, lowest first on the 2-slice RTX PRO models.
                      OrderCase{"B300", "1g.34gb+me", {6, 4, 5, 0, 1, 2, 3}},
                      OrderCase{"GH200-96GB", "3g.48gb", {4, 0}},
                      OrderCase{"RTX-PRO-5000", "1g.24gb+gfx", {0, 1}},
                      OrderCase{"RTX-PRO-4500", "1g.16gb", {0, 1}}));

TEST(GpuModelTest, AllBalancedLayoutUsesTheWholeGpu) {
  // mig-parted all-balanced: 1x3g + 1x2g + 2x1g on 7-slice models (3+2+1+1 = 7 compute slices,
  // 4+2+1+1 = 8 units on the 8-unit grid), 1x2g + 2x1g on 4-slice ones (2+1+1 = 4).
  struct Case {
    std::string gpu;
    std::vector<std::pair<std::string, int>> layout;
  };
  const std::vector<Case> cases = {
      {"A100-40GB", {{"2g.10gb", 0}, {"1g.5gb", 2}, {"1g.5gb", 3}, {"3g.20gb", 4}}},
      {"H200-141GB", {{"2g.35gb", 0}, {"1g.18gb", 2}, {"1g.18gb", 3}, {"3g.71gb", 4}}},
      {"A30", {{"2g.12gb", 0}, {"1g.6gb", 2}, {"1g.6gb", 3}}},
      {"RTX-PRO-6000", {{"2g.48gb", 0}, {"1g.24gb", 6}, {"1g.24gb", 9}}},
      {"B300", {{"2g.67gb", 0}, {"1g.34gb", 2}, {"1g.34gb", 3}, {"3g.135gb", 4}}},
      // 2-slice models: 2x1g (ours; mig-parted defines no all-balanced there).
      {"RTX-PRO-5000", {{"1g.24gb", 0}, {"1g.24gb", 1}}},
  };
  for (const Case& c : cases) {
    const GpuModel& m = Model(c.gpu);
    ASSERT_EQ(m.spec().static_layouts.size(), 1u) << c.gpu;
    EXPECT_EQ(m.spec().static_layouts[0].first, "all-balanced");
    EXPECT_EQ(m.spec().static_layouts[0].second, c.layout) << c.gpu;
  }
}

// A small hand-made 8-unit model for Create's own checks.
GpuModel::Spec TestSpec() {
  GpuModel::Spec s;
  s.name = "Test 8U";
  s.short_names = {"TEST-8U"};
  s.compute_slices = 7;
  s.memory_slices = 8;
  s.placement_units = 8;
  Profile one{"1g", 1, 0, 1, 1, 1000, 7, {{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {6, 1}},
              ""};
  Profile two{"2g", 2, 1, 2, 2, 2000, 3, {{4, 2}, {0, 2}, {2, 2}}, ""};
  Profile two_me{"2g+me", 3, 8, 2, 2, 2000, 1, {{0, 2}, {2, 2}, {4, 2}}, "2g"};
  Profile full{"7g", 0, 4, 7, 8, 8000, 1, {{0, 8}}, ""};
  s.profiles = {full, two, one, two_me};
  return s;
}

TEST(GpuModelCreateTest, AcceptsAValidSpecAndSortsPlacements) {
  StatusOr<GpuModel> m = GpuModel::Create(TestSpec());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  // Base order: by compute slices: 1g, 2g, 7g (catalog order was 7g, 2g, 1g).
  EXPECT_THAT(BaseProfileNames(*m), ElementsAre("1g", "2g", "7g"));
  EXPECT_EQ(m->slots().size(), 7u + 3u + 1u);
  EXPECT_EQ(m->profile(m->FindProfile("2g")).placements,
            (std::vector<Placement>{{0, 2}, {2, 2}, {4, 2}}));
}

// Regression catalog_model_with_too_many_configurations: every valid configuration is
// precomputed (core/config_table.h), so a model with billions of them exhausted memory at its
// first use. 32 units with a profile of 1, 2, 4, 8, 16 and 32 units at every aligned start: the
// 1-unit instances alone give 2^32 subsets. Counted here only up to the bound.
TEST(GpuModelCreateTest, RefusesAModelWithMoreConfigurationsThanTheTableHolds) {
  GpuModel::Spec s;
  s.name = "W32";
  s.compute_slices = 32;
  s.memory_slices = 32;
  s.placement_units = 32;
  int id = 0;
  for (int size : {1, 2, 4, 8, 16, 32}) {
    Profile p{std::to_string(size) + "g", id, id, size, size, 1024 * size, 32 / size, {}, ""};
    ++id;
    for (int start = 0; start < 32; start += size) p.placements.push_back({start, size});
    s.profiles.push_back(p);
  }
  StatusOr<GpuModel> m = GpuModel::Create(s);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "GPU model 'W32': more than 1048576 valid configurations of its instances (the most "
            "the scheduler precomputes, docs/algorithms.md §1); give its profiles fewer "
            "placements or a lower max_instances");
  // 16 units with a 4-unit profile at 4 starts and a 16-unit one at 0: 2^4 subsets of the
  // 4-unit slots plus the full one, 17 configurations: accepted.
  GpuModel::Spec small = s;
  small.placement_units = 16;
  small.compute_slices = 16;
  small.memory_slices = 16;
  small.profiles.clear();
  for (int size : {4, 16}) {
    Profile p{std::to_string(size) + "g", size, size, size, size, 1024 * size, 16 / size, {}, ""};
    for (int start = 0; start < 16; start += size) p.placements.push_back({start, size});
    small.profiles.push_back(p);
  }
  EXPECT_TRUE(GpuModel::Create(small).ok());
}

struct BadSpecCase {
  std::string name;
  void (*mutate)(GpuModel::Spec&);
  std::string message;
};

class GpuModelCreateBadTest : public ::testing::TestWithParam<BadSpecCase> {};

TEST_P(GpuModelCreateBadTest, ReportsModelProfileAndProblem) {
  GpuModel::Spec s = TestSpec();
  GetParam().mutate(s);
  StatusOr<GpuModel> m = GpuModel::Create(s);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m.status().message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, GpuModelCreateBadTest,
    ::testing::Values(
        BadSpecCase{
            "OutsideGrid",
            [](GpuModel::Spec& s) {
              s.profiles[1].placements[0] = {7, 2};
            },
            "GPU model 'Test 8U', profile '2g': placement 7:2 does not fit the 8-unit grid"},
        BadSpecCase{"MixedSizes",
                    [](GpuModel::Spec& s) {
                      s.profiles[1].placements[0] = {4, 4};
                    },
                    "GPU model 'Test 8U', profile '2g': placements have different sizes (2 at "
                    "start 0, 4 at start 4)"},
        // Regression catalog_profile_name_not_normal: requests are looked up by their
        // normalised name, so "1G" or "MIG-2g" could never be asked for.
        BadSpecCase{"NameNotNormal", [](GpuModel::Spec& s) { s.profiles[2].name = "1G"; },
                    "GPU model 'Test 8U', profile '1G': write the name as requests are "
                    "normalised: '1g' (lowercase, without a 'MIG-' prefix or surrounding spaces)"},
        BadSpecCase{"NameWithMigPrefix",
                    [](GpuModel::Spec& s) {
                      s.profiles[1].name = "MIG-2g";
                      s.profiles[3].variant_of = "MIG-2g";
                    },
                    "GPU model 'Test 8U', profile 'MIG-2g': write the name as requests are "
                    "normalised: '2g' (lowercase, without a 'MIG-' prefix or surrounding spaces)"},
        BadSpecCase{"TooManyComputeSlices",
                    [](GpuModel::Spec& s) { s.profiles[0].compute_slices = 8; },
                    "GPU model 'Test 8U', profile '7g': compute_slices 8 outside 1..7 (the "
                    "model's compute slices)"},
        BadSpecCase{"VariantShapeDiffers",
                    [](GpuModel::Spec& s) {
                      s.profiles[3].placements = {{0, 2}};
                    },
                    "GPU model 'Test 8U', profile '2g+me': variant of '2g' but its compute slices "
                    "or placements differ"},
        BadSpecCase{"UnknownBase", [](GpuModel::Spec& s) { s.profiles[3].variant_of = "3g"; },
                    "GPU model 'Test 8U', profile '2g+me': variant of unknown profile '3g'"},
        BadSpecCase{"DuplicateProfile", [](GpuModel::Spec& s) { s.profiles[3].name = "2g"; },
                    "GPU model 'Test 8U', profile '2g': duplicate profile name"},
        BadSpecCase{"DriverOrderIncomplete",
                    [](GpuModel::Spec& s) {
                      s.driver_default_orders = {{"2g", {4, 2}}};
                    },
                    "GPU model 'Test 8U': driver-default order for '2g' must list each of its 3 "
                    "starts once"},
        // Regression catalog_profile_memory_oversubscribed: a 1-slice-memory grid unit held a
        // 2-slice profile, so 7 of them side by side would hold 14 of the 8 memory slices.
        BadSpecCase{"MemoryOversubscribed",
                    [](GpuModel::Spec& s) { s.profiles[2].memory_slices = 2; },
                    "GPU model 'Test 8U', profile '1g': memory_slices 2 needs placements of at "
                    "least 2 of the 8 units (its share of the model's 8 memory slices), its have "
                    "1: instances side by side would hold more memory than the GPU has"},
        BadSpecCase{"MoreInstancesThanPlacements",
                    [](GpuModel::Spec& s) { s.profiles[1].max_instances = 4; },
                    "GPU model 'Test 8U', profile '2g': max_instances 4 is more than its 3 "
                    "placements"},
        BadSpecCase{"LayoutOverlap",
                    [](GpuModel::Spec& s) {
                      s.static_layouts = {{"x", {{"2g", 0}, {"1g", 1}}}};
                    },
                    "GPU model 'Test 8U': static layout 'x': 1g@1 overlaps another instance"}),
    [](const ::testing::TestParamInfo<BadSpecCase>& info) { return info.param.name; });

}  // namespace
}  // namespace migsched
