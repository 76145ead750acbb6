// The Slurm path end to end, for real: Slurm 22.05's own daemons (munged,
// slurmctld, one slurmd per node), one `migsched serve` per node (fake
// backend) and `migsched slurm controller`, started and stopped by
// deploy/slurm/local-cluster.sh; jobs submitted with sbatch. Needs root and
// Debian's slurm-wlm and munge (scripts/setup.sh installs them); skipped,
// saying why, without them.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "e2e/slurm_testbed.h"
#include "testing/test_util.h"

namespace migsched::testing {
namespace {

using Json = nlohmann::json;

#define SKIP_WITHOUT_SLURM()                                                           \
  do {                                                                                 \
    if (const std::string why = SlurmUnavailable(); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

// What one task of a job printed (the job script below).
struct TaskOut {
  std::string node;
  std::vector<std::string> uuids;       // CUDA_VISIBLE_DEVICES
  std::vector<std::string> placements;  // MIGSCHED_PLACEMENTS: gpu:profile@start
  double start = 0, end = 0;
};

// The script every test job runs: each task prints its node, devices and
// placements and the wall-clock times it started and ended at.
std::string TaskScript(double sleep_s) {
  return fmt::format(
      "echo \"task node=$SLURMD_NODENAME cvd=$CUDA_VISIBLE_DEVICES pl=$MIGSCHED_PLACEMENTS "
      "start=$(date +%s.%N)\"; sleep {}; echo \"task-end node=$SLURMD_NODENAME "
      "end=$(date +%s.%N)\"",
      sleep_s);
}

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string x;
  while (std::getline(ss, x, ',')) {
    if (!x.empty()) out.push_back(x);
  }
  return out;
}

std::string Field(const std::string& line, const std::string& key) {
  const size_t at = line.find(key + "=");
  if (at == std::string::npos) return "";
  const size_t from = at + key.size() + 1;
  return line.substr(from, line.find(' ', from) - from);
}

// The tasks of job `id` from DIR/slurm-<id>.out.
std::vector<TaskOut> Tasks(SlurmTestbed& tb, int64_t id) {
  std::vector<TaskOut> out;
  std::map<std::string, double> ends;
  std::stringstream ss(ReadFile(fmt::format("{}/slurm-{}.out", tb.dir(), id)));
  std::string line;
  while (std::getline(ss, line)) {
    if (line.rfind("task node=", 0) == 0) {
      TaskOut t;
      t.node = Field(line, "node");
      t.uuids = SplitComma(Field(line, "cvd"));
      t.placements = SplitComma(Field(line, "pl"));
      t.start = std::atof(Field(line, "start").c_str());
      out.push_back(t);
    } else if (line.rfind("task-end node=", 0) == 0) {
      ends[Field(line, "node")] = std::atof(Field(line, "end").c_str());
    }
  }
  for (TaskOut& t : out) t.end = ends[t.node];
  return out;
}

int64_t Submit(SlurmTestbed& tb, const std::string& args, const std::string& script) {
  const std::string out =
      tb.Out(fmt::format("sbatch --parsable -p mig {} --wrap '{}'", args, script));
  return std::atoll(out.c_str());
}

// squeue --json as parsed JSON jobs by id (finished jobs stay listed for MinJobAge, 300 s).
std::map<int64_t, Json> SlurmJobs(SlurmTestbed& tb) {
  std::map<int64_t, Json> out;
  const Json doc = Json::parse(tb.Out("squeue --json"));
  for (const Json& j : doc["jobs"]) out[j["job_id"].get<int64_t>()] = j;
  return out;
}

bool AllEnded(SlurmTestbed& tb, const std::vector<int64_t>& ids) {
  const auto jobs = SlurmJobs(tb);
  for (int64_t id : ids) {
    auto it = jobs.find(id);
    if (it == jobs.end()) continue;
    const std::string s = it->second["job_state"];
    if (s != "COMPLETED" && s != "FAILED" && s != "CANCELLED" && s != "TIMEOUT") return false;
  }
  return true;
}

std::string JobState(SlurmTestbed& tb, int64_t id) {
  return tb.Out(fmt::format("squeue -h -j {} -o %T 2>/dev/null || true", id));
}

// The node daemon of node `node`: its allocations (every state) as JSON records.
std::vector<Json> Allocations(SlurmTestbed& tb, const std::string& node) {
  const std::string dir = tb.dir() + "/nodes/" + node;
  const std::string url =
      tb.Out(fmt::format("sed -n 's/^listen: \"\\(.*\\)\"/\\1/p' {}/daemon.yaml", dir));
  const Json doc =
      Json::parse(tb.Out(fmt::format("curl -sf -H \"Authorization: Bearer $(cat {}/state/token)\" "
                                     "'http://{}/v1/jobs?kind=allocation&limit=1000'",
                                     dir, url)));
  std::vector<Json> out;
  for (const Json& j : doc["jobs"]) out.push_back(j);
  return out;
}

// Every task of `id` ran with the fake backend's MIG instances of its
// profiles that the daemon of its node allocated to slurm:<id>.
void ExpectInstancesMadeForIt(SlurmTestbed& tb, int64_t id, int nodes,
                              const std::map<std::string, int>& per_node) {
  const std::vector<TaskOut> tasks = Tasks(tb, id);
  ASSERT_EQ(static_cast<int>(tasks.size()), nodes) << "job " << id << ": " << tb.Logs();
  std::set<std::string> seen_nodes;
  for (const TaskOut& t : tasks) {
    seen_nodes.insert(t.node);
    int want = 0;
    for (const auto& [p, c] : per_node) want += c;
    ASSERT_EQ(static_cast<int>(t.uuids.size()), want) << "job " << id << " on " << t.node;
    ASSERT_EQ(t.placements.size(), t.uuids.size());
    std::map<std::string, int> profiles;
    for (const std::string& pl : t.placements) {
      profiles[pl.substr(pl.find(':') + 1, pl.find('@') - pl.find(':') - 1)] += 1;
    }
    EXPECT_EQ(profiles, per_node) << "job " << id;
    // The daemon's allocations of this job on this node hold exactly these UUIDs.
    std::set<std::string> allocated;
    for (const Json& a : Allocations(tb, t.node)) {
      if (a["owner"] != fmt::format("slurm:{}", id)) continue;
      for (const Json& in : a["instances"]) {
        allocated.insert(in["mig_uuid"].get<std::string>());
        // Its placement is the one the task was told.
        const std::string pl =
            fmt::format("{}:{}@{}", in["gpu"].get<int>(), in["profile"].get<std::string>(),
                        in["start"].get<int>());
        EXPECT_NE(std::find(t.placements.begin(), t.placements.end(), pl), t.placements.end())
            << "job " << id << ": " << pl;
      }
    }
    EXPECT_EQ(allocated, std::set<std::string>(t.uuids.begin(), t.uuids.end())) << "job " << id;
    for (const std::string& u : t.uuids) EXPECT_EQ(u.rfind("MIG-", 0), 0u) << u;
  }
  EXPECT_EQ(static_cast<int>(seen_nodes.size()), nodes) << "job " << id;
}

// 30+ jobs of mixed profiles, at once: several instances on a node, a 7g.40gb,
// a job on two nodes. Each runs on instances made for it; no two jobs that
// overlap in time share an instance; afterwards nothing is held; no node drained.
TEST(SlurmClusterTest, MixedJobsRunOnInstancesMadeForThem) {
  SKIP_WITHOUT_SLURM();
  SlurmTestbed tb({"--nodes", "3", "--gpus", "2xA100-40GB"});
  ASSERT_TRUE(tb.Up());
  struct Spec {
    std::string gres;
    int nodes;
    std::map<std::string, int> per_node;
  };
  const std::vector<Spec> kinds = {
      {"mig:1g.5gb:1", 1, {{"1g.5gb", 1}}},
      {"mig:1g.10gb:1", 1, {{"1g.10gb", 1}}},
      {"mig:2g.10gb:1", 1, {{"2g.10gb", 1}}},
      {"mig:3g.20gb:1", 1, {{"3g.20gb", 1}}},
      {"mig:4g.20gb:1", 1, {{"4g.20gb", 1}}},
      {"mig:7g.40gb:1", 1, {{"7g.40gb", 1}}},
      {"mig:1g.5gb:2", 1, {{"1g.5gb", 2}}},
      {"mig:1g.5gb:1,mig:3g.20gb:1", 1, {{"1g.5gb", 1}, {"3g.20gb", 1}}},
  };
  std::vector<std::pair<int64_t, Spec>> jobs;
  for (int i = 0; i < 30; ++i) {
    const Spec& s = kinds[i % kinds.size()];
    jobs.push_back({Submit(tb, "--gres=" + s.gres, TaskScript(1 + i % 3)), s});
  }
  const Spec two = {"mig:7g.40gb:1", 2, {{"7g.40gb", 1}}};
  // srun's tasks run the script themselves (in the batch shell, $SLURMD_NODENAME
  // and the devices would be the batch step's, expanded before srun starts).
  const std::string task_file = tb.dir() + "/task.sh";
  std::ofstream(task_file) << TaskScript(2) << "\n";
  jobs.push_back(
      {Submit(tb, "-N2 --ntasks-per-node=1 --gres=" + two.gres, "srun bash " + task_file), two});
  std::vector<int64_t> ids;
  for (const auto& [id, s] : jobs) ids.push_back(id);
  ASSERT_TRUE(SlurmTestbed::WaitFor([&] { return AllEnded(tb, ids); }, 300)) << tb.Logs();

  const auto slurm = SlurmJobs(tb);
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<double, double>>> uses;
  for (const auto& [id, s] : jobs) {
    const Json& j = slurm.at(id);
    EXPECT_EQ(j["job_state"], "COMPLETED") << id << " " << j["admin_comment"];
    EXPECT_EQ(j["restart_cnt"], 0) << id << " " << j["admin_comment"];
    ExpectInstancesMadeForIt(tb, id, s.nodes, s.per_node);
    for (const TaskOut& t : Tasks(tb, id)) {
      for (const std::string& u : t.uuids) uses[{t.node, u}].push_back({t.start, t.end});
    }
  }
  for (auto& [inst, spans] : uses) {
    std::sort(spans.begin(), spans.end());
    for (size_t k = 1; k < spans.size(); ++k) {
      EXPECT_LE(spans[k - 1].second, spans[k].first)
          << inst.second << " on " << inst.first << " shared by two jobs at once";
    }
  }
  // After the epilogs: no allocation holds anything.
  for (const std::string node : {"n1", "n2", "n3"}) {
    for (const Json& a : Allocations(tb, node)) {
      EXPECT_NE(a["state"], "running") << node << ": " << a.dump();
    }
  }
  EXPECT_EQ(tb.Out("sinfo -h -R"), "");
}

// The hand-worked 4g.20gb case (first-fit, 2 nodes x 1 A100 40GB). n1 ends
// with one 1g.5gb at start 2 (6 free compute slices; 4g.20gb's only
// placement, start 0, units 0-3, is blocked); n2 with 3g.20gb at start 4 (4
// free slices, units 0-3 free). Counting free slices per node picks n1; the
// job must start on n2 at GPU 0 start 0, with no prolog failure or requeue.
TEST(SlurmClusterTest, FourGGoesWhereAPlacementIsFree) {
  SKIP_WITHOUT_SLURM();
  SlurmTestbed tb({"--nodes", "2", "--gpus", "1xA100-40GB", "--policy", "first-fit"});
  ASSERT_TRUE(tb.Up());
  auto running = [&](int64_t id) {
    return SlurmTestbed::WaitFor([&] { return JobState(tb, id) == "RUNNING"; }, 60);
  };
  // first-fit: A -> n1 @0,@1; B -> n1 @2; D -> n2 @0 (4g.20gb); E -> n2 @4 (3g.20gb).
  const int64_t a = Submit(tb, "--exclude=n2 --gres=mig:1g.5gb:2", TaskScript(600));
  ASSERT_TRUE(running(a)) << tb.Logs();
  const int64_t b = Submit(tb, "--exclude=n2 --gres=mig:1g.5gb:1", TaskScript(600));
  ASSERT_TRUE(running(b)) << tb.Logs();
  const int64_t d = Submit(tb, "--exclude=n1 --gres=mig:4g.20gb:1", TaskScript(600));
  ASSERT_TRUE(running(d)) << tb.Logs();
  const int64_t e = Submit(tb, "--exclude=n1 --gres=mig:3g.20gb:1", TaskScript(600));
  ASSERT_TRUE(running(e)) << tb.Logs();
  ASSERT_TRUE(SlurmTestbed::WaitFor(
      [&] { return Tasks(tb, b).size() == 1 && Tasks(tb, e).size() == 1; }, 30));
  EXPECT_EQ(Tasks(tb, b)[0].placements, std::vector<std::string>{"0:1g.5gb@2"});
  EXPECT_EQ(Tasks(tb, e)[0].placements, std::vector<std::string>{"0:3g.20gb@4"});
  tb.Sh(fmt::format("scancel {} {}", a, d));
  ASSERT_TRUE(SlurmTestbed::WaitFor([&] { return AllEnded(tb, {a, d}); }, 60));
  const int64_t w = Submit(tb, "--gres=mig:4g.20gb:1", TaskScript(1));
  ASSERT_TRUE(SlurmTestbed::WaitFor([&] { return AllEnded(tb, {w}); }, 90)) << tb.Logs();
  const std::vector<TaskOut> t = Tasks(tb, w);
  ASSERT_EQ(t.size(), 1u) << tb.Logs();
  EXPECT_EQ(t[0].node, "n2");
  EXPECT_EQ(t[0].placements, std::vector<std::string>{"0:4g.20gb@0"});
  const Json j = SlurmJobs(tb).at(w);
  EXPECT_EQ(j["restart_cnt"], 0);
  EXPECT_EQ(j["admin_comment"].get<std::string>().find("bind failed"), std::string::npos);
  EXPECT_EQ(tb.Out("sinfo -h -R"), "");
}

// The placements of the Slurm path equal `migsched simulate`'s for the same
// cluster (3 nodes x 2 A100 40GB = 6xA100-40GB, GPUs numbered node by node),
// arrival order and policy (full, FragCost metric: the demand-weighted
// default learns from arrivals, which the simulator seeds with the whole
// workload). Jobs arrive one at a time, each once the previous has started,
// and run until all are placed (no departures).
TEST(SlurmClusterTest, PlacementsEqualTheSimulators) {
  SKIP_WITHOUT_SLURM();
  SlurmTestbed tb({"--nodes", "3", "--gpus", "2xA100-40GB", "--metric", "fragcost"});
  ASSERT_TRUE(tb.Up());
  // 29 of the 42 compute slices, every job placed at its arrival (fragcost
  // spreads them over empty GPUs: the 7g.40gb comes first, while one is empty).
  const std::vector<std::string> profiles = {"7g.40gb", "3g.20gb", "1g.5gb",  "2g.10gb",
                                             "1g.5gb",  "4g.20gb", "1g.10gb", "3g.20gb",
                                             "2g.10gb", "1g.5gb",  "1g.5gb",  "3g.20gb"};
  std::string trace = "id,arrival_s,profile,count,duration_s\n";
  std::vector<int64_t> ids;
  for (size_t i = 0; i < profiles.size(); ++i) {
    trace += fmt::format("j{},{},{},1,100000\n", i, i, profiles[i]);
    const int64_t id = Submit(tb, "--gres=mig:" + profiles[i] + ":1", TaskScript(600));
    ids.push_back(id);
    ASSERT_TRUE(SlurmTestbed::WaitFor([&] { return Tasks(tb, id).size() == 1; }, 60))
        << "job " << id << " " << JobState(tb, id) << "\n"
        << tb.Logs();
  }
  const std::string file = WriteTempFile("slurm-sequence.csv", trace);
  const std::string jobs_csv = tb.dir() + "/sim-jobs.csv";
  CommandResult sim =
      RunMigsched({"simulate", "--cluster", "6xA100-40GB", "--workload", file, "--policy", "full",
                   "--metric", "fragcost", "--jobs-csv", jobs_csv, "-q"});
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  // jobs-csv: ...,instances,... with instances "gpu:profile@start".
  std::stringstream ss(ReadFile(jobs_csv));
  std::string line;
  std::getline(ss, line);
  size_t k = 0;
  while (std::getline(ss, line) && k < ids.size()) {
    std::vector<std::string> cols = SplitComma(line);
    const std::string want = cols[10];  // instances
    const TaskOut t = Tasks(tb, ids[k])[0];
    const int node = std::atoi(t.node.substr(1).c_str()) - 1;
    const std::string& pl = t.placements[0];
    const int gpu = std::atoi(pl.substr(0, pl.find(':')).c_str());
    EXPECT_EQ(fmt::format("{}:{}", node * 2 + gpu, pl.substr(pl.find(':') + 1)), want)
        << "job " << k << " (" << profiles[k] << ")";
    ++k;
  }
  EXPECT_EQ(k, ids.size());
  tb.Sh("scancel -u root");
}

// The gate: jobs wait while every GPU is taken; `scontrol reconfigure` and a
// slurmctld restart put the counts back to slurm.conf's (room for more) and
// the partition DOWN: nothing starts, nothing is lost, the gate reopens; so
// does a controller killed and restarted. A
// node daemon killed with kill -9 and restarted: its running allocations are
// recovered; meanwhile its counts are 0 and waiting jobs say so.
TEST(SlurmClusterTest, GateHoldsThroughReconfigureRestartAndADaemonCrash) {
  SKIP_WITHOUT_SLURM();
  SlurmTestbed tb({"--nodes", "3", "--gpus", "2xA100-40GB"});
  ASSERT_TRUE(tb.Up());
  std::vector<int64_t> running, waiting;
  for (int i = 0; i < 6; ++i)
    running.push_back(Submit(tb, "--gres=mig:7g.40gb:1", TaskScript(600)));
  ASSERT_TRUE(SlurmTestbed::WaitFor(
      [&] {
        return std::all_of(running.begin(), running.end(),
                           [&](int64_t id) { return JobState(tb, id) == "RUNNING"; });
      },
      90))
      << tb.Logs();
  for (int i = 0; i < 3; ++i) waiting.push_back(Submit(tb, "--gres=mig:7g.40gb:1", TaskScript(1)));
  auto gate_up = [&] {
    return tb.Out("scontrol -o show partition mig | grep -o 'State=[A-Z]*'") == "State=UP";
  };
  auto none_started = [&] {
    for (int64_t id : waiting) {
      if (JobState(tb, id) != "PENDING") return false;
    }
    return true;
  };
  // Regression (gate_cycles_counted_ticks): the counter of gate closures counted every tick the
  // gate stayed closed (27 after two closures); one reconfigure is one closure.
  auto gate_cycles = [&]() -> int64_t {
    const std::string text = tb.Out(MigschedBinary() + " slurm status --json");
    const Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded() || !doc.contains("controller")) return -1;
    return doc["controller"]["counters"].value("gate_cycles", int64_t{-1});
  };
  const int64_t cycles_before = gate_cycles();
  // The controller restarted too (SIGKILL: it keeps nothing of its own that matters).
  for (const std::string step : {"scontrol reconfigure", "slurmctld", "controller"}) {
    if (step == "slurmctld" || step == "controller") {
      tb.Sh("bash " + SourceDir() + "/deploy/slurm/local-cluster.sh restart " + tb.dir() + " " +
            step + (step == "controller" ? " --kill" : ""));
    } else {
      tb.Sh(step);
    }
    for (int i = 0; i < 10; ++i) {
      EXPECT_TRUE(none_started()) << step;
      usleep(300000);
    }
    // The gate opens with the published counts. A slurmd that registers again
    // only after revert_settle_s puts gres.conf's counts back; the controller
    // then closes the gate and publishes again (docs/slurm.md, the gate), so
    // the test waits for the partition UP *with* the published counts.
    const std::string n1_counts =
        "mig:1g.5gb:0,mig:1g.5gb+me:0,mig:1g.10gb:0,mig:2g.10gb:0,mig:3g.20gb:0,"
        "mig:4g.20gb:0,mig:7g.40gb:2,mig:migsched-pad:74";  // the total 2 x 38 kept
    auto n1_published = [&] {
      return tb.Out("scontrol show node n1 | sed -n 's/^ *Gres=//p'") == n1_counts;
    };
    EXPECT_TRUE(SlurmTestbed::WaitFor([&] { return gate_up() && n1_published(); }, 30))
        << step << "\n"
        << tb.Out("scontrol show node n1 | sed -n 's/^ *Gres=//p'") << "\n"
        << tb.Logs();
    EXPECT_TRUE(none_started()) << step;
    for (int64_t id : running) EXPECT_EQ(JobState(tb, id), "RUNNING") << step;
    if (step == "scontrol reconfigure") {
      EXPECT_EQ(gate_cycles(), cycles_before + 1) << tb.Logs();
    }
  }
  // Regression (restart_said_restarted_when_the_controller_failed): `restart controller` said
  // "restarted" at once, even when the controller then exited on its config. Now it waits for
  // the controller's status line and fails with its words; the jobs are as they were.
  tb.Sh("cp controller.yaml controller.yaml.good && echo 'bogus: 1' >> controller.yaml");
  const slurm::CommandResult bad =
      tb.Sh("bash " + SourceDir() + "/deploy/slurm/local-cluster.sh restart " + tb.dir() +
                " controller --kill",
            false);
  EXPECT_NE(bad.exit_code, 0) << bad.err;
  EXPECT_NE(bad.err.find("the controller exited at start"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("unknown key 'bogus'"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.err.find("restarted controller"), std::string::npos) << bad.err;
  tb.Sh("mv controller.yaml.good controller.yaml");
  const slurm::CommandResult good =
      tb.Sh("bash " + SourceDir() + "/deploy/slurm/local-cluster.sh restart " + tb.dir() +
            " controller --kill");
  EXPECT_NE(good.err.find("restarted controller"), std::string::npos) << good.err;
  EXPECT_TRUE(SlurmTestbed::WaitFor(gate_up, 30)) << tb.Logs();
  EXPECT_TRUE(none_started());
  // kill -9 the daemon of n2 (two 7g.40gb allocations run there).
  const std::string before = ReadFile(tb.dir() + "/nodes/n2/state/token");
  tb.Sh("bash " + SourceDir() + "/deploy/slurm/local-cluster.sh restart " + tb.dir() +
        " daemon-n2 --kill");
  std::vector<std::string> n2_live;
  for (const Json& a : Allocations(tb, "n2")) {
    if (a["state"] == "running") n2_live.push_back(a["owner"]);
  }
  EXPECT_EQ(n2_live.size(), 2u) << "allocations on n2 after the restart";
  EXPECT_TRUE(SlurmTestbed::WaitFor(gate_up, 30)) << tb.Logs();
  EXPECT_TRUE(none_started());
  // Cancelling two jobs frees two GPUs: two waiting jobs start, the third waits.
  tb.Sh(fmt::format("scancel {} {}", running[0], running[1]));
  EXPECT_TRUE(SlurmTestbed::WaitFor(
      [&] {
        return AllEnded(tb, {waiting[0], waiting[1]});
      },
      90))
      << tb.Logs();
  // The third runs once one of those has ended. Each bound at the first try:
  // no start on a GPU still held (the counts of n2 never went under its
  // running jobs while its daemon was away).
  EXPECT_TRUE(SlurmTestbed::WaitFor([&] { return AllEnded(tb, {waiting[2]}); }, 60)) << tb.Logs();
  for (int64_t id : waiting) {
    const Json j = SlurmJobs(tb).at(id);
    EXPECT_EQ(j["job_state"], "COMPLETED") << id << " " << j["admin_comment"];
    EXPECT_EQ(j["restart_cnt"], 0) << id << " " << j["admin_comment"];
  }
  EXPECT_EQ(tb.Out("sinfo -h -R"), "");
  tb.Sh("scancel -u root");
}

// Whether Slurm has node `node` in service: registered, not INVAL, DRAIN,
// DOWN or FAIL (scontrol's State= holds the base state and its flags).
bool InService(SlurmTestbed& tb, const std::string& node, std::string* state) {
  *state = tb.Out("scontrol show node " + node + " | grep -o 'State=[A-Z_+]*' | head -n 1");
  if (state->empty()) return false;
  for (const char* bad : {"INVAL", "DRAIN", "DOWN", "FAIL", "NOT_RESPONDING", "UNKNOWN"}) {
    if (state->find(bad) != std::string::npos) return false;
  }
  return true;
}

// Regression (slurmd_restart_with_running_mig_jobs_drains_the_node): Slurm
// checks a registering slurmd's MIG GRES by the node's total; the controller
// published lower totals, so a slurmd restarted while a MIG job ran there
// found "gres/mig count changed and jobs are using them" and Slurm marked the
// node INVAL and drained it. Now the node keeps its total (the pad): a slurmd
// stopped and started, killed and started, and a node "reboot" (slurmd and
// node daemon killed, the fake backend's instances lost) leave it in service;
// the running job finishes and a whole-GPU job runs there afterwards.
TEST(SlurmClusterTest, SlurmdRestartsAndARebootLeaveABusyNodeInService) {
  SKIP_WITHOUT_SLURM();
  SlurmTestbed tb({"--nodes", "2", "--gpus", "1xA100-40GB"});
  ASSERT_TRUE(tb.Up());
  const std::string release = tb.dir() + "/release-a";
  const int64_t a = Submit(tb, "--exclude=n1 --gres=mig:3g.20gb:1",
                           "echo \"task node=$SLURMD_NODENAME cvd=$CUDA_VISIBLE_DEVICES\"; "
                           "while [ ! -e " +
                               release + " ]; do sleep 0.2; done");
  ASSERT_TRUE(SlurmTestbed::WaitFor([&] { return Tasks(tb, a).size() == 1; }, 60)) << tb.Logs();
  EXPECT_EQ(Tasks(tb, a)[0].node, "n2");
  const std::string script = SourceDir() + "/deploy/slurm/local-cluster.sh";
  for (const std::string step : {"slurmd-n2", "slurmd-n2 --kill", "node-n2 --kill"}) {
    // `restart` returns once slurmctld has the slurmd's new registration.
    tb.Sh(fmt::format("bash {} restart {} {}", script, tb.dir(), step), true, 120);
    std::string state;
    EXPECT_TRUE(InService(tb, "n2", &state)) << step << ": " << state << "\n"
                                             << tb.Out("sinfo -h -R") << "\n"
                                             << tb.Logs();
    EXPECT_EQ(tb.Out("sinfo -h -R"), "") << step;
    EXPECT_EQ(JobState(tb, a), "RUNNING") << step;
  }
  // After the reboot Slurm still runs job a, whose instance is gone: the
  // controller reports it (status, metric) once past reclaim_grace_s (10 s).
  const std::string status = "\"$(cat migsched.path)\" slurm status";
  auto lost_listed = [&] {
    const Json doc = Json::parse(tb.Out(status + " --json"));
    for (const Json& l : doc["lost_allocations"]) {
      if (l["job"] == a && l["node"] == "n2") return true;
    }
    return false;
  };
  EXPECT_TRUE(SlurmTestbed::WaitFor(lost_listed, 40)) << tb.Out(status + " --json");
  const std::string table = tb.Out(status);
  EXPECT_NE(table.find("controller: healthy; partition mig UP (open)"), std::string::npos) << table;
  EXPECT_NE(table.find(fmt::format("RUNNING IN SLURM, ALLOCATION GONE (1)\n  job {} on n2", a)),
            std::string::npos)
      << table;
  const std::string listen = tb.Out("sed -n 's/^  listen: //p' controller.yaml");
  // Regression (status_url_with_a_path_read_as_down): --url as a browser shows it ("/" or the
  // page's path) said the controller was not running.
  for (const std::string tail : {"/", "/v1/status"}) {
    EXPECT_NE(tb.Out(status + " --url http://" + listen + tail).find("controller: healthy"),
              std::string::npos)
        << tail;
  }
  EXPECT_EQ(tb.Out("curl -s http://" + listen + "/healthz"), "{\"status\":\"ok\"}");
  const std::string metrics = tb.Out("curl -sf http://" + listen + "/metrics");
  EXPECT_NE(metrics.find("\nmigsched_slurm_lost_allocations 1\n"), std::string::npos) << metrics;
  EXPECT_NE(
      ReadFile(tb.dir() + "/log/controller.log")
          .find(fmt::format("slurm:{} runs in Slurm on n2 but its allocation there is gone", a)),
      std::string::npos);

  tb.Sh("touch " + release);
  ASSERT_TRUE(SlurmTestbed::WaitFor([&] { return AllEnded(tb, {a}); }, 60)) << tb.Logs();
  EXPECT_EQ(SlurmJobs(tb).at(a)["job_state"], "COMPLETED");
  // A whole GPU on n2 afterwards: it needs what the job held freed on the node.
  const int64_t b = Submit(tb, "--exclude=n1 --gres=mig:7g.40gb:1", TaskScript(1));
  ASSERT_TRUE(SlurmTestbed::WaitFor([&] { return AllEnded(tb, {b}); }, 90)) << tb.Logs();
  const Json jb = SlurmJobs(tb).at(b);
  EXPECT_EQ(jb["job_state"], "COMPLETED") << jb["admin_comment"];
  EXPECT_EQ(jb["restart_cnt"], 0) << jb["admin_comment"];
  ASSERT_EQ(Tasks(tb, b).size(), 1u);
  EXPECT_EQ(Tasks(tb, b)[0].node, "n2");
  EXPECT_EQ(Tasks(tb, b)[0].placements, std::vector<std::string>{"0:7g.40gb@0"});
  std::string state;
  EXPECT_TRUE(InService(tb, "n2", &state)) << state;
  EXPECT_EQ(tb.Out("sinfo -h -R"), "");
  EXPECT_EQ(Json::parse(tb.Out(status + " --json"))["lost_allocations"].size(), 0u);
}

// Every sbatch example in docs/slurm.md's ```sh blocks, as written (the job
// scripts it names are created, each printing its devices), runs on the
// local cluster: each completes at the first try on MIG instances. Then what
// users write besides (job_submit.lua, docs/slurm.md "What users may
// write"): a profile in capitals, a whole GPU as --gres=gpu:1 (the one
// full-GPU profile of this cluster of A100 40GB: 7g.40gb), -w and
// --nodelist; --gpus=1 is refused at submit, saying what to write.
TEST(SlurmClusterTest, TheDocsExamplesAndWhatUsersWriteRun) {
  SKIP_WITHOUT_SLURM();
  std::vector<std::string> examples;
  {
    std::stringstream doc(ReadFile(SourceDir() + "/docs/slurm.md"));
    std::string line;
    bool in_sh = false;
    while (std::getline(doc, line)) {
      if (line.rfind("```", 0) == 0) {
        in_sh = line == "```sh";
        continue;
      }
      if (!in_sh || line.rfind("sbatch ", 0) != 0) continue;
      if (const size_t hash = line.find(" #"); hash != std::string::npos) line.resize(hash);
      while (!line.empty() && line.back() == ' ') line.pop_back();
      examples.push_back(line);
    }
  }
  // The four of "Dynamic MIG for a Slurm cluster" and the one of "Try it on one machine".
  ASSERT_GE(examples.size(), 5u);
  SlurmTestbed tb({"--nodes", "2", "--gpus", "1xA100-40GB"});
  ASSERT_TRUE(tb.Up());
  std::vector<int64_t> ids;
  for (const std::string& e : examples) {
    const std::string last = e.substr(e.rfind(' ') + 1);
    if (last.size() > 3 && last.substr(last.size() - 3) == ".sh") {
      std::ofstream(tb.dir() + "/" + last) << "#!/bin/sh\necho \"$CUDA_VISIBLE_DEVICES\"\n";
    }
    const std::string out = tb.Out("sbatch --parsable" + e.substr(6));
    ids.push_back(std::atoll(out.c_str()));
    EXPECT_GT(ids.back(), 0) << e << ": " << out;
  }
  ASSERT_TRUE(SlurmTestbed::WaitFor([&] { return AllEnded(tb, ids); }, 120)) << tb.Logs();
  const auto jobs = SlurmJobs(tb);
  for (size_t i = 0; i < ids.size(); ++i) {
    const Json& j = jobs.at(ids[i]);
    EXPECT_EQ(j["job_state"], "COMPLETED") << examples[i] << ": " << j["admin_comment"];
    EXPECT_EQ(j["restart_cnt"], 0) << examples[i];
    EXPECT_EQ(ReadFile(fmt::format("{}/slurm-{}.out", tb.dir(), ids[i])).rfind("MIG-", 0), 0u)
        << examples[i];
  }

  const int64_t caps = Submit(tb, "--gres=mig:3G.20GB:1", TaskScript(1));
  const int64_t gpu = Submit(tb, "--gres=gpu:1", TaskScript(1));
  const int64_t named = Submit(tb, "-w n2 --gres=mig:3g.20gb:1", TaskScript(1));
  const int64_t nodelist = Submit(tb, "--nodelist=n1 --gres=mig:1g.5gb:1", TaskScript(1));
  for (int64_t id : {caps, gpu, named, nodelist}) EXPECT_GT(id, 0);
  const slurm::CommandResult refused = tb.Sh("sbatch -p mig --gpus=1 --wrap true", false);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("ask for whole GPUs per node as --gres=mig:7g.40gb:N"),
            std::string::npos)
      << refused.err;
  // Regression (trial_gpu_beside_its_profile_named_twice): a whole GPU beside an entry of the
  // full-GPU profile became a second entry of it, which the controller held as "--gres names
  // mig:7g.40gb twice", a spelling the user never wrote. They are one entry of 2 (held by the user
  // here, only read).
  const int64_t both = Submit(tb, "--hold --gres=mig:7g.40gb:1,gpu:1", TaskScript(1));
  ASSERT_GT(both, 0);
  const std::string shown = tb.Out(fmt::format("scontrol show job {}", both));
  EXPECT_NE(shown.find("mig:7g.40gb:2"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("mig:7g.40gb:1"), std::string::npos) << shown;
  tb.Out(fmt::format("scancel {}", both));
  ASSERT_TRUE(SlurmTestbed::WaitFor(
      [&] {
        return AllEnded(tb, {caps, gpu, named, nodelist});
      },
      90))
      << tb.Logs();
  const auto after = SlurmJobs(tb);
  for (int64_t id : {caps, gpu, named, nodelist}) {
    EXPECT_EQ(after.at(id)["job_state"], "COMPLETED") << id << " " << after.at(id)["admin_comment"];
    EXPECT_EQ(after.at(id)["restart_cnt"], 0) << id;
    ASSERT_EQ(Tasks(tb, id).size(), 1u) << id;
  }
  EXPECT_NE(Tasks(tb, caps)[0].placements.at(0).find(":3g.20gb@"), std::string::npos);
  EXPECT_EQ(Tasks(tb, gpu)[0].placements, std::vector<std::string>{"0:7g.40gb@0"});
  EXPECT_EQ(Tasks(tb, named)[0].node, "n2");
  EXPECT_EQ(Tasks(tb, nodelist)[0].node, "n1");

  // Regression (array_task_bound_to_another_tasks_instance): a job array's tasks each run on
  // their own instance, in the batch step and in every srun step (the task prolog reads the
  // task's own binding). Before, one task's binding was written into every task of the array,
  // and the other's srun step ran on it.
  const int64_t array = Submit(tb, "--array=1-2 --gres=mig:1g.5gb:1",
                               "echo batch=$CUDA_VISIBLE_DEVICES; srun sh -c \"echo "
                               "step=\\$CUDA_VISIBLE_DEVICES\"; sleep 5");
  ASSERT_GT(array, 0);
  ASSERT_TRUE(SlurmTestbed::WaitFor(
      [&] {
        const auto jobs = SlurmJobs(tb);
        int done = 0;
        for (const auto& [id, j] : jobs) {
          if (j["array_job_id"] == array && j["job_state"] == "COMPLETED") ++done;
        }
        return done == 2;
      },
      90))
      << tb.Logs();
  for (int task : {1, 2}) {
    const std::string out = ReadFile(fmt::format("{}/slurm-{}_{}.out", tb.dir(), array, task));
    const size_t b = out.find("batch=MIG-"), st = out.find("step=MIG-");
    ASSERT_NE(b, std::string::npos) << out;
    ASSERT_NE(st, std::string::npos) << out;
    const std::string batch = out.substr(b + 6, out.find('\n', b) - b - 6);
    const std::string step = out.substr(st + 5, out.find('\n', st) - st - 5);
    EXPECT_EQ(batch, step) << "task " << task << ": " << out;
  }
  EXPECT_EQ(tb.Out("sinfo -h -R"), "");
}

// A daemon that is down: its node publishes 0 and waiting jobs say why.
TEST(SlurmClusterTest, AnUnreachableDaemonPublishesZero) {
  SKIP_WITHOUT_SLURM();
  SlurmTestbed tb({"--nodes", "2", "--gpus", "1xA100-40GB"});
  ASSERT_TRUE(tb.Up());
  tb.Sh("kill -STOP $(cat pids/daemon-n2.pid)");
  const int64_t a = Submit(tb, "--gres=mig:7g.40gb:1", TaskScript(600));
  const int64_t b = Submit(tb, "--gres=mig:7g.40gb:1", TaskScript(1));
  EXPECT_TRUE(SlurmTestbed::WaitFor([&] { return JobState(tb, a) == "RUNNING"; }, 60)) << tb.Logs();
  EXPECT_TRUE(SlurmTestbed::WaitFor(
      [&] {
        return tb.Out("scontrol show node n2 | sed -n 's/^ *Gres=//p'").find("7g.40gb:0") !=
               std::string::npos;
      },
      30));
  EXPECT_TRUE(SlurmTestbed::WaitFor(
      [&] {
        return SlurmJobs(tb).at(b)["admin_comment"].get<std::string>().find("n2") !=
               std::string::npos;
      },
      30))
      << SlurmJobs(tb).at(b)["admin_comment"];
  EXPECT_EQ(JobState(tb, b), "PENDING");
  tb.Sh("kill -CONT $(cat pids/daemon-n2.pid)");
  EXPECT_TRUE(SlurmTestbed::WaitFor([&] { return AllEnded(tb, {b}); }, 90)) << tb.Logs();
  EXPECT_EQ(Tasks(tb, b).at(0).node, "n2");
  EXPECT_EQ(tb.Out("sinfo -h -R"), "");
  tb.Sh("scancel -u root");
}

// Migration: six 3g.20gb jobs, one per GPU at start 4 (full's choice on
// empty GPUs); one is migratable. A 7g.40gb fits nowhere; moving the
// migratable job (its 3g.20gb fits at start 0 of any other GPU) opens a GPU:
// it is requeued with the reason, the 7g.40gb runs where it was, and it runs
// again elsewhere. With anchored jobs together (full's default, algorithms.md
// §4 step 2) the five jobs that cannot move would share three GPUs and leave
// the 7g.40gb room without a move: the scenario turns it off.
TEST(SlurmClusterTest, AMigratableJobMovesToOpenRoomForASevenG) {
  SKIP_WITHOUT_SLURM();
  SlurmTestbed tb({"--nodes", "3", "--gpus", "2xA100-40GB", "--migrate-after", "0", "--min-runtime",
                   "0", "--scheduler-option", "anchored-together=off"});
  ASSERT_TRUE(tb.Up());
  std::vector<int64_t> jobs;
  int64_t movable = 0;
  for (int i = 0; i < 6; ++i) {
    const std::string extra = i == 3 ? "--requeue --comment=migratable=restart " : "";
    const int64_t id = Submit(tb, extra + "--gres=mig:3g.20gb:1", TaskScript(600));
    if (i == 3) movable = id;
    jobs.push_back(id);
    ASSERT_TRUE(SlurmTestbed::WaitFor([&] { return Tasks(tb, id).size() == 1; }, 60)) << tb.Logs();
  }
  const TaskOut before = Tasks(tb, movable)[0];
  const int64_t w = Submit(tb, "--gres=mig:7g.40gb:1", TaskScript(1));
  ASSERT_TRUE(SlurmTestbed::WaitFor([&] { return AllEnded(tb, {w}); }, 120)) << tb.Logs();
  const TaskOut wt = Tasks(tb, w).at(0);
  EXPECT_EQ(wt.node, before.node);
  EXPECT_EQ(wt.placements.at(0).substr(0, 1), before.placements.at(0).substr(0, 1));  // same GPU
  const Json m = SlurmJobs(tb).at(movable);
  EXPECT_EQ(m["restart_cnt"], 1);
  // Its AdminComment says why it waits again, until its next prolog records
  // the new binding there (the controller's log keeps the reason).
  const std::string comment = m["admin_comment"];
  EXPECT_TRUE(comment.find(fmt::format("open room for slurm:{}", w)) != std::string::npos ||
              comment.rfind("migsched: bound ", 0) == 0)
      << comment;
  EXPECT_NE(ReadFile(tb.dir() + "/log/controller.log")
                .find(fmt::format("slurm:{}: requeued to open room for slurm:{}", movable, w)),
            std::string::npos);
  // It runs again (its output now holds a second start).
  EXPECT_TRUE(SlurmTestbed::WaitFor([&] { return JobState(tb, movable) == "RUNNING"; }, 60));
  for (int64_t id : jobs) {
    if (id != movable) {
      EXPECT_EQ(SlurmJobs(tb).at(id)["restart_cnt"], 0);
    }
  }
  EXPECT_EQ(tb.Out("sinfo -h -R"), "");
  tb.Sh("scancel -u root");
}

// Bad input: each gets a clear message and loses nothing.
TEST(SlurmClusterTest, BadRequestsGetClearMessages) {
  SKIP_WITHOUT_SLURM();
  SlurmTestbed tb({"--nodes", "2", "--gpus", "2xA100-40GB"});
  ASSERT_TRUE(tb.Up());
  // Slurm's own refusals at submit: an unknown profile, more than a node holds.
  for (const std::string gres : {"mig:9g.99gb:1", "mig:1g.5gb:15"}) {
    slurm::CommandResult r =
        tb.Sh("sbatch -p mig --gres=" + gres + " --wrap true", /*check=*/false);
    EXPECT_NE(r.exit_code, 0) << gres;
    EXPECT_NE(r.err.find("Requested node configuration is not available"), std::string::npos)
        << gres << ": " << r.err;
  }
  // Accepted by Slurm, never placeable by migsched: held with the reason.
  const int64_t untyped = Submit(tb, "--gres=mig:2", "true");
  const int64_t too_big = Submit(tb, "--gres=mig:4g.20gb:2,mig:7g.40gb:1", "true");
  // A malformed marker: it runs, never moves, and says so.
  const int64_t marker =
      Submit(tb, "--requeue --comment=migratable=yes --gres=mig:1g.5gb:1", TaskScript(1));
  ASSERT_TRUE(SlurmTestbed::WaitFor([&] { return AllEnded(tb, {marker}); }, 60)) << tb.Logs();
  ASSERT_TRUE(SlurmTestbed::WaitFor(
      [&] {
        const auto j = SlurmJobs(tb);
        return j.at(untyped)["state_reason"] == "JobHeldAdmin" &&
               j.at(too_big)["state_reason"] == "JobHeldAdmin";
      },
      30))
      << tb.Logs();
  const auto j = SlurmJobs(tb);
  EXPECT_NE(j.at(untyped)["admin_comment"].get<std::string>().find(
                "migsched: held: can never run: --gres=mig:2 names no MIG profile"),
            std::string::npos)
      << j.at(untyped)["admin_comment"];
  EXPECT_NE(j.at(too_big)["admin_comment"].get<std::string>().find(
                "migsched: held: can never run: no node can ever hold"),
            std::string::npos)
      << j.at(too_big)["admin_comment"];
  EXPECT_EQ(j.at(marker)["job_state"], "COMPLETED");
  EXPECT_NE(j.at(marker)["admin_comment"].get<std::string>().find(
                "--comment: 'migratable=yes': expected migratable=restart"),
            std::string::npos)
      << j.at(marker)["admin_comment"];
  // Nothing lost: the held jobs are still in the queue.
  EXPECT_EQ(j.at(untyped)["job_state"], "PENDING");
  EXPECT_EQ(tb.Out("sinfo -h -R"), "");
  tb.Sh("scancel -u root");
}

}  // namespace
}  // namespace migsched::testing
