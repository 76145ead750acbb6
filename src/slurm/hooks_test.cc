#include "slurm/hooks.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "cluster/testing/fake_node_daemons.h"
#include "cluster/testing/nodes.h"
#include "slurm/admin_comment.h"
#include "testing/test_util.h"

namespace migsched::slurm {
namespace {

using migsched::testing::FakeNodeDaemons;
using migsched::testing::MakeNode;
using migsched::testing::ReadFile;
using migsched::testing::TestDataDir;

// Answers `scontrol -o show job N` with a record captured from Slurm 22.05
// (tests/data/slurm/), and records every command (updates answer OK).
class ReplayRunner : public CommandRunner {
 public:
  std::map<std::string, std::string> records;  // job id -> `scontrol -o show job` line
  std::vector<std::string> commands;

  StatusOr<CommandResult> Run(const std::vector<std::string>& argv, double) override {
    commands.push_back(CommandLine(argv));
    if (argv.size() == 5 && argv[0] == "scontrol" && argv[3] == "job") {
      auto it = records.find(argv[4]);
      if (it == records.end()) return CommandResult{1, "", "slurm_load_jobs error: Invalid job id"};
      return CommandResult{0, it->second, ""};
    }
    return CommandResult{0, "", ""};
  }
};

Env MakeEnv(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) {
    auto it = vars.find(k);
    return it == vars.end() ? std::string() : it->second;
  };
}

ControllerConfig HooksConfig() {
  auto c = ParseControllerConfig(
      "nodes:\n  - {name: n1, url: \"http://a\", token: t}\n  - {name: n2, url: \"http://b\", "
      "token: t}\n  - {name: n3, url: \"http://c\", token: t}\n",
      "test.yaml");
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return *c;
}

// scontrol-job-1-bound.txt: job 1 (1g.5gb x2 on n1) with the AdminComment
// "migsched: bound n1=MIG-1111|0|1g.5gb|0,MIG-2222|0|1g.5gb|1".
TEST(TaskPrologTest, ExportsTheBoundInstancesOfThisNode) {
  ReplayRunner runner;
  runner.records["1"] = testing::ReadTestData("slurm/scontrol-job-1-bound.txt");
  SlurmClient slurm(&runner, 5);
  std::ostringstream out, err;
  const int rc = RunTaskProlog(
      "mig", &slurm, MakeEnv({{"SLURM_JOB_ID", "1"}, {"SLURMD_NODENAME", "n1"}}), out, err);
  EXPECT_EQ(rc, 0) << err.str();
  EXPECT_EQ(out.str(),
            "export CUDA_VISIBLE_DEVICES=MIG-1111,MIG-2222\n"
            "export MIGSCHED_NODE=n1\n"
            "export MIGSCHED_MIG_UUIDS=MIG-1111,MIG-2222\n"
            "export MIGSCHED_PROFILES=1g.5gb,1g.5gb\n"
            "export MIGSCHED_PLACEMENTS=0:1g.5gb@0,0:1g.5gb@1\n");
  // On another node nothing is bound: the task must not start without its GPU.
  std::ostringstream out2, err2;
  EXPECT_EQ(RunTaskProlog("mig", &slurm,
                          MakeEnv({{"SLURM_JOB_ID", "1"}, {"SLURMD_NODENAME", "n2"}}), out2, err2),
            1);
  EXPECT_EQ(out2.str(), "");
  EXPECT_NE(err2.str().find("none is bound on n2"), std::string::npos) << err2.str();
  // Not run by Slurm.
  std::ostringstream out3, err3;
  EXPECT_EQ(RunTaskProlog("mig", &slurm, MakeEnv({}), out3, err3), 2);
}

// Regression (trial_prolog_said_unset_for_a_bad_id): SLURM_JOB_ID=abc (or -1) was reported
// "not set". Unset, it says so; set to what is no job id, it quotes it. Nothing is asked of
// Slurm or the node daemons either way.
TEST(PrologTest, ABadJobIdIsNotCalledUnset) {
  ReplayRunner runner;
  SlurmClient slurm(&runner, 5);
  FakeNodeDaemons nodes;
  std::ostringstream unset, bad, epilog;
  EXPECT_EQ(RunProlog(HooksConfig(), &slurm, &nodes, MakeEnv({}), unset), 2);
  EXPECT_EQ(unset.str(),
            "migsched slurm prolog: SLURM_JOB_ID is not set: run it as Slurm's PrologSlurmctld\n");
  EXPECT_EQ(RunProlog(HooksConfig(), &slurm, &nodes, MakeEnv({{"SLURM_JOB_ID", "abc"}}), bad), 2);
  EXPECT_EQ(bad.str(),
            "migsched slurm prolog: SLURM_JOB_ID 'abc' is not a job id (a whole number from 1 to "
            "9223372036854775807): run it as Slurm's PrologSlurmctld\n");
  EXPECT_EQ(RunEpilog(HooksConfig(), &slurm, &nodes, MakeEnv({{"SLURM_JOB_ID", "-1"}}), epilog), 2);
  EXPECT_EQ(epilog.str(),
            "migsched slurm epilog: SLURM_JOB_ID '-1' is not a job id (a whole number from 1 to "
            "9223372036854775807): run it as Slurm's EpilogSlurmctld\n");
  EXPECT_TRUE(runner.commands.empty());
  EXPECT_TRUE(nodes.calls.empty());
}

// scontrol-job-3.txt: job 3, -N2 --gres=mig:7g.40gb:1 on n[1,3].
TEST(PrologTest, BindsEveryNodeAndRecordsTheBinding) {
  ReplayRunner runner;
  runner.records["3"] = testing::ReadTestData("slurm/scontrol-job-3.txt");
  SlurmClient slurm(&runner, 5);
  FakeNodeDaemons nodes;
  std::ostringstream err;
  const int rc =
      RunProlog(HooksConfig(), &slurm, &nodes,
                MakeEnv({{"SLURM_JOB_ID", "3"}, {"SLURM_JOB_COMMENT", "migratable=yes"}}), err);
  EXPECT_EQ(rc, 0) << err.str();
  EXPECT_EQ(nodes.calls,
            (std::vector<std::string>{"allocate n1 slurm:3 prefix=slurm-room: anchors",
                                      "allocate n3 slurm:3 prefix=slurm-room: anchors"}));
  ASSERT_EQ(runner.commands.size(), 2u);
  EXPECT_EQ(runner.commands[1],
            "scontrol update JobId=3 'AdminComment=migsched: bound n1=MIG-n1-10|0|7g.40gb|0 "
            "n3=MIG-n3-20|0|7g.40gb|0 ; --comment: 'migratable=yes': expected migratable=restart "
            "or migratable=none; the job will not be moved'");
}

// Regression (array_task_bound_to_another_tasks_instance): a task of a job array was addressed
// by its job id, which for one task is also the array's id and so names every task: `scontrol
// update JobId=48` wrote that task's binding into all of them, and the others' steps ran on its
// instance. The task is now addressed as ARRAYID_TASKID for the show, the binding and a hold.
TEST(PrologTest, AnArrayTaskIsAddressedAsArrayIdUnderscoreTaskId) {
  const Env task =
      MakeEnv({{"SLURM_JOB_ID", "48"}, {"SLURM_ARRAY_JOB_ID", "48"}, {"SLURM_ARRAY_TASK_ID", "2"}});
  EXPECT_EQ(JobSpecFromEnv(task), "48_2");
  EXPECT_EQ(JobSpecFromEnv(MakeEnv({{"SLURM_JOB_ID", "3"}})), "3");
  EXPECT_EQ(
      JobSpecFromEnv(MakeEnv(
          {{"SLURM_JOB_ID", "50"}, {"SLURM_ARRAY_JOB_ID", "48"}, {"SLURM_ARRAY_TASK_ID", "0"}})),
      "48_0");
  EXPECT_EQ(JobSpecFromEnv(MakeEnv({{"SLURM_JOB_ID", "x"}})), "");

  ReplayRunner runner;  // knows only "48_2": a show of "48" fails
  runner.records["48_2"] = testing::ReadTestData("slurm/scontrol-job-3.txt");
  SlurmClient slurm(&runner, 5);
  FakeNodeDaemons nodes;
  std::ostringstream err;
  EXPECT_EQ(RunProlog(HooksConfig(), &slurm, &nodes, task, err), 0) << err.str();
  ASSERT_EQ(runner.commands.size(), 2u);
  EXPECT_EQ(runner.commands[0], "scontrol -o show job 48_2");
  EXPECT_EQ(runner.commands[1].rfind("scontrol update JobId=48_2 ", 0), 0u) << runner.commands[1];
  EXPECT_EQ(nodes.calls,
            (std::vector<std::string>{"allocate n1 slurm:48 prefix=slurm-room: anchors",
                                      "allocate n3 slurm:48 prefix=slurm-room: anchors"}));

  ReplayRunner bound;
  bound.records["48_2"] = testing::ReadTestData("slurm/scontrol-job-1-bound.txt");
  SlurmClient bound_slurm(&bound, 5);
  std::ostringstream out, err2;
  const Env on_n1 = MakeEnv({{"SLURM_JOB_ID", "48"},
                             {"SLURM_ARRAY_JOB_ID", "48"},
                             {"SLURM_ARRAY_TASK_ID", "2"},
                             {"SLURMD_NODENAME", "n1"}});
  EXPECT_EQ(RunTaskProlog("mig", &bound_slurm, on_n1, out, err2), 0) << err2.str();
  EXPECT_EQ(bound.commands, (std::vector<std::string>{"scontrol -o show job 48_2"}));
  EXPECT_NE(out.str().find("export CUDA_VISIBLE_DEVICES=MIG-1111,MIG-2222\n"), std::string::npos);
}

// §4 step 2: the prolog's binds say whether the job can never leave its GPUs, by the controller's
// rule: only a job marked migratable=restart that Slurm may requeue can move (job 1's record says
// Requeue=1; the same record with Requeue=0 cannot). A job without a marker anchors (the other
// tests' binds).
TEST(PrologTest, BindsSayWhetherTheJobCanNeverLeaveItsGpus) {
  const std::string record = testing::ReadTestData("slurm/scontrol-job-1.txt");
  ASSERT_NE(record.find(" Requeue=1 "), std::string::npos);
  std::string no_requeue = record;
  no_requeue.replace(no_requeue.find(" Requeue=1 "), 11, " Requeue=0 ");
  struct Case {
    std::string record, comment;
    bool anchors;
  } cases[] = {{record, "migratable=restart", false},
               {record, "migratable=restart latency-sensitive", true},
               {record, "migratable=none", true},
               {no_requeue, "migratable=restart", true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.comment + (c.record == record ? "" : ", Requeue=0"));
    ReplayRunner runner;
    runner.records["1"] = c.record;
    SlurmClient slurm(&runner, 5);
    FakeNodeDaemons nodes;
    std::ostringstream err;
    EXPECT_EQ(RunProlog(HooksConfig(), &slurm, &nodes,
                        MakeEnv({{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_COMMENT", c.comment}}), err),
              0)
        << err.str();
    const std::string want =
        std::string("allocate n1 slurm:1 prefix=slurm-room:") + (c.anchors ? " anchors" : "");
    EXPECT_EQ(nodes.calls, (std::vector<std::string>{want, want}));
  }
}

// scontrol-job-1.txt: job 1, --gres=mig:1g.5gb:2 on n1: one allocation per
// instance, each from a room.
TEST(PrologTest, EachInstanceIsItsOwnAllocation) {
  ReplayRunner runner;
  runner.records["1"] = testing::ReadTestData("slurm/scontrol-job-1.txt");
  SlurmClient slurm(&runner, 5);
  FakeNodeDaemons nodes;
  std::ostringstream err;
  EXPECT_EQ(RunProlog(HooksConfig(), &slurm, &nodes, MakeEnv({{"SLURM_JOB_ID", "1"}}), err), 0)
      << err.str();
  EXPECT_EQ(nodes.calls,
            (std::vector<std::string>{"allocate n1 slurm:1 prefix=slurm-room: anchors",
                                      "allocate n1 slurm:1 prefix=slurm-room: anchors"}));
  EXPECT_EQ(AllocationsOn(nodes.states["n1"]).size(), 2u);
  EXPECT_EQ(runner.commands.back(),
            "scontrol update JobId=1 'AdminComment=migsched: bound "
            "n1=MIG-n1-10|0|1g.5gb|0,MIG-n1-20|0|1g.5gb|0'");
}

TEST(PrologTest, WithoutARoomTheDaemonChooses) {
  ReplayRunner runner;
  runner.records["3"] = testing::ReadTestData("slurm/scontrol-job-3.txt");
  SlurmClient slurm(&runner, 5);
  FakeNodeDaemons nodes;
  nodes.no_room["n3"] = true;
  std::ostringstream err;
  EXPECT_EQ(RunProlog(HooksConfig(), &slurm, &nodes, MakeEnv({{"SLURM_JOB_ID", "3"}}), err), 0);
  EXPECT_EQ(nodes.calls, (std::vector<std::string>{"allocate n1 slurm:3 prefix=slurm-room: anchors",
                                                   "allocate n3 slurm:3 prefix=slurm-room: anchors",
                                                   "allocate n3 slurm:3 prefix= anchors"}));
}

// A failure on the second node releases the first node's allocation (all or
// nothing), records the attempt and exits 1 (Slurm requeues the job).
TEST(PrologTest, AFailedNodeUndoesTheOthersAndCountsTheAttempt) {
  ReplayRunner runner;
  runner.records["3"] = testing::ReadTestData("slurm/scontrol-job-3.txt");
  SlurmClient slurm(&runner, 5);
  FakeNodeDaemons nodes;
  nodes.allocate_error["n3"] = UnavailableError("connection refused");
  std::ostringstream err;
  EXPECT_EQ(RunProlog(HooksConfig(), &slurm, &nodes, MakeEnv({{"SLURM_JOB_ID", "3"}}), err), 1);
  EXPECT_EQ(nodes.calls.back(), "release n1 1");
  EXPECT_TRUE(AllocationsOn(nodes.states["n1"]).empty());
  EXPECT_EQ(runner.commands.back(),
            "scontrol update JobId=3 'AdminComment=migsched: bind failed (attempt 1 of 3): n3: "
            "connection refused'");

  // The third failure also holds the job.
  std::string rec = testing::ReadTestData("slurm/scontrol-job-3.txt");
  rec.replace(
      rec.find(" Comment=") == std::string::npos ? rec.find(" StdErr=") : rec.find(" Comment="), 0,
      " AdminComment=" + FormatBindFailure(2, 3, "n3: connection refused"));
  runner.records["3"] = rec;
  runner.commands.clear();
  EXPECT_EQ(RunProlog(HooksConfig(), &slurm, &nodes, MakeEnv({{"SLURM_JOB_ID", "3"}}), err), 1);
  ASSERT_EQ(runner.commands.size(), 3u);
  EXPECT_EQ(runner.commands[1],
            "scontrol update JobId=3 'AdminComment=migsched: held: 3 binds failed; the last: n3: "
            "connection refused'");
  EXPECT_EQ(runner.commands[2], "scontrol hold 3");
}

// Regression: Slurm frees an ended job's count before its EpilogSlurmctld has
// released the instance, and started a waiting job of that profile there at
// once; its prolog found neither a room nor a free placement and the job was
// requeued. The prolog now retries such a bind for slurm.bind_wait_s.
TEST(PrologTest, ABindThatFindsNoRoomYetIsRetriedForBindWait) {
  ReplayRunner runner;
  runner.records["3"] =
      testing::ReadTestData("slurm/scontrol-job-3.txt");  // 1 instance on n1 and on n3
  SlurmClient slurm(&runner, 5);
  FakeNodeDaemons nodes;
  // n1: two binds fail (each tries with a room, then without), the third binds.
  nodes.busy_for["n1"] = 4;
  std::vector<double> slept;
  std::ostringstream err;
  EXPECT_EQ(RunProlog(HooksConfig(), &slurm, &nodes, MakeEnv({{"SLURM_JOB_ID", "3"}}), err,
                      [&](double s) { slept.push_back(s); }),
            0)
      << err.str();
  EXPECT_EQ(slept, (std::vector<double>{0.25, 0.25}));
  EXPECT_EQ(AllocationsOn(nodes.states["n1"]).size(), 1u);

  // With bind_wait_s 0.4 only one retry fits (0.25 s): still busy, the bind fails.
  ControllerConfig impatient = HooksConfig();
  impatient.bind_wait_s = 0.4;
  FakeNodeDaemons busy;
  busy.busy_for["n1"] = 100;
  slept.clear();
  EXPECT_EQ(RunProlog(impatient, &slurm, &busy, MakeEnv({{"SLURM_JOB_ID", "3"}}), err,
                      [&](double s) { slept.push_back(s); }),
            1);
  EXPECT_EQ(slept, (std::vector<double>{0.25}));
  EXPECT_EQ(busy.busy_for["n1"], 100 - 4);  // two binds of two calls each
  // Other errors (an unreachable daemon) are not retried.
  FakeNodeDaemons down;
  down.allocate_error["n1"] = UnavailableError("connection refused");
  slept.clear();
  EXPECT_EQ(RunProlog(HooksConfig(), &slurm, &down, MakeEnv({{"SLURM_JOB_ID", "3"}}), err,
                      [&](double s) { slept.push_back(s); }),
            1);
  EXPECT_TRUE(slept.empty());
}

TEST(PrologTest, JobsOfOtherPartitionsOrWithoutMigPass) {
  ReplayRunner runner;
  runner.records["3"] = testing::ReadTestData("slurm/scontrol-job-3.txt");
  SlurmClient slurm(&runner, 5);
  FakeNodeDaemons nodes;
  ControllerConfig other = HooksConfig();
  other.partition = "gpu";
  std::ostringstream err;
  EXPECT_EQ(RunProlog(other, &slurm, &nodes, MakeEnv({{"SLURM_JOB_ID", "3"}}), err), 0);
  EXPECT_TRUE(nodes.calls.empty());
  EXPECT_EQ(RunProlog(HooksConfig(), &slurm, &nodes, MakeEnv({}), err), 2);
}

TEST(EpilogTest, ReleasesTheJobsAllocationsOnItsNodes) {
  ReplayRunner runner;
  SlurmClient slurm(&runner, 5);
  FakeNodeDaemons nodes;
  nodes.states["n1"] = MakeNode("n1", 1, "A100 40GB",
                                {"0:3g.20gb@0=alloc#7:slurm:3", "0:3g.20gb@4=alloc#8:slurm:4"});
  nodes.states["n3"] = MakeNode("n3", 1, "A100 40GB", {"0:7g.40gb@0=alloc#9:slurm:3"});
  std::ostringstream err;
  EXPECT_EQ(RunEpilog(HooksConfig(), &slurm, &nodes,
                      MakeEnv({{"SLURM_JOB_ID", "3"}, {"SLURM_JOB_NODELIST", "n[1,3]"}}), err),
            0)
      << err.str();
  EXPECT_EQ(nodes.calls,
            (std::vector<std::string>{"state n1", "release n1 7", "state n3", "release n3 9"}));
  EXPECT_EQ(AllocationsOn(nodes.states["n1"]), (std::vector<AllocationOnNode>{{8, "slurm:4"}}));
}

}  // namespace
}  // namespace migsched::slurm
