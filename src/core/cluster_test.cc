// Cluster: spec parsing and the state groups kept up to date by ApplyPlan.
#include "core/cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/plan.h"
#include "core/rng.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::BundledCatalog;
using ::migsched::testing::Model;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

TEST(ClusterSpecTest, ParsesCountsAndNames) {
  auto gpus = ParseClusterSpec("2xA100-40GB, 1xNVIDIA H100 80GB HBM3,A30", BundledCatalog());
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 4u);
  EXPECT_EQ((*gpus)[0]->name(), "A100 40GB");
  EXPECT_EQ((*gpus)[1], (*gpus)[0]);
  EXPECT_EQ((*gpus)[2]->name(), "H100 80GB");
  EXPECT_EQ((*gpus)[3]->name(), "A30 24GB");
}

// Regression (ClusterSpecWithBlanksAroundTheX): outputs name a cluster "4x A100 40GB"; that form
// and blanks on both sides of the 'x' read as the count and the model.
TEST(ClusterSpecTest, ClusterSpecWithBlanksAroundTheX) {
  auto gpus = ParseClusterSpec("4x A100 40GB, 2 x A30 24GB", BundledCatalog());
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 6u);
  EXPECT_EQ((*gpus)[3]->name(), "A100 40GB");
  EXPECT_EQ((*gpus)[4]->name(), "A30 24GB");
}

TEST(ClusterSpecTest, BadSpecsAreClearErrors) {
  struct Case {
    std::string spec, error;
  } cases[] = {
      {"", "empty cluster spec"},
      {"4xA100-40GB,", "empty part"},
      {"0xA100-40GB", "GPU count must be in 1..1000000"},
      // An absurd count is a count out of range, not part of a model name.
      {"99999999999xA100-40GB",
       "cluster spec part '99999999999xA100-40GB': GPU count must be in 1..1000000"},
      {"1000001xA100-40GB",
       "cluster spec part '1000001xA100-40GB': GPU count must be in 1..1000000"},
      {"4xV100", "cluster spec part '4xV100': unknown GPU model 'V100'"},
      // Regression (trial_cluster_total_unbounded): every part in range, the whole not.
      {"600000xA100-40GB,400000xA30-24GB,1xH100-80GB",
       "cluster spec: 1000001 GPUs or more in all; at most 1000000 in a cluster"},
      // Regression (SignedCountIsACountError): a signed count is a bad count, not a model name.
      {"-1xA100-40GB", "cluster spec part '-1xA100-40GB': GPU count must be in 1..1000000"},
      {"+4xA100-40GB", "cluster spec part '+4xA100-40GB': GPU count must be in 1..1000000"},
  };
  for (const Case& c : cases) {
    auto gpus = ParseClusterSpec(c.spec, BundledCatalog());
    ASSERT_FALSE(gpus.ok()) << c.spec;
    EXPECT_THAT(gpus.status().message(), HasSubstr(c.error)) << c.spec;
  }
}

TEST(ClusterGroupsTest, IdenticalGpusShareOneRepresentative) {
  auto gpus = ParseClusterSpec("3xA100-40GB,2xA30-24GB", BundledCatalog());
  ASSERT_TRUE(gpus.ok());
  ConfigTableCache tables;
  Cluster c(*gpus, &tables);
  // Empty: one group per model, represented by GPUs 0 and 3.
  EXPECT_THAT(c.representatives(), ElementsAre(0, 3));
  EXPECT_EQ(c.models().size(), 2u);
  // A 3g@4 on GPU 0 makes it a group of its own; GPU 1 now represents the empty A100s.
  const int p3g = c.gpu(0).model().FindProfile("3g.20gb");
  ASSERT_TRUE(ApplyPlan({{{StepKind::kCreate, 0, p3g, 4, kNoJob}}}, &c).ok());
  EXPECT_THAT(c.representatives(), ElementsAre(0, 1, 3));
  // The same idle 3g@4 on GPU 2 joins GPU 0's group.
  ASSERT_TRUE(ApplyPlan({{{StepKind::kCreate, 2, p3g, 4, kNoJob}}}, &c).ok());
  EXPECT_THAT(c.representatives(), ElementsAre(0, 1, 3));
  EXPECT_EQ(c.num_groups(), 3);
  // Busy differs from idle: starting a job on GPU 0 splits it from GPU 2.
  ASSERT_TRUE(ApplyPlan({{{StepKind::kStart, 0, p3g, 4, 7}}}, &c).ok());
  EXPECT_THAT(c.representatives(), ElementsAre(0, 1, 2, 3));
  // Free-slices buckets (A100: 7 compute slices; the busy 3g.20gb takes 3):
  // GPU 0 has 4 free, the idle-3g GPU 2 and the empty GPU 1 have 7, the A30s 4.
  EXPECT_THAT(c.RepresentativesWithFree(0, 4), ElementsAre(0));
  EXPECT_THAT(c.RepresentativesWithFree(0, 7), UnorderedElementsAre(1, 2));
  EXPECT_THAT(c.RepresentativesWithFree(1, 4), ElementsAre(3));
  EXPECT_TRUE(c.RepresentativesWithFree(0, 3).empty());
  EXPECT_TRUE(c.RepresentativesWithFree(0, 8).empty());
  EXPECT_TRUE(c.RepresentativesWithFree(2, 0).empty());
  // Grouping off: every GPU.
  c.set_grouping(false);
  EXPECT_THAT(c.representatives(), ElementsAre(0, 1, 2, 3, 4));
}

// Random plans; after each, the groups equal a brute-force grouping.
TEST(ClusterGroupsTest, RandomPlansKeepGroupsExact) {
  const uint64_t seed = testing::TestSeed(7);
  SCOPED_TRACE("seed " + std::to_string(seed));
  Rng rng(seed);
  auto gpus = ParseClusterSpec("6xA100-40GB,4xA30-24GB", BundledCatalog());
  ASSERT_TRUE(gpus.ok());
  ConfigTableCache tables;
  Cluster c(*gpus, &tables);
  JobId next = 0;
  for (int step = 0; step < 2000; ++step) {
    const int g = static_cast<int>(rng.UniformInt(0, c.size() - 1));
    const GpuState& s = c.gpu(g);
    Plan plan;
    const auto& insts = s.instances();
    const double r = rng.Uniform01();
    if (!insts.empty() && r < 0.4) {
      const Instance& in = insts[rng.UniformInt(0, insts.size() - 1)];
      if (in.busy()) {
        plan.steps.push_back({StepKind::kRelease, g, in.profile, in.start, in.job});
      } else if (rng.Uniform01() < 0.5) {
        plan.steps.push_back({StepKind::kStart, g, in.profile, in.start, next++});
      } else {
        plan.steps.push_back({StepKind::kDestroy, g, in.profile, in.start, kNoJob});
      }
    } else {
      const GpuModel& m = s.model();
      const Slot& slot = m.slots()[rng.UniformInt(0, m.slots().size() - 1)];
      if (s.table().Add(s.all_config(), m.SlotOf(slot.profile, slot.start)) == kInvalidConfig)
        continue;
      plan.steps.push_back({StepKind::kCreate, g, slot.profile, slot.start, kNoJob});
    }
    ASSERT_TRUE(ApplyPlan(plan, &c).ok());
    // Now and then a reservation (§5) is placed or lifted: a group of its own.
    if (rng.Uniform01() < 0.05) {
      const int r = static_cast<int>(rng.UniformInt(0, c.size() - 1));
      c.SetReserved(r, !c.reserved(r));
    }
    std::map<std::string, int> lowest;
    for (int i = 0; i < c.size(); ++i) {
      std::string key = c.gpu(i).model().name();
      for (const Instance& in : c.gpu(i).instances()) {
        key += "|" + std::to_string(in.profile) + "@" + std::to_string(in.start) +
               (in.busy() ? "b" : "i");
      }
      if (c.reserved(i)) key += "|reserved";
      if (!lowest.count(key)) lowest[key] = i;
    }
    std::set<int> expected;
    for (const auto& [k, i] : lowest) expected.insert(i);
    ASSERT_EQ(c.representatives(), std::vector<int>(expected.begin(), expected.end()))
        << "step " << step;
    ASSERT_EQ(c.num_groups(), static_cast<int>(lowest.size()));
    // The free-slices buckets: every non-reserved representative, in the
    // bucket of its model and free compute slices (model compute slices minus
    // the busy instances' ones, counted here from the instances).
    for (int mi = 0; mi < static_cast<int>(c.models().size()); ++mi) {
      const GpuModel& m = *c.models()[mi];
      for (int free = -1; free <= 9; ++free) {
        std::set<int> want;
        for (int rep : expected) {
          if (&c.gpu(rep).model() != &m || c.reserved(rep)) continue;
          int busy = 0;
          for (const Instance& in : c.gpu(rep).instances()) {
            if (in.busy()) busy += m.profile(in.profile).compute_slices;
          }
          if (m.compute_slices() - busy == free) want.insert(rep);
        }
        const std::vector<int>& got = c.RepresentativesWithFree(mi, free);
        ASSERT_EQ(std::set<int>(got.begin(), got.end()), want)
            << "step " << step << " model " << m.name() << " free " << free;
        ASSERT_EQ(got.size(), want.size()) << "step " << step << ": a GPU listed twice";
      }
    }
  }
}

// The change journal lists the GPUs of every SetGpu since a cursor, in call
// order; another cluster's cursor, a copy's, or one older than the journal
// kept (max(4096, 4 × GPUs) changes) is refused.
TEST(ClusterJournalTest, ListsChangedGpusSinceACursor) {
  ConfigTableCache tables;
  Cluster c({&Model("A100-40GB"), &Model("A100-40GB"), &Model("A30-24GB")}, &tables);
  const Cluster::ChangeCursor start = c.change_cursor();
  std::vector<int> changed;
  ASSERT_TRUE(c.ChangedSince(start, &changed));
  EXPECT_TRUE(changed.empty());
  const int p1g = c.gpu(0).model().FindProfile("1g.5gb");
  // One plan touching GPUs 2 and 0 (one SetGpu each), then GPU 0 again.
  const int a30_1g = c.gpu(2).model().FindProfile("1g.6gb");
  ASSERT_TRUE(
      ApplyPlan(
          {{{StepKind::kCreate, 2, a30_1g, 0, kNoJob}, {StepKind::kCreate, 0, p1g, 6, kNoJob}}}, &c)
          .ok());
  const Cluster::ChangeCursor middle = c.change_cursor();
  ASSERT_TRUE(ApplyPlan({{{StepKind::kStart, 0, p1g, 6, 1}}}, &c).ok());
  changed.clear();
  ASSERT_TRUE(c.ChangedSince(start, &changed));
  EXPECT_THAT(changed, UnorderedElementsAre(0, 2, 0));
  changed.clear();
  ASSERT_TRUE(c.ChangedSince(middle, &changed));
  EXPECT_THAT(changed, ElementsAre(0));
  // A reservation is scheduling state, not a change of the GPU: not listed.
  c.SetReserved(1, true);
  changed.clear();
  ASSERT_TRUE(c.ChangedSince(c.change_cursor(), &changed));
  EXPECT_TRUE(changed.empty());
  // A copy is another cluster: neither takes the other's cursor.
  Cluster copy = c;
  changed.clear();
  EXPECT_FALSE(copy.ChangedSince(middle, &changed));
  EXPECT_FALSE(c.ChangedSince(copy.change_cursor(), &changed));
  EXPECT_TRUE(changed.empty());
  // A default cursor names no cluster.
  EXPECT_FALSE(c.ChangedSince(Cluster::ChangeCursor{}, &changed));
  // 4096 more changes (> max(4096, 4 × 3)): the journal no longer reaches `start`.
  for (int i = 0; i < 4096; ++i) {
    ASSERT_TRUE(ApplyPlan({{{StepKind::kRelease, 0, p1g, 6, 1}}}, &c).ok());
    ASSERT_TRUE(ApplyPlan({{{StepKind::kStart, 0, p1g, 6, 1}}}, &c).ok());
  }
  EXPECT_FALSE(c.ChangedSince(start, &changed));
  const Cluster::ChangeCursor late = c.change_cursor();
  ASSERT_TRUE(ApplyPlan({{{StepKind::kRelease, 0, p1g, 6, 1}}}, &c).ok());
  changed.clear();
  ASSERT_TRUE(c.ChangedSince(late, &changed));
  EXPECT_THAT(changed, ElementsAre(0));
}

// A request as reasons name it. By hand: gpu_fraction 0.5 is 4g.20gb on an A100 40GB (4 of 7
// compute slices, the smallest >= 0.5) and 2g.12gb on an A30 (2 of 4). Regression
// gang_count_read_as_one_alternatives: a gang of two read "2x4g.20gb or 2g.12gb", as if the
// count were the first alternative's only.
TEST(NameRequestTest, AGangOfSeveralAlternativesCountsThemAll) {
  Job j;
  j.gpu_fraction = 0.5;
  j.count = 2;
  const std::vector<const GpuModel*> both = {&Model("A100-40GB"), &Model("A30-24GB")};
  EXPECT_EQ(NameRequest(both, j).what, "2x(4g.20gb or 2g.12gb)");
  EXPECT_EQ(NameRequest(both, j).fraction, " (gpu_fraction 0.5)");
  EXPECT_EQ(NameRequest({&Model("A100-40GB")}, j).what, "2x4g.20gb");
  j.count = 1;
  EXPECT_EQ(NameRequest(both, j).what, "4g.20gb or 2g.12gb");
}

}  // namespace
}  // namespace migsched
