#include "slurm/controller.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "cluster/testing/fake_node_daemons.h"
#include "cluster/testing/nodes.h"
#include "testing/test_util.h"

namespace migsched::slurm {
namespace {

using migsched::testing::BundledCatalog;
using migsched::testing::FakeNodeDaemons;
using migsched::testing::MakeNode;
using migsched::testing::ReadFile;
using migsched::testing::TestDataDir;

// A few minutes after the capture (2026-12-01T09:10:00Z): every job's begin time has passed.
constexpr double kNow = 1796116200;

std::string Data(const std::string& name) { return ReadFile(TestDataDir() + "/slurm/" + name); }

// Answers the reads of one tick with outputs captured from Slurm 22.05
// (tests/data/slurm/README.md) and `scontrol -o show job N` from `jobs`;
// records every command (updates answer OK).
class CapturedSlurm : public CommandRunner {
 public:
  std::map<std::string, std::string> jobs;  // id -> `scontrol -o show job` line
  std::vector<std::string> commands;

  StatusOr<CommandResult> Run(const std::vector<std::string>& argv, double) override {
    commands.push_back(CommandLine(argv));
    if (argv == std::vector<std::string>{"squeue", "--json"}) return Ok(Data("squeue.json"));
    if (argv == std::vector<std::string>{"sinfo", "--json"}) return Ok(Data("sinfo.json"));
    if (argv.size() == 5 && argv[0] == "scontrol" && argv[3] == "partition") {
      return Ok(Data("partition-up.txt"));
    }
    if (argv.size() == 5 && argv[0] == "scontrol" && argv[3] == "job") {
      auto it = jobs.find(argv[4]);
      if (it == jobs.end()) return CommandResult{1, "", "slurm_load_jobs error: Invalid job id"};
      return Ok(it->second);
    }
    return Ok("");
  }
  bool WroteCommentOf(int64_t id) const {
    const std::string want = "scontrol update JobId=" + std::to_string(id) + " 'AdminComment=";
    return std::any_of(commands.begin(), commands.end(),
                       [&](const std::string& c) { return c.rfind(want, 0) == 0; });
  }

 private:
  static CommandResult Ok(std::string out) { return CommandResult{0, std::move(out), ""}; }
};

// Job 5 of the capture (2g.10gb, --exclude=n1, PENDING) as `scontrol show
// job` would show it now, in `state`.
std::string Job5(const std::string& state) {
  std::string rec = Data("scontrol-job-8.txt");  // a pending 1g.5gb job of the same capture
  rec.replace(rec.find("JobId=8 "), 8, "JobId=5 ");
  rec.replace(rec.find("JobState=PENDING"), 16, "JobState=" + state);
  return rec;
}

ControllerConfig Config() {
  auto c = ParseControllerConfig(
      "nodes:\n  - {name: n1, url: \"http://a\", token: t}\n  - {name: n2, url: \"http://b\", "
      "token: t}\n  - {name: n3, url: \"http://c\", token: t}\ncontroller:\n  reclaim_grace_s: "
      "1000\nmigration:\n  enabled: false\n",
      "test.yaml");
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return *c;
}

// Every GPU of the three nodes busy with a 7g.40gb of the daemons' own jobs:
// no waiting job of the capture has room, each is told why.
FakeNodeDaemons FullNodes() {
  FakeNodeDaemons nodes;
  for (const std::string n : {"n1", "n2", "n3"}) {
    nodes.states[n] = MakeNode(n, 2, "A100 40GB", {"0:7g.40gb@0=job:1", "1:7g.40gb@0=job:2"});
  }
  return nodes;
}

TEST(ControllerTest, AWaitingJobIsToldWhyItWaits) {
  CapturedSlurm runner;
  runner.jobs["5"] = Job5("PENDING");
  SlurmClient slurm(&runner, 5);
  FakeNodeDaemons nodes = FullNodes();
  auto c = SlurmController::Create(Config(), &slurm, &nodes, &BundledCatalog());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE((*c)->Tick(kNow).ok());
  EXPECT_TRUE(runner.WroteCommentOf(5)) << ::testing::PrintToString(runner.commands);
}

// Regression: a job read as PENDING that Slurm started before the reason was
// written had its prolog's binding ("migsched: bound ...") overwritten by the
// waiting reason; its task prolog then found no instance and the job failed.
// The controller now reads the job again just before writing, and leaves a
// started or bound job alone, as it does a job whose allocation it has seen.
TEST(ControllerTest, AReasonNeverOverwritesTheBindingOfAJobSlurmJustStarted) {
  for (const std::string state : {"CONFIGURING", "RUNNING"}) {
    CapturedSlurm runner;
    runner.jobs["5"] = Job5(state);
    SlurmClient slurm(&runner, 5);
    FakeNodeDaemons nodes = FullNodes();
    auto c = SlurmController::Create(Config(), &slurm, &nodes, &BundledCatalog());
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->Tick(kNow).ok());
    EXPECT_FALSE(runner.WroteCommentOf(5)) << state;
  }
  {
    // Still PENDING to Slurm, but its prolog has written the binding.
    CapturedSlurm runner;
    std::string rec = Job5("PENDING");
    rec.replace(rec.find(" StdErr="), 0, " AdminComment=migsched: bound n2=MIG-x|0|2g.10gb|4");
    runner.jobs["5"] = rec;
    SlurmClient slurm(&runner, 5);
    FakeNodeDaemons nodes = FullNodes();
    auto c = SlurmController::Create(Config(), &slurm, &nodes, &BundledCatalog());
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->Tick(kNow).ok());
    EXPECT_FALSE(runner.WroteCommentOf(5));
  }
  {
    // Its allocation is on n2's daemon already (the daemons are read after Slurm).
    CapturedSlurm runner;
    runner.jobs["5"] = Job5("PENDING");
    SlurmClient slurm(&runner, 5);
    FakeNodeDaemons nodes = FullNodes();
    nodes.states["n2"] =
        MakeNode("n2", 2, "A100 40GB", {"0:2g.10gb@4=alloc:slurm:5", "1:7g.40gb@0=job:2"});
    auto c = SlurmController::Create(Config(), &slurm, &nodes, &BundledCatalog());
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->Tick(kNow).ok());
    EXPECT_FALSE(runner.WroteCommentOf(5));
  }
}

}  // namespace
}  // namespace migsched::slurm
