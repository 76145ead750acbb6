// End-to-end runs of the `full` policy (§6 migration) and of the queue and
// migration flags (§5, §13) on tiny hand-worked traces.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::ReadFile;
using ::migsched::testing::ReadJson;

using ::migsched::testing::RunMigsched;

// Every case below is worked by hand with the exact durations told to the scheduler: each run is
// an oracle reference (--expected-ends known, no modelled limits), as a test of the mechanisms.
using ::migsched::testing::WriteTempFile;
using ::testing::HasSubstr;

// One A100 40GB. a (3g.20gb, 10 s) goes to 3g@4 (ΔFragCost 0; 3g@0 would
// cost 0.35, §2 table), created by 0.023; b (3g.20gb, 1000 s, checkpoint)
// gets the other placement, 3g@0, created by 0.046. a ends at 10.023 and
// its 3g@4 is kept idle. The pass after that completion moves b to it
// (FragCost 0.35 -> 0; the idle instance is reused, no create): the copy
// takes 2 s + 19968 MiB / 1024 = 19.5 GB at 10 GB/s = 3.95 s, then b pauses
// 0.5 s; its source 3g@0 is kept idle (§6: `full` keeps idle instances), so
// nothing is destroyed. b ends at 0.046 + 1000 + 0.5.
const char kMoveTrace[] =
    "id,arrival_s,profile,duration_s,migratable\n"
    "a,0,3g.20gb,10,none\n"
    "b,0,3g.20gb,1000,checkpoint\n";

TEST(MigrationCliTest, FullMovesAJobMakeBeforeBreak) {
  const std::string trace = WriteTempFile("move.csv", kMoveTrace);
  const std::string json = WriteTempFile("full.json", "");
  const std::string jobs = WriteTempFile("full-jobs.csv", "");
  // The move is begun by the completion pass with nothing waiting: --defrag-passes always (full's
  // default, off, runs no completion pass; docs/algorithms.md §13).
  auto r =
      RunMigsched({"simulate", "--expected-ends", "known", "--user-estimates", "none", "--cluster",
                   "1xA100-40GB", "--workload", trace, "--policy", "full", "--defrag-passes",
                   "always", "--json", json, "--jobs-csv", jobs, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = ReadJson(json);
  EXPECT_EQ(j["migrations"], 1);
  EXPECT_EQ(j["migrations_intra"], 1);
  EXPECT_EQ(j["migrations_inter"], 0);
  EXPECT_NEAR(j["migration_bytes_gb"].get<double>(), 19.5, 1e-9);
  EXPECT_NEAR(j["migration_pause_s"].get<double>(), 0.5, 1e-9);
  EXPECT_NEAR(j["makespan_s"].get<double>(), 1000.546, 1e-6);
  EXPECT_EQ(j["creates"], 2);
  EXPECT_EQ(j["destroys"], 0);
  EXPECT_EQ(j["reconfigurations_saved_by_retention"], 2);  // the kept 3g@4 reused
  EXPECT_EQ(j["settings"]["migration"]["switch_s"], 0.5);
  EXPECT_TRUE(j["settings"]["max_wait_s"].is_null());
  EXPECT_THAT(ReadFile(jobs),
              HasSubstr("instances,reason,migrations,duration_s,slowdown,bounded_slowdown,"
                        "time_limit_s\n"));
  // b, placed at 3g@0, moved once; its duration 1000 s, slowdown 1000.546 / 1000.
  EXPECT_THAT(ReadFile(jobs), HasSubstr("0:3g.20gb@0,,1,1000,1.000546,1.000546,\n"));
  // Without migration b stays on 3g@0: 0.046 + 1000.
  auto plain = RunMigsched({"simulate", "--expected-ends", "known", "--user-estimates", "none",
                            "--cluster", "1xA100-40GB", "--workload", trace, "--policy", "lb+frag",
                            "--json", json, "--quiet"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NEAR(ReadJson(json)["makespan_s"].get<double>(), 1000.046, 1e-6);
  EXPECT_EQ(ReadJson(json)["migrations"], 0);
  // A slower switch-over: 2 s pause.
  auto slow =
      RunMigsched({"simulate", "--expected-ends", "known", "--user-estimates", "none", "--cluster",
                   "1xA100-40GB", "--workload", trace, "--policy", "full", "--defrag-passes",
                   "always", "--switch-s", "2", "--json", json, "--quiet"});
  ASSERT_EQ(slow.exit_code, 0) << slow.err;
  EXPECT_NEAR(ReadJson(json)["makespan_s"].get<double>(), 1002.046, 1e-6);
}

// §13 evacuation, 2x A100 40GB, `full` (threshold 0.4). t = 0: r (3g.20gb,
// `none`) goes to GPU 0 (both empty: the lower index); a and b (1g.5gb,
// checkpoint) each go to the lazy GPU 1 (GPU 0 has 3/7 = 0.43 busy: busy).
// Creates: r by 0.023 on GPU 0; a by 0.023, b by 0.046 on GPU 1. t = 10: d
// (7g.40gb) fits nowhere; GPU 0's blocker r may not move, GPU 1's a and b
// may, to GPU 0 (beside r): two moves, GPU 1 held for d. Targets created on
// GPU 0 by 10.023 and 10.046; copies 2 + 4864 MiB / 1024 / 10 GB/s = 2.475 s:
// switch-overs at 12.498 and 12.521, pauses of 0.5 s end at 12.998 and
// 13.021, and each destroys its source on GPU 1 (by 13.021 and 13.044). The
// scan at 13.021 places d on GPU 1: its create runs after the destroys, so d
// starts at 13.067 and ends at 113.067. a ends at 0.023 + 1000 + 0.5.
const char kEvacuationTrace[] =
    "id,arrival_s,profile,duration_s,migratable\n"
    "r,0,3g.20gb,5000,none\n"
    "a,0,1g.5gb,1000,checkpoint\n"
    "b,0,1g.5gb,1000,checkpoint\n"
    "d,10,7g.40gb,100,none\n";

// The row of job `id` in a --jobs-csv file, as a map of its columns.
std::map<std::string, std::string> JobRow(const std::string& csv, const std::string& id) {
  std::istringstream in(csv);
  std::string header, line;
  std::getline(in, header);
  auto split = [](const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string f;
    while (std::getline(ss, f, ',')) out.push_back(f);
    return out;
  };
  const std::vector<std::string> names = split(header);
  while (std::getline(in, line)) {
    const std::vector<std::string> v = split(line);
    if (v.size() > 1 && v[1] == id) {
      std::map<std::string, std::string> row;
      for (size_t i = 0; i < names.size() && i < v.size(); ++i) row[names[i]] = v[i];
      return row;
    }
  }
  return {};
}

TEST(MigrationCliTest, EvacuationOpensAGpuForASevenSliceJob) {
  const std::string trace = WriteTempFile("evac.csv", kEvacuationTrace);
  const std::string json = WriteTempFile("evac.json", "");
  const std::string jobs = WriteTempFile("evac-jobs.csv", "");
  auto run = [&](std::vector<std::string> extra) {
    // With the lazy/busy split (t = 0.4; full's default has none, and would pack a and b beside
    // r, leaving GPU 1 whole for d): a and b go to the lazy GPU 1, which d then needs.
    std::vector<std::string> args = {"simulate",
                                     "--cluster",
                                     "2xA100-40GB",
                                     "--workload",
                                     trace,
                                     "--policy",
                                     "full",
                                     "--json",
                                     json,
                                     "--jobs-csv",
                                     jobs,
                                     "--quiet",
                                     "--expected-ends",
                                     "known",
                                     "--user-estimates",
                                     "none",
                                     "--threshold",
                                     "0.4"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunMigsched(args);
  };
  // full's own default, no lazy/busy split: every candidate is scored by the demand-weighted
  // metric, whose window the simulator seeds with the workload (d's 7g.40gb among them). A 1g on
  // the empty GPU 1 blocks its 7g placement; on GPU 0, which r's 3g already keeps from a 7g, it
  // blocks less. So a and b go beside r, GPU 1 stays whole, and d starts at its arrival after one
  // create (10 + 0.023 s), nothing moved.
  {
    std::vector<std::string> args = {
        "simulate", "--cluster", "2xA100-40GB",     "--workload", trace,
        "--policy", "full",      "--json",          json,         "--jobs-csv",
        jobs,       "--quiet",   "--expected-ends", "known",      "--user-estimates",
        "none"};
    auto packed = RunMigsched(args);
    ASSERT_EQ(packed.exit_code, 0) << packed.err;
    EXPECT_EQ(ReadJson(json)["evacuations"], 0);
    EXPECT_EQ(JobRow(ReadFile(jobs), "a")["instances"].substr(0, 2), "0:");
    EXPECT_EQ(JobRow(ReadFile(jobs), "b")["instances"].substr(0, 2), "0:");
    std::map<std::string, std::string> d = JobRow(ReadFile(jobs), "d");
    EXPECT_NEAR(std::stod(d["start_s"]), 10.023, 1e-6);
    EXPECT_EQ(d["instances"], "1:7g.40gb@0");
  }
  auto r = run({"--evacuation", "head"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = ReadJson(json);
  EXPECT_EQ(j["evacuations"], 1);
  EXPECT_EQ(j["migrations"], 2);
  EXPECT_EQ(j["migrations_inter"], 2);
  EXPECT_EQ(j["settings"]["evacuation"], "head");
  std::map<std::string, std::string> d = JobRow(ReadFile(jobs), "d");
  EXPECT_NEAR(std::stod(d["start_s"]), 13.067, 1e-6);
  EXPECT_NEAR(std::stod(d["end_s"]), 113.067, 1e-6);
  EXPECT_EQ(d["instances"], "1:7g.40gb@0");
  std::map<std::string, std::string> a = JobRow(ReadFile(jobs), "a");
  EXPECT_EQ(a["migrations"], "1");
  EXPECT_EQ(a["instances"].substr(0, 2), "1:");  // where it was placed
  EXPECT_NEAR(std::stod(a["end_s"]), 1000.523, 1e-6);
  // Only for jobs that waited 20 s: scans run at arrivals, completions and
  // the ends of moves, so the next is at a's end, 1000.023, when b ends at
  // 1000.046, before a move (2.475 s copy + 0.5 s) could: no evacuation. d
  // is placed at b's end and starts after three operations on GPU 1 (destroy
  // the idle 1g instances a and b left, create 7g): 1000.046 + 3 x 0.023.
  r = run({"--evacuation", "head", "--evacuation-min-wait", "20"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadJson(json)["evacuations"], 0);
  EXPECT_NEAR(std::stod(JobRow(ReadFile(jobs), "d")["start_s"]), 1000.115, 1e-6);
  // Only for jobs of 8 compute slices or more: none is; off: none either.
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--evacuation", "queue", "--evacuation-min-slices", "8"},
        std::vector<std::string>{"--evacuation", "off"}}) {
    r = run(extra);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(ReadJson(json)["evacuations"], 0);
    EXPECT_NEAR(std::stod(JobRow(ReadFile(jobs), "d")["start_s"]), 1000.115, 1e-6);
  }
  // No flag: `full`'s registry default, queue. d is the only waiting job, so it is also the
  // head: the same evacuation as with `head` above, d starting at 13.067.
  r = run({});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = ReadJson(json);
  EXPECT_EQ(j["settings"]["evacuation"], "queue");
  EXPECT_EQ(j["evacuations"], 1);
  EXPECT_NEAR(std::stod(JobRow(ReadFile(jobs), "d")["start_s"]), 13.067, 1e-6);
}

// §13 --reservation-slack through the CLI, one A100, no reconfiguration
// cost, first-fit, --max-skip-seconds 30. s (1g, 100 s) runs 0-100; d (7g,
// 100 s) arrives at 1 and is overdue at the scan of t = 40 (waited 39 s),
// when e (1g, 80 s) arrives: d reserves GPU 0, expected start 100 (s's end).
// Strict (F = 0): e would end at 120 > 100, so it waits; d starts at 100,
// ends at 200, and e runs 200-280. F = 0.5: e may end by 100 + 0.5 x 100 =
// 150, so it runs 40-120; d starts when e has ended, 120 (delayed by 20 s,
// within its 50 s of slack), and ends at 220. The run's settings record F.
TEST(MigrationCliTest, ReservationSlackLetsAShortJobDelayTheReservedOneWithinIt) {
  const std::string trace = WriteTempFile("slack.csv",
                                          "id,arrival_s,profile,duration_s\n"
                                          "s,0,1g.5gb,100\n"
                                          "d,1,7g.40gb,100\n"
                                          "e,40,1g.5gb,80\n");
  const std::string json = WriteTempFile("slack.json", "");
  const std::string jobs = WriteTempFile("slack-jobs.csv", "");
  struct Case {
    std::string slack;
    double d_start, e_start;
  } cases[] = {{"0", 100, 200}, {"0.5", 120, 40}};
  for (const Case& c : cases) {
    auto r = RunMigsched({"simulate",    "--expected-ends",
                          "known",       "--user-estimates",
                          "none",        "--cluster",
                          "1xA100-40GB", "--workload",
                          trace,         "--policy",
                          "first-fit",   "--reconfig-ms",
                          "0",           "--max-skip-seconds",
                          "30",          "--reservation-slack",
                          c.slack,       "--json",
                          json,          "--jobs-csv",
                          jobs,          "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(ReadJson(json)["settings"]["reservation_slack"].get<double>(), std::stod(c.slack));
    const std::string csv = ReadFile(jobs);
    EXPECT_NEAR(std::stod(JobRow(csv, "d")["start_s"]), c.d_start, 1e-9) << "F = " << c.slack;
    EXPECT_NEAR(std::stod(JobRow(csv, "e")["start_s"]), c.e_start, 1e-9) << "F = " << c.slack;
  }
}

TEST(MigrationCliTest, EvacuationFlagsRefuseBadValues) {
  const std::string trace = WriteTempFile("evac-bad.csv", kEvacuationTrace);
  struct Case {
    std::string flag, value, error;
  } cases[] = {
      // The table of scheduler options' checks (sched/option_table.h), as the config files'.
      {"--evacuation", "all", "--evacuation: must be one of off, head, queue, got 'all'"},
      {"--evacuation-min-wait", "-1", "--evacuation-min-wait: must be a finite number >= 0"},
      {"--reservation", "greedy", "--reservation: must be one of easy, conservative, got 'greedy'"},
      {"--reservation-slack", "-1", "--reservation-slack: must be a finite number >= 0"},
      {"--reservation-depth", "0", "--reservation-depth: must be an integer in 1..2147483647"},
      {"--migration-order", "never",
       "--migration-order: must be one of after-scan, before-scan, got 'never'"},
  };
  for (const Case& c : cases) {
    auto r = RunMigsched({"simulate", "--expected-ends", "known", "--user-estimates", "none",
                          "--cluster", "2xA100-40GB", "--workload", trace, "--policy", "full",
                          c.flag, c.value, "--quiet"});
    EXPECT_EQ(r.exit_code, 2) << c.flag;
    EXPECT_THAT(r.err, HasSubstr(c.error)) << c.flag << ": " << r.err;
  }
}

TEST(MigrationCliTest, MaxWaitRejectsWithItsReason) {
  // first-fit: x (7g, 0-100) holds the GPU, y (7g, t = 10) reaches
  // --max-wait 50 at t = 60 still queued: rejected.
  const std::string trace = WriteTempFile("wait.csv",
                                          "id,arrival_s,profile,duration_s\n"
                                          "x,0,7g.40gb,100\n"
                                          "y,10,7g.40gb,10\n");
  const std::string json = WriteTempFile("wait.json", "");
  const std::string jobs = WriteTempFile("wait-jobs.csv", "");
  auto r = RunMigsched({"simulate", "--expected-ends", "known", "--user-estimates", "none",
                        "--cluster", "1xA100-40GB", "--workload", trace, "--policy", "first-fit",
                        "--max-wait", "50", "--json", json, "--jobs-csv", jobs, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadJson(json)["rejected"], 1);
  EXPECT_EQ(ReadJson(json)["settings"]["max_wait_s"], 50);
  EXPECT_THAT(ReadFile(jobs),
              HasSubstr(",waited longer than --max-wait,0,10,,,\n"));  // no slowdown
}

// Regression (stress seed 18881, a run that never ended; the case copied to
// tests/data/traces/restart-move-livelock.csv with the command the stress run wrote for it): a
// `restart` job was moved by the periodic pass every 120 s, back and forth, and restarted from
// its last checkpoint each time; with checkpoints every 600 s it never got past one, so it never
// ended and the 11 jobs queued behind it never started: the simulator stepped on forever. A job
// that a move restarted now moves again only once it has checkpointed since (docs/algorithms.md
// §6). The run must end with every one of its 54 jobs accounted for.
TEST(MigrationCliTest, ARestartJobMovedAtEveryPassStillEnds) {
  const std::string json = WriteTempFile("livelock.json", "");
  auto r = RunMigsched({"simulate",
                        "--self-check",
                        "--cluster",
                        "2xGB200-186GB",
                        "--workload",
                        testing::TestDataDir() + "/traces/restart-move-livelock.csv",
                        "--policy",
                        "best-fit",
                        "--fraction-rule",
                        "memory",
                        "--reconfig-ms",
                        "23",
                        "--expected-ends",
                        "known",
                        "--user-estimates",
                        "none",
                        "--metric",
                        "fragcost",
                        "--reserve-full",
                        "1",
                        "--joint-placement",
                        "off",
                        "--frag-objective",
                        "delta",
                        "--static-layout",
                        "all-balanced",
                        "--queue-order",
                        "response-ratio",
                        "--reservation",
                        "easy",
                        "--reservation-unknown-ends",
                        "skip",
                        "--evacuation-min-wait",
                        "0",
                        "--evacuation-min-slices",
                        "2",
                        "--migration-order",
                        "before-scan",
                        "--idle-ttl",
                        "1",
                        "--migration",
                        "on",
                        "--defrag-interval",
                        "120",
                        "--max-moves-per-pass",
                        "0",
                        "--migration-gbps",
                        "30",
                        "--defrag-passes",
                        "always",
                        "--json",
                        json,
                        "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = ReadJson(json);
  EXPECT_EQ(j["jobs_total"], 54);
  EXPECT_EQ(
      j["jobs_completed"].get<int>() + j["rejected"].get<int>() + j["jobs_timeout"].get<int>(), 54);
}

TEST(MigrationCliTest, BadValuesNameTheFlag) {
  const std::string trace =
      WriteTempFile("one.csv", "id,arrival_s,profile,duration_s\na,0,1g.5gb,1\n");
  struct Case {
    std::string flag, value, error;
  } cases[] = {
      // Refused while parsing, naming the flag and what its value must be.
      {"--migration-gbps", "0", "--migration-gbps: must be a finite number > 0, got '0'"},
      {"--defrag-interval", "-1", "--defrag-interval: must be a finite number >= 0, got '-1'"},
      {"--max-moves-per-pass", "-2",
       "--max-moves-per-pass: must be an integer in 0..2147483647, got '-2'"},
      {"--migration-cooldown", "-5",
       "--migration-cooldown: must be a finite number >= 0, got '-5'"},
      {"--switch-s", "-0.5", "--switch-s: must be a finite number >= 0, got '-0.5'"},
      {"--checkpoint-interval", "0", "--checkpoint-interval: must be a finite number > 0, got '0'"},
      {"--migration-fixed-s", "-1", "--migration-fixed-s: must be a finite number >= 0, got '-1'"},
      {"--max-wait", "inf", "--max-wait: must be a finite number, got 'inf'"},
  };
  for (const Case& c : cases) {
    auto r = RunMigsched({"simulate", "--expected-ends", "known", "--user-estimates", "none",
                          "--cluster", "1xA100-40GB", "--workload", trace, "--policy", "full",
                          c.flag, c.value, "--quiet"});
    EXPECT_EQ(r.exit_code, 2) << c.flag;  // a usage error
    EXPECT_THAT(r.err, HasSubstr(c.error)) << c.flag;
  }
}

}  // namespace
}  // namespace migsched
