// The baselines users have: `largest-free-run` (the placement that shortens
// its GPU's largest run of free placement units the least) and the static
// layouts (`static`: chosen from the workload's mix known in advance;
// `static-all-balanced`: mig-parted's all-balanced). Expected values are
// worked out by hand in the comments (A100 40GB: 8 placement units, 7
// compute slices; 1g.5gb at starts 0..6, 3g.20gb at 0 and 4, 7g.40gb at 0).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sched/option_table.h"
#include "sched/policies/policies.h"
#include "sched/policy.h"
#include "sched/scheduler.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AddInstanceSteps;
using ::migsched::testing::JobOf;
using ::migsched::testing::Model;
using ::testing::HasSubstr;

TEST(LargestFreeRunTest, IsTheLongestRunOfFreeUnits) {
  EXPECT_EQ(LargestFreeRun(0, 8), 8);           // all free
  EXPECT_EQ(LargestFreeRun(0b00010000, 8), 4);  // unit 4 busy: 0-3 (4) and 5-7 (3)
  EXPECT_EQ(LargestFreeRun(0b10000001, 8), 6);  // units 1-6
  EXPECT_EQ(LargestFreeRun(0b11111111, 8), 0);
  EXPECT_EQ(LargestFreeRun(0b1, 1), 0);
}

// GPU i of `busy[i]` (PROFILE@START busy instances) on A100 40GB GPUs;
// where `policy` places one 1g.5gb instance: "gpu:profile@start".
std::string PlaceOne(const std::vector<std::string>& busy, const std::string& policy,
                     const std::string& profile) {
  std::vector<const GpuModel*> models(busy.size(), &Model("A100-40GB"));
  ConfigTableCache tables;
  Cluster cluster(models, &tables);
  Plan plan;
  JobId next = 1000;
  for (size_t i = 0; i < busy.size(); ++i) {
    AddInstanceSteps(*models[i], static_cast<int>(i), busy[i], &next, &plan);
  }
  EXPECT_TRUE(ApplyPlan(plan, &cluster).ok());
  SchedulerOptions o;
  auto p = MakePolicy(policy, o);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  ManualClock clock;
  Scheduler s(&cluster, std::move(*p), o, &clock);
  auto d = s.TryPlace(0, JobOf(profile));
  EXPECT_TRUE(d.ok());
  if (!d.ok() || !d->has_value()) return "";
  const InstanceRef& in = (*d)->instances.front();
  return fmt::format("{}:{}@{}", in.gpu, models[in.gpu]->profile(in.profile).name, in.start);
}

// GPU 0 holds 1g@5: its free runs are units 0-4 (5) and 6-7 (2). A 1g at 6
// leaves 0-4 (loss 0), at 0 leaves 1-4 (loss 1); on the empty GPU 1, 1g@0
// leaves 1-7 (7 of 8, loss 1). So largest-free-run takes 0:1g@6, where
// first-fit and best-fit take the lowest start, 0:1g@0.
TEST(LargestFreeRunTest, KeepsTheLargestRunWhereFirstFitCutsIt) {
  const std::vector<std::string> busy = {"1g.5gb@5", ""};
  EXPECT_EQ(PlaceOne(busy, "largest-free-run", "1g.5gb"), "0:1g.5gb@6");
  EXPECT_EQ(PlaceOne(busy, "first-fit", "1g.5gb"), "0:1g.5gb@0");
  EXPECT_EQ(PlaceOne(busy, "best-fit", "1g.5gb"), "0:1g.5gb@0");
}

// Equal losses: GPU 0 holds 3g@4 (free run 0-3, 4 units); a 1g at 0 or 3
// leaves 3 (loss 1), as 1g@0 on the empty GPU 1 does (8 -> 7): the fuller
// GPU 0 wins, then the lower start.
TEST(LargestFreeRunTest, BreaksTiesToTheFullerGpuThenTheLowerStart) {
  EXPECT_EQ(PlaceOne({"", "3g.20gb@4"}, "largest-free-run", "1g.5gb"), "1:1g.5gb@0");
}

// The layouts per GPU as "profile@start,..." in slot order.
std::vector<std::string> Layouts(const std::vector<const GpuModel*>& gpus,
                                 const std::vector<Job>& jobs) {
  ConfigTableCache tables;
  Cluster cluster(gpus, &tables);
  std::map<const GpuModel*, std::vector<double>> demand;
  for (const GpuModel* m : cluster.models()) demand[m] = StaticMixDemand(*m, jobs);
  const auto layouts = BestStaticLayouts(cluster, demand);
  std::vector<std::string> out;
  for (size_t g = 0; g < gpus.size(); ++g) {
    std::string s;
    for (const auto& [p, start] : layouts[g]) {
      s += fmt::format("{}{}@{}", s.empty() ? "" : ",", gpus[g]->profile(p).name, start);
    }
    out.push_back(s);
  }
  return out;
}

// Demand in compute slices per base profile (1g.5gb, 1g.10gb, 2g, 3g, 4g, 7g
// on A100 40GB): a 2x3g gang counts 6, a fraction 1/7 is 1g.5gb (1).
TEST(StaticLayoutTest, DemandIsComputeSlicesPerBaseProfile) {
  const GpuModel& m = Model("A100-40GB");
  std::vector<Job> jobs = {JobOf("3g.20gb", 2), JobOf("7g.40gb"), JobOf("1g.5gb")};
  Job f;
  f.gpu_fraction = 1.0 / 7;
  jobs.push_back(f);
  const std::vector<double> d = StaticMixDemand(m, jobs);
  std::vector<double> want(m.base_profiles().size(), 0.0);
  for (size_t k = 0; k < want.size(); ++k) {
    const std::string& n = m.profile(m.base_profiles()[k]).name;
    want[k] = n == "3g.20gb" ? 6 : n == "7g.40gb" ? 7 : n == "1g.5gb" ? 2 : 0;
  }
  EXPECT_EQ(d, want);
}

// Only 3g jobs: the target is all 14 slices of 3g; the full configuration
// 3g@0 + 3g@4 gives 6 per GPU, every other at most 3.
TEST(StaticLayoutTest, AnAllThreeSliceMixGetsTwoThreeSliceInstancesPerGpu) {
  EXPECT_THAT(Layouts({&Model("A100-40GB"), &Model("A100-40GB")}, {JobOf("3g.20gb")}),
              ::testing::ElementsAre("3g.20gb@0,3g.20gb@4", "3g.20gb@0,3g.20gb@4"));
}

// 7 slices of 1g and 7 of 7g demanded on 2 GPUs: targets 7 and 7. On GPU 0,
// 7x1g and 7g both add 7 (every other full configuration less: it holds an
// undemanded profile); the tie goes to more demanded instances, 7x1g. On GPU
// 1, 1g adds nothing more (supply 7 = target): 7g adds 7.
TEST(StaticLayoutTest, SplitsTheClusterBetweenTheMixsProfiles) {
  std::vector<Job> jobs(7, JobOf("1g.5gb"));
  jobs.push_back(JobOf("7g.40gb"));
  EXPECT_THAT(Layouts({&Model("A100-40GB"), &Model("A100-40GB")}, jobs),
              ::testing::ElementsAre(
                  "1g.5gb@0,1g.5gb@1,1g.5gb@2,1g.5gb@3,1g.5gb@4,1g.5gb@5,1g.5gb@6", "7g.40gb@0"));
}

// Every full configuration admits no further instance; the empty one is not
// full, and 7g@0 alone is.
TEST(StaticLayoutTest, FullConfigurationsAdmitNothingMore) {
  ConfigTableCache tables;
  const ConfigTable& t = tables.Get(Model("A100-40GB"));
  const std::vector<ConfigId> full = FullConfigurations(t);
  ASSERT_FALSE(full.empty());
  EXPECT_EQ(std::count(full.begin(), full.end(), kEmptyConfig), 0);
  for (ConfigId c : full) {
    for (int s = 0; s < t.num_slots(); ++s) EXPECT_EQ(t.Add(c, s), kInvalidConfig);
  }
  const GpuModel& m = Model("A100-40GB");
  const ConfigId seven = t.Add(kEmptyConfig, m.SlotOf(m.FindProfile("7g.40gb"), 0));
  EXPECT_NE(std::find(full.begin(), full.end(), seven), full.end());
}

TEST(StaticLayoutTest, TheRegistryGivesStaticTheMixAndStaticAllBalancedItsLayout) {
  EXPECT_EQ(OptionsForPolicy("static", {}, {}).static_layout, "best-for-mix");
  EXPECT_EQ(OptionsForPolicy("static-all-balanced", {}, {}).static_layout, "all-balanced");
  SchedulerOptions given;
  given.static_layout = "all-balanced";
  EXPECT_EQ(OptionsForPolicy("static", given, {.static_layout = true}).static_layout,
            "all-balanced");
}

// --static-layout (or the config key) marks its bit, so a layout given wins
// over `static`'s registry default.
TEST(StaticLayoutTest, AGivenStaticLayoutWinsOverTheRegistryDefault) {
  SchedulerOptions o;
  ExplicitOptions e;
  ASSERT_TRUE(FindSchedulerOption("static-layout")->Apply("all-balanced", &o, &e).ok());
  EXPECT_TRUE(e.static_layout);
  EXPECT_EQ(OptionsForPolicy("static", o, e).static_layout, "all-balanced");
}

// A driver without the workload in advance (the daemon) cannot lay out
// best-for-mix: a clear error, no layout.
TEST(StaticLayoutTest, BestForMixWithoutTheWorkloadIsAClearError) {
  ConfigTableCache tables;
  Cluster cluster({&Model("A100-40GB")}, &tables);
  const SchedulerOptions o = OptionsForPolicy("static", {}, {});
  auto p = MakePolicy("static", o);
  ASSERT_TRUE(p.ok());
  StatusOr<Plan> plan = (*p)->SetupPlan(cluster);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("known in advance"));
  EXPECT_THAT(plan.status().message(), HasSubstr("static-all-balanced"));
  (*p)->KnowWorkload(cluster, {JobOf("4g.20gb")});
  plan = (*p)->SetupPlan(cluster);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE((*p)->CreatesInstances());
  EXPECT_EQ((*p)->name(), "static");
}

// PolicyInfo::reads, which the CLI's notes of options a policy ignores rest on: by policy, from
// the sources (policies/*.cc: only FragAwarePolicy reads metric, frag_objective and reuse_first;
// it and LbPolicy the threshold; StaticPolicy the layout and not reserve_full), and consistent
// with what each policy says of itself (idle instances kept; instances created).
TEST(PolicyRegistryTest, ReadsAreWhatEachPolicyReads) {
  struct Want {
    bool threshold, metric, reuse_first, idle_ttl, static_layout, reserve_full;
  };
  const std::map<std::string, Want> want = {
      {"first-fit", {false, false, false, false, false, true}},
      {"lb", {true, false, false, false, false, true}},
      {"lb+frag", {true, true, true, true, false, true}},
      {"full", {true, true, true, true, false, true}},
      {"best-fit", {false, false, false, false, false, true}},
      {"driver-default", {false, false, false, false, false, true}},
      {"mfi", {false, false, false, false, false, true}},
      {"largest-free-run", {false, false, false, false, false, true}},
      {"static", {false, false, false, false, true, false}},
      {"static-all-balanced", {false, false, false, false, true, false}},
  };
  ASSERT_EQ(PolicyRegistry().size(), want.size());
  for (const PolicyInfo& p : PolicyRegistry()) {
    SCOPED_TRACE(p.name);
    const Want& w = want.at(p.name);
    EXPECT_EQ(p.reads.threshold, w.threshold);
    EXPECT_EQ(p.reads.metric, w.metric);
    EXPECT_EQ(p.reads.reuse_first, w.reuse_first);
    EXPECT_EQ(p.reads.idle_ttl, w.idle_ttl);
    EXPECT_EQ(p.reads.static_layout, w.static_layout);
    EXPECT_EQ(p.reads.reserve_full, w.reserve_full);
    SchedulerOptions o = OptionsForPolicy(p.name, SchedulerOptions{}, ExplicitOptions{});
    o.migration.enabled = false;  // `static` refuses it; not what is asked here
    auto made = MakePolicy(p.name, o);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    EXPECT_EQ(p.reads.idle_ttl, (*made)->KeepIdleInstances() && (*made)->CreatesInstances());
    EXPECT_EQ(p.reads.reserve_full, (*made)->CreatesInstances());
  }
}

}  // namespace
}  // namespace migsched
