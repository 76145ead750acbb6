#include "cluster/capacity.h"

#include <gtest/gtest.h>

#include "io/catalog_loader.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using migsched::testing::Model;

int Count(const GpuModel& m, ConfigTableCache* tables, const std::string& profile) {
  const int p = m.FindProfile(profile);
  EXPECT_GE(p, 0) << profile;
  return MaxInstancesAtOnce(m, tables->Get(m), p);
}

// By hand from the A100 40GB placement grid (8 units, 7 compute slices):
// 1g.5gb has 7 placements (0..6) -> 7; 1g.10gb {0,2,4,6} -> 4; 2g.10gb
// {0,2,4} -> 3; 3g.20gb {0,4} -> 2 (6 of 7 compute slices); 4g.20gb and
// 7g.40gb one placement each; 1g.5gb+me: max_instances 1.
TEST(CapacityTest, A100PerGpuCountsWorkedOutByHand) {
  ConfigTableCache tables;
  const GpuModel& a100 = Model("A100-40GB");
  EXPECT_EQ(Count(a100, &tables, "1g.5gb"), 7);
  EXPECT_EQ(Count(a100, &tables, "1g.10gb"), 4);
  EXPECT_EQ(Count(a100, &tables, "2g.10gb"), 3);
  EXPECT_EQ(Count(a100, &tables, "3g.20gb"), 2);
  EXPECT_EQ(Count(a100, &tables, "4g.20gb"), 1);
  EXPECT_EQ(Count(a100, &tables, "7g.40gb"), 1);
  EXPECT_EQ(Count(a100, &tables, "1g.5gb+me"), 1);
}

// A30 (4 units, 4 compute slices): 1g.6gb 4, 2g.12gb {0,2} -> 2, 4g.24gb 1.
TEST(CapacityTest, A30PerGpuCounts) {
  ConfigTableCache tables;
  const GpuModel& a30 = Model("A30-24GB");
  EXPECT_EQ(Count(a30, &tables, "1g.6gb"), 4);
  EXPECT_EQ(Count(a30, &tables, "2g.12gb"), 2);
  EXPECT_EQ(Count(a30, &tables, "4g.24gb"), 1);
}

// A made-up model where compute slices bind before placements: 8 units,
// 6 compute slices, a 1-slice profile with 8 placements (max_instances 8)
// holds 6; a 2-slice profile with placements {0,2,4,6} holds 3.
TEST(CapacityTest, ComputeSlicesBindBeforePlacements) {
  const std::string json = R"({
    "schema": "migsched-gpu-model/1", "name": "Test 6C", "short_names": ["T6C"],
    "aliases": [], "confirmed": false, "compute_slices": 6, "memory_slices": 8,
    "placement_units": 8, "pcie_max_gbps": 10,
    "driver_default": {"highest_first": true, "orders": {}}, "static_layouts": {},
    "profiles": [
      {"name": "1g.1gb", "id": 1, "nvml_profile_index": 0, "compute_slices": 1,
       "memory_slices": 1, "memory_mib": 1000, "max_instances": 8,
       "placements": [{"start": 0, "size": 1}, {"start": 1, "size": 1}, {"start": 2, "size": 1},
                      {"start": 3, "size": 1}, {"start": 4, "size": 1}, {"start": 5, "size": 1},
                      {"start": 6, "size": 1}, {"start": 7, "size": 1}]},
      {"name": "2g.2gb", "id": 2, "nvml_profile_index": 1, "compute_slices": 2,
       "memory_slices": 2, "memory_mib": 2000, "max_instances": 4,
       "placements": [{"start": 0, "size": 2}, {"start": 2, "size": 2}, {"start": 4, "size": 2},
                      {"start": 6, "size": 2}]}
    ]})";
  auto model = ParseGpuModelJson(json, "test");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ConfigTableCache tables;
  EXPECT_EQ(Count(*model, &tables, "1g.1gb"), 6);
  EXPECT_EQ(Count(*model, &tables, "2g.2gb"), 3);
}

TEST(CapacityTest, NodeCapacitySumsOverGpusAndMergesSharedNames) {
  ConfigTableCache tables;
  const GpuModel* a100 = &Model("A100-40GB");
  const std::vector<ProfileCapacity> two = NodeCapacity({a100, a100}, &tables);
  const std::vector<ProfileCapacity> want_two = {{"1g.5gb", 14}, {"1g.5gb+me", 2}, {"1g.10gb", 8},
                                                 {"2g.10gb", 6}, {"3g.20gb", 4},   {"4g.20gb", 2},
                                                 {"7g.40gb", 2}};
  EXPECT_EQ(two, want_two);

  // A100 80GB and H100 80GB share 1g.10gb (7 each) and 1g.10gb+me (1 each);
  // H100's 1g.20gb... are all named like A100 80GB's, so every entry is 2x.
  const GpuModel* a80 = &Model("A100-80GB");
  const GpuModel* h100 = &Model("H100-80GB");
  const std::vector<ProfileCapacity> mixed = NodeCapacity({a80, h100}, &tables);
  const std::vector<ProfileCapacity> want_mixed = {
      {"1g.10gb", 14}, {"1g.10gb+me", 2}, {"1g.20gb", 8}, {"2g.20gb", 6},
      {"3g.40gb", 4},  {"4g.40gb", 2},    {"7g.80gb", 2}};
  EXPECT_EQ(mixed, want_mixed);

  // A100 40GB then A30: the A30's profiles come after the A100's.
  const std::vector<ProfileCapacity> other = NodeCapacity({a100, &Model("A30")}, &tables);
  ASSERT_EQ(other.size(), 7u + 5u);
  EXPECT_EQ(other[7], (ProfileCapacity{"1g.6gb", 4}));
  EXPECT_EQ(other.back(), (ProfileCapacity{"4g.24gb", 1}));
}

}  // namespace
}  // namespace migsched
