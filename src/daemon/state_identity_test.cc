// The state dir's identity and the store's integrity (state_identity.h): a
// daemon never starts afresh by accident, never gives a job id twice, and
// refuses or reports a damaged store.
#include "daemon/state_identity.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/daemon_fixture.h"
#include "daemon/job_store.h"
#include "daemon/store_writer.h"

namespace migsched {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class StateIdentityTest : public DaemonTest {
 protected:
  fs::path Db() const { return fs::path(config_.state_dir) / "migsched.db"; }

  // A daemon that ran `n` jobs (each echoes "old-<id>") and stopped.
  void RunOldJobs(int n) {
    auto d = Start();
    ASSERT_NE(d, nullptr);
    for (int i = 1; i <= n; ++i) {
      ASSERT_OK_AND_ASSIGN(DaemonJobRecord r,
                           d->Submit(Req("1g.5gb", {"sh", "-c", "echo old-$MIGSCHED_JOB_ID"})));
      ASSERT_EQ(r.id, i);
      ASSERT_TRUE(WaitTerminal(*d, r.id));
    }
  }

  StatusOr<std::unique_ptr<Daemon>> Create() {
    return Daemon::Create(config_, std::make_unique<SharedBackend>(fake_.get()), &BundledCatalog(),
                          clock_);
  }
};

void RemoveStore(const fs::path& db) {
  for (const char* ext : {"", "-wal", "-shm"}) fs::remove(db.string() + ext);
}

// The root page number of table `table` and the page size of the store.
std::pair<int, int> RootPage(const fs::path& db, const std::string& table) {
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(h, ("SELECT rootpage FROM sqlite_master WHERE name='" + table + "'").c_str(),
                     -1, &s, nullptr);
  int root = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int(s, 0) : 0;
  sqlite3_finalize(s);
  sqlite3_prepare_v2(h, "PRAGMA page_size", -1, &s, nullptr);
  int page = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int(s, 0) : 0;
  sqlite3_finalize(s);
  sqlite3_exec(h, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
  sqlite3_close(h);
  return {root, page};
}

// Zeroes page `page` (1-based) of `db`, as `dd if=/dev/zero bs=<page size> seek=<page-1>
// count=1 conv=notrunc` does.
void ZeroPage(const fs::path& db, int page, int page_size) {
  const int fd = ::open(db.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  std::vector<char> zeros(static_cast<size_t>(page_size), 0);
  ASSERT_EQ(::pwrite(fd, zeros.data(), zeros.size(), static_cast<off_t>(page - 1) * page_size),
            static_cast<ssize_t>(zeros.size()));
  ::fsync(fd);
  ::close(fd);
}

// Regression (a_missing_database_starts_afresh): with the database deleted, the
// daemon started a new one in the used state dir; job ids restarted at 1 and the
// new job 1 appended to the old job 1's log.
TEST_F(StateIdentityTest, AMissingDatabaseIsRefusedNotStartedAfresh) {
  RunOldJobs(1);
  RemoveStore(Db());
  StatusOr<std::unique_ptr<Daemon>> d = Create();
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(d.status().message(), HasSubstr("the job store " + Db().string() + " is missing"));
  EXPECT_THAT(d.status().message(), HasSubstr(config_.state_dir + "/identity says"));
  EXPECT_THAT(d.status().message(), HasSubstr("migsched serve --fresh-store"));
  EXPECT_FALSE(fs::exists(Db()));  // nothing was created
}

TEST_F(StateIdentityTest, AnEmptyDatabaseIsRefusedNotStartedAfresh) {
  RunOldJobs(1);
  RemoveStore(Db());
  { std::ofstream(Db()) << ""; }
  ::chmod(Db().c_str(), 0600);
  StatusOr<std::unique_ptr<Daemon>> d = Create();
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), HasSubstr("is empty (zero length)"));
  EXPECT_EQ(fs::file_size(Db()), 0u);
}

// Without an identity file (deleted too), job directories still tell that the
// state dir was used.
TEST_F(StateIdentityTest, AMissingDatabaseAndIdentityInAUsedStateDirIsRefused) {
  RunOldJobs(1);
  RemoveStore(Db());
  fs::remove(fs::path(config_.state_dir) / "identity");
  StatusOr<std::unique_ptr<Daemon>> d = Create();
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), HasSubstr("/jobs holds job directories (up to job 1)"));
}

TEST_F(StateIdentityTest, AStoreOfAnotherGenerationIsRefused) {
  RunOldJobs(1);
  // Another state dir's store, copied in.
  DaemonConfig other = config_;
  other.state_dir = MakeTempDir("migsched-other");
  {
    StatusOr<std::unique_ptr<Daemon>> o = Daemon::Create(
        other, std::make_unique<SharedBackend>(fake_.get()), &BundledCatalog(), clock_);
    ASSERT_OK(o);
  }
  ASSERT_OK_AND_ASSIGN(StateIdentity mine, ReadStateIdentity(config_.state_dir));
  ASSERT_OK_AND_ASSIGN(StateIdentity theirs, ReadStateIdentity(other.state_dir));
  ASSERT_NE(mine.generation, theirs.generation);
  RemoveStore(Db());
  fs::copy_file(fs::path(other.state_dir) / "migsched.db", Db());
  StatusOr<std::unique_ptr<Daemon>> d = Create();
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(),
              HasSubstr("is of generation " + theirs.generation + ", but " + config_.state_dir +
                        "/identity names generation " + mine.generation));
}

// Regression (a_new_job_appends_to_an_old_jobs_log): starting afresh is
// deliberate (--fresh-store), keeps the old store aside and continues ids
// above every id the state dir gave, so no job meets another's log or exit file.
TEST_F(StateIdentityTest, AFreshStoreNeverReusesAJobIdOrItsLog) {
  RunOldJobs(2);
  ASSERT_OK_AND_ASSIGN(StateIdentity before, ReadStateIdentity(config_.state_dir));
  // The first start reserved ids 1 .. kIdBlock (next id 1 + the block).
  EXPECT_EQ(before.job_ids_reserved_below, 1 + kIdBlock);
  RemoveStore(Db());
  config_.fresh_store = true;
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK_AND_ASSIGN(DaemonJobRecord r, d->Submit(Req("1g.5gb", {"sh", "-c", "echo new"})));
  EXPECT_EQ(r.id, 1 + kIdBlock);  // above every reserved id, not 1
  ASSERT_TRUE(WaitTerminal(*d, r.id));
  EXPECT_EQ(Get(*d, r.id).state, JobState::kSucceeded);
  EXPECT_EQ(ReadFile(d->LogPath(r.id)), "new\n");
  EXPECT_EQ(ReadFile(d->LogPath(1)), "old-1\n");  // the old job's log is untouched
  ASSERT_OK_AND_ASSIGN(StateIdentity after, ReadStateIdentity(config_.state_dir));
  EXPECT_NE(after.generation, before.generation);
  // A restart with the flag still given keeps the (intact) new store.
  d.reset();
  d = Start();
  ASSERT_NE(d, nullptr);
  EXPECT_OK(d->GetJob(r.id));
}

TEST_F(StateIdentityTest, AFreshStartKeepsTheDiscardedStoreAside) {
  RunOldJobs(1);
  const auto [root, page_size] = RootPage(Db(), "jobs");
  ZeroPage(Db(), root, page_size);
  config_.fresh_store = true;
  auto d = Start();
  ASSERT_NE(d, nullptr);
  int kept = 0;
  for (const auto& e : fs::directory_iterator(config_.state_dir)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("migsched.db.discarded-") && !name.ends_with("-wal") &&
        !name.ends_with("-shm")) {
      ++kept;
      EXPECT_GT(fs::file_size(e.path()), 0u);  // the old store, kept
    }
  }
  EXPECT_EQ(kept, 1);
}

// Ids are reserved in the identity file before a job with such an id is stored.
TEST_F(StateIdentityTest, JobIdsAreReservedBeforeTheyAreStored) {
  ASSERT_OK_AND_ASSIGN(OpenedStore opened, OpenStateStore(config_.state_dir, {}));
  EXPECT_EQ(opened.identity.job_ids_reserved_below, 1 + kIdBlock);
  DaemonJobRecord r;
  r.id = 1500;  // above the block: the identity moves first
  r.request.profile = "1g.5gb";
  r.request.command = {"true"};
  ASSERT_OK(opened.store->Insert(r));
  ASSERT_OK_AND_ASSIGN(StateIdentity now, ReadStateIdentity(config_.state_dir));
  EXPECT_EQ(now.job_ids_reserved_below, 1500 + kIdBlock);
}

// An identity file lost beside an intact store is rebuilt from the store.
TEST_F(StateIdentityTest, ALostIdentityFileIsRebuiltFromAnIntactStore) {
  RunOldJobs(1);
  ASSERT_OK_AND_ASSIGN(StateIdentity before, ReadStateIdentity(config_.state_dir));
  fs::remove(fs::path(config_.state_dir) / "identity");
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK_AND_ASSIGN(StateIdentity after, ReadStateIdentity(config_.state_dir));
  EXPECT_EQ(after.generation, before.generation);
  ASSERT_OK_AND_ASSIGN(DaemonJobRecord r, d->Submit(Req("1g.5gb", {"true"})));
  EXPECT_EQ(r.id, 2);
}

// Regression (trial_damaged_identity_advised_a_fresh_store): an identity file left empty, or cut
// short, beside an intact store refused the start and advised --fresh-store, which set the intact
// store aside with every queued job; a deleted one was rebuilt. Damaged is now as lost: rebuilt
// from the store (same generation, ids going on), the damaged file kept aside.
TEST_F(StateIdentityTest, ADamagedIdentityFileIsRebuiltFromAnIntactStore) {
  RunOldJobs(1);
  ASSERT_OK_AND_ASSIGN(StateIdentity before, ReadStateIdentity(config_.state_dir));
  const fs::path id = fs::path(config_.state_dir) / "identity";
  // Each says what is wrong in words (it said "[json.exception.out_of_range.403] key 'format' not
  // found").
  const std::vector<std::pair<std::string, std::string>> damaged = {{"", "the file is empty"},
                                                                    {"{", "not JSON, or cut short"},
                                                                    {"{}", "no \"format\""},
                                                                    {"[1]", "not a JSON object"}};
  for (const auto& [text, why] : damaged) {
    SCOPED_TRACE("identity '" + text + "'");
    { std::ofstream(id) << text; }
    EXPECT_EQ(ReadStateIdentity(config_.state_dir).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(ReadStateIdentity(config_.state_dir).status().message(),
              "state dir identity " + id.string() + " is not valid (" + why + ")");
    auto d = Start();
    ASSERT_NE(d, nullptr);
    ASSERT_OK_AND_ASSIGN(StateIdentity after, ReadStateIdentity(config_.state_dir));
    EXPECT_EQ(after.generation, before.generation);
    d.reset();
  }
  int aside = 0;
  for (const auto& e : fs::directory_iterator(config_.state_dir)) {
    aside += e.path().filename().string().rfind("identity.damaged-", 0) == 0;
  }
  EXPECT_GE(aside, 1);
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK_AND_ASSIGN(DaemonJobRecord r, d->Submit(Req("1g.5gb", {"true"})));
  EXPECT_EQ(r.id, 2);  // job 1 is the old job: no id given twice
}

// A damaged identity file beside a missing store still says the state dir was used: refused.
TEST_F(StateIdentityTest, ADamagedIdentityBesideAMissingStoreIsRefused) {
  RunOldJobs(1);
  RemoveStore(Db());
  { std::ofstream(fs::path(config_.state_dir) / "identity") << "{"; }
  StatusOr<std::unique_ptr<Daemon>> d = Create();
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(),
              HasSubstr("the job store " + Db().string() + " is missing, and"));
  EXPECT_THAT(d.status().message(), HasSubstr("/identity is not valid"));
  EXPECT_FALSE(fs::exists(Db()));
}

// A store made before identities existed is adopted; its jobs' untagged exit
// files are still read.
TEST_F(StateIdentityTest, AStoreFromBeforeIdentitiesIsAdopted) {
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<JobStore> store, JobStore::Open(config_.state_dir));
    DaemonJobRecord r;
    r.request.profile = "1g.5gb";
    r.request.command = {"true"};
    r.state = JobState::kSucceeded;
    r.exit_code = 0;
    ASSERT_OK(store->Insert(r));
  }
  // As the daemon keeps it: readable by its owner only (it refuses anything else).
  std::filesystem::permissions(
      std::filesystem::path(config_.state_dir) / "migsched.db",
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
      std::filesystem::perm_options::replace);
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK_AND_ASSIGN(StateIdentity id, ReadStateIdentity(config_.state_dir));
  EXPECT_EQ(id.untagged_below, 2);  // job 1 existed
  EXPECT_EQ(Get(*d, 1).state, JobState::kSucceeded);
  ASSERT_OK_AND_ASSIGN(DaemonJobRecord r, d->Submit(Req("1g.5gb", {"true"})));
  EXPECT_EQ(r.id, 2);
}

// Regression (a_zeroed_page_starts_ok): with one zeroed page the daemon
// started, said ok and refused every submit. The store is checked at start.
TEST_F(StateIdentityTest, AZeroedPageIsRefusedAtStart) {
  RunOldJobs(1);
  const auto [root, page_size] = RootPage(Db(), "jobs");
  ASSERT_GT(root, 1);
  ZeroPage(Db(), root, page_size);
  StatusOr<std::unique_ptr<Daemon>> d = Create();
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(d.status().message(), HasSubstr("the job store " + Db().string() + " is damaged"));
  EXPECT_THAT(d.status().message(), HasSubstr("restore the store"));
  EXPECT_THAT(d.status().message(), HasSubstr("--fresh-store"));
}

// Regression (a_store_error_is_silent): a store that went bad while the daemon
// ran answered 503 to every submit while /healthz said ok, the metric said 0
// and nothing was logged.
TEST_F(StateIdentityTest, AZeroedPageAtRunTimeShowsInHealthMetricsAndTheLog) {
  auto d = Start();
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Pause());
  for (int i = 0; i < 20; ++i) ASSERT_OK(d->Submit(Req("1g.5gb", {"true"})));
  ASSERT_OK(d->Health());
  EXPECT_FALSE(d->Metrics().store_degraded);
  const auto [root, page_size] = RootPage(Db(), "jobs");  // checkpoints the WAL into the file
  ZeroPage(Db(), root, page_size);
  {
    // Another connection's write: the daemon's connection rereads its pages.
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(Db().c_str(), &h), SQLITE_OK);
    sqlite3_exec(h, "INSERT INTO node(key, value) VALUES('poke', '1')", nullptr, nullptr, nullptr);
    sqlite3_close(h);
  }
  std::ostringstream out;
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out)));
  StatusOr<DaemonJobRecord> r = d->Submit(Req("1g.5gb", {"true"}));
  spdlog::set_default_logger(previous);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("malformed"));
  Status health = d->Health();
  ASSERT_FALSE(health.ok());
  EXPECT_THAT(health.message(), HasSubstr("the job store is damaged"));
  EXPECT_TRUE(d->Metrics().store_degraded);
  EXPECT_THAT(out.str(), HasSubstr("the job store is damaged"));
  // Later submits are refused with the reason, not with SQLite's error.
  StatusOr<DaemonJobRecord> again = d->Submit(Req("1g.5gb", {"true"}));
  ASSERT_FALSE(again.ok());
  EXPECT_THAT(again.status().message(), HasSubstr("the job store is damaged"));
}

}  // namespace
}  // namespace migsched
