#include "daemon/discovery.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/fake_backend.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const GpuModel* A100() { return &testing::Model("A100-40GB"); }

std::vector<std::string> ProfileNames(const GpuModel& m) {
  std::vector<std::string> out;
  for (const Profile& p : m.profiles()) out.push_back(p.name);
  return out;
}

TEST(DiscoveryTest, CatalogModelWhenTheDriverAgrees) {
  FakeBackend backend({A100(), A100()});
  auto inv = DiscoverNode(&backend, testing::BundledCatalog(), {});
  ASSERT_TRUE(inv.ok()) << inv.status().ToString();
  ASSERT_EQ(inv->gpus.size(), 2u);
  EXPECT_EQ(inv->gpus[0].model, A100());  // the catalog's own model, no copy
  EXPECT_EQ(inv->gpus[1].model, A100());
  EXPECT_EQ(inv->gpus[1].gpu.index, 1);
  EXPECT_THAT(inv->owned_models, IsEmpty());
  EXPECT_THAT(inv->notes, IsEmpty());
  EXPECT_THAT(inv->gpus[0].instances, IsEmpty());
}

TEST(DiscoveryTest, DriverMismatchIsReportedAndTheDriverWins) {
  FakeBackend backend({A100(), A100(), A100()});
  // An older driver without 1g.10gb (id 15; "Older -lgipp dumps lack IDs 20/15",
  // docs/mig-hardware.md §2.2) and reporting 3g.20gb (id 9) as 19.62 GiB = 20096 MiB.
  std::vector<BackendProfile> driver = BackendProfilesOf(*A100());
  std::erase_if(driver, [](const BackendProfile& p) { return p.id == 15; });
  for (BackendProfile& p : driver) {
    if (p.id == 9) p.memory_mib = 20096;
  }
  backend.OverrideProfiles(0, driver);
  backend.OverrideProfiles(2, driver);
  auto inv = DiscoverNode(&backend, testing::BundledCatalog(), {});
  ASSERT_TRUE(inv.ok()) << inv.status().ToString();
  ASSERT_EQ(inv->gpus.size(), 3u);
  const std::string prefix =
      "GPU 0 (NVIDIA A100-SXM4-40GB): catalog model 'A100 40GB' differs from the driver: ";
  EXPECT_THAT(inv->notes,
              ElementsAre(prefix + "profile 1g.10gb (id 15) is not offered by the driver; the "
                                   "driver's data is used",
                          prefix + "profile 3g.20gb (id 9): 19968 MiB in the catalog, 20096 MiB "
                                   "in the driver; the driver's data is used",
                          HasSubstr("GPU 2 (NVIDIA A100-SXM4-40GB): catalog model 'A100 40GB' "
                                    "differs from the driver: profile 1g.10gb (id 15)"),
                          HasSubstr("GPU 2 (NVIDIA A100-SXM4-40GB): catalog model 'A100 40GB' "
                                    "differs from the driver: profile 3g.20gb (id 9)")));
  // GPU 1 agrees with the catalog; GPUs 0 and 2 share one model built from the driver's data.
  EXPECT_EQ(inv->gpus[1].model, A100());
  ASSERT_EQ(inv->owned_models.size(), 1u);
  const GpuModel& m = *inv->gpus[0].model;
  EXPECT_EQ(&m, inv->owned_models[0].get());
  EXPECT_EQ(inv->gpus[2].model, &m);
  EXPECT_EQ(m.name(), "A100 40GB");  // the catalog's names
  EXPECT_EQ(m.placement_units(), 8);
  EXPECT_EQ(m.compute_slices(), 7);
  EXPECT_EQ(m.FindProfile("1g.10gb"), -1);
  ASSERT_GE(m.FindProfile("3g.20gb"), 0);
  EXPECT_EQ(m.profile(m.FindProfile("3g.20gb")).memory_mib, 20096);
  EXPECT_EQ(m.profile(m.FindProfile("3g.20gb")).placements,
            (std::vector<Placement>{{0, 4}, {4, 4}}));
  EXPECT_EQ(m.profile(m.FindProfile("1g.5gb+me")).variant_of, "1g.5gb");
  // Power data comes from the catalog (A100 40GB: idle 35 W, max 250 W).
  ASSERT_NE(m.power(), nullptr);
  EXPECT_EQ(m.power()->max_w, 250);
  // The five base profiles left: 1g.5gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb.
  EXPECT_EQ(m.base_profiles().size(), 5u);
}

TEST(DiscoveryTest, UnknownModelIsBuiltFromDriverData) {
  // A product the catalog does not know, with an A30-like grid (docs/mig-hardware.md §2.1: ids 14,
  // 5, 0; {0,1,2,3}:1, {0,2}:2, {0}:4; 5952 / 11968 / 24000 MiB).
  FakeBackend backend({A100()});
  backend.SetGpuName(0, "NVIDIA X30 Prototype");
  backend.SetMemoryMib(0, 24576);  // 24 GiB
  std::vector<BackendProfile> driver = {
      {0x0, 14, 1, 4, 5952, {{0, 1}, {1, 1}, {2, 1}, {3, 1}}},
      {0x7, 21, 1, 1, 5952, {{0, 1}, {1, 1}, {2, 1}, {3, 1}}},
      {0x1, 5, 2, 2, 11968, {{0, 2}, {2, 2}}},
      {0x3, 0, 4, 1, 24000, {{0, 4}}},
  };
  backend.OverrideProfiles(0, driver);
  auto inv = DiscoverNode(&backend, testing::BundledCatalog(), {});
  ASSERT_TRUE(inv.ok()) << inv.status().ToString();
  ASSERT_EQ(inv->gpus.size(), 1u);
  ASSERT_EQ(inv->owned_models.size(), 1u);
  const GpuModel& m = *inv->gpus[0].model;
  EXPECT_EQ(m.name(), "NVIDIA X30 Prototype");
  EXPECT_EQ(m.placement_units(), 4);  // largest placement end
  EXPECT_EQ(m.compute_slices(), 4);   // largest profile's slices
  // Names from memorySizeMB over the device memory, rounded up to 1/8, times 24 GB (mig-hardware.md
  // §8.5): 5952/24576 = 0.242 → 2/8 × 24 = 6; 11968/24576 = 0.487 → 4/8 × 24 = 12; 24000/24576 =
  // 0.977 → 8/8 × 24 = 24. The A30's own names (mig-hardware.md §2.1).
  EXPECT_THAT(ProfileNames(m), ElementsAre("1g.6gb", "2g.12gb", "4g.24gb", "1g.6gb+me"));
  EXPECT_EQ(m.profile(m.FindProfile("1g.6gb+me")).variant_of, "1g.6gb");
  EXPECT_EQ(m.profile(m.FindProfile("2g.12gb")).id, 5);
  EXPECT_EQ(m.power(), nullptr);
  EXPECT_THAT(inv->notes, ElementsAre("GPU 0 (NVIDIA X30 Prototype): not in the catalog; modelled "
                                      "from the driver's MIG profiles and placements alone"));
}

TEST(DiscoveryTest, MigDisabledGpuIsRefusedUnlessLeftOut) {
  FakeBackend backend({A100(), A100()});
  backend.SetMigEnabled(1, false);
  auto inv = DiscoverNode(&backend, testing::BundledCatalog(), {});
  ASSERT_FALSE(inv.ok());
  EXPECT_EQ(inv.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(inv.status().message(),
              HasSubstr("GPU 1 (NVIDIA A100-SXM4-40GB, GPU-fake-00000000-0000-0000-0000-"
                        "000000000001) does not have MIG mode enabled"));
  EXPECT_THAT(inv.status().message(), HasSubstr("`sudo nvidia-smi -i 1 -mig 1`"));
  EXPECT_THAT(inv.status().message(), HasSubstr("GPU reset or a reboot"));
  auto only0 = DiscoverNode(&backend, testing::BundledCatalog(), {"0"});
  ASSERT_TRUE(only0.ok()) << only0.status().ToString();
  ASSERT_EQ(only0->gpus.size(), 1u);
  EXPECT_EQ(only0->gpus[0].gpu.index, 0);
}

TEST(DiscoveryTest, SelectionByIndexAndUuid) {
  FakeBackend backend({A100(), A100(), A100()});
  struct Case {
    std::vector<std::string> selection;
    std::vector<int> indices;
  };
  const std::vector<Case> cases = {
      {{"2"}, {2}},
      {{"GPU-fake-00000000-0000-0000-0000-000000000001"}, {1}},
      // Order and duplicates do not matter: ascending index, each once.
      {{"2", "0", "GPU-fake-00000000-0000-0000-0000-000000000000"}, {0, 2}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.selection));
    auto inv = DiscoverNode(&backend, testing::BundledCatalog(), c.selection);
    ASSERT_TRUE(inv.ok()) << inv.status().ToString();
    std::vector<int> got;
    for (const DiscoveredGpu& g : inv->gpus) got.push_back(g.gpu.index);
    EXPECT_EQ(got, c.indices);
  }
}

TEST(DiscoveryTest, BadSelectionsAreErrors) {
  FakeBackend backend({A100(), A100()});
  struct Case {
    std::string entry;
    StatusCode code;
    std::string message;
  };
  const std::string listed =
      "the fake backend lists GPUs 0 (GPU-fake-00000000-0000-0000-0000-000000000000), 1 "
      "(GPU-fake-00000000-0000-0000-0000-000000000001)";
  const std::vector<Case> cases = {
      {"5", StatusCode::kNotFound, "GPU selection \"5\": " + listed},
      {"GPU-nope", StatusCode::kNotFound, "GPU selection \"GPU-nope\": " + listed},
      {"99999999999", StatusCode::kNotFound, "GPU selection \"99999999999\": " + listed},
      {"first", StatusCode::kInvalidArgument,
       "GPU selection \"first\" is neither an NVML index (0, 1, …) nor a GPU UUID (GPU-…)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.entry);
    auto inv = DiscoverNode(&backend, testing::BundledCatalog(), {c.entry});
    ASSERT_FALSE(inv.ok());
    EXPECT_EQ(inv.status().code(), c.code);
    EXPECT_EQ(inv.status().message(), c.message);
  }
}

TEST(DiscoveryTest, ExistingInstancesAreReturnedAndNoted) {
  FakeBackend backend({A100()});
  auto made = backend.CreateInstance(0, 9, {4, 4});  // 3g.20gb (id 9) at 4:4
  ASSERT_TRUE(made.ok());
  auto inv = DiscoverNode(&backend, testing::BundledCatalog(), {});
  ASSERT_TRUE(inv.ok()) << inv.status().ToString();
  ASSERT_EQ(inv->gpus[0].instances.size(), 1u);
  EXPECT_EQ(inv->gpus[0].instances[0].mig_uuid, made->mig_uuid);
  EXPECT_THAT(inv->notes, ElementsAre("GPU 0 (NVIDIA A100-SXM4-40GB): existing GPU instance 1: "
                                      "3g.20gb (profile id 9) at 4:4, " +
                                      made->mig_uuid));
}

TEST(DiscoveryTest, BackendErrorsPassThrough) {
  FakeBackend backend({A100(), A100()});
  backend.Disappear(0);
  backend.Disappear(1);
  auto inv = DiscoverNode(&backend, testing::BundledCatalog(), {"0"});
  ASSERT_FALSE(inv.ok());
  EXPECT_EQ(inv.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(inv.status().message(), HasSubstr("lists GPUs none"));
}

}  // namespace
}  // namespace migsched
