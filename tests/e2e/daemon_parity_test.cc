// Regression (full_in_the_daemon_is_not_full_in_the_simulator): `full` in
// the daemon ran with FragCost while the simulator ran it with its own
// defaults (the demand-weighted metric). Both drivers take a policy's options
// from the one registry (sched/policy.h): the same options give the same
// placements. Here a sequence of jobs (none ends while the others arrive)
// is placed by `migsched simulate`'s engine and by the daemon (fake backend,
// in process), with the same options read by the one table of scheduler
// options, and the busy instances of the two clusters after the last arrival
// (and the moves it caused, §13 evacuation) must be the same. The daemon's jobs
// have no time limits, so the simulator is told no durations or expected ends
// either (SimOptions::knowledge, `--expected-ends unknown`).
//
// The demand window is 1 job: the simulator seeds the window with the
// workload's first jobs (it knows them), the daemon learns them as they
// arrive; with a window of 1 both hold exactly the job being placed, so the
// demand-weighted scores are the same in both (docs/daemon.md says so).
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/cluster.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/fake_backend.h"
#include "sched/option_table.h"
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
  // Options given to both, as `simulate --NAME VALUE` and as the daemon's `scheduler: {NAME:
  // VALUE}` (the same table of scheduler options reads both).
  std::vector<std::pair<std::string, std::string>> options;
  std::vector<std::string> profiles;  // jobs arriving 1 s apart, running long
  Migratable migratable = Migratable::kNone;
  int64_t min_evacuations = 0;  // the case exercises evacuation (§13) at least this often
  // The case exercises the look-ahead reservation (§13): the simulator without it
  // (max-skip-seconds -1) leaves another set of busy instances.
  bool reservation_matters = false;
  size_t min_busy = 6;  // busy instances at the end: the case exercises placements, not only waits
};
// gtest prints a case by its name (not its bytes) in ctest's list.
void PrintTo(const ParityCase& c, std::ostream* os) { *os << c.name; }

class ParityTest : public ::testing::TestWithParam<ParityCase> {};

// (job index, profile, start) of every busy instance of GPU `gpu`, sorted.
using Busy = std::set<std::tuple<int, std::string, int, size_t>>;  // gpu, profile, start, job

TEST_P(ParityTest, SimulatorAndDaemonPlaceAlike) {
  const ParityCase& c = GetParam();
  // The daemon's options, as `serve` reads them.
  std::string yaml = "policy: full, demand-window: 1";
  for (const auto& [k, v] : c.options) yaml += ", " + k + ": " + v;
  const std::string state = testing::MakeTempDir("migsched-parity").string();
  StatusOr<DaemonConfig> config = ParseDaemonConfig(
      "state_dir: " + state + "\ngpus: 2xA100-40GB\nscheduler: {" + yaml + "}\n", "parity.yaml");
  ASSERT_OK(config);
  // The simulator's, as `simulate --policy full --demand-window 1 [--NAME VALUE...]` builds
  // them (cli/sim_flags.h AddSchedulerFlags applies each flag through the same table).
  SchedulerOptions flags;
  ExplicitOptions given;
  flags.demand_window = 1;
  for (const auto& [k, v] : c.options) {
    const SchedulerOptionSpec* spec = FindSchedulerOption(k);
    ASSERT_NE(spec, nullptr) << k;
    ASSERT_OK(spec->Apply(v, &flags, &given));
  }
  const SchedulerOptions sim = OptionsForPolicy("full", flags, given);
  for (const SchedulerOptionSpec& s : SchedulerOptionTable()) {
    EXPECT_EQ(s.get(config->scheduler), s.get(sim)) << s.name;
  }

  std::vector<WorkloadJob> jobs;
  for (size_t i = 0; i < c.profiles.size(); ++i) {
    jobs.push_back(
        testing::JobOf(c.profiles[i], 1, 10000, static_cast<double>(i), "j" + std::to_string(i)));
    jobs.back().migratable = c.migratable;
  }
  StatusOr<std::vector<const GpuModel*>> models = ParseClusterSpec("2xA100-40GB", BundledCatalog());
  ASSERT_OK(models);
  // The cluster a little after the last arrival, once its moves (copy 0 s for `restart`,
  // switch-over 0.5 s, §6) are over.
  const double settled_s = static_cast<double>(jobs.size() - 1) + 0.9;
  SimOptions so;
  so.contention = false;
  so.snapshot_times = {settled_s};
  // The daemon's jobs below have no time_limit_s: it knows no durations nor expected ends, and
  // the simulator is told none either (`--expected-ends unknown`).
  so.knowledge = Knowledge::kUnknown;
  auto busy_in_sim = [&](const SchedulerOptions& o, SimResult* result) {
    Busy busy;
    StatusOr<SimResult> r = RunSimulation(*models, jobs, "full", o, so);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok() || r->snapshots.empty()) return busy;
    for (size_t g = 0; g < r->snapshots[0].gpus.size(); ++g) {
      for (const SnapshotInstance& in : r->snapshots[0].gpus[g].instances) {
        if (in.job != kNoJob) busy.insert({static_cast<int>(g), in.profile, in.start, in.job});
      }
    }
    if (result != nullptr) *result = std::move(*r);
    return busy;
  };
  SimResult result;
  const Busy in_sim = busy_in_sim(sim, &result);
  ASSERT_GE(in_sim.size(), c.min_busy);
  EXPECT_GE(result.metrics.evacuations, c.min_evacuations);
  if (c.reservation_matters) {
    SchedulerOptions no_guard = sim;
    no_guard.max_skip_seconds = -1;
    EXPECT_NE(busy_in_sim(no_guard, nullptr), in_sim);
  }

  // The daemon, job by job, each placed (or left queued), and its moves carried out, before
  // the next arrives.
  config->kill_grace_s = 1;
  auto fake = std::make_unique<FakeBackend>(*models, FakeFaults{});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> d,
                       Daemon::Create(*config, std::move(fake), &BundledCatalog()));
  std::vector<DaemonJobId> ids;
  std::map<DaemonJobId, size_t> index_of;
  auto moving = [&] {
    for (DaemonJobId id : ids) {
      StatusOr<DaemonJobRecord> r = d->GetJob(id);
      if (r.ok() && (r->state == JobState::kMigrating || r->state == JobState::kStarting)) {
        return true;
      }
    }
    return false;
  };
  for (const WorkloadJob& j : jobs) {
    JobRequest r;
    r.profile = j.profile;
    r.name = j.name;
    r.command = {"sleep", "10000"};
    r.migratable = j.migratable;
    ASSERT_OK_AND_ASSIGN(DaemonJobRecord rec, d->Submit(r));
    index_of[rec.id] = ids.size();
    ids.push_back(rec.id);
    ASSERT_OK(d->Settle());
    for (int tick = 0; tick < 500 && moving(); ++tick) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      ASSERT_OK(d->Settle());
    }
    ASSERT_FALSE(moving()) << "a move of the daemon did not end within 5 s";
  }
  Busy in_daemon;
  for (const GpuView& g : d->Gpus()) {
    for (const InstanceView& in : g.instances) {
      if (in.holder != HolderKind::kJob) continue;
      auto it = index_of.find(static_cast<DaemonJobId>(in.job));
      ASSERT_NE(it, index_of.end()) << in.job;
      in_daemon.insert({g.index.value(), in.profile, in.start, it->second});
    }
  }
  EXPECT_EQ(in_daemon, in_sim);
  const DaemonMetrics m = d->Metrics();
  EXPECT_GE(m.migrations_inter + m.migrations_intra, c.min_evacuations);  // the daemon moved too
  for (DaemonJobId id : ids) (void)d->Cancel(id);
  ASSERT_OK(d->Settle());
  d->Stop();
}

// Jobs arrive 1 s apart and run long; some do not fit and wait.
const std::vector<std::string> kMix = {"1g.5gb",  "3g.20gb", "2g.10gb", "1g.5gb",
                                       "4g.20gb", "1g.5gb",  "2g.10gb", "3g.20gb",
                                       "1g.5gb",  "7g.40gb", "1g.10gb", "2g.10gb"};

// Small jobs spread over both GPUs, then a 7g.40gb that needs one emptied: at its arrival (t = 3)
// evacuation moves the 2g.10gb off GPU 1 to GPU 0 and the 7g starts on GPU 1 (the simulator's
// --jobs-csv of this mix: 7g placed at 3.523 s, after the 0.5 s switch-over and one 23 ms create);
// the later jobs are placed around it.
const std::vector<std::string> kEvacuationMix = {"1g.5gb", "2g.10gb", "1g.5gb",  "7g.40gb",
                                                 "1g.5gb", "2g.10gb", "3g.20gb", "1g.10gb"};

// Two 4g.20gb take 4g@0 on both GPUs; the 7g.40gb waits and, from the next arrival on, reserves a
// whole GPU (ends unknown: the tie goes to the fewer busy compute slices, then the lower GPU
// index: GPU 0), where nothing fits beside it; so the three 1g.5gb all go to GPU 1's slots 4-6,
// and the 3g.20gb (3g@4 or 3g@0 only) finds no room. Without the reservation the policy may put
// 1g jobs on GPU 0 too: the reservation matters. Busy at the end: the two 4g and the three 1g.
const std::vector<std::string> kReservationMix = {"4g.20gb", "4g.20gb", "7g.40gb", "1g.5gb",
                                                  "1g.5gb",  "1g.5gb",  "3g.20gb"};

INSTANTIATE_TEST_SUITE_P(
    Options, ParityTest,
    ::testing::Values(
        // full's own defaults from the registry (the demand-weighted metric, evacuation
        // queue; the guard after 1800 s never reserves in these 12 s).
        ParityCase{"FullDefaults", {}, kMix},
        // The look-ahead reservation for any job that has waited (max-skip-seconds 0; the
        // registry's slack 1), strict where ends are unknown (reservation-unknown-ends strict;
        // full's default skips such a reservation): without time limits the daemon knows no
        // ends, so no job backfills into a reserved placement, only beside it (§13 (b)), as in
        // the simulator told no ends.
        // A job is overdue once it has waited at all: in the simulator from the next arrival on
        // (it waited 1 s), in the daemon a few ms after its submission; either way at every scan
        // that places a later job, its older waiting jobs are overdue in both.
        ParityCase{"FullStrictReservationWithoutTimeLimits",
                   {{"max-skip-seconds", "0"}, {"reservation-unknown-ends", "strict"}},
                   kReservationMix,
                   Migratable::kNone,
                   0,
                   true,
                   5},
        // An option given explicitly to both.
        ParityCase{"FullWithFragCost", {{"metric", "fragcost"}}, kMix},
        // §13 evacuation on, with `restart` jobs: moves begun inside the daemon's queue scans
        // are carried out by its MoveExecutor, and the cluster ends as in the simulator.
        ParityCase{"FullWithEvacuation",
                   {{"evacuation", "queue"}},
                   kEvacuationMix,
                   Migratable::kRestart,
                   1}),
    [](const ::testing::TestParamInfo<ParityCase>& info) { return info.param.name; });

}  // namespace
}  // namespace migsched
