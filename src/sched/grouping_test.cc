// The grouped fast path (policies look only at Cluster::representatives(),
// one GPU per distinct state) against the naive O(GPUs) scan (grouping off):
// on random clusters and workloads every policy must choose exactly the same
// placements. Seed printed; MIGSCHED_SEED=N reruns one.
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/rng.h"
#include "sched/scheduler.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

TEST(GroupingTest, FastPathChoosesWhatTheNaiveScanChooses) {
  const uint64_t seed = std::getenv("MIGSCHED_SEED") ? std::strtoull(std::getenv("MIGSCHED_SEED"), nullptr, 10)
                                                     : 99;
  const std::vector<std::string> names = {"A100-40GB", "H100-80GB", "H200-141GB", "A30-24GB"};
  for (const std::string& policy : PolicyNames()) {
    SCOPED_TRACE("policy " + policy + ", seed " + std::to_string(seed));
    Rng rng(Rng::DeriveSeed(seed, std::hash<std::string>{}(policy)));
    std::vector<const GpuModel*> models;
    const int n = static_cast<int>(rng.UniformInt(8, 40));
    for (int i = 0; i < n; ++i) models.push_back(&testing::Model(names[rng.UniformInt(0, 3)]));
    ConfigTableCache tables;
    Cluster fast(models, &tables), naive(models, &tables);
    naive.set_grouping(false);
    SchedulerOptions o;
    auto pf = MakePolicy(policy, o);
    auto pn = MakePolicy(policy, o);
    ASSERT_TRUE(pf.ok() && pn.ok());
    ManualClock clock;
    Scheduler sf(&fast, std::move(*pf), o, &clock), sn(&naive, std::move(*pn), o, &clock);
    ASSERT_TRUE(sf.Setup().ok());
    ASSERT_TRUE(sn.Setup().ok());
    std::vector<JobId> running;
    for (JobId id = 0; id < 600; ++id) {
      if (!running.empty() && rng.Uniform01() < 0.45) {
        const size_t i = rng.UniformInt(0, running.size() - 1);
        ASSERT_TRUE(sf.Release(running[i]).ok());
        ASSERT_TRUE(sn.Release(running[i]).ok());
        running.erase(running.begin() + i);
        continue;
      }
      Job job;
      static const double kFractions[] = {0.1, 0.25, 0.3, 0.5, 0.55, 1.0};
      job.gpu_fraction = kFractions[rng.UniformInt(0, 5)];
      job.count = rng.Uniform01() < 0.1 ? 2 : 1;
      auto df = sf.TryPlace(id, job);
      auto dn = sn.TryPlace(id, job);
      ASSERT_TRUE(df.ok() && dn.ok());
      ASSERT_EQ(df->has_value(), dn->has_value()) << "job " << id;
      if (df->has_value()) {
        ASSERT_EQ((*df)->instances, (*dn)->instances) << "job " << id;
        running.push_back(id);
      }
    }
  }
}

}  // namespace
}  // namespace migsched
