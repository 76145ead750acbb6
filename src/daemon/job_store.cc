#include "daemon/job_store.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <system_error>
#include <utility>

#include "daemon/json_text.h"

namespace migsched {
namespace {

constexpr int kSchemaVersion = 2;

using nlohmann::json;

// Never throws: invalid UTF-8 (an argv byte string) is replaced, not refused.

json RequestToJson(const JobRequest& r) {
  return json{{"profile", r.profile},
              {"gpu_fraction", r.gpu_fraction},
              {"count", r.count},
              {"command", r.command},
              {"env", r.env},
              {"cwd", r.cwd},
              {"migratable", std::string(MigratableName(r.migratable))},
              {"latency_sensitive", r.latency_sensitive},
              {"priority", r.priority},
              {"name", r.name},
              {"user", r.user},
              {"time_limit_s", r.time_limit_s}};
}

// Throws nlohmann exceptions on a malformed document (caught by the caller).
JobRequest RequestFromJson(const json& j) {
  JobRequest r;
  r.profile = j.at("profile").get<std::string>();
  r.gpu_fraction = j.at("gpu_fraction").get<double>();
  r.count = j.at("count").get<int>();
  r.command = j.at("command").get<std::vector<std::string>>();
  r.env = j.at("env").get<std::map<std::string, std::string>>();
  r.cwd = j.at("cwd").get<std::string>();
  StatusOr<Migratable> m = ParseMigratable(j.at("migratable").get<std::string>());
  if (!m.ok()) throw std::runtime_error(m.status().message());
  r.migratable = *m;
  r.latency_sensitive = j.at("latency_sensitive").get<bool>();
  r.priority = j.at("priority").get<int>();
  r.name = j.at("name").get<std::string>();
  r.user = j.value("user", "");                   // schema 1 had no user
  r.time_limit_s = j.value("time_limit_s", 0.0);  // stored since time limits exist
  return r;
}

json AllocationToJson(const AllocationRequest& a) {
  json instances = json::array();
  for (const RequestedInstance& s : a.instances) {
    instances.push_back({{"gpu", s.gpu}, {"profile", s.profile}, {"start", s.start}});
  }
  return json{{"owner", a.owner},
              {"instances", instances},
              {"reservation", a.reservation},
              {"reservation_prefix", a.reservation_prefix},
              {"name", a.name},
              {"anchors", a.anchors}};
}

AllocationRequest AllocationFromJson(const json& j) {
  AllocationRequest a;
  a.owner = j.at("owner").get<std::string>();
  for (const json& s : j.at("instances")) {
    a.instances.push_back({s.at("gpu").get<NvmlIndex>(), s.at("profile").get<std::string>(),
                           s.at("start").get<int>()});
  }
  a.reservation = j.at("reservation").get<std::string>();
  a.reservation_prefix = j.at("reservation_prefix").get<std::string>();
  a.name = j.at("name").get<std::string>();
  a.anchors = j.value("anchors", false);  // stored since anchoring allocations exist
  return a;
}

json InstancesToJson(const std::vector<JobInstance>& v) {
  json a = json::array();
  for (const JobInstance& in : v) {
    a.push_back(json{{"gpu", in.gpu},
                     {"profile", in.profile},
                     {"start", in.start},
                     {"size", in.size},
                     {"mig_uuid", in.mig_uuid},
                     {"gi_id", in.gi_id},
                     {"ci_id", in.ci_id}});
  }
  return a;
}

std::vector<JobInstance> InstancesFromJson(const json& a) {
  std::vector<JobInstance> out;
  for (const json& j : a) {
    JobInstance in;
    in.gpu = j.at("gpu").get<NvmlIndex>();
    in.profile = j.at("profile").get<std::string>();
    in.start = j.at("start").get<int>();
    in.size = j.at("size").get<int>();
    in.mig_uuid = j.at("mig_uuid").get<std::string>();
    in.gi_id = j.at("gi_id").get<unsigned int>();
    in.ci_id = j.at("ci_id").get<unsigned int>();
    out.push_back(std::move(in));
  }
  return out;
}

// A reservation's placements column. Held for a job that can never leave its GPU, each placement
// says "anchors": true (a field older daemons did not write: absent reads as false, and the
// schema stays the same).
json PlacementsToJson(const std::vector<PlacementRef>& v, bool anchors) {
  json a = json::array();
  for (const PlacementRef& p : v) {
    json one = {{"gpu", p.gpu}, {"profile", p.profile}, {"start", p.start}};
    if (anchors) one["anchors"] = true;
    a.push_back(std::move(one));
  }
  return a;
}

// Resets a statement when the scope ends, so that it can be reused.
class ResetGuard {
 public:
  explicit ResetGuard(sqlite3_stmt* s) : s_(s) {}
  ~ResetGuard() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }

 private:
  sqlite3_stmt* s_;
};

std::string ColumnText(sqlite3_stmt* s, int col) {
  const unsigned char* t = sqlite3_column_text(s, col);
  return t == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(t));
}

void BindText(sqlite3_stmt* s, int idx, const std::string& text) {
  sqlite3_bind_text(s, idx, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

constexpr const char* kColumns =
    "id, kind, request, state, submitted_at, started_at, ended_at, instances, pid, exit_code, "
    "reason, restarts, migrations, attempt, cancel_requested, idempotency_key, owner, "
    "bound_reservation";

// Binds the record's fields to ?1..?18 (?1 = id) of an insert or update.
void BindRecord(sqlite3_stmt* s, const DaemonJobRecord& r) {
  sqlite3_bind_int64(s, 1, r.id);
  BindText(s, 2, std::string(JobKindName(r.kind)));
  BindText(s, 3,
           JsonText(r.kind == JobKind::kAllocation ? AllocationToJson(r.allocation)
                                                   : RequestToJson(r.request)));
  BindText(s, 4, std::string(JobStateName(r.state)));
  sqlite3_bind_double(s, 5, r.submitted_at);
  sqlite3_bind_double(s, 6, r.started_at);
  sqlite3_bind_double(s, 7, r.ended_at);
  BindText(s, 8, JsonText(InstancesToJson(r.instances)));
  sqlite3_bind_int64(s, 9, r.pid);
  if (r.exit_code) {
    sqlite3_bind_int(s, 10, *r.exit_code);
  } else {
    sqlite3_bind_null(s, 10);
  }
  BindText(s, 11, r.reason);
  sqlite3_bind_int(s, 12, r.restarts);
  sqlite3_bind_int(s, 13, r.migrations);
  sqlite3_bind_int(s, 14, r.attempt);
  sqlite3_bind_int(s, 15, r.cancel_requested ? 1 : 0);
  if (r.idempotency_key.empty()) {
    sqlite3_bind_null(s, 16);
  } else {
    BindText(s, 16, r.idempotency_key);
  }
  BindText(s, 17, r.owner());
  BindText(s, 18, r.bound_reservation);
}

// A write that may succeed later (another process holds the database, the
// disk is full or failing, the file is read-only or gone) rather than a bug.
bool Transient(int code) {
  switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PROTOCOL:
      return true;
    default:
      return false;
  }
}

}  // namespace

StoreOp StoreOp::InsertJob(DaemonJobRecord r) {
  StoreOp op;
  op.kind = Kind::kInsertJob;
  op.job = std::move(r);
  return op;
}
StoreOp StoreOp::UpdateJob(DaemonJobRecord r) {
  StoreOp op;
  op.kind = Kind::kUpdateJob;
  op.job = std::move(r);
  return op;
}
StoreOp StoreOp::DeleteJob(DaemonJobId id) {
  StoreOp op;
  op.kind = Kind::kDeleteJob;
  op.id = id;
  return op;
}
StoreOp StoreOp::Event(DaemonJobId job, double time, std::string kind, std::string detail_json) {
  StoreOp op;
  op.kind = Kind::kEvent;
  op.event = JobEvent{0, job, time, std::move(kind), std::move(detail_json)};
  return op;
}
StoreOp StoreOp::PutReservation(ReservationRecord r) {
  StoreOp op;
  op.kind = Kind::kPutReservation;
  op.reservation = std::move(r);
  return op;
}
StoreOp StoreOp::DeleteReservation(std::string owner) {
  StoreOp op;
  op.kind = Kind::kDeleteReservation;
  op.key = std::move(owner);
  return op;
}
StoreOp StoreOp::PutNode(std::string key, std::string value) {
  StoreOp op;
  op.kind = Kind::kPutNode;
  op.key = std::move(key);
  op.value = std::move(value);
  return op;
}

StatusOr<std::unique_ptr<JobStore>> JobStore::Open(const std::filesystem::path& state_dir,
                                                   int busy_timeout_ms) {
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  if (ec) {
    return FailedPreconditionError(
        fmt::format("state dir {}: cannot create it: {}", state_dir.string(), ec.message()));
  }
  const std::filesystem::path path = state_dir / "migsched.db";
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return FailedPreconditionError(
        fmt::format("job store {}: cannot open: {}", path.string(), msg));
  }
  std::unique_ptr<JobStore> store(new JobStore(path, db));
  RETURN_IF_ERROR(store->Init(busy_timeout_ms));
  return store;
}

JobStore::~JobStore() {
  for (sqlite3_stmt* s : {insert_, update_, delete_, delete_events_, get_, all_, event_, events_,
                          put_reservation_, delete_reservation_, put_node_}) {
    sqlite3_finalize(s);
  }
  sqlite3_close(db_);
}

Status JobStore::Error(std::string_view what) const {
  const int code = sqlite3_extended_errcode(db_);
  std::string msg = fmt::format("job store {}: {}: {}", path_.string(), what, sqlite3_errmsg(db_));
  NoteDamage(code, msg);
  if (Transient(code)) return UnavailableError(std::move(msg));
  if ((code & 0xff) == SQLITE_CONSTRAINT) return AlreadyExistsError(std::move(msg));
  return InternalError(std::move(msg));
}

Status JobStore::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err != nullptr ? err : "unknown error";
    sqlite3_free(err);
    Status st = Error(sql);
    return Status(st.code(), fmt::format("job store {}: {}: {}", path_.string(), sql, msg));
  }
  return Status();
}

void JobStore::NoteDamage(int code, const std::string& message) const {
  if ((code & 0xff) != SQLITE_CORRUPT && (code & 0xff) != SQLITE_NOTADB) return;
  std::lock_guard<std::mutex> lock(damage_mu_);
  if (damage_.ok()) damage_ = InternalError(message);
}

Status JobStore::damage() const {
  std::lock_guard<std::mutex> lock(damage_mu_);
  return damage_;
}

void JobStore::SetDamageForTesting(std::string message) {
  std::lock_guard<std::mutex> lock(damage_mu_);
  damage_ = InternalError(std::move(message));
}

StatusOr<std::string> JobStore::Meta(const std::string& key) {
  sqlite3_stmt* s = nullptr;
  RETURN_IF_ERROR(Prepare("SELECT value FROM meta WHERE key=?1", &s));
  BindText(s, 1, key);
  const int rc = sqlite3_step(s);
  std::string value = rc == SQLITE_ROW ? ColumnText(s, 0) : "";
  sqlite3_finalize(s);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return Error(fmt::format("reading meta '{}'", key));
  return value;
}

Status JobStore::SetMeta(const std::string& key, const std::string& value) {
  sqlite3_stmt* s = nullptr;
  RETURN_IF_ERROR(
      Prepare("INSERT INTO meta(key, value) VALUES(?1, ?2) ON CONFLICT(key) DO UPDATE SET "
              "value=excluded.value",
              &s));
  BindText(s, 1, key);
  BindText(s, 2, value);
  const int rc = sqlite3_step(s);
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return Error(fmt::format("storing meta '{}'", key));
  return Status();
}

StatusOr<bool> JobStore::QuickCheck(double budget_s) {
  struct Budget {
    std::chrono::steady_clock::time_point deadline;
    bool expired = false;
  } budget{std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
               std::chrono::duration<double>(std::max(0.0, budget_s)))};
  sqlite3_progress_handler(
      db_, 10000,
      [](void* arg) -> int {
        auto* b = static_cast<Budget*>(arg);
        if (std::chrono::steady_clock::now() < b->deadline) return 0;
        b->expired = true;
        return 1;  // interrupts the check
      },
      &budget);
  sqlite3_stmt* s = nullptr;
  Status prepared = Prepare("PRAGMA quick_check(20)", &s);
  std::vector<std::string> problems;
  int rc = SQLITE_DONE;
  if (prepared.ok()) {
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) problems.push_back(ColumnText(s, 0));
  }
  const int code = sqlite3_extended_errcode(db_);
  const std::string errmsg = sqlite3_errmsg(db_);
  sqlite3_finalize(s);
  sqlite3_progress_handler(db_, 0, nullptr, nullptr);
  if (!prepared.ok()) return prepared;
  if (budget.expired) return false;
  if (rc != SQLITE_DONE) {
    NoteDamage(code, errmsg);
    return InternalError(
        fmt::format("job store {}: integrity check failed: {}", path_.string(), errmsg));
  }
  if (!(problems.size() == 1 && problems[0] == "ok")) {
    std::string all;
    for (const std::string& p : problems) all += (all.empty() ? "" : "; ") + p;
    return InternalError(fmt::format("job store {}: integrity check: {}", path_.string(), all));
  }
  return true;
}

Status JobStore::Prepare(const char* sql, sqlite3_stmt** stmt) {
  if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, stmt, nullptr) != SQLITE_OK) {
    return Error(fmt::format("preparing '{}'", sql));
  }
  return Status();
}

Status JobStore::Upgrade(int from_version) {
  if (from_version == 1) {
    // Schema 1 had process jobs only, ids from AUTOINCREMENT, no reservations.
    RETURN_IF_ERROR(
        Exec("BEGIN IMMEDIATE;"
             "ALTER TABLE jobs ADD COLUMN kind TEXT NOT NULL DEFAULT 'job';"
             "ALTER TABLE jobs ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;"
             "ALTER TABLE jobs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;"
             "ALTER TABLE jobs ADD COLUMN idempotency_key TEXT;"
             "ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT '';"
             "ALTER TABLE jobs ADD COLUMN bound_reservation TEXT NOT NULL DEFAULT '';"
             "UPDATE meta SET value='2' WHERE key='schema_version';"
             "COMMIT;"));
  }
  return Status();
}

Status JobStore::Init(int busy_timeout_ms) {
  sqlite3_busy_timeout(db_, std::max(0, busy_timeout_ms));
  RETURN_IF_ERROR(Exec("PRAGMA journal_mode=WAL"));
  RETURN_IF_ERROR(Exec("PRAGMA synchronous=FULL"));
  RETURN_IF_ERROR(
      Exec("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)"));
  // Schema version: written at creation, checked (and upgraded) at every open.
  sqlite3_stmt* s = nullptr;
  RETURN_IF_ERROR(Prepare("SELECT value FROM meta WHERE key='schema_version'", &s));
  int rc = sqlite3_step(s);
  std::string version = rc == SQLITE_ROW ? ColumnText(s, 0) : "";
  sqlite3_finalize(s);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return Error("reading the schema version");
  if (version.empty()) {
    RETURN_IF_ERROR(Exec(
        "CREATE TABLE IF NOT EXISTS jobs(id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL "
        "DEFAULT 'job', request TEXT NOT NULL, state TEXT NOT NULL, submitted_at REAL NOT NULL, "
        "started_at REAL NOT NULL, ended_at REAL NOT NULL, instances TEXT NOT NULL, pid INTEGER "
        "NOT NULL, exit_code INTEGER, reason TEXT NOT NULL, restarts INTEGER NOT NULL, "
        "migrations INTEGER NOT NULL, attempt INTEGER NOT NULL DEFAULT 0, cancel_requested "
        "INTEGER NOT NULL DEFAULT 0, idempotency_key TEXT, owner TEXT NOT NULL DEFAULT '', "
        "bound_reservation TEXT NOT NULL DEFAULT '');"
        "CREATE TABLE IF NOT EXISTS events(seq INTEGER PRIMARY KEY AUTOINCREMENT, job INTEGER NOT "
        "NULL, time REAL NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL);"));
    RETURN_IF_ERROR(Exec(
        fmt::format("INSERT INTO meta(key, value) VALUES('schema_version', '{}')", kSchemaVersion)
            .c_str()));
  } else if (version == "1") {
    RETURN_IF_ERROR(Upgrade(1));
  } else if (version != std::to_string(kSchemaVersion)) {
    return FailedPreconditionError(
        fmt::format("job store {}: schema version {} is not a supported version (1, {})",
                    path_.string(), version, kSchemaVersion));
  }
  RETURN_IF_ERROR(Exec(
      "CREATE INDEX IF NOT EXISTS events_by_job ON events(job, seq);"
      "CREATE UNIQUE INDEX IF NOT EXISTS jobs_by_idempotency_key ON jobs(idempotency_key) "
      "WHERE idempotency_key IS NOT NULL;"
      "CREATE TABLE IF NOT EXISTS reservations(owner TEXT PRIMARY KEY, placements TEXT NOT NULL, "
      "created_at REAL NOT NULL, expires_at REAL NOT NULL);"
      "CREATE TABLE IF NOT EXISTS node(key TEXT PRIMARY KEY, value TEXT NOT NULL);"));
  RETURN_IF_ERROR(Prepare(
      fmt::format("INSERT INTO jobs({}) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                  "?13, ?14, ?15, ?16, ?17, ?18)",
                  kColumns)
          .c_str(),
      &insert_));
  RETURN_IF_ERROR(
      Prepare("UPDATE jobs SET kind=?2, request=?3, state=?4, submitted_at=?5, started_at=?6, "
              "ended_at=?7, instances=?8, pid=?9, exit_code=?10, reason=?11, restarts=?12, "
              "migrations=?13, attempt=?14, cancel_requested=?15, idempotency_key=?16, owner=?17, "
              "bound_reservation=?18 WHERE id=?1",
              &update_));
  RETURN_IF_ERROR(Prepare("DELETE FROM jobs WHERE id=?1", &delete_));
  RETURN_IF_ERROR(Prepare("DELETE FROM events WHERE job=?1", &delete_events_));
  RETURN_IF_ERROR(Prepare(fmt::format("SELECT {} FROM jobs WHERE id=?1", kColumns).c_str(), &get_));
  RETURN_IF_ERROR(Prepare(fmt::format("SELECT {} FROM jobs ORDER BY id", kColumns).c_str(), &all_));
  RETURN_IF_ERROR(
      Prepare("INSERT INTO events(job, time, kind, detail) VALUES(?1, ?2, ?3, ?4)", &event_));
  RETURN_IF_ERROR(Prepare(
      "SELECT seq, job, time, kind, detail FROM events WHERE job=?1 ORDER BY seq", &events_));
  RETURN_IF_ERROR(Prepare(
      "INSERT INTO reservations(owner, placements, created_at, expires_at) VALUES(?1, ?2, ?3, ?4) "
      "ON CONFLICT(owner) DO UPDATE SET placements=excluded.placements, "
      "created_at=excluded.created_at, expires_at=excluded.expires_at",
      &put_reservation_));
  RETURN_IF_ERROR(Prepare("DELETE FROM reservations WHERE owner=?1", &delete_reservation_));
  RETURN_IF_ERROR(
      Prepare("INSERT INTO node(key, value) VALUES(?1, ?2) ON CONFLICT(key) DO UPDATE SET "
              "value=excluded.value",
              &put_node_));
  return Status();
}

Status JobStore::Apply(const StoreOp& op) {
  switch (op.kind) {
    case StoreOp::Kind::kInsertJob: {
      ResetGuard guard(insert_);
      BindRecord(insert_, op.job);
      if (sqlite3_step(insert_) != SQLITE_DONE) {
        return Error(fmt::format("inserting job {}", op.job.id));
      }
      return Status();
    }
    case StoreOp::Kind::kUpdateJob: {
      ResetGuard guard(update_);
      BindRecord(update_, op.job);
      if (sqlite3_step(update_) != SQLITE_DONE) {
        return Error(fmt::format("updating job {}", op.job.id));
      }
      if (sqlite3_changes(db_) == 0) {
        return NotFoundError(fmt::format("job store {}: no job {}", path_.string(), op.job.id));
      }
      return Status();
    }
    case StoreOp::Kind::kDeleteJob: {
      for (sqlite3_stmt* s : {delete_events_, delete_}) {
        ResetGuard guard(s);
        sqlite3_bind_int64(s, 1, op.id);
        if (sqlite3_step(s) != SQLITE_DONE) return Error(fmt::format("deleting job {}", op.id));
      }
      return Status();
    }
    case StoreOp::Kind::kEvent: {
      json detail = json::parse(op.event.detail_json, nullptr, /*allow_exceptions=*/false);
      if (!detail.is_object()) {
        return InvalidArgumentError(
            fmt::format("job store {}: event detail is not a JSON object: {}", path_.string(),
                        op.event.detail_json));
      }
      ResetGuard guard(event_);
      sqlite3_bind_int64(event_, 1, op.event.job);
      sqlite3_bind_double(event_, 2, op.event.time);
      BindText(event_, 3, op.event.kind);
      BindText(event_, 4, op.event.detail_json);
      if (sqlite3_step(event_) != SQLITE_DONE) {
        return Error(fmt::format("appending event '{}' of job {}", op.event.kind, op.event.job));
      }
      return Status();
    }
    case StoreOp::Kind::kPutReservation: {
      ResetGuard guard(put_reservation_);
      BindText(put_reservation_, 1, op.reservation.owner);
      BindText(put_reservation_, 2,
               JsonText(PlacementsToJson(op.reservation.placements, op.reservation.anchors)));
      sqlite3_bind_double(put_reservation_, 3, op.reservation.created_at);
      sqlite3_bind_double(put_reservation_, 4, op.reservation.expires_at);
      if (sqlite3_step(put_reservation_) != SQLITE_DONE) {
        return Error(fmt::format("storing reservation '{}'", op.reservation.owner));
      }
      return Status();
    }
    case StoreOp::Kind::kDeleteReservation: {
      ResetGuard guard(delete_reservation_);
      BindText(delete_reservation_, 1, op.key);
      if (sqlite3_step(delete_reservation_) != SQLITE_DONE) {
        return Error(fmt::format("deleting reservation '{}'", op.key));
      }
      return Status();
    }
    case StoreOp::Kind::kPutNode: {
      ResetGuard guard(put_node_);
      BindText(put_node_, 1, op.key);
      BindText(put_node_, 2, op.value);
      if (sqlite3_step(put_node_) != SQLITE_DONE) {
        return Error(fmt::format("storing node key '{}'", op.key));
      }
      return Status();
    }
  }
  return InternalError("unknown store op");
}

Status JobStore::Commit(const std::vector<StoreOp>& ops) {
  if (ops.empty()) return Status();
  if (id_reserver_) {
    // No id is stored before the state dir's identity reserves it (job_store.h).
    DaemonJobId highest = 0;
    for (const StoreOp& op : ops) {
      if (op.kind == StoreOp::Kind::kInsertJob) highest = std::max(highest, op.job.id);
    }
    if (highest >= reserved_below_) {
      StatusOr<DaemonJobId> below = id_reserver_(highest);
      if (!below.ok()) return below.status();
      reserved_below_ = *below;
    }
  }
  RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  for (const StoreOp& op : ops) {
    Status st = Apply(op);
    if (!st.ok()) {
      (void)Exec("ROLLBACK");
      return st;
    }
  }
  if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
    Status st = Error("committing");
    (void)Exec("ROLLBACK");
    return st;
  }
  return Status();
}

StatusOr<DaemonJobId> JobStore::NextJobId() {
  sqlite3_stmt* s = nullptr;
  RETURN_IF_ERROR(Prepare(
      "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name='jobs'), 0), "
      "COALESCE((SELECT MAX(id) FROM jobs), 0), "
      "COALESCE((SELECT CAST(value AS INTEGER) - 1 FROM meta WHERE key='job_id_floor'), 0))",
      &s));
  const int rc = sqlite3_step(s);
  const int64_t max = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
  sqlite3_finalize(s);
  if (rc != SQLITE_ROW) return Error("reading the highest job id");
  return max + 1;
}

StatusOr<DaemonJobRecord> JobStore::ReadRow(sqlite3_stmt* s) {
  DaemonJobRecord r;
  r.id = sqlite3_column_int64(s, 0);
  StatusOr<JobKind> kind = ParseJobKind(ColumnText(s, 1));
  if (!kind.ok()) {
    return InternalError(
        fmt::format("job store {}: job {}: {}", path_.string(), r.id, kind.status().message()));
  }
  r.kind = *kind;
  try {
    const json request = json::parse(ColumnText(s, 2));
    if (r.kind == JobKind::kAllocation) {
      r.allocation = AllocationFromJson(request);
    } else {
      r.request = RequestFromJson(request);
    }
    r.instances = InstancesFromJson(json::parse(ColumnText(s, 7)));
  } catch (const std::exception& e) {
    return InternalError(fmt::format("job store {}: job {} has a corrupt record: {}",
                                     path_.string(), r.id, e.what()));
  }
  StatusOr<JobState> state = ParseJobState(ColumnText(s, 3));
  if (!state.ok()) {
    return InternalError(
        fmt::format("job store {}: job {}: {}", path_.string(), r.id, state.status().message()));
  }
  r.state = *state;
  r.submitted_at = sqlite3_column_double(s, 4);
  r.started_at = sqlite3_column_double(s, 5);
  r.ended_at = sqlite3_column_double(s, 6);
  r.pid = sqlite3_column_int64(s, 8);
  if (sqlite3_column_type(s, 9) != SQLITE_NULL) r.exit_code = sqlite3_column_int(s, 9);
  r.reason = ColumnText(s, 10);
  r.restarts = sqlite3_column_int(s, 11);
  r.migrations = sqlite3_column_int(s, 12);
  r.attempt = sqlite3_column_int(s, 13);
  r.cancel_requested = sqlite3_column_int(s, 14) != 0;
  r.idempotency_key = ColumnText(s, 15);
  r.bound_reservation = ColumnText(s, 17);
  return r;
}

StatusOr<DaemonJobRecord> JobStore::Get(DaemonJobId id) {
  ResetGuard guard(get_);
  sqlite3_bind_int64(get_, 1, id);
  const int rc = sqlite3_step(get_);
  if (rc == SQLITE_DONE) {
    return NotFoundError(fmt::format("job store {}: no job {}", path_.string(), id));
  }
  if (rc != SQLITE_ROW) return Error(fmt::format("reading job {}", id));
  return ReadRow(get_);
}

StatusOr<std::vector<DaemonJobRecord>> JobStore::LoadAll() {
  ResetGuard guard(all_);
  std::vector<DaemonJobRecord> out;
  while (true) {
    const int rc = sqlite3_step(all_);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return Error("reading the jobs");
    ASSIGN_OR_RETURN(DaemonJobRecord r, ReadRow(all_));
    out.push_back(std::move(r));
  }
  return out;
}

StatusOr<std::vector<JobEvent>> JobStore::Events(DaemonJobId job) {
  ResetGuard guard(events_);
  sqlite3_bind_int64(events_, 1, job);
  std::vector<JobEvent> out;
  while (true) {
    const int rc = sqlite3_step(events_);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return Error(fmt::format("reading the events of job {}", job));
    out.push_back(JobEvent{sqlite3_column_int64(events_, 0), sqlite3_column_int64(events_, 1),
                           sqlite3_column_double(events_, 2), ColumnText(events_, 3),
                           ColumnText(events_, 4)});
  }
  return out;
}

StatusOr<std::vector<ReservationRecord>> JobStore::LoadReservations() {
  sqlite3_stmt* s = nullptr;
  RETURN_IF_ERROR(Prepare(
      "SELECT owner, placements, created_at, expires_at FROM reservations ORDER BY created_at, "
      "owner",
      &s));
  std::vector<ReservationRecord> out;
  Status st;
  while (true) {
    const int rc = sqlite3_step(s);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) {
      st = Error("reading the reservations");
      break;
    }
    ReservationRecord r;
    r.owner = ColumnText(s, 0);
    try {
      for (const json& p : json::parse(ColumnText(s, 1))) {
        r.placements.push_back({p.at("gpu").get<NvmlIndex>(), p.at("profile").get<std::string>(),
                                p.at("start").get<int>()});
        r.anchors = r.anchors || p.value("anchors", false);
      }
    } catch (const std::exception& e) {
      st = InternalError(fmt::format("job store {}: reservation '{}' is corrupt: {}",
                                     path_.string(), r.owner, e.what()));
      break;
    }
    r.created_at = sqlite3_column_double(s, 2);
    r.expires_at = sqlite3_column_double(s, 3);
    out.push_back(std::move(r));
  }
  sqlite3_finalize(s);
  if (!st.ok()) return st;
  return out;
}

StatusOr<std::map<std::string, std::string>> JobStore::LoadNode() {
  sqlite3_stmt* s = nullptr;
  RETURN_IF_ERROR(Prepare("SELECT key, value FROM node", &s));
  std::map<std::string, std::string> out;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) out[ColumnText(s, 0)] = ColumnText(s, 1);
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return Error("reading the node table");
  return out;
}

StatusOr<DaemonJobId> JobStore::Insert(DaemonJobRecord record) {
  if (record.id <= 0) {
    ASSIGN_OR_RETURN(record.id, NextJobId());
  }
  const DaemonJobId id = record.id;
  RETURN_IF_ERROR(Commit({StoreOp::InsertJob(std::move(record))}));
  return id;
}

Status JobStore::Update(const DaemonJobRecord& record) {
  return Commit({StoreOp::UpdateJob(record)});
}

Status JobStore::AppendEvent(DaemonJobId job, double time, std::string_view kind,
                             std::string_view detail_json) {
  return Commit({StoreOp::Event(job, time, std::string(kind), std::string(detail_json))});
}

}  // namespace migsched
