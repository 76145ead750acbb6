#include "testing/builders.h"

#include <gtest/gtest.h>

#include "core/instance_list.h"
#include "testing/test_util.h"

namespace migsched::testing {

JobBuilder::JobBuilder() {
  job_.name = "job";
  job_.duration_s = 1;
}

JobBuilder JobBuilder::Profile(const std::string& profile) const {
  JobBuilder b = *this;
  b.job_.profile = profile;
  return b;
}
JobBuilder JobBuilder::Fraction(double gpu_fraction) const {
  JobBuilder b = *this;
  b.job_.gpu_fraction = gpu_fraction;
  return b;
}
JobBuilder JobBuilder::Named(const std::string& name) const {
  JobBuilder b = *this;
  b.job_.name = name;
  return b;
}
JobBuilder JobBuilder::ArrivesAt(double arrival_s) const {
  JobBuilder b = *this;
  b.job_.arrival_s = arrival_s;
  return b;
}
JobBuilder JobBuilder::Runs(double duration_s) const {
  JobBuilder b = *this;
  b.job_.duration_s = duration_s;
  return b;
}
JobBuilder JobBuilder::Gang(int count) const {
  JobBuilder b = *this;
  b.job_.count = count;
  return b;
}
JobBuilder JobBuilder::Pcie(double gbps, double alpha) const {
  JobBuilder b = *this;
  b.job_.pcie_gbps = gbps;
  b.job_.alpha = alpha;
  return b;
}
JobBuilder JobBuilder::LatencySensitive(bool on) const {
  JobBuilder b = *this;
  b.job_.latency_sensitive = on;
  return b;
}
JobBuilder JobBuilder::Moves(Migratable migratable) const {
  JobBuilder b = *this;
  b.job_.migratable = migratable;
  return b;
}

JobBuilder AJob(const std::string& profile) { return JobBuilder().Profile(profile); }

Job JobOf(const std::string& profile, int count, double duration_s, double arrival_s,
          const std::string& name) {
  return AJob(profile).Gang(count).Runs(duration_s).ArrivesAt(arrival_s).Named(name);
}

void AddInstanceSteps(const GpuModel& model, int gpu, const std::string& list, JobId* next_job,
                      Plan* plan) {
  auto specs = ParseInstanceList(list, model);
  EXPECT_TRUE(specs.ok()) << specs.status().ToString();
  if (!specs.ok()) return;
  for (const InstanceSpec& in : *specs) {
    plan->steps.push_back({StepKind::kCreate, gpu, in.profile, in.start, kNoJob});
    if (next_job != nullptr) {
      plan->steps.push_back({StepKind::kStart, gpu, in.profile, in.start, (*next_job)++});
    }
  }
}

GpuState GpuStateOf(const GpuModel& model, const ConfigTable& table, const std::string& busy,
                    const std::string& idle, JobId first_job) {
  Plan plan;
  AddInstanceSteps(model, 0, busy, &first_job, &plan);
  AddInstanceSteps(model, 0, idle, nullptr, &plan);
  GpuState g(model, table);
  for (const Step& s : plan.steps) {
    const Status st = s.kind == StepKind::kCreate ? g.Create(s.profile, s.start)
                                                  : g.StartJob(s.profile, s.start, s.job);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  return g;
}

std::unique_ptr<Cluster> BuildCluster(const std::vector<GpuSetup>& gpus, ConfigTableCache* tables,
                                      JobId first_job) {
  std::vector<const GpuModel*> models;
  for (const GpuSetup& g : gpus) models.push_back(&Model(g.model));
  auto cluster = std::make_unique<Cluster>(models, tables);
  JobId next = first_job;
  Plan plan;
  for (size_t i = 0; i < gpus.size(); ++i) {
    AddInstanceSteps(*models[i], static_cast<int>(i), gpus[i].busy, &next, &plan);
    AddInstanceSteps(*models[i], static_cast<int>(i), gpus[i].idle, nullptr, &plan);
  }
  Status st = ApplyPlan(plan, cluster.get());
  EXPECT_TRUE(st.ok()) << st.ToString();
  return cluster;
}

}  // namespace migsched::testing
