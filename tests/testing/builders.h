// Shared builders for tests: jobs, GPU states and clusters, instead of one
// local helper per test file.
//
//   WorkloadJob j = testing::JobOf("3g.20gb");         // one instance, 1 s
//   WorkloadJob g = testing::JobOf("7g.40gb", /*count=*/2);  // a gang
//   WorkloadJob a = testing::AJob("4g.20gb").Named("a").ArrivesAt(10).Runs(100);
//   // A scheduler's test gives what a scheduler knows, the request (Job):
//   Job r = testing::AJob("7g.40gb").Limit(100);      // expected to run 100 s
//   // A test's common fields once, its jobs from there:
//   const testing::JobBuilder kMovable = testing::AJob().Runs(1000).Moves(Migratable::kCheckpoint);
//   WorkloadJob m = kMovable.Profile("1g.5gb").Named("m");
//   GpuState s = testing::GpuStateOf(Model("A100-40GB"), table, "3g.20gb@4", "1g.5gb@0");
//   ConfigTableCache tables;
//   auto cluster = testing::BuildCluster({{"A100-40GB", "3g.20gb@4", "1g.5gb@0"}}, &tables);
#ifndef MIGSCHED_TESTS_TESTING_BUILDERS_H_
#define MIGSCHED_TESTS_TESTING_BUILDERS_H_

#include <memory>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/config_table.h"
#include "core/gpu_state.h"
#include "core/job.h"
#include "core/plan.h"
#include "io/workload_job.h"

namespace migsched::testing {

// A workload's job (request and run's truth, io/workload_job.h) built field by
// field. Every setter returns a new builder (the one it is called on is
// unchanged), so a test can keep its common fields in one const builder and
// derive its jobs from it. Converts to WorkloadJob, and to Job (the request
// alone: Runs and Pcie are then dropped, as the scheduler never sees them)
// wherever one is expected. The defaults are JobOf's: named "job", one
// instance, 1 s, arriving at 0; the rest as in Job and RunTruth (no PCIe
// demand, alpha 1, not latency sensitive, not migratable, no time limit).
class JobBuilder {
 public:
  JobBuilder();
  JobBuilder Profile(const std::string& profile) const;  // an exact profile name
  JobBuilder Fraction(double gpu_fraction) const;        // in (0, 1]; with no profile
  JobBuilder Named(const std::string& name) const;
  JobBuilder ArrivesAt(double arrival_s) const;
  JobBuilder Runs(double duration_s) const;              // seconds without contention
  JobBuilder Limit(double time_limit_s) const;           // the user's time limit, seconds
  JobBuilder Gang(int count) const;                      // instances wanted together
  JobBuilder Pcie(double gbps, double alpha = 1) const;  // §8 demand and sensitivity
  JobBuilder LatencySensitive(bool on = true) const;
  JobBuilder Moves(Migratable migratable) const;
  operator WorkloadJob() const { return job_; }    // NOLINT: implicit on purpose
  operator Job() const { return job_.request(); }  // NOLINT: implicit on purpose
  const WorkloadJob& job() const { return job_; }

 private:
  // A copy with `set` applied to its job.
  template <class F>
  JobBuilder With(F set) const {
    JobBuilder b = *this;
    set(b.job_);
    return b;
  }

  WorkloadJob job_;
};

// A builder for a job of `profile` (empty: set Fraction) with the defaults.
JobBuilder AJob(const std::string& profile = "");

// A job asking for `count` instances of `profile` (an exact name), running
// `duration_s` seconds, arriving at `arrival_s`; named `name` (default
// "job").
WorkloadJob JobOf(const std::string& profile, int count = 1, double duration_s = 1,
                  double arrival_s = 0, const std::string& name = "job");

// Appends to `plan` the steps that create the instances of `list`
// (PROFILE@START, core/instance_list.h) on GPU `gpu` of model `model`; with
// `next_job` set, each also starts a job, ids *next_job, *next_job + 1, ...
// (advanced), so the instances are busy; without, they stay idle. Fails the
// test on a bad list.
void AddInstanceSteps(const GpuModel& model, int gpu, const std::string& list, JobId* next_job,
                      Plan* plan);

// One GPU of model `model` with the busy and idle instances of the two
// PROFILE@START lists; the busy ones run jobs `first_job`, `first_job` + 1,
// ... in list order. Fails the test on a bad setup.
GpuState GpuStateOf(const GpuModel& model, const ConfigTable& table, const std::string& busy,
                    const std::string& idle, JobId first_job = 100);

// One GPU of a test cluster: its model (any catalog name) and its busy and
// idle instances as PROFILE@START lists (core/instance_list.h).
struct GpuSetup {
  std::string model;
  std::string busy;
  std::string idle;
};

// A cluster in the given state; the busy instances run jobs `first_job`,
// `first_job` + 1, ... in GPU order. Fails the test on a bad setup.
std::unique_ptr<Cluster> BuildCluster(const std::vector<GpuSetup>& gpus, ConfigTableCache* tables,
                                      JobId first_job = 1000);

}  // namespace migsched::testing

#endif  // MIGSCHED_TESTS_TESTING_BUILDERS_H_
