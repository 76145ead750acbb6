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

}  // namespace
}  // namespace migsched
