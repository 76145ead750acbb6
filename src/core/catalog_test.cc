#include "core/catalog.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::BundledCatalog;

struct LookupCase {
  std::string query;
  std::string canonical;  // by hand from the research file's `model` field
};

class CatalogLookupTest : public ::testing::TestWithParam<LookupCase> {};

TEST_P(CatalogLookupTest, FindsTheModel) {
  StatusOr<const GpuModel*> m = BundledCatalog().Find(GetParam().query);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->name(), GetParam().canonical);
}

INSTANTIATE_TEST_SUITE_P(
    Bundled, CatalogLookupTest,
    ::testing::Values(
        // Canonical names.
        LookupCase{"A100 40GB", "A100 40GB"}, LookupCase{"A100 80GB", "A100 80GB"},
        LookupCase{"H100 80GB", "H100 80GB"}, LookupCase{"H100 NVL 94GB", "H100 NVL 94GB"},
        LookupCase{"H200 141GB", "H200 141GB"}, LookupCase{"A30 24GB", "A30 24GB"},
        LookupCase{"RTX PRO 6000 Blackwell 96GB", "RTX PRO 6000 Blackwell 96GB"},
        // Every short name the project promises.
        LookupCase{"A100-40GB", "A100 40GB"}, LookupCase{"A100-80GB", "A100 80GB"},
        LookupCase{"H100-80GB", "H100 80GB"}, LookupCase{"H100-NVL-94GB", "H100 NVL 94GB"},
        LookupCase{"H100-94GB", "H100 NVL 94GB"}, LookupCase{"H200-141GB", "H200 141GB"},
        LookupCase{"A30-24GB", "A30 24GB"}, LookupCase{"A30", "A30 24GB"},
        LookupCase{"RTX-PRO-6000", "RTX PRO 6000 Blackwell 96GB"},
        // nvidia-smi names (aliases).
        LookupCase{"NVIDIA A100-SXM4-40GB", "A100 40GB"},
        LookupCase{"NVIDIA A100-PCIE-40GB", "A100 40GB"},
        LookupCase{"NVIDIA A100 80GB PCIe", "A100 80GB"},
        LookupCase{"NVIDIA H100 80GB HBM3", "H100 80GB"},
        LookupCase{"NVIDIA H100 NVL", "H100 NVL 94GB"}, LookupCase{"NVIDIA H200", "H200 141GB"},
        LookupCase{"NVIDIA A30", "A30 24GB"},
        LookupCase{"NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000 Blackwell 96GB"},
        // Case-insensitive.
        LookupCase{"a100-40gb", "A100 40GB"}, LookupCase{"nvidia h100 80gb hbm3", "H100 80GB"},
        LookupCase{"rtx-pro-6000", "RTX PRO 6000 Blackwell 96GB"}));

TEST(CatalogTest, UnknownNameListsKnownModels) {
  StatusOr<const GpuModel*> m = BundledCatalog().Find("V100");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  // Files load in name order (data/gpus/*.json); each model listed by its first short name.
  EXPECT_EQ(m.status().message(),
            "unknown GPU model 'V100' (known: A100-40GB, A100-80GB, A30-24GB, B200-180GB, "
            "B300-269GB, GB200-186GB, GB300-278GB, GH200-144GB, GH200-96GB, H100-80GB, "
            "H100-NVL-94GB, H20-96GB, H200-141GB, RTX-PRO-4500, RTX-PRO-5000, RTX-PRO-6000)");
}

TEST(CatalogTest, PrefixOfANameIsNotAMatch) {
  EXPECT_FALSE(BundledCatalog().Find("A100").ok());
  EXPECT_FALSE(BundledCatalog().Find("A100-40GB ").ok());
  EXPECT_FALSE(BundledCatalog().Find("").ok());
}

GpuModel SmallModel(const std::string& name, std::vector<std::string> short_names) {
  GpuModel::Spec s;
  s.name = name;
  s.short_names = std::move(short_names);
  s.compute_slices = 1;
  s.memory_slices = 1;
  s.placement_units = 1;
  s.profiles = {Profile{"1g.1gb", 0, 0, 1, 1, 1024, 1, {{0, 1}}, ""}};
  StatusOr<GpuModel> m = GpuModel::Create(s);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return *m;
}

TEST(CatalogTest, AddRejectsATakenName) {
  Catalog c;
  ASSERT_TRUE(c.Add(SmallModel("One", {"ONE"})).ok());
  Status st = c.Add(SmallModel("Two", {"TWO", "one"}));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "GPU model 'Two': name 'one' is already used by 'One'");
  ASSERT_EQ(c.models().size(), 1u);
  ASSERT_TRUE(c.Add(SmallModel("Two", {"TWO"})).ok());
  EXPECT_EQ(c.models().size(), 2u);
  EXPECT_EQ((*c.Find("two"))->name(), "Two");
}

struct SpellingCase {
  std::string written;
  std::string normalized;
};

class NormalizeProfileNameTest : public ::testing::TestWithParam<SpellingCase> {};

TEST_P(NormalizeProfileNameTest, GivesTheCatalogSpelling) {
  EXPECT_EQ(NormalizeProfileName(GetParam().written), GetParam().normalized);
}

INSTANTIATE_TEST_SUITE_P(
    Spellings, NormalizeProfileNameTest,
    ::testing::Values(SpellingCase{"1g.5gb", "1g.5gb"}, SpellingCase{"1G.5GB", "1g.5gb"},
                      SpellingCase{"MIG-1g.5gb", "1g.5gb"}, SpellingCase{"mig-3g.20gb", "3g.20gb"},
                      SpellingCase{"nvidia.com/mig-1g.10gb", "1g.10gb"},
                      SpellingCase{"NVIDIA.COM/MIG-7G.40GB", "7g.40gb"},
                      SpellingCase{"  2g.10gb\t", "2g.10gb"},
                      SpellingCase{"1g.5gb+me", "1g.5gb+me"},
                      // One prefix only, and never the whole name.
                      SpellingCase{"mig-mig-1g.5gb", "mig-1g.5gb"}, SpellingCase{"mig-", "mig-"},
                      SpellingCase{"nvidia.com/1g.5gb", "nvidia.com/1g.5gb"},
                      SpellingCase{"", ""}));

// Two small models: "Small" with 1g.4gb (1 compute slice, 4096 MiB) and
// 2g.8gb; "Wide" with 1g.2gb (1 slice, 2048 MiB), 1g.4gb and 2g.8gb+me.
Catalog TwoModelCatalog() {
  auto model = [](const std::string& name, std::vector<Profile> profiles) {
    GpuModel::Spec s;
    s.name = name;
    s.short_names = {name};
    s.compute_slices = 2;
    s.memory_slices = 2;
    s.placement_units = 2;
    s.profiles = std::move(profiles);
    StatusOr<GpuModel> m = GpuModel::Create(s);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return *m;
  };
  const Profile p1g4{"1g.4gb", 0, 0, 1, 1, 4096, 2, {{0, 1}, {1, 1}}, ""};
  const Profile p2g8{"2g.8gb", 1, 1, 2, 2, 8192, 1, {{0, 2}}, ""};
  const Profile p1g2{"1g.2gb", 2, 2, 1, 1, 2048, 2, {{0, 1}, {1, 1}}, ""};
  const Profile p2g8me{"2g.8gb+me", 3, 3, 2, 2, 8192, 1, {{0, 2}}, "2g.8gb"};
  Catalog c;
  EXPECT_TRUE(c.Add(model("Small", {p1g4, p2g8})).ok());
  EXPECT_TRUE(c.Add(model("Wide", {p1g2, p1g4, p2g8, p2g8me})).ok());
  return c;
}

TEST(CatalogTest, FindProfileNameAcceptsTheUsualSpellings) {
  const Catalog c = TwoModelCatalog();
  for (const char* written : {"1g.2gb", "1G.2GB", "MIG-1g.2gb", "nvidia.com/mig-1g.2gb"}) {
    StatusOr<std::string> name = c.FindProfileName(written);
    ASSERT_TRUE(name.ok()) << written << ": " << name.status().ToString();
    EXPECT_EQ(*name, "1g.2gb") << written;
  }
  EXPECT_EQ(*c.FindProfileName("2G.8GB+ME"), "2g.8gb+me");
}

TEST(CatalogTest, UnknownProfileListsEveryKnownNameOnceBySize) {
  const Catalog c = TwoModelCatalog();
  StatusOr<std::string> name = c.FindProfileName("9g.99gb");
  ASSERT_FALSE(name.ok());
  EXPECT_EQ(name.status().code(), StatusCode::kNotFound);
  // By compute slices, then memory: 1g.2gb (1, 2048), 1g.4gb (1, 4096; in both
  // models, listed once), then 2g.8gb and 2g.8gb+me (2, 8192; by name).
  EXPECT_EQ(name.status().message(),
            "unknown profile '9g.99gb' (known: 1g.2gb, 1g.4gb, 2g.8gb, 2g.8gb+me)");
}

TEST(CatalogTest, GpuModelFindProfileAcceptsTheSameSpellings) {
  const Catalog c = TwoModelCatalog();
  const GpuModel& wide = **c.Find("Wide");
  EXPECT_EQ(wide.FindProfile("1g.4gb"), 1);
  EXPECT_EQ(wide.FindProfile("MIG-1G.4GB"), 1);
  EXPECT_EQ(wide.FindProfile("nvidia.com/mig-2g.8gb+me"), 3);
  EXPECT_EQ(wide.FindProfile("3g.8gb"), -1);
  EXPECT_EQ((*c.Find("Small"))->FindProfile("1g.2gb"), -1);  // known, but not on this model
}

}  // namespace
}  // namespace migsched
