// JobStore: the daemon's durable state in one SQLite database,
// <state_dir>/migsched.db, opened with `PRAGMA journal_mode=WAL` and
// `synchronous=FULL` so that a committed transaction survives a crash of the
// daemon (kill -9) and of the machine.
//
// Tables (schema version 1, kept in table `meta`, key 'schema_version'):
//   jobs(id INTEGER PRIMARY KEY AUTOINCREMENT, request TEXT (JSON), state TEXT,
//        submitted_at REAL, started_at REAL, ended_at REAL, instances TEXT (JSON array),
//        pid INTEGER, exit_code INTEGER NULL, reason TEXT, restarts INTEGER,
//        migrations INTEGER)
//   events(seq INTEGER PRIMARY KEY AUTOINCREMENT, job INTEGER, time REAL, kind TEXT,
//          detail TEXT (JSON))
// AUTOINCREMENT makes SQLite never hand out an id twice, even after the
// highest row was deleted, so job ids are never reused. The JSON encoding of
// the request and instances is private to this file (the API's JSON is
// request_json.h's).
//
// Every write is its own transaction, committed (fsync'ed) before the call
// returns: a job is acknowledged only after Insert returned its id.
// Statements are prepared once at Open.
//
// Errors name the database path and SQLite's message: kUnavailable for
// SQLITE_BUSY/LOCKED (another process holds the database), kFailedPrecondition
// for a state dir that cannot be created or a database of a newer schema,
// kInternal for corrupt rows, kNotFound for an unknown job id.
//
// Thread-safety: thread-compatible (the daemon calls it under its own lock).
#ifndef MIGSCHED_DAEMON_JOB_STORE_H_
#define MIGSCHED_DAEMON_JOB_STORE_H_

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "daemon/job_record.h"

struct sqlite3;
struct sqlite3_stmt;

namespace migsched {

// One entry of the event log.
struct JobEvent {
  int64_t seq = 0;          // ascending, never reused
  DaemonJobId job = 0;      // 0: a daemon-level event
  double time = 0;          // Unix seconds
  std::string kind;         // e.g. "submitted", "started", "exited", "migrated"
  std::string detail_json;  // a JSON object (text)
};

class JobStore {
 public:
  // Opens or creates <state_dir>/migsched.db (state_dir created if missing).
  static StatusOr<std::unique_ptr<JobStore>> Open(const std::filesystem::path& state_dir);
  ~JobStore();
  JobStore(const JobStore&) = delete;
  JobStore& operator=(const JobStore&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Stores `record` as a new job (record.id is ignored) and returns its id,
  // once the transaction is committed.
  StatusOr<DaemonJobId> Insert(const DaemonJobRecord& record);
  // Overwrites the stored job record.id (kNotFound if absent).
  Status Update(const DaemonJobRecord& record);
  StatusOr<DaemonJobRecord> Get(DaemonJobId id);
  // Every job, ascending id (= submission order).
  StatusOr<std::vector<DaemonJobRecord>> LoadAll();
  // Appends to the event log; `detail_json` must be a JSON object text
  // (kInvalidArgument otherwise).
  Status AppendEvent(DaemonJobId job, double time, std::string_view kind,
                     std::string_view detail_json);
  // The events of `job` (0: daemon-level), ascending.
  StatusOr<std::vector<JobEvent>> Events(DaemonJobId job);

 private:
  JobStore(std::filesystem::path path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  Status Init();
  Status Error(std::string_view what) const;
  Status Exec(const char* sql);
  Status Prepare(const char* sql, sqlite3_stmt** stmt);
  StatusOr<DaemonJobRecord> ReadRow(sqlite3_stmt* stmt);

  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;
  sqlite3_stmt* update_ = nullptr;
  sqlite3_stmt* get_ = nullptr;
  sqlite3_stmt* all_ = nullptr;
  sqlite3_stmt* event_ = nullptr;
  sqlite3_stmt* events_ = nullptr;
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_JOB_STORE_H_
