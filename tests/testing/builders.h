// Shared builders for tests: jobs and GPU states, instead of one local
// helper per test file.
//
//   Job j = testing::JobOf("3g.20gb");                 // one instance, 1 s
//   Job g = testing::JobOf("7g.40gb", /*count=*/2);    // a gang
//   ConfigTableCache tables;
//   auto cluster = testing::BuildCluster({{"A100-40GB", "3g.20gb@4", "1g.5gb@0"}}, &tables);
#ifndef MIGSCHED_TESTS_TESTING_BUILDERS_H_
#define MIGSCHED_TESTS_TESTING_BUILDERS_H_

#include <memory>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/config_table.h"
#include "core/job.h"

namespace migsched::testing {

// A job asking for `count` instances of `profile` (an exact name), running
// `duration_s` seconds, arriving at `arrival_s`; named `name` (default
// "job").
Job JobOf(const std::string& profile, int count = 1, double duration_s = 1, double arrival_s = 0,
          const std::string& name = "job");

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
