// End-to-end tests of `migsched serve`: the real binary with the
// fake backend on a random loopback port, real processes (sh, sleep), the
// HTTP API through httplib::Client and the client subcommands through
// RunMigsched. Every test uses its own temp state dir.
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/config.h"
#include "e2e/daemon_fixture.h"
#include "sched/option_table.h"
#include "sched/policy.h"
#include "testing/status_matchers.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::ReadFile;
using ::testing::HasSubstr;

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

TEST_F(DaemonApiTest, RunsRealCommandsWithExitCodesLogsAndPlacements) {
  StartDaemon();
  // Exit code 3 → failed with exit_code 3; stdout and stderr both in the log.
  const int64_t a = Submit(
      {{"profile", "1g.5gb"}, {"command", {"sh", "-c", "echo hello; echo oops >&2; exit 3"}}});
  // The job sees its MIG UUID and its env.
  const int64_t b = Submit({{"profile", "2g.10gb"},
                            {"env", {{"GREETING", "bonjour"}}},
                            {"command", {"sh", "-c", "echo $GREETING $CUDA_VISIBLE_DEVICES"}}});
  const int64_t c = Submit({{"profile", "3g.20gb"}, {"command", {"sleep", "30"}}});
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  ASSERT_GT(c, 0);

  const json ja = WaitTerminal(a);
  EXPECT_EQ(ja["state"], "failed");
  EXPECT_EQ(ja["exit_code"], 3);
  auto la = Api().Get(("/v1/jobs/" + std::to_string(a) + "/log").c_str());
  ASSERT_TRUE(la);
  EXPECT_NE(la->body.find("hello\n"), std::string::npos) << la->body;
  EXPECT_NE(la->body.find("oops\n"), std::string::npos) << la->body;

  const json jb = WaitTerminal(b);
  EXPECT_EQ(jb["state"], "succeeded");
  EXPECT_EQ(jb["exit_code"], 0);
  auto lb = Api().Get(("/v1/jobs/" + std::to_string(b) + "/log").c_str());
  ASSERT_TRUE(lb);
  EXPECT_EQ(lb->body.rfind("bonjour MIG-", 0), 0u) << lb->body;

  // A running job: one instance of its profile at a valid A100-40GB placement
  // (docs/mig-hardware.md: 3g.20gb has size 4 at starts 0 or 4), its MIG UUID, and
  // /v1/gpus shows that instance busy with the job.
  const json jc = WaitRunning(c);
  ASSERT_EQ(jc["instances"].size(), 1u) << jc.dump();
  const json& inst = jc["instances"][0];
  EXPECT_EQ(inst["profile"], "3g.20gb");
  EXPECT_EQ(inst["size"], 4);
  EXPECT_TRUE(inst["start"] == 0 || inst["start"] == 4) << inst.dump();
  EXPECT_TRUE(inst["gpu"] == 0 || inst["gpu"] == 1) << inst.dump();
  EXPECT_EQ(inst["mig_uuid"].get<std::string>().rfind("MIG-", 0), 0u);
  auto g = Api().Get("/v1/gpus");
  ASSERT_TRUE(g);
  bool found = false;
  const json gpus = json::parse(g->body);
  for (const json& gpu : gpus["gpus"]) {
    EXPECT_EQ(gpu["placement_units"], 8);  // A100-40GB: 8 placement units
    for (const json& i : gpu["instances"]) {
      if (i["mig_uuid"] == inst["mig_uuid"]) {
        found = true;
        EXPECT_EQ(gpu["index"], inst["gpu"]);
        EXPECT_EQ(i["busy"], true);
        EXPECT_EQ(i["job"], c);
      }
    }
  }
  EXPECT_TRUE(found) << "job instance " << inst.dump() << " not in " << g->body;

  // Cancel the running job: SIGTERM ends `sleep`; the record says cancelled.
  auto d = Api().Delete(("/v1/jobs/" + std::to_string(c)).c_str());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->status, 200) << d->body;
  const json cancelled = WaitTerminal(c);
  EXPECT_EQ(cancelled["state"], "cancelled");
  // Cancelling again: the job is terminal → 409.
  auto d2 = Api().Delete(("/v1/jobs/" + std::to_string(c)).c_str());
  ASSERT_TRUE(d2);
  EXPECT_EQ(d2->status, 409) << d2->body;

  // Metrics reflect the three jobs.
  auto m = Api().Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("migsched_jobs{state=\"failed\"} 1\n"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("migsched_jobs{state=\"succeeded\"} 1\n"), std::string::npos);
  EXPECT_NE(m->body.find("migsched_jobs{state=\"cancelled\"} 1\n"), std::string::npos);
  EXPECT_NE(m->body.find("migsched_gpu_fragcost{gpu=\"1\",UUID=\"GPU-fake-"), std::string::npos);
}

TEST_F(DaemonApiTest, RestartJobIsMigratedAndRestartedOnItsNewInstance) {
  gpus_ = "1xA100-40GB";
  // The move is begun by a completion pass with nothing waiting (§13: --defrag-passes always).
  StartDaemon("scheduler:\n  defrag-passes: always\n");
  // As in daemon_test.cc's RestartJobIsMigratedAndRestarted, through the binary: job 1 takes
  // 3g.20gb@4, job 2 (restart) 3g.20gb@0. When job 1 ends, the GPU (3/7 busy, util >= 0.4,
  // §3 busy) has FragCost 0.35 with job 2 at @0 and 0 at @4, so the completion pass (§6)
  // moves job 2 to the idle 3g@4: SIGTERM, relaunch there with MIGSCHED_RESTARTED=1.
  const int64_t first = Submit({{"profile", "3g.20gb"}, {"command", {"sleep", "1"}}});
  const int64_t moved =
      Submit({{"profile", "3g.20gb"},
              {"migratable", "restart"},
              {"command",
               {"sh", "-c",
                "echo run restarted=${MIGSCHED_RESTARTED:-0} on=$CUDA_VISIBLE_DEVICES; "
                "if [ -z \"$MIGSCHED_RESTARTED\" ]; then exec sleep 30; fi"}}});
  ASSERT_GT(first, 0);
  ASSERT_GT(moved, 0);
  const json j1 = WaitRunning(first);
  const json before = WaitRunning(moved);
  ASSERT_EQ(j1["instances"].size(), 1u);
  ASSERT_EQ(before["instances"].size(), 1u);
  EXPECT_EQ(j1["instances"][0]["start"], 4);
  EXPECT_EQ(before["instances"][0]["start"], 0);
  const json after = WaitTerminal(moved);
  EXPECT_EQ(after["state"], "succeeded") << after.dump();
  EXPECT_EQ(after["restarts"], 1);
  EXPECT_EQ(after["migrations"], 1);
  ASSERT_EQ(after["instances"].size(), 1u);
  EXPECT_EQ(after["instances"][0]["start"], 4);
  EXPECT_EQ(after["instances"][0]["mig_uuid"], j1["instances"][0]["mig_uuid"]);
  auto log = Api().Get(("/v1/jobs/" + std::to_string(moved) + "/log").c_str());
  ASSERT_TRUE(log);
  EXPECT_EQ(log->body,
            "run restarted=0 on=" + before["instances"][0]["mig_uuid"].get<std::string>() +
                "\nrun restarted=1 on=" + j1["instances"][0]["mig_uuid"].get<std::string>() + "\n");
  auto m = Api().Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("migsched_migrations_total{kind=\"intra\"} 1\n"), std::string::npos)
      << m->body;
  // Regression: a move left no line in the daemon's log, so an operator could not tell why a
  // job had restarted. From 3g@0 to 3g@4 on GPU 0 (above), and what it cost the job.
  const std::string daemon_log = ReadFile(dir_ / "daemon.log");
  EXPECT_NE(daemon_log.find("job " + std::to_string(moved) +
                            ": moving from GPU 0 start 0 to GPU 0 start 4: stopped and started "
                            "again there (its work so far is lost)"),
            std::string::npos)
      << daemon_log;
}

TEST_F(DaemonApiTest, FollowedLogStreamsUntilTheJobEnds) {
  StartDaemon();
  const int64_t id =
      Submit({{"profile", "1g.5gb"}, {"command", {"sh", "-c", "echo one; sleep 0.5; echo two"}}});
  ASSERT_GT(id, 0);
  auto r = Api().Get(("/v1/jobs/" + std::to_string(id) + "/log?follow=1").c_str());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "one\ntwo\n");  // the stream ended by itself once the job was terminal
  EXPECT_EQ(Job(id)["state"], "succeeded");
}

TEST_F(DaemonApiTest, RefusesMissingAndWrongTokensAndLogsThem) {
  StartDaemon();
  auto h = Api("").Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  struct Case {
    std::string token;
    std::string message;
  } cases[] = {
      {"", "missing bearer token (Authorization: Bearer <token>)"},
      {"not-the-token", "wrong bearer token"},
  };
  for (const Case& k : cases) {
    auto r = Api(k.token).Post("/v1/jobs", R"({"profile": "1g.5gb", "command": ["true"]})",
                               "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401);
    EXPECT_EQ(json::parse(r->body)["error"]["message"], k.message);
  }
  auto list = Api().Get("/v1/jobs");
  ASSERT_TRUE(list);
  EXPECT_TRUE(json::parse(list->body)["jobs"].empty());  // nothing was submitted
  const std::string log = ReadFile(dir_ / "daemon.log");
  EXPECT_NE(log.find("refused POST /v1/jobs from 127.0.0.1:"), std::string::npos) << log;
  EXPECT_EQ(log.find(Token()), std::string::npos) << "the token must never be logged";
  EXPECT_EQ(log.find("not-the-token"), std::string::npos);
}

TEST_F(DaemonApiTest, SigtermStopsGracefully) {
  StartDaemon();
  const int status = daemon_->Kill(SIGTERM);
  ASSERT_TRUE(WIFEXITED(status)) << "signalled: " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_NE(ReadFile(dir_ / "daemon.log").find("stopping"), std::string::npos);
  daemon_.reset();
}

// Regression: SIGHUP (the ssh session that ran `migsched serve` closed) ended the daemon at once,
// with nothing logged and no orderly stop. It now runs on and says so; SIGTERM still stops it.
TEST_F(DaemonApiTest, SighupIsLoggedAndTheDaemonRunsOn) {
  StartDaemon();
  ASSERT_EQ(::kill(daemon_->pid(), SIGHUP), 0);
  std::string log;
  for (int i = 0; i < 100 && log.find("SIGHUP: running on") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    log = ReadFile(dir_ / "daemon.log");
  }
  EXPECT_NE(log.find("SIGHUP: running on"), std::string::npos) << log;
  auto h = Api("").Get("/healthz");
  ASSERT_TRUE(h) << "the daemon no longer answers after SIGHUP";
  EXPECT_EQ(h->status, 200);
  const int status = daemon_->Kill(SIGTERM);
  ASSERT_TRUE(WIFEXITED(status)) << "signalled: " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  daemon_.reset();
}

TEST_F(DaemonApiTest, MalformedRequestsGet400Or413WithClearMessages) {
  StartDaemon();
  struct Case {
    std::string body;
    int status;
    std::string message;  // the message contains this
  } cases[] = {
      {"{\"profile\": ", 400, "request body is not valid JSON: parse error at line 1, column 13"},
      {R"({"profile": "9g.99gb", "command": ["true"]})", 400, "9g.99gb"},
      {R"({"profile": "1g.5gb", "command": "true"})", 400,
       "field 'command' must be an array of strings, got string"},
      {R"({"profile": "1g.5gb", "command": ["true"], "count": "2"})", 400,
       "field 'count' must be an integer, got string"},
      {R"({"profile": "1g.5gb", "command": ["true"], "gpu": 1})", 400, "unknown field 'gpu'"},
      {"{\"profile\": \"1g.5gb\", \"command\": [\"" + std::string(5000, 'x') + "\"]}", 413,
       "request body larger than max_body_bytes (4096 bytes)"},
  };
  for (const Case& k : cases) {
    auto r = Api().Post("/v1/jobs", k.body, "application/json");
    ASSERT_TRUE(r) << k.body.substr(0, 60);
    EXPECT_EQ(r->status, k.status) << k.body.substr(0, 60) << " → " << r->body;
    const json e = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(e.is_object()) << r->body;
    EXPECT_NE(e["error"]["message"].get<std::string>().find(k.message), std::string::npos)
        << r->body;
  }
  auto nf = Api().Get("/v1/jobs/424242");
  ASSERT_TRUE(nf);
  EXPECT_EQ(nf->status, 404);
  auto list = Api().Get("/v1/jobs");
  ASSERT_TRUE(list);
  EXPECT_TRUE(json::parse(list->body)["jobs"].empty());  // no bad request was stored
}

TEST_F(DaemonApiTest, KillNineLosesNoAcceptedJob) {
  StartDaemon();
  // Two GPUs: two 7g.40gb jobs run (one per GPU), the others queue behind them.
  std::vector<int64_t> ids;
  for (int i = 0; i < 2; ++i) {
    ids.push_back(Submit({{"profile", "7g.40gb"}, {"command", {"sleep", "1.5"}}}));
  }
  for (int i = 0; i < 3; ++i) {
    ids.push_back(Submit({{"profile", "7g.40gb"}, {"command", {"sh", "-c", "echo done"}}}));
  }
  for (int64_t id : ids) ASSERT_GT(id, 0);
  WaitRunning(ids[0]);
  WaitRunning(ids[1]);
  EXPECT_EQ(Job(ids[2])["state"], "queued");
  daemon_->Kill(SIGKILL);

  StartDaemon();  // same config, same state dir
  auto r = Api().Get("/v1/jobs");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::multiset<int64_t> seen;
  const json listed = json::parse(r->body);
  for (const json& j : listed["jobs"]) seen.insert(j["id"].get<int64_t>());
  EXPECT_EQ(seen, std::multiset<int64_t>(ids.begin(), ids.end()));  // all there, once each
  // The running ones were re-adopted and finish; the queued ones then run.
  for (int64_t id : ids) {
    const json j = WaitTerminal(id);
    EXPECT_EQ(j["state"], "succeeded") << j.dump();
  }
}

// Regression (second_daemon_cannot_share_the_port): httplib's default socket
// options set SO_REUSEPORT, so a second daemon bound the same port and took
// part of the requests. It must be refused and exit 1 (timeout: 124 if it
// wrongly keeps running).
TEST_F(DaemonApiTest, SecondDaemonOnTheSamePortIsRefused) {
  StartDaemon();
  const fs::path cfg2 = dir_ / "second.yaml";
  std::ofstream(cfg2) << "listen: \"127.0.0.1:" << daemon_->port() << "\"\n"
                      << "state_dir: " << (dir_ / "state2").string() << "\n"
                      << "backend: fake\ngpus: 1xA100-40GB\n";
  const fs::path err = dir_ / "second.err";
  const std::string cmd = "timeout 20 " + testing::MigschedBinary() + " serve --config " +
                          cfg2.string() + " > /dev/null 2> " + err.string();
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1) << ReadFile(err);
  EXPECT_THAT(ReadFile(err), ::testing::HasSubstr("cannot listen on 127.0.0.1:" +
                                                  std::to_string(daemon_->port())));
  // The first daemon still answers every request.
  for (int i = 0; i < 4; ++i) {
    auto r = Api().Get("/v1/jobs");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
}

// Usage errors exit 2 (docs/api.md), whatever CLI11's own code for them.
TEST(ClientCommandTest, UsageErrorsExitWithTwo) {
  EXPECT_EQ(testing::RunMigsched({"cancel"}).exit_code, 2);
  EXPECT_EQ(testing::RunMigsched({"logs", "abc"}).exit_code, 2);
  EXPECT_EQ(testing::RunMigsched({"submit", "--profile", "1g.5gb"}).exit_code, 2);
  EXPECT_EQ(testing::RunMigsched({"simulate", "--no-such-flag"}).exit_code, 2);
  EXPECT_EQ(testing::RunMigsched({"cancel", "--help"}).exit_code, 0);
}

TEST_F(DaemonApiTest, ClientCommands) {
  StartDaemon();
  const std::string server = "http://127.0.0.1:" + std::to_string(daemon_->port());
  const std::vector<std::string> common = {"--server", server, "--token-file",
                                           token_file_.string()};
  auto with = [&common](std::vector<std::string> args) {
    args.insert(args.begin() + 1, common.begin(), common.end());
    return args;
  };
  auto sub = testing::RunMigsched(
      with({"submit", "--profile", "1g.5gb", "--env", "X=42", "--", "sh", "-c", "echo x=$X"}));
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const int64_t id = std::stoll(sub.out);
  EXPECT_EQ(sub.out, std::to_string(id) + "\n");  // only the id
  WaitTerminal(id);

  auto jobs = testing::RunMigsched(with({"jobs", "--json"}));
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  const json list = json::parse(jobs.out)["jobs"];
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["id"], id);
  EXPECT_EQ(list[0]["state"], "succeeded");
  EXPECT_EQ(list[0]["request"]["env"]["X"], "42");

  // drain / undrain / pause / resume, read back through the API.
  auto drain = testing::RunMigsched(with({"drain", "1"}));
  ASSERT_EQ(drain.exit_code, 0) << drain.err;
  EXPECT_EQ(drain.out, "GPU 1: draining\n");
  EXPECT_EQ(Api().Get("/v1/gpus")->body.find("\"draining\":true") != std::string::npos, true);
  auto undrain = testing::RunMigsched(with({"undrain", "1"}));
  ASSERT_EQ(undrain.exit_code, 0) << undrain.err;
  EXPECT_EQ(undrain.out, "GPU 1: not draining\n");
  EXPECT_EQ(Api().Get("/v1/gpus")->body.find("\"draining\":true"), std::string::npos);
  auto bad_gpu = testing::RunMigsched(with({"drain", "9"}));
  EXPECT_EQ(bad_gpu.exit_code, 1);
  // Regression: a GPU that is not a whole number got CLI11's range message, with a bound of 300
  // digits; it is bad usage (exit 2) told in the words of the other integer flags.
  for (const std::string gpu : {"abc", "-1", "1.5"}) {
    auto not_a_gpu = testing::RunMigsched(with({"drain", gpu}));
    EXPECT_EQ(not_a_gpu.exit_code, 2) << gpu;
    EXPECT_THAT(not_a_gpu.err, ::testing::HasSubstr(
                                   "gpu: must be an integer in 0..2147483647, got '" + gpu + "'"));
    EXPECT_LT(not_a_gpu.err.size(), 200u) << not_a_gpu.err;
  }
  auto pause = testing::RunMigsched(with({"pause"}));
  ASSERT_EQ(pause.exit_code, 0) << pause.err;
  EXPECT_EQ(pause.out, "scheduler paused\n");
  auto resume = testing::RunMigsched(with({"resume"}));
  ASSERT_EQ(resume.exit_code, 0) << resume.err;
  EXPECT_EQ(resume.out, "scheduler running\n");

  auto table = testing::RunMigsched(with({"jobs"}));
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("succeeded"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("sh -c echo x=$X"), std::string::npos) << table.out;

  auto logs = testing::RunMigsched(with({"logs", std::to_string(id)}));
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, "x=42\n");

  // Cancel a terminal job: the server's message, exit 1.
  auto cancel = testing::RunMigsched(with({"cancel", std::to_string(id)}));
  EXPECT_EQ(cancel.exit_code, 1);
  EXPECT_EQ(cancel.err.rfind("error: ", 0), 0u) << cancel.err;
  auto missing = testing::RunMigsched(with({"cancel", "999"}));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "error: no job 999\n");

  // A long job, then cancel it through the CLI.
  auto sleeper =
      testing::RunMigsched(with({"submit", "--profile", "2g.10gb", "--", "sleep", "30"}));
  ASSERT_EQ(sleeper.exit_code, 0) << sleeper.err;
  const int64_t sid = std::stoll(sleeper.out);
  WaitRunning(sid);
  auto gpus = testing::RunMigsched(with({"gpus"}));
  ASSERT_EQ(gpus.exit_code, 0) << gpus.err;
  EXPECT_NE(gpus.out.find("GPU 0"), std::string::npos) << gpus.out;
  EXPECT_NE(gpus.out.find("GPU 1"), std::string::npos) << gpus.out;
  // Submitted without --migratable (default none): it can never leave its GPU (§4 step 2).
  EXPECT_NE(gpus.out.find("busy, job " + std::to_string(sid) + ", cannot leave"), std::string::npos)
      << gpus.out;
  EXPECT_NE(gpus.out.find("  ANCHORED\n"), std::string::npos) << gpus.out;
  auto c2 = testing::RunMigsched(with({"cancel", std::to_string(sid)}));
  EXPECT_EQ(c2.exit_code, 0) << c2.err;
  EXPECT_EQ(WaitTerminal(sid)["state"], "cancelled");

  // Bad usage and bad requests are refused before or by the server.
  auto bad = testing::RunMigsched(with({"submit", "--profile", "9g.99gb", "--", "true"}));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("9g.99gb"), std::string::npos) << bad.err;
  auto wrong = testing::RunMigsched({"jobs", "--server", server, "--token-file",
                                     WriteSecret("t", "nope-nope-nope-nope-nope-nope-nope\n")});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_EQ(wrong.err, "error: wrong bearer token\n");
  auto down = testing::RunMigsched(
      {"jobs", "--server", "http://127.0.0.1:1", "--token-file", token_file_.string()});
  EXPECT_EQ(down.exit_code, 1);
  // Regression (unreachable_daemon_message_says_why): httplib's one-word "Connection".
  EXPECT_EQ(down.err,
            "error: cannot reach the daemon at http://127.0.0.1:1: connection refused or timed "
            "out (is `migsched serve` running there?)\n");
}

}  // namespace
}  // namespace migsched

namespace migsched {
namespace {

TEST(ServeCommandTest, PrintsADefaultConfigThatParses) {
  auto r = testing::RunMigsched({"serve", "--print-default-config"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto c = ParseDaemonConfig(r.out, "printed");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->listen, "127.0.0.1:7070");
}

// Regression (ServeFlagsThatWouldBeIgnored): `serve --config F --policy lb` started the config's
// policy without a word, and `--print-default-config --config F` ignored F; both are refused
// before anything starts (exit 2, a usage error).
TEST(ServeCommandTest, FlagsThatWouldBeIgnoredAreRefused) {
  const std::string cfg = testing::WriteTempFile("serve-ignored.yaml", "listen: 127.0.0.1:0\n");
  auto policy = testing::RunMigsched({"serve", "--config", cfg, "--policy", "lb"});
  EXPECT_EQ(policy.exit_code, 2);
  EXPECT_THAT(policy.err, HasSubstr("--policy requires --print-default-config"));
  auto both = testing::RunMigsched({"serve", "--print-default-config", "--config", cfg});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.err, HasSubstr("--config excludes --print-default-config"));
}

// Regression (full_is_not_full_in_the_daemon): the printed config showed
// fragcost for `full` while the simulator ran it with its demand-weighted
// metric. Each policy's printed config parses to the options the simulator
// runs it with (the registry's), and the comment lists each policy's own.
// By hand (docs/algorithms.md §11, sched/full_policy.h): `full` scores by
// demand-weighted with joint placement, evacuates for any waiting job and
// reserves for a job waiting longer than 1800 s with slack 1, only where the
// reservation's start is known and at most 2 h away (§13, results.md section 3 and "The
// reservation horizon"; the table's order: metric, joint-placement, max-skip-seconds,
// reservation-slack, reservation-horizon,
// reservation-unknown-ends, evacuation, evacuation-keeps-room, migration, defrag-passes), keeps
// room for small jobs when it evacuates, and runs the §6 planner
// (migration on, what sets it apart from lb+frag on the ladder) for waiting jobs only (no
// completion or periodic pass, §13); `lb+frag` by fragcost with joint placement;
// `first-fit` by fragcost without; neither migrates.
TEST(ServeCommandTest, PrintedDefaultsAreEachPolicysOwn) {
  auto full = testing::RunMigsched({"serve", "--print-default-config"});
  ASSERT_EQ(full.exit_code, 0) << full.err;
  EXPECT_THAT(full.out, HasSubstr("\n  policy: full\n"));
  EXPECT_THAT(full.out, HasSubstr("\n  metric: demand-weighted\n"));
  EXPECT_THAT(full.out, HasSubstr("\n  threshold: 1\n"));  // no lazy/busy split
  // Each policy's options that differ from the plain defaults (sched/options.h).
  EXPECT_THAT(
      full.out,
      HasSubstr("#   full                 threshold: 1, metric: demand-weighted, reuse-first: on, "
                "anchored-together: on, "
                "joint-placement: on, queue-order: response-ratio, limit-power: learned, "
                "max-skip-seconds: 1800, "
                "reservation-slack: 1, reservation-horizon: 1800, reservation-keep: on, "
                "reservation-oldest: on, reservation-unknown-ends: skip, evacuation: queue, "
                "evacuation-keeps-room: on, migration: on, defrag-passes: off\n"));
  EXPECT_THAT(full.out, HasSubstr("#   first-fit            none\n"));
  struct Expected {
    std::string policy, metric;
    bool joint, reuse_first, migration;
  };
  for (const Expected& e : std::vector<Expected>{{"full", "demand-weighted", true, true, true},
                                                 {"lb+frag", "fragcost", true, false, false},
                                                 {"frag-aware", "fragcost", true, false, false},
                                                 {"first-fit", "fragcost", false, false, false}}) {
    SCOPED_TRACE(e.policy);
    auto r = testing::RunMigsched({"serve", "--print-default-config", "--policy", e.policy});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    StatusOr<DaemonConfig> c = ParseDaemonConfig(r.out, "printed");
    ASSERT_OK(c);
    EXPECT_EQ(c->policy, e.policy);
    EXPECT_EQ(c->scheduler.metric, e.metric);
    EXPECT_EQ(c->scheduler.joint_placement, e.joint);
    EXPECT_EQ(c->scheduler.reuse_first, e.reuse_first);
    EXPECT_EQ(c->scheduler.migration.enabled, e.migration);
  }
  // Every registered policy: the options the simulator runs it with.
  for (const std::string& name : PolicyNames()) {
    SCOPED_TRACE(name);
    auto r = testing::RunMigsched({"serve", "--print-default-config", "--policy", name});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    StatusOr<DaemonConfig> c = ParseDaemonConfig(r.out, "printed");
    ASSERT_OK(c);
    SchedulerOptions sim = OptionsForPolicy(name, SchedulerOptions{}, ExplicitOptions{});
    // `static`'s best-for-mix needs the workload's mix in advance, which a daemon never has: the
    // printed config gives the catalog layout all-balanced (it started no daemon before).
    if (sim.static_layout == "best-for-mix") sim.static_layout = "all-balanced";
    // Every option of the table (evacuation, reservation, migration order, ... included), each
    // printed and parsed back.
    for (const SchedulerOptionSpec& s : SchedulerOptionTable()) {
      EXPECT_THAT(r.out, HasSubstr("\n  " + s.name + ": " + s.get(sim) + "\n")) << s.name;
      EXPECT_EQ(s.get(c->scheduler), s.get(sim)) << s.name;
    }
  }
  auto bad = testing::RunMigsched({"serve", "--print-default-config", "--policy", "nope"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("unknown policy 'nope' (known: first-fit, lb, lb+frag, full"));
}

TEST(ServeCommandTest, BadConfigIsRefusedNamingTheKey) {
  const std::string path = testing::WriteTempFile("bad.yaml", "state_dir: /tmp/x\nlisen: 1\n");
  auto r = testing::RunMigsched({"serve", "--config", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("error: " + path + ":2: unknown key 'lisen' (known: ", 0), 0u) << r.err;
  auto none = testing::RunMigsched({"serve"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.err, "error: serve needs --config FILE.yaml (or --print-default-config)\n");
}

// Regression (refused_config_left_a_state_dir): a config refused after the state dir was made (an
// unknown GPU model, an address already taken) left the new folder behind with a token and a
// store. A refused start now removes a state dir it created, and leaves one that was there.
TEST(ServeCommandTest, ARefusedStartLeavesNoStateDirItMade) {
  const std::filesystem::path root = testing::MakeTempDir("serve-refused");
  auto config = [&](const std::string& dir, const std::string& gpus, int port) {
    return testing::WriteTempFile(
        "refused.yaml", fmt::format("state_dir: {}\nlisten: \"127.0.0.1:{}\"\nbackend: fake\n"
                                    "gpus: \"{}\"\n",
                                    (root / dir).string(), port, gpus));
  };
  const std::string bad_config = config("a", "4xFOO", 0);
  auto bad_model = testing::RunMigsched({"serve", "--config", bad_config});
  EXPECT_EQ(bad_model.exit_code, 1);
  EXPECT_THAT(bad_model.err, HasSubstr("unknown GPU model 'FOO'"));
  // Regression (trial_start_errors_without_line): the file and the line of `gpus` come first.
  EXPECT_THAT(bad_model.err,
              HasSubstr("\nerror: " + bad_config + ":4: config key gpus (fake backend): "));
  EXPECT_FALSE(std::filesystem::exists(root / "a"));
  EXPECT_FALSE(std::filesystem::exists(root / "a-work"));
  // An address another socket holds: refused once the daemon is made, its store included.
  const int held = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(held, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(held, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(held, 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(held, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);
  auto taken = testing::RunMigsched({"serve", "--config", config("b", "1xA100-40GB", port)});
  EXPECT_EQ(taken.exit_code, 1);
  EXPECT_FALSE(std::filesystem::exists(root / "b")) << taken.err;
  // Nor the work_dir the daemon claimed at its start (<state_dir>-work).
  EXPECT_FALSE(std::filesystem::exists(root / "b-work")) << taken.err;
  // A state dir that was there stays, with what it held.
  std::filesystem::create_directory(root / "c");
  std::filesystem::permissions(root / "c", std::filesystem::perms::owner_all);
  std::ofstream(root / "c" / "kept") << "x";
  auto existing = testing::RunMigsched({"serve", "--config", config("c", "4xFOO", 0)});
  EXPECT_EQ(existing.exit_code, 1);
  EXPECT_TRUE(std::filesystem::exists(root / "c" / "kept"));
  ::close(held);
}

}  // namespace
}  // namespace migsched
