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
  return With([&](WorkloadJob& j) { j.profile = profile; });
}
JobBuilder JobBuilder::Fraction(double gpu_fraction) const {
  return With([&](WorkloadJob& j) { j.gpu_fraction = gpu_fraction; });
}
JobBuilder JobBuilder::Named(const std::string& name) const {
  return With([&](WorkloadJob& j) { j.name = name; });
}
JobBuilder JobBuilder::ArrivesAt(double arrival_s) const {
  return With([&](WorkloadJob& j) { j.arrival_s = arrival_s; });
}
JobBuilder JobBuilder::Limit(double time_limit_s) const {
  return With([&](WorkloadJob& j) { j.time_limit_s = time_limit_s; });
}

JobBuilder JobBuilder::Runs(double duration_s) const {
  return With([&](WorkloadJob& j) { j.duration_s = duration_s; });
}
JobBuilder JobBuilder::Gang(int count) const {
  return With([&](WorkloadJob& j) { j.count = count; });
}
JobBuilder JobBuilder::Pcie(double gbps, double alpha) const {
  return With([&](WorkloadJob& j) {
    j.pcie_gbps = gbps;
    j.alpha = alpha;
  });
}
JobBuilder JobBuilder::LatencySensitive(bool on) const {
  return With([&](WorkloadJob& j) { j.latency_sensitive = on; });
}
JobBuilder JobBuilder::Moves(Migratable migratable) const {
  return With([&](WorkloadJob& j) { j.migratable = migratable; });
}

JobBuilder AJob(const std::string& profile) { return JobBuilder().Profile(profile); }

WorkloadJob JobOf(const std::string& profile, int count, double duration_s, double arrival_s,
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
