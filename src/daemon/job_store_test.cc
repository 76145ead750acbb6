#include "daemon/job_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::MakeTempDir;

DaemonJobRecord SampleRecord() {
  DaemonJobRecord r;
  r.request.profile = "2g.10gb";
  r.request.count = 2;
  r.request.command = {"python", "train.py", "--lr", "0.1 0.2"};
  r.request.env = {{"A", "1"}, {"B", "two words"}};
  r.request.cwd = "/tmp";
  r.request.migratable = Migratable::kRestart;
  r.request.latency_sensitive = true;
  r.request.priority = 3;
  r.request.time_limit_s = 3600;
  r.request.name = "train";
  r.state = JobState::kRunning;
  r.submitted_at = 1700000000.25;
  r.started_at = 1700000001.5;
  r.instances = {{0, "2g.10gb", 4, 2, "MIG-a", 3, 0}, {1, "2g.10gb", 0, 2, "MIG-b", 1, 0}};
  r.pid = 4242;
  r.reason = "";
  r.restarts = 1;
  r.migrations = 2;
  return r;
}

void ExpectSame(const DaemonJobRecord& a, const DaemonJobRecord& b) {
  EXPECT_EQ(a.request.profile, b.request.profile);
  EXPECT_EQ(a.request.gpu_fraction, b.request.gpu_fraction);
  EXPECT_EQ(a.request.count, b.request.count);
  EXPECT_EQ(a.request.command, b.request.command);
  EXPECT_EQ(a.request.env, b.request.env);
  EXPECT_EQ(a.request.cwd, b.request.cwd);
  EXPECT_EQ(a.request.migratable, b.request.migratable);
  EXPECT_EQ(a.request.latency_sensitive, b.request.latency_sensitive);
  EXPECT_EQ(a.request.priority, b.request.priority);
  EXPECT_EQ(a.request.time_limit_s, b.request.time_limit_s);
  EXPECT_EQ(a.request.name, b.request.name);
  EXPECT_EQ(a.state, b.state);
  EXPECT_EQ(a.submitted_at, b.submitted_at);
  EXPECT_EQ(a.started_at, b.started_at);
  EXPECT_EQ(a.ended_at, b.ended_at);
  ASSERT_EQ(a.instances.size(), b.instances.size());
  for (size_t i = 0; i < a.instances.size(); ++i) {
    EXPECT_EQ(a.instances[i].gpu, b.instances[i].gpu);
    EXPECT_EQ(a.instances[i].profile, b.instances[i].profile);
    EXPECT_EQ(a.instances[i].start, b.instances[i].start);
    EXPECT_EQ(a.instances[i].size, b.instances[i].size);
    EXPECT_EQ(a.instances[i].mig_uuid, b.instances[i].mig_uuid);
    EXPECT_EQ(a.instances[i].gi_id, b.instances[i].gi_id);
    EXPECT_EQ(a.instances[i].ci_id, b.instances[i].ci_id);
  }
  EXPECT_EQ(a.pid, b.pid);
  EXPECT_EQ(a.exit_code, b.exit_code);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.restarts, b.restarts);
  EXPECT_EQ(a.migrations, b.migrations);
}

TEST(JobRecordTest, StateNamesRoundTrip) {
  const JobState all[] = {JobState::kQueued,    JobState::kStarting,  JobState::kRunning,
                          JobState::kMigrating, JobState::kSucceeded, JobState::kFailed,
                          JobState::kCancelled, JobState::kRejected,  JobState::kTimeout};
  const char* names[] = {"queued", "starting",  "running",  "migrating", "succeeded",
                         "failed", "cancelled", "rejected", "timeout"};
  const bool terminal[] = {false, false, false, false, true, true, true, true, true};
  for (int i = 0; i < 9; ++i) {
    EXPECT_EQ(JobStateName(all[i]), names[i]);
    StatusOr<JobState> s = ParseJobState(names[i]);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(*s, all[i]);
    EXPECT_EQ(IsTerminal(all[i]), terminal[i]) << names[i];
  }
  StatusOr<JobState> bad = ParseJobState("done");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'done' is not a job state"), std::string::npos);
}

TEST(JobRecordTest, ToJobCarriesTheRequest) {
  JobRequest r;
  r.gpu_fraction = 0.3;
  r.count = 3;
  r.migratable = Migratable::kCheckpoint;
  r.latency_sensitive = true;
  r.name = "x";
  Job j = r.ToJob();
  EXPECT_EQ(j.profile, "");
  EXPECT_EQ(j.gpu_fraction, 0.3);
  EXPECT_EQ(j.count, 3);
  EXPECT_EQ(j.migratable, Migratable::kCheckpoint);
  EXPECT_TRUE(j.latency_sensitive);
  EXPECT_EQ(j.name, "x");
  EXPECT_EQ(j.RequestString(), "3xgpu_fraction 0.3");
}

TEST(JobStoreTest, RoundTripAndUpdate) {
  const auto dir = MakeTempDir("migsched-store");
  auto store = JobStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  DaemonJobRecord r = SampleRecord();
  StatusOr<DaemonJobId> id = (*store)->Insert(r);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, 1);  // the first AUTOINCREMENT rowid
  r.id = *id;
  StatusOr<DaemonJobRecord> got = (*store)->Get(*id);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->id, 1);
  ExpectSame(*got, r);

  r.state = JobState::kFailed;
  r.exit_code = 137;
  r.ended_at = 1700000100;
  r.reason = "killed";
  r.instances.clear();
  ASSERT_TRUE((*store)->Update(r).ok());
  got = (*store)->Get(*id);
  ASSERT_TRUE(got.ok());
  ExpectSame(*got, r);

  DaemonJobRecord missing = r;
  missing.id = 99;
  Status st = (*store)->Update(missing);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("no job 99"), std::string::npos);
  EXPECT_NE(st.message().find((dir / "migsched.db").string()), std::string::npos);
  EXPECT_EQ((*store)->Get(99).status().code(), StatusCode::kNotFound);
}

TEST(JobStoreTest, ReopenAfterCloseAndIdsNeverReused) {
  const auto dir = MakeTempDir("migsched-store");
  {
    auto store = JobStore::Open(dir);
    ASSERT_TRUE(store.ok());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE((*store)->Insert(SampleRecord()).ok());
    ASSERT_TRUE((*store)->AppendEvent(2, 5.5, "submitted", R"({"by":"test"})").ok());
  }
  {
    auto store = JobStore::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto all = (*store)->LoadAll();
    ASSERT_TRUE(all.ok());
    ASSERT_EQ(all->size(), 3u);
    EXPECT_EQ((*all)[0].id, 1);
    EXPECT_EQ((*all)[2].id, 3);
    auto events = (*store)->Events(2);
    ASSERT_TRUE(events.ok());
    ASSERT_EQ(events->size(), 1u);
    EXPECT_EQ((*events)[0].kind, "submitted");
    EXPECT_EQ((*events)[0].time, 5.5);
    EXPECT_EQ((*events)[0].detail_json, R"({"by":"test"})");
  }
  // Delete the highest row behind the store's back: AUTOINCREMENT still
  // never hands out 3 again, so the next id is 4.
  {
    auto store = JobStore::Open(dir);
    ASSERT_TRUE(store.ok());
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "migsched.db").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "DELETE FROM jobs WHERE id=3", nullptr, nullptr, nullptr),
              SQLITE_OK);
    EXPECT_EQ(sqlite3_changes(db), 1);
    sqlite3_close(db);
  }
  auto store = JobStore::Open(dir);
  ASSERT_TRUE(store.ok());
  StatusOr<DaemonJobId> id = (*store)->Insert(SampleRecord());
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, 4);
}

TEST(JobStoreTest, BadEventDetailIsRefused) {
  const auto dir = MakeTempDir("migsched-store");
  auto store = JobStore::Open(dir);
  ASSERT_TRUE(store.ok());
  Status st = (*store)->AppendEvent(1, 0, "x", "[1,2]");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("event detail is not a JSON object: [1,2]"), std::string::npos);
}

TEST(JobStoreTest, UnusableStateDirNamesThePath) {
  const auto dir = MakeTempDir("migsched-store");
  const auto file = dir / "plain-file";
  { std::ofstream(file) << "x"; }
  auto store = JobStore::Open(file / "sub");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find((file / "sub").string()), std::string::npos);
}

TEST(JobStoreTest, CommittedRecordSurvivesAProcessThatExitsWithoutClosing) {
  const auto dir = MakeTempDir("migsched-store");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto store = JobStore::Open(dir);
    if (!store.ok()) _exit(2);
    DaemonJobRecord r = SampleRecord();
    r.request.name = "from-child";
    StatusOr<DaemonJobId> id = (*store)->Insert(r);
    _exit(id.ok() && *id == 1 ? 0 : 3);  // no close, no destructor: like kill -9 after commit
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  auto store = JobStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto got = (*store)->Get(1);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->request.name, "from-child");
  EXPECT_EQ(got->request.command, SampleRecord().request.command);
}

}  // namespace
}  // namespace migsched
