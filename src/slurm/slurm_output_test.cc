#include "slurm/slurm_output.h"

#include <gtest/gtest.h>

#include <map>

#include "testing/test_util.h"

namespace migsched::slurm {
namespace {

using migsched::testing::ReadFile;
using migsched::testing::TestDataDir;

TEST(GresListTest, ParsesTheFormsSlurmPrints) {
  using G = std::vector<GresCount>;
  struct Case {
    std::string text;
    G want;
  };
  const std::vector<Case> cases = {
      {"", {}},
      {"N/A", {}},
      {"(null)", {}},
      {"mig:1g.5gb:2,mig:3g.20gb:1", {{"mig", "1g.5gb", 2}, {"mig", "3g.20gb", 1}}},
      {"gres:mig:1g.5gb:1,gres:mig:3g.20gb:1", {{"mig", "1g.5gb", 1}, {"mig", "3g.20gb", 1}}},
      {"gres/mig:7g.40gb:2", {{"mig", "7g.40gb", 2}}},
      {"gpu:a100:4(S:0-1),mig:1g.5gb+me:0", {{"gpu", "a100", 4}, {"mig", "1g.5gb+me", 0}}},
      {"gpu:a100:2(IDX:0,2),mig:2", {{"gpu", "a100", 2}, {"mig", "", 2}}},
      {"mig:3g.20gb", {{"mig", "3g.20gb", 1}}},
  };
  for (const Case& c : cases) {
    auto got = ParseGresList(c.text);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status().ToString();
    EXPECT_EQ(*got, c.want) << c.text;
  }
  for (const std::string bad : {"mig:1g.5gb:x", "mig:a:b:c", ",mig:1", ":1g.5gb:1"}) {
    EXPECT_FALSE(ParseGresList(bad).ok()) << bad;
  }
}

// tests/data/slurm/squeue.json: `squeue --json` of a local 22.05 cluster with
// the jobs of tests/data/slurm/README.md. Expected values as `squeue -o "%i %j
// %t %r %b %N"` printed them at the same moment.
TEST(SqueueJsonTest, ParsesTheCapturedQueue) {
  auto jobs = ParseSqueueJson(testing::ReadTestData("slurm/squeue.json"));
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  std::map<int64_t, SlurmJob> by_id;
  for (const SlurmJob& j : *jobs) by_id[j.id] = j;
  ASSERT_EQ(by_id.size(), 11u);
  const SlurmJob& a = by_id[1];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.state, "RUNNING");
  EXPECT_TRUE(a.Active());
  EXPECT_EQ(a.nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(a.tres_per_node, (std::vector<GresCount>{{"mig", "1g.5gb", 2}}));
  EXPECT_EQ(a.comment, "migratable=restart");
  EXPECT_TRUE(a.requeue);
  EXPECT_EQ(a.partition, "mig");
  const SlurmJob& c = by_id[3];
  EXPECT_EQ(c.state, "PENDING");
  EXPECT_EQ(c.reason, "ReqNodeNotAvail");
  EXPECT_EQ(c.node_count, 2);
  EXPECT_TRUE(c.nodes.empty());
  const SlurmJob& d = by_id[4];  // refused at submit (-w n3 while n3 published 0)
  EXPECT_EQ(d.state, "FAILED");
  EXPECT_EQ(d.reason, "BadConstraints");
  EXPECT_EQ(d.required_nodes, std::vector<std::string>{"n3"});
  EXPECT_EQ(d.tres_per_node, (std::vector<GresCount>{{"mig", "1g.5gb", 1}, {"mig", "3g.20gb", 1}}));
  EXPECT_EQ(by_id[5].excluded_nodes, std::vector<std::string>{"n1"});
  const SlurmJob& g = by_id[7];
  EXPECT_EQ(g.reason, "JobHeldAdmin");
  EXPECT_EQ(g.priority, 0);
  EXPECT_EQ(g.admin_comment, "migsched: can never run: test");
  const SlurmJob& h = by_id[8];  // requeued: eligible again about 2 minutes later
  EXPECT_EQ(h.reason, "BeginTime");
  EXPECT_EQ(h.restarts, 1);
  EXPECT_GT(h.eligible_time, h.submit_time + 100);
  EXPECT_TRUE(by_id[9].tres_per_node.empty());  // no GRES
  EXPECT_EQ(by_id[10].state, "COMPLETED");
  EXPECT_FALSE(by_id[10].Active());
  const SlurmJob& slow = by_id[11];  // PrologSlurmctld still running
  EXPECT_EQ(slow.state, "CONFIGURING");
  EXPECT_TRUE(slow.Active());
  EXPECT_EQ(slow.nodes, std::vector<std::string>{"n3"});
  EXPECT_EQ(a.time_limit_min, 0);  // the capture's jobs have no limit: "time_limit": null
}

// TimeLimit, minutes ("time_limit", OpenAPI v0.0.38), the expected end of a running job (§13).
TEST(SqueueJsonTest, TimeLimitInMinutes) {
  auto jobs = ParseSqueueJson(R"({"jobs": [{"job_id": 7, "time_limit": 90},
                                           {"job_id": 8, "time_limit": null}]})");
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].time_limit_min, 90);
  EXPECT_EQ((*jobs)[1].time_limit_min, 0);
  auto bad = ParseSqueueJson(R"({"jobs": [{"job_id": 7, "time_limit": "1:30:00"}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("squeue --json: job 7: field 'time_limit'", 0), 0u)
      << bad.status().message();
}

// Regression (array_task_bound_to_another_tasks_instance): scontrol addresses one task of a job
// array as ARRAYID_TASKID and the array's tasks not yet started as ARRAYID_[RANGE]; the array's
// id alone names every task. squeue --json (Slurm 22.05) gives a started task its own job_id with
// array_job_id and array_task_id, and the pending rest the array's id with array_task_string;
// a job outside any array has array_job_id 0 and array_task_id null.
TEST(SqueueJsonTest, ArrayTasksAreAddressedOneByOne) {
  auto jobs = ParseSqueueJson(R"({"jobs": [
      {"job_id": 48, "array_job_id": 48, "array_task_id": 1, "array_task_string": ""},
      {"job_id": 49, "array_job_id": 48, "array_task_id": 2, "array_task_string": ""},
      {"job_id": 48, "array_job_id": 48, "array_task_id": null, "array_task_string": "3-4"},
      {"job_id": 7, "array_job_id": 0, "array_task_id": null, "array_task_string": ""}]})");
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 4u);
  EXPECT_EQ((*jobs)[0].Spec(), "48_1");
  EXPECT_EQ((*jobs)[1].Spec(), "48_2");
  EXPECT_EQ((*jobs)[2].Spec(), "48_[3-4]");
  EXPECT_EQ((*jobs)[3].Spec(), "7");
}

TEST(SinfoJsonTest, DrainedDownAndFailingNodesStartNoJob) {
  SlurmNode n;
  n.state = "mixed";
  EXPECT_FALSE(StartsNoJob(n));
  n.state_flags = {"DRAIN"};
  EXPECT_TRUE(StartsNoJob(n));
  n.state_flags = {"NOT_RESPONDING"};
  EXPECT_FALSE(StartsNoJob(n));
  n.state = "DOWN";
  EXPECT_TRUE(StartsNoJob(n));
  n.state = "idle";
  n.state_flags = {"FAIL"};
  EXPECT_TRUE(StartsNoJob(n));
}

TEST(SqueueJsonTest, MultiNodeJobListsEveryNode) {
  auto jobs = ParseSqueueJson(testing::ReadTestData("slurm/squeue-multinode.json"));
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  for (const SlurmJob& j : *jobs) {
    if (j.id == 3) {
      EXPECT_EQ(j.state, "RUNNING");
      EXPECT_EQ(j.nodes, (std::vector<std::string>{"n1", "n3"}));
      EXPECT_EQ(j.node_count, 2);
    }
  }
}

// Regression (trial_job_name_bytes_stopped_the_controller): a job named with bytes that are not
// UTF-8 ("j" 0xFF 0xFE, as `sbatch -J "$(printf 'j\xff\xfe')"` gives it) is copied into squeue's
// JSON as it is; the controller refused the whole queue, and no tick completed for as long as
// squeue listed the job. Each such byte now reads as U+FFFD, and the other jobs are read; a
// well-formed multi-byte name ("é", "日") is kept as it is, and a truncated or overlong sequence
// (0xE6 0x97 at the end of a name, 0xC0 0xAF) is replaced byte by byte.
TEST(SqueueJsonTest, BytesThatAreNotUtf8DoNotStopTheQueue) {
  const std::string text = std::string(R"({"jobs": [{"job_id": 7, "name": "j)") + "\xff\xfe" +
                           R"("}, {"job_id": 8, "name": "é日"}, {"job_id": 9, "name": "x)" +
                           "\xe6\x97" + R"("}, {"job_id": 10, "name": ")" + "\xc0\xaf" + R"("}]})";
  auto jobs = ParseSqueueJson(text);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 4u);
  EXPECT_EQ((*jobs)[0].name, "j\uFFFD\uFFFD");
  EXPECT_EQ((*jobs)[1].name, "é日");
  EXPECT_EQ((*jobs)[2].name, "x\uFFFD\uFFFD");
  EXPECT_EQ((*jobs)[3].name, "\uFFFD\uFFFD");
}

TEST(SqueueJsonTest, BadOutputNamesTheProblem) {
  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"not json", "squeue --json: output is not valid JSON"},
      {"{}", "squeue --json: output has no 'jobs' list"},
      {R"({"jobs": [], "errors": [{"error": "x"}]})", "squeue --json: Slurm reports errors"},
      {R"({"jobs": [{"job_id": "7"}]})",
       "squeue --json: job #0: field 'job_id' must be an integer, got string"},
      {R"({"jobs": [{"job_id": 7, "nodes": "n[1-"}]})", "squeue --json: job 7: field 'nodes'"},
      {R"({"jobs": [{"job_id": 7, "tres_per_node": "gres:mig:x:y:z"}]})",
       "squeue --json: job 7: field 'tres_per_node'"},
      {R"({"jobs": [{"name": "x"}]})", "squeue --json: job #0 has no job_id"},
  };
  for (const Case& c : cases) {
    auto got = ParseSqueueJson(c.text);
    ASSERT_FALSE(got.ok()) << c.text;
    EXPECT_EQ(got.status().message().rfind(c.message, 0), 0u) << got.status().message();
  }
}

// tests/data/slurm/sinfo.json, with the counts the capture set with
// `scontrol update NodeName=... Gres=...` (n1: 1g.5gb 2, 3g.20gb 1; n2:
// 1g.5gb 1, 7g.40gb 1; n3: 1g.5gb 1) and the jobs then running.
TEST(SinfoJsonTest, ParsesPublishedAndUsedCounts) {
  auto nodes = ParseSinfoJson(testing::ReadTestData("slurm/sinfo.json"));
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 3u);  // the FUTURE placeholders are not listed
  const SlurmNode& n1 = (*nodes)[0];
  EXPECT_EQ(n1.name, "n1");
  EXPECT_EQ(n1.partitions, std::vector<std::string>{"mig"});
  ASSERT_EQ(n1.gres.size(), 7u);
  EXPECT_EQ(n1.gres[0], (GresCount{"mig", "1g.5gb", 2}));
  EXPECT_EQ(n1.gres[4], (GresCount{"mig", "3g.20gb", 1}));
  EXPECT_EQ(n1.gres_used[0], (GresCount{"mig", "1g.5gb", 2}));   // job a
  EXPECT_EQ(n1.gres_used[4], (GresCount{"mig", "3g.20gb", 1}));  // job b
  const SlurmNode& n2 = (*nodes)[1];
  EXPECT_EQ(n2.gres[6], (GresCount{"mig", "7g.40gb", 1}));
  EXPECT_EQ(n2.gres_used[6], (GresCount{"mig", "7g.40gb", 1}));  // job f
  EXPECT_TRUE(n1.reason.empty());
}

TEST(ScontrolRecordTest, ReadsWordsAndTrailingValues) {
  ScontrolRecord up(testing::ReadTestData("slurm/partition-up.txt"));
  EXPECT_EQ(up.Value("State"), "UP");
  EXPECT_EQ(up.Value("PartitionName"), "mig");
  EXPECT_EQ(up.Value("Nodes"), "migsched-hold[1-3],n[1-3]");
  EXPECT_EQ(ScontrolRecord(testing::ReadTestData("slurm/partition-down.txt")).Value("State"),
            "DOWN");
  EXPECT_EQ(up.Value("NoSuchKey"), std::nullopt);

  ScontrolRecord job3(testing::ReadTestData("slurm/scontrol-job-3.txt"));
  EXPECT_EQ(job3.Value("JobId"), "3");
  EXPECT_EQ(job3.Value("NodeList"), "n[1,3]");
  EXPECT_EQ(job3.Value("NumNodes"), "2");
  EXPECT_EQ(job3.Value("TresPerNode"), "gres:mig:7g.40gb:1");
  EXPECT_EQ(job3.Value("Restarts"), "0");
  // "ReqNodeList=" must not match "NodeList=".
  ScontrolRecord job7(testing::ReadTestData("slurm/scontrol-job-7.txt"));
  EXPECT_EQ(job7.Value("JobState"), "PENDING");
  auto admin = job7.Rest("AdminComment");
  ASSERT_TRUE(admin.has_value());
  EXPECT_EQ(admin->rfind("migsched: can never run: test ", 0), 0u) << *admin;
}

}  // namespace
}  // namespace migsched::slurm
