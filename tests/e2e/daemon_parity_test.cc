// Regression (full_in_the_daemon_is_not_full_in_the_simulator): `full` in
// the daemon ran with FragCost while the simulator ran it with its own
// defaults (the demand-weighted metric). Both drivers take a policy's options
// from the one registry (sched/policy.h): the same options give the same
// placements. Here a sequence of jobs (none ends while the others arrive)
// is placed by `migsched simulate`'s engine and by the daemon (fake backend,
// in process), and every placement made at arrival must be the same.
//
// The demand window is 1 job: the simulator seeds the window with the
// workload's first jobs (it knows them), the daemon learns them as they
// arrive; with a window of 1 both hold exactly the job being placed, so the
// demand-weighted scores are the same in both (docs/daemon.md says so).
#include <gtest/gtest.h>

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/fake_backend.h"
#include "sched/policy.h"
#include "sim/simulator.h"
#include "testing/builders.h"
#include "testing/status_matchers.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::BundledCatalog;

struct ParityCase {
  std::string name;
  std::string scheduler_yaml;  // the daemon's scheduler section
  ExplicitOptions given;       // what `simulate` would be given on its command line
  std::string metric;          // the option given (when given.metric)
};
// gtest prints a case by its name (not its bytes) in ctest's list.
void PrintTo(const ParityCase& c, std::ostream* os) { *os << c.name; }

class ParityTest : public ::testing::TestWithParam<ParityCase> {};

TEST_P(ParityTest, SimulatorAndDaemonPlaceAlike) {
  const ParityCase& c = GetParam();
  // The daemon's options, as `serve` reads them.
  const std::string state = testing::MakeTempDir("migsched-parity").string();
  StatusOr<DaemonConfig> config = ParseDaemonConfig(
      "state_dir: " + state + "\ngpus: 2xA100-40GB\nscheduler: {" + c.scheduler_yaml + "}\n",
      "parity.yaml");
  ASSERT_OK(config);
  // The simulator's, as `simulate --policy full --demand-window 1 [...]` builds them.
  SchedulerOptions flags;
  flags.demand_window = 1;
  if (c.given.metric) flags.metric = c.metric;
  const SchedulerOptions sim = OptionsForPolicy("full", flags, c.given);
  EXPECT_EQ(config->scheduler.metric, sim.metric);
  EXPECT_EQ(config->scheduler.reserve_full, sim.reserve_full);
  EXPECT_EQ(config->scheduler.max_skip_seconds, sim.max_skip_seconds);
  EXPECT_EQ(config->scheduler.demand_window, sim.demand_window);
  EXPECT_EQ(config->scheduler.threshold, sim.threshold);

  // Jobs arrive 1 s apart and run long; some do not fit and wait.
  const std::vector<std::string> profiles = {"1g.5gb",  "3g.20gb", "2g.10gb", "1g.5gb",
                                             "4g.20gb", "1g.5gb",  "2g.10gb", "3g.20gb",
                                             "1g.5gb",  "7g.40gb", "1g.10gb", "2g.10gb"};
  std::vector<Job> jobs;
  for (size_t i = 0; i < profiles.size(); ++i) {
    jobs.push_back(
        testing::JobOf(profiles[i], 1, 10000, static_cast<double>(i), "j" + std::to_string(i)));
  }
  StatusOr<std::vector<const GpuModel*>> models = ParseClusterSpec("2xA100-40GB", BundledCatalog());
  ASSERT_OK(models);
  SimOptions so;
  so.contention = false;
  ASSERT_OK_AND_ASSIGN(SimResult result, RunSimulation(*models, jobs, "full", sim, so));
  std::map<std::string, std::string> sim_at_arrival;  // job name -> "gpu:profile@start"
  for (const JobRecord& r : result.jobs) {
    if (r.placed_s == r.arrival_s) sim_at_arrival[r.name] = r.instances;
  }
  ASSERT_GE(sim_at_arrival.size(), 6u);  // the case exercises placements, not only waits

  // The daemon, job by job, each placed (or left queued) before the next arrives.
  config->kill_grace_s = 1;
  auto fake = std::make_unique<FakeBackend>(*models, FakeFaults{});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> d,
                       Daemon::Create(*config, std::move(fake), &BundledCatalog()));
  std::vector<DaemonJobId> ids;
  for (const Job& j : jobs) {
    JobRequest r;
    r.profile = j.profile;
    r.name = j.name;
    r.command = {"sleep", "10000"};
    ASSERT_OK_AND_ASSIGN(DaemonJobRecord rec, d->Submit(r));
    ids.push_back(rec.id);
    ASSERT_OK(d->Settle());
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    ASSERT_OK_AND_ASSIGN(DaemonJobRecord r, d->GetJob(ids[i]));
    auto it = sim_at_arrival.find(jobs[i].name);
    if (it == sim_at_arrival.end()) {
      EXPECT_EQ(r.state, JobState::kQueued) << jobs[i].name << " waited in the simulator";
      continue;
    }
    ASSERT_EQ(r.state, JobState::kRunning) << jobs[i].name << ": " << r.reason;
    std::string at;
    for (const JobInstance& in : r.instances) {
      at += (at.empty() ? "" : ";") + std::to_string(in.gpu) + ":" + in.profile + "@" +
            std::to_string(in.start);
    }
    EXPECT_EQ(at, it->second) << jobs[i].name << " (" << jobs[i].profile << ")";
  }
  for (DaemonJobId id : ids) (void)d->Cancel(id);
  ASSERT_OK(d->Settle());
  d->Stop();
}

INSTANTIATE_TEST_SUITE_P(
    Options, ParityTest,
    ::testing::Values(
        // full's own defaults from the registry (the demand-weighted metric).
        ParityCase{"FullDefaults", "policy: full, demand-window: 1", {}, ""},
        // An option given explicitly to both.
        ParityCase{"FullWithFragCost", "policy: full, demand-window: 1, metric: fragcost",
                   ExplicitOptions{.metric = true}, "fragcost"}),
    [](const ::testing::TestParamInfo<ParityCase>& info) { return info.param.name; });

}  // namespace
}  // namespace migsched
