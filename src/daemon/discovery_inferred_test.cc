// Discovery on the GPU models whose placements the catalog only infers (docs/mig-hardware.md §3):
// the daemon finds them by the names nvidia-smi prints, and where the driver's own listing
// differs from the inferred one, the driver wins (docs/algorithms.md §7).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/discovery.h"
#include "daemon/fake_backend.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::testing::Each;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(DiscoveryInferredTest, EachInferredModelIsFoundByItsNvidiaSmiName) {
  for (const GpuModel* m : testing::BundledCatalog().models()) {
    if (m->confirmed()) continue;
    SCOPED_TRACE(m->name());
    for (const std::string& alias : m->aliases()) {
      FakeBackend backend({m});
      backend.SetGpuName(0, alias);
      auto inv = DiscoverNode(&backend, testing::BundledCatalog(), {});
      ASSERT_TRUE(inv.ok()) << inv.status().ToString();
      // A driver that reports what the catalog infers: the catalog's model, unchanged.
      EXPECT_EQ(inv->gpus[0].model, m) << alias;
      EXPECT_THAT(inv->notes, IsEmpty());
    }
  }
}

TEST(DiscoveryInferredTest, TheDriversPlacementsReplaceInferredOnes) {
  // An RTX PRO 5000 whose driver lists a 12-unit grid like the RTX PRO 6000's (mig-hardware.md
  // §2.6) instead of the catalog's assumed 2 units (§3.9), and ids 14/21 for the 1g profiles where
  // the catalog infers 5/6.
  const GpuModel& catalog = testing::Model("RTX-PRO-5000");
  FakeBackend backend({&catalog});
  backend.SetMemoryMib(0, 48935);
  backend.OverrideProfiles(0, {
                                  {0x0, 14, 1, 2, 24192, {{0, 6}, {6, 6}}},
                                  {0x7, 21, 1, 1, 24192, {{0, 6}, {6, 6}}},
                                  {0x1, 0, 2, 1, 48512, {{0, 12}}},
                              });
  auto inv = DiscoverNode(&backend, testing::BundledCatalog(), {});
  ASSERT_TRUE(inv.ok()) << inv.status().ToString();
  ASSERT_EQ(inv->owned_models.size(), 1u);
  const GpuModel& m = *inv->gpus[0].model;
  EXPECT_NE(&m, &catalog);
  EXPECT_EQ(m.name(), "RTX PRO 5000 Blackwell 48GB");  // the catalog's names
  EXPECT_EQ(m.placement_units(), 12);                  // the driver's grid
  // Names from memorySizeMB (mig-hardware.md §8.5): 24192 / 48935 = 0.49 → 4/8 × 48 GB = 24;
  // 48512 / 48935 = 0.99 → 8/8 × 48 = 48: the catalog's names again.
  const int one = m.FindProfile("1g.24gb");
  const int two = m.FindProfile("2g.48gb");
  ASSERT_GE(one, 0);
  ASSERT_GE(two, 0);
  EXPECT_EQ(m.profile(one).id, 14);
  EXPECT_EQ(m.profile(one).placements, (std::vector<Placement>{{0, 6}, {6, 6}}));
  EXPECT_EQ(m.profile(two).placements, (std::vector<Placement>{{0, 12}}));
  EXPECT_EQ(m.profile(m.FindProfile("1g.24gb+me")).variant_of, "1g.24gb");
  // The catalog's power data stays (300 W board limit).
  ASSERT_NE(m.power(), nullptr);
  EXPECT_EQ(m.power()->max_w, 300);
  ASSERT_FALSE(inv->notes.empty());
  EXPECT_THAT(inv->notes,
              Each(HasSubstr("GPU 0 (NVIDIA RTX PRO 5000 Blackwell): catalog model 'RTX PRO 5000 "
                             "Blackwell 48GB' differs from the driver: ")));
  EXPECT_THAT(inv->notes[0], HasSubstr("the driver's data is used"));
}

}  // namespace
}  // namespace migsched
