#include "daemon/job_store.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>
#include <system_error>
#include <utility>

namespace migsched {
namespace {

constexpr int kSchemaVersion = 1;

using nlohmann::json;

// Never throws: invalid UTF-8 (an argv byte string) is replaced, not refused.
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

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
              {"name", r.name}};
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
  return r;
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
    in.gpu = j.at("gpu").get<int>();
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

}  // namespace

StatusOr<std::unique_ptr<JobStore>> JobStore::Open(const std::filesystem::path& state_dir) {
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
  RETURN_IF_ERROR(store->Init());
  return store;
}

JobStore::~JobStore() {
  for (sqlite3_stmt* s : {insert_, update_, get_, all_, event_, events_}) sqlite3_finalize(s);
  sqlite3_close(db_);
}

Status JobStore::Error(std::string_view what) const {
  const int code = sqlite3_errcode(db_);
  std::string msg = fmt::format("job store {}: {}: {}", path_.string(), what, sqlite3_errmsg(db_));
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED) return UnavailableError(std::move(msg));
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

Status JobStore::Prepare(const char* sql, sqlite3_stmt** stmt) {
  if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, stmt, nullptr) != SQLITE_OK) {
    return Error(fmt::format("preparing '{}'", sql));
  }
  return Status();
}

Status JobStore::Init() {
  sqlite3_busy_timeout(db_, 5000);
  RETURN_IF_ERROR(Exec("PRAGMA journal_mode=WAL"));
  RETURN_IF_ERROR(Exec("PRAGMA synchronous=FULL"));
  RETURN_IF_ERROR(Exec(
      "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
      "CREATE TABLE IF NOT EXISTS jobs(id INTEGER PRIMARY KEY AUTOINCREMENT, request TEXT NOT "
      "NULL, state TEXT NOT NULL, submitted_at REAL NOT NULL, started_at REAL NOT NULL, "
      "ended_at REAL NOT NULL, instances TEXT NOT NULL, pid INTEGER NOT NULL, exit_code INTEGER, "
      "reason TEXT NOT NULL, restarts INTEGER NOT NULL, migrations INTEGER NOT NULL);"
      "CREATE TABLE IF NOT EXISTS events(seq INTEGER PRIMARY KEY AUTOINCREMENT, job INTEGER NOT "
      "NULL, time REAL NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL);"
      "CREATE INDEX IF NOT EXISTS events_by_job ON events(job, seq);"));
  // Schema version: written at creation, checked at every open.
  sqlite3_stmt* s = nullptr;
  RETURN_IF_ERROR(Prepare("SELECT value FROM meta WHERE key='schema_version'", &s));
  int rc = sqlite3_step(s);
  std::string version = rc == SQLITE_ROW ? ColumnText(s, 0) : "";
  sqlite3_finalize(s);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return Error("reading the schema version");
  if (version.empty()) {
    RETURN_IF_ERROR(Exec(
        fmt::format("INSERT INTO meta(key, value) VALUES('schema_version', '{}')", kSchemaVersion)
            .c_str()));
  } else if (version != std::to_string(kSchemaVersion)) {
    return FailedPreconditionError(
        fmt::format("job store {}: schema version {} is not the supported version {}",
                    path_.string(), version, kSchemaVersion));
  }
  RETURN_IF_ERROR(Prepare(
      "INSERT INTO jobs(request, state, submitted_at, started_at, ended_at, instances, pid, "
      "exit_code, reason, restarts, migrations) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
      "?11)",
      &insert_));
  RETURN_IF_ERROR(Prepare(
      "UPDATE jobs SET request=?1, state=?2, submitted_at=?3, started_at=?4, ended_at=?5, "
      "instances=?6, pid=?7, exit_code=?8, reason=?9, restarts=?10, migrations=?11 WHERE id=?12",
      &update_));
  constexpr const char* kColumns =
      "id, request, state, submitted_at, started_at, ended_at, instances, pid, exit_code, reason, "
      "restarts, migrations";
  RETURN_IF_ERROR(Prepare(fmt::format("SELECT {} FROM jobs WHERE id=?1", kColumns).c_str(), &get_));
  RETURN_IF_ERROR(Prepare(fmt::format("SELECT {} FROM jobs ORDER BY id", kColumns).c_str(), &all_));
  RETURN_IF_ERROR(
      Prepare("INSERT INTO events(job, time, kind, detail) VALUES(?1, ?2, ?3, ?4)", &event_));
  RETURN_IF_ERROR(Prepare(
      "SELECT seq, job, time, kind, detail FROM events WHERE job=?1 ORDER BY seq", &events_));
  return Status();
}

namespace {

// Binds the record's fields to ?1..?11 of an insert or update.
void BindRecord(sqlite3_stmt* s, const DaemonJobRecord& r) {
  BindText(s, 1, Dump(RequestToJson(r.request)));
  BindText(s, 2, std::string(JobStateName(r.state)));
  sqlite3_bind_double(s, 3, r.submitted_at);
  sqlite3_bind_double(s, 4, r.started_at);
  sqlite3_bind_double(s, 5, r.ended_at);
  BindText(s, 6, Dump(InstancesToJson(r.instances)));
  sqlite3_bind_int64(s, 7, r.pid);
  if (r.exit_code) {
    sqlite3_bind_int(s, 8, *r.exit_code);
  } else {
    sqlite3_bind_null(s, 8);
  }
  BindText(s, 9, r.reason);
  sqlite3_bind_int(s, 10, r.restarts);
  sqlite3_bind_int(s, 11, r.migrations);
}

}  // namespace

StatusOr<DaemonJobId> JobStore::Insert(const DaemonJobRecord& record) {
  ResetGuard guard(insert_);
  BindRecord(insert_, record);
  if (sqlite3_step(insert_) != SQLITE_DONE) return Error("inserting a job");
  return static_cast<DaemonJobId>(sqlite3_last_insert_rowid(db_));
}

Status JobStore::Update(const DaemonJobRecord& record) {
  ResetGuard guard(update_);
  BindRecord(update_, record);
  sqlite3_bind_int64(update_, 12, record.id);
  if (sqlite3_step(update_) != SQLITE_DONE) {
    return Error(fmt::format("updating job {}", record.id));
  }
  if (sqlite3_changes(db_) == 0) {
    return NotFoundError(fmt::format("job store {}: no job {}", path_.string(), record.id));
  }
  return Status();
}

StatusOr<DaemonJobRecord> JobStore::ReadRow(sqlite3_stmt* s) {
  DaemonJobRecord r;
  r.id = sqlite3_column_int64(s, 0);
  try {
    r.request = RequestFromJson(json::parse(ColumnText(s, 1)));
    r.instances = InstancesFromJson(json::parse(ColumnText(s, 6)));
  } catch (const std::exception& e) {
    return InternalError(fmt::format("job store {}: job {} has a corrupt record: {}",
                                     path_.string(), r.id, e.what()));
  }
  StatusOr<JobState> state = ParseJobState(ColumnText(s, 2));
  if (!state.ok()) {
    return InternalError(
        fmt::format("job store {}: job {}: {}", path_.string(), r.id, state.status().message()));
  }
  r.state = *state;
  r.submitted_at = sqlite3_column_double(s, 3);
  r.started_at = sqlite3_column_double(s, 4);
  r.ended_at = sqlite3_column_double(s, 5);
  r.pid = sqlite3_column_int64(s, 7);
  if (sqlite3_column_type(s, 8) != SQLITE_NULL) r.exit_code = sqlite3_column_int(s, 8);
  r.reason = ColumnText(s, 9);
  r.restarts = sqlite3_column_int(s, 10);
  r.migrations = sqlite3_column_int(s, 11);
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

Status JobStore::AppendEvent(DaemonJobId job, double time, std::string_view kind,
                             std::string_view detail_json) {
  json detail = json::parse(detail_json, nullptr, /*allow_exceptions=*/false);
  if (!detail.is_object()) {
    return InvalidArgumentError(fmt::format("job store {}: event detail is not a JSON object: {}",
                                            path_.string(), detail_json));
  }
  ResetGuard guard(event_);
  sqlite3_bind_int64(event_, 1, job);
  sqlite3_bind_double(event_, 2, time);
  BindText(event_, 3, std::string(kind));
  BindText(event_, 4, std::string(detail_json));
  if (sqlite3_step(event_) != SQLITE_DONE) {
    return Error(fmt::format("appending event '{}' of job {}", kind, job));
  }
  return Status();
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

}  // namespace migsched
