// JobStore: the daemon's durable state in one SQLite database,
// <state_dir>/migsched.db, opened with `PRAGMA journal_mode=WAL` and
// `synchronous=FULL` so that a committed transaction survives a crash of the
// daemon (kill -9) and of the machine.
//
// Tables (schema version 2, kept in table `meta`, key 'schema_version'; a
// version-1 database is upgraded in place at open, a newer one refused):
//   jobs(id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT ('job' | 'allocation'),
//        request TEXT (JSON: the JobRequest or the AllocationRequest), state TEXT,
//        submitted_at REAL, started_at REAL, ended_at REAL, instances TEXT (JSON array),
//        pid INTEGER, exit_code INTEGER NULL, reason TEXT, restarts INTEGER,
//        migrations INTEGER, attempt INTEGER, cancel_requested INTEGER,
//        idempotency_key TEXT NULL (unique where set), owner TEXT, bound_reservation TEXT)
//   events(seq INTEGER PRIMARY KEY AUTOINCREMENT, job INTEGER, time REAL, kind TEXT,
//          detail TEXT (JSON))
//   reservations(owner TEXT PRIMARY KEY, placements TEXT (JSON array), created_at REAL,
//                expires_at REAL)
//   node(key TEXT PRIMARY KEY, value TEXT)   'drained_gpus' → JSON array of GPU UUIDs;
//                                            'paused' → "true" or "false" (Pause)
// Job ids are given by the daemon (NextJobId) and inserted explicitly;
// AUTOINCREMENT's sqlite_sequence keeps the highest id ever inserted, so an id
// is never given twice, even after the job was pruned; meta 'job_id_floor'
// (set when a store starts afresh in a used state dir) is the lowest id it may
// give. meta 'generation' names the state dir identity the store belongs to
// (state_identity.h). The JSON encodings of
// requests and instances are private to this file (the API's JSON is
// nodeapi/request_json.h's).
//
// Writes are batches (Commit): one transaction, committed (fsync'ed) before
// Commit returns, all or nothing. The daemon's StoreWriter groups the
// writes of concurrent callers into one batch.
//
// Errors name the database path and SQLite's message: kUnavailable for
// SQLITE_BUSY/LOCKED/FULL/IOERR and a read-only or vanished file (a write that
// may succeed later), kFailedPrecondition for a state dir that cannot be
// created or a database of a newer schema, kInternal for corrupt rows,
// kAlreadyExists for an insert whose id or idempotency key is taken.
// Errors SQLite reports as corruption (SQLITE_CORRUPT, SQLITE_NOTADB) are
// also remembered: damage() says the store is damaged from then on.
//
// Thread-safety: thread-compatible (the StoreWriter's thread writes; reads
// happen at start-up before it runs), except damage(), which is thread-safe.
#ifndef MIGSCHED_DAEMON_JOB_STORE_H_
#define MIGSCHED_DAEMON_JOB_STORE_H_

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "nodeapi/api_types.h"
#include "nodeapi/job_record.h"

struct sqlite3;
struct sqlite3_stmt;

namespace migsched {

// One entry of the event log.
struct JobEvent {
  int64_t seq = 0;          // ascending, never reused (0 before it is stored)
  DaemonJobId job = 0;      // 0: a daemon-level event
  double time = 0;          // Unix seconds
  std::string kind;         // e.g. "submitted", "started", "ended", "migrated"
  std::string detail_json;  // a JSON object (text)
};

// One write of a batch.
struct StoreOp {
  enum class Kind {
    kInsertJob,          // `job` is new (kAlreadyExists if its id or idempotency key is taken)
    kUpdateJob,          // overwrites job `job.id` (kNotFound if absent)
    kDeleteJob,          // job `id` and its events (pruning); absent: nothing
    kEvent,              // appends `event`
    kPutReservation,     // inserts or overwrites `reservation`
    kDeleteReservation,  // the reservation of owner `key`; absent: nothing
    kPutNode,            // node[key] = value
  };
  Kind kind = Kind::kEvent;
  DaemonJobRecord job;
  DaemonJobId id = 0;
  JobEvent event;
  ReservationRecord reservation;
  std::string key;
  std::string value;

  static StoreOp InsertJob(DaemonJobRecord r);
  static StoreOp UpdateJob(DaemonJobRecord r);
  static StoreOp DeleteJob(DaemonJobId id);
  static StoreOp Event(DaemonJobId job, double time, std::string kind, std::string detail_json);
  static StoreOp PutReservation(ReservationRecord r);
  static StoreOp DeleteReservation(std::string owner);
  static StoreOp PutNode(std::string key, std::string value);
};

class JobStore {
 public:
  // Opens or creates <state_dir>/migsched.db (state_dir created if
  // missing). `busy_timeout_ms`: how long a write waits for another process
  // holding the database (e.g. an operator's sqlite3 shell) before it fails
  // with kUnavailable (the StoreWriter retries it later).
  static StatusOr<std::unique_ptr<JobStore>> Open(const std::filesystem::path& state_dir,
                                                  int busy_timeout_ms = 100);
  ~JobStore();
  JobStore(const JobStore&) = delete;
  JobStore& operator=(const JobStore&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Applies `ops` in order in one transaction; on any error nothing of it is
  // kept. Errors name the op.
  Status Commit(const std::vector<StoreOp>& ops);

  // meta[key] ("" when absent) / meta[key] = value (outside Commit's batches:
  // start-up only).
  StatusOr<std::string> Meta(const std::string& key);
  Status SetMeta(const std::string& key, const std::string& value);

  // SQLite's PRAGMA quick_check, interrupted after `budget_s` of real time:
  // true when the check finished clean, false when the budget ran out first;
  // kInternal naming the file and SQLite's findings when the store is damaged.
  StatusOr<bool> QuickCheck(double budget_s);

  // OK, or the first corruption SQLite reported (the store is damaged; a
  // restart refuses it until it is repaired). Thread-safe.
  Status damage() const;
  void SetDamageForTesting(std::string message);

  // Called by Commit, before a batch that inserts a job whose id is at or
  // above the bound it last returned, with the highest such id; it returns the
  // new bound (ids below it may be stored) or an error that fails the batch.
  // The state dir's identity uses it to reserve ids durably before any is
  // stored. Unset: no reservation.
  void SetIdReserver(std::function<StatusOr<DaemonJobId>(DaemonJobId)> reserver,
                     DaemonJobId reserved_below) {
    id_reserver_ = std::move(reserver);
    reserved_below_ = reserved_below;
  }

  // The id after the highest ever stored (1 for a new database; at least
  // meta 'job_id_floor').
  StatusOr<DaemonJobId> NextJobId();
  StatusOr<DaemonJobRecord> Get(DaemonJobId id);
  // Every job, ascending id (= submission order).
  StatusOr<std::vector<DaemonJobRecord>> LoadAll();
  // The events of `job` (0: daemon-level), ascending.
  StatusOr<std::vector<JobEvent>> Events(DaemonJobId job);
  StatusOr<std::vector<ReservationRecord>> LoadReservations();
  StatusOr<std::map<std::string, std::string>> LoadNode();

  // Convenience single-op commits (tests, tools).
  StatusOr<DaemonJobId> Insert(DaemonJobRecord record);  // record.id 0: NextJobId()
  Status Update(const DaemonJobRecord& record);
  Status AppendEvent(DaemonJobId job, double time, std::string_view kind,
                     std::string_view detail_json);

 private:
  JobStore(std::filesystem::path path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  Status Init(int busy_timeout_ms);
  Status Upgrade(int from_version);
  Status Error(std::string_view what) const;
  void NoteDamage(int code, const std::string& message) const;
  Status Exec(const char* sql);
  Status Prepare(const char* sql, sqlite3_stmt** stmt);
  Status Apply(const StoreOp& op);
  StatusOr<DaemonJobRecord> ReadRow(sqlite3_stmt* stmt);

  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;
  sqlite3_stmt* update_ = nullptr;
  sqlite3_stmt* delete_ = nullptr;
  sqlite3_stmt* delete_events_ = nullptr;
  sqlite3_stmt* get_ = nullptr;
  sqlite3_stmt* all_ = nullptr;
  sqlite3_stmt* event_ = nullptr;
  sqlite3_stmt* events_ = nullptr;
  sqlite3_stmt* put_reservation_ = nullptr;
  sqlite3_stmt* delete_reservation_ = nullptr;
  sqlite3_stmt* put_node_ = nullptr;
  std::function<StatusOr<DaemonJobId>(DaemonJobId)> id_reserver_;
  DaemonJobId reserved_below_ = 0;
  mutable std::mutex damage_mu_;
  mutable Status damage_;  // guarded by damage_mu_
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_JOB_STORE_H_
