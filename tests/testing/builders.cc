#include "testing/builders.h"

#include <gtest/gtest.h>

#include "core/instance_list.h"
#include "core/plan.h"
#include "testing/test_util.h"

namespace migsched::testing {

Job JobOf(const std::string& profile, int count, double duration_s, double arrival_s,
          const std::string& name) {
  Job j;
  j.name = name;
  j.profile = profile;
  j.count = count;
  j.duration_s = duration_s;
  j.arrival_s = arrival_s;
  return j;
}

std::unique_ptr<Cluster> BuildCluster(const std::vector<GpuSetup>& gpus, ConfigTableCache* tables,
                                      JobId first_job) {
  std::vector<const GpuModel*> models;
  for (const GpuSetup& g : gpus) models.push_back(&Model(g.model));
  auto cluster = std::make_unique<Cluster>(models, tables);
  JobId next = first_job;
  Plan plan;
  for (size_t i = 0; i < gpus.size(); ++i) {
    for (bool busy : {true, false}) {
      auto list = ParseInstanceList(busy ? gpus[i].busy : gpus[i].idle, *models[i]);
      EXPECT_TRUE(list.ok()) << list.status().ToString();
      if (!list.ok()) continue;
      for (const InstanceSpec& in : *list) {
        plan.steps.push_back(
            {StepKind::kCreate, static_cast<int>(i), in.profile, in.start, kNoJob});
        if (busy) {
          plan.steps.push_back(
              {StepKind::kStart, static_cast<int>(i), in.profile, in.start, next++});
        }
      }
    }
  }
  Status st = ApplyPlan(plan, cluster.get());
  EXPECT_TRUE(st.ok()) << st.ToString();
  return cluster;
}

}  // namespace migsched::testing
