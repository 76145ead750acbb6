// The bounded run of the scheduler stress harness (sim/stress.h): a few dozen generated cases,
// each with the simulator's self-check on and the end checks. The seed of a failing case is
// printed (SCOPED_TRACE) with the command that replays it; MIGSCHED_SEED=N runs case N alone.
// The long run is scripts/stress.sh (`migsched stress`).
#include "sim/stress.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <set>
#include <string>

#include "core/catalog.h"
#include "core/gpu_model.h"
#include "sched/option_table.h"
#include "sched/policy.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::BundledCatalog;

constexpr uint64_t kSeeds = 60;

// The seeds to run: MIGSCHED_SEED alone when set, else 1..kSeeds.
std::vector<uint64_t> Seeds() {
  if (const char* s = std::getenv("MIGSCHED_SEED"); s != nullptr && *s != '\0') {
    return {std::strtoull(s, nullptr, 10)};
  }
  std::vector<uint64_t> out;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) out.push_back(seed);
  return out;
}

TEST(StressTest, GeneratedCasesKeepEveryInvariant) {
  StressCounts counts;
  for (uint64_t seed : Seeds()) {
    const StressCase c = GenerateStressCase(BundledCatalog(), seed, StressLimits{});
    SCOPED_TRACE("MIGSCHED_SEED=" + std::to_string(seed) + ": " + c.CommandLine("TRACE.csv"));
    Status st = RunStressCase(c, &counts);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  if (std::getenv("MIGSCHED_SEED") == nullptr) {
    // The fixed seeds exercise what is checked: placements, moves and rejections happened, and
    // every event time was checked.
    EXPECT_EQ(counts.workloads, static_cast<int64_t>(kSeeds));
    EXPECT_GT(counts.decisions, 0);
    EXPECT_GT(counts.migrations, 0);
    EXPECT_GT(counts.rejected, 0);
    EXPECT_GT(counts.invariant_checks, counts.workloads);
  }
}

// The seeds on which `migsched stress` once found a bug, each fixed with a regression test of its
// own: the whole generated case again (the generator is deterministic), so that the case, and
// not only the worked example, stays passing. 586637014: kept_holder_skipped_by_an_identical_
// request; 909903: oldest_reserved_on_an_evacuation_hold; 1288229: hold_holder_skipped_by_an_
// identical_request (each a stall: jobs queued with nothing left to happen). Options added to the
// table since are left out, so that each seed is its recorded case (regression:
// stress_seeds_drifted_with_the_option_table: the overtaking guard's entry shifted every later
// draw, and these seeds ran other cases).
TEST(StressTest, SeedsThatOnceFailedKeepEveryInvariant) {
  StressCounts counts;
  StressLimits as_recorded;
  as_recorded.options_added_later = false;
  for (uint64_t seed : {586637014ull, 909903ull, 1288229ull}) {
    const StressCase c = GenerateStressCase(BundledCatalog(), seed, as_recorded);
    SCOPED_TRACE("MIGSCHED_SEED=" + std::to_string(seed) + ": " + c.CommandLine("TRACE.csv"));
    Status st = RunStressCase(c, &counts);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  EXPECT_EQ(counts.workloads, 3);
}

// Regression stress_on_a_model_without_static_layouts: static_layouts is optional in a catalog
// file, but the generator drew static-all-balanced on such a model and counted the refusal of
// its layout as a failed case. On a catalog of one A100 without layouts every drawn case runs,
// and `static` (best-for-mix, which needs none) runs where static-all-balanced was drawn.
TEST(StressTest, ModelWithoutStaticLayoutsGetsNoCatalogLayoutPolicy) {
  const GpuModel& a100 = **BundledCatalog().Find("A100-40GB");
  GpuModel::Spec spec = a100.spec();
  spec.name = "A100 no layouts";
  spec.short_names = {"A100-NL"};
  spec.aliases.clear();
  spec.static_layouts.clear();
  StatusOr<GpuModel> model = GpuModel::Create(spec);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Catalog catalog;
  ASSERT_TRUE(catalog.Add(std::move(*model)).ok());
  StressCounts counts;
  int statics = 0;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    const StressCase c = GenerateStressCase(catalog, seed, StressLimits{});
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + c.CommandLine("TRACE.csv"));
    EXPECT_NE(c.policy, "static-all-balanced");
    statics += c.policy == "static" ? 1 : 0;
    Status st = RunStressCase(c, &counts);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  EXPECT_GT(statics, 0);
}

// What the generator draws: over the fixed seeds, every policy, every option of the table given,
// every GPU model of the catalog, mixed clusters, --max-wait 0, both --reconfig-ms extremes and
// drawn latencies (--reconfig-latency),
// both expected-ends settings, and every job attribute of the trace format.
TEST(StressTest, GeneratorCoversEveryPolicyOptionModelAndJobAttribute) {
  std::set<std::string> policies, options, models;
  std::set<int> counts;
  std::set<Migratable> kinds;
  std::set<double> reconfig;
  std::set<std::string> latencies;
  bool mixed = false, max_wait_0 = false, ends_known = false, ends_unknown = false;
  bool fraction = false, pcie = false, not_pcie = false, latency = false, no_contention = false;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    const StressCase c = GenerateStressCase(BundledCatalog(), seed, StressLimits{});
    policies.insert(c.policy);
    for (const auto& [name, value] : c.options) {
      options.insert(name);
      max_wait_0 = max_wait_0 || (name == "max-wait" && value == "0");
      ASSERT_TRUE(c.Scheduler().ok()) << name << " " << value;
    }
    for (const auto& [n, m] : c.groups) models.insert(m->name());
    mixed = mixed || c.groups.size() > 1;
    if (c.reconfig_latency != nullptr) {
      latencies.insert(c.reconfig_latency->ToString());
    } else {
      reconfig.insert(c.reconfig_ms);
    }
    (c.knowledge == Knowledge::kUnknown ? ends_unknown : ends_known) = true;
    no_contention = no_contention || !c.contention;
    double last = 0;
    for (const WorkloadJob& j : c.jobs) {
      ASSERT_GE(j.arrival_s, last);
      last = j.arrival_s;
      counts.insert(j.count);
      kinds.insert(j.migratable);
      fraction = fraction || j.gpu_fraction > 0;
      pcie = pcie || j.pcie_gbps > 0;
      not_pcie = not_pcie || j.pcie_gbps == 0;
      latency = latency || j.latency_sensitive;
    }
  }
  EXPECT_EQ(policies.size(), PolicyNames().size());
  EXPECT_EQ(options.size(), SchedulerOptionTable().size());
  EXPECT_EQ(models.size(), BundledCatalog().models().size());
  EXPECT_EQ(counts, (std::set<int>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(kinds.size(), 3u);
  EXPECT_EQ(reconfig, (std::set<double>{0, 23, 2000}));
  EXPECT_EQ(latencies, (std::set<std::string>{"create lognormal:250,1, destroy lognormal:1000,0.7",
                                              "lognormal:23,2", "lognormal:2000,0.5"}));
  EXPECT_TRUE(mixed && max_wait_0 && ends_known && ends_unknown && no_contention);
  EXPECT_TRUE(fraction && pcie && not_pcie && latency);
}

TEST(StressTest, SameSeedSameCase) {
  const StressCase a = GenerateStressCase(BundledCatalog(), 7, StressLimits{});
  const StressCase b = GenerateStressCase(BundledCatalog(), 7, StressLimits{});
  EXPECT_EQ(a.CommandLine("t.csv"), b.CommandLine("t.csv"));
  ASSERT_EQ(a.jobs.size(), b.jobs.size());
  for (size_t i = 0; i < a.jobs.size(); ++i) {
    EXPECT_EQ(a.jobs[i].RequestString(), b.jobs[i].RequestString());
    EXPECT_EQ(a.jobs[i].arrival_s, b.jobs[i].arrival_s);
  }
}

// The command line names every setting of the case: the options as --NAME VALUE, the cluster as
// COUNTxMODEL groups.
TEST(StressTest, CommandLineNamesEverySetting) {
  StressCase c;
  c.groups = {{2, &::migsched::testing::Model("A100-40GB")},
              {1, &::migsched::testing::Model("H100-80GB")}};
  c.policy = "full";
  c.options = {{"max-wait", "0"}, {"evacuation", "head"}};
  c.reconfig_ms = 2000;
  c.contention = false;
  c.knowledge = Knowledge::kUnknown;
  c.fraction_rule = FractionRule::kMemory;
  EXPECT_EQ(c.CommandLine("w.csv"),
            "migsched simulate --self-check --cluster 2xA100-40GB,1xH100-80GB --workload w.csv "
            "--policy full --fraction-rule memory --reconfig-ms 2000 --expected-ends unknown "
            "--user-estimates none --no-contention --max-wait 0 --evacuation head");
  // The case runs with the checks its replay's --self-check turns on (SimOptions::TurnOnChecks):
  // the self-check and the stall guard, so that a livelock replays as the same failure.
  EXPECT_TRUE(c.Sim().self_check);
  EXPECT_EQ(c.Sim().stall_event_times, kCheckedStallEventTimes);
  auto o = c.Scheduler();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->max_wait_s, 0);
  EXPECT_EQ(o->evacuation, EvacuationScope::kHead);
  // Drawn latencies replace --reconfig-ms: one --reconfig-latency per kind when they differ.
  auto field = ParseReconfigLatency({"field"});
  ASSERT_TRUE(field.ok());
  c.reconfig_latency = std::make_shared<const ReconfigLatency>(*field);
  EXPECT_EQ(c.CommandLine("w.csv"),
            "migsched simulate --self-check --cluster 2xA100-40GB,1xH100-80GB --workload w.csv "
            "--policy full --fraction-rule memory --reconfig-latency create=lognormal:250,1 "
            "--reconfig-latency destroy=lognormal:1000,0.7 --expected-ends unknown "
            "--user-estimates none --no-contention --max-wait 0 --evacuation head");
  EXPECT_EQ(c.Sim().reconfig_latency, c.reconfig_latency);
  EXPECT_EQ(c.Sim().reconfig_seed, 1u);
}

// The end checks catch a result that does not balance (derived by hand: 2 jobs, 1 record).
TEST(StressTest, EndChecksRefuseAResultThatDoesNotBalance) {
  StressCase c;
  c.policy = "first-fit";
  c.jobs.resize(2);
  SimResult r;
  r.metrics.jobs_total = 2;
  r.metrics.jobs_completed = 1;
  r.metrics.rejected = 0;
  EXPECT_EQ(CheckStressResult(c, r).code(), StatusCode::kInternal);  // 1 + 0 != 2
  r.metrics.rejected = 1;
  r.metrics.rejected_reasons["no room"] = 1;
  EXPECT_EQ(CheckStressResult(c, r).code(), StatusCode::kInternal);  // no job records
}

}  // namespace
}  // namespace migsched
