#include "daemon/state_identity.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "daemon/json_text.h"
#include "nodeapi/token.h"

namespace migsched {
namespace {

constexpr const char* kStoreName = "migsched.db";
constexpr const char* kFreshHint =
    "restore the store (with its -wal file) from a backup, or start afresh deliberately with "
    "`migsched serve --fresh-store` (the old store files are kept aside, job ids continue above "
    "the old ones)";

std::filesystem::path IdentityPath(const std::filesystem::path& dir) { return dir / "identity"; }

// The highest numeric directory name under jobs/ (0: none).
DaemonJobId HighestJobDir(const std::filesystem::path& jobs) {
  DaemonJobId highest = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(jobs, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.size() > 18 ||
        name.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    highest = std::max<DaemonJobId>(highest, std::stoll(name));
  }
  return highest;
}

StatusOr<std::string> NewGeneration() {
  ASSIGN_OR_RETURN(std::string random, NewRandomToken());
  return random.substr(0, 32);
}

StatusOr<DaemonJobId> MetaId(JobStore* store, const std::string& key) {
  ASSIGN_OR_RETURN(std::string v, store->Meta(key));
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 18) {
    return DaemonJobId{0};
  }
  return static_cast<DaemonJobId>(std::stoll(v));
}

}  // namespace

StatusOr<StateIdentity> ReadStateIdentity(const std::filesystem::path& state_dir) {
  const std::filesystem::path path = IdentityPath(state_dir);
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return NotFoundError(fmt::format("{}: no such file", path.string()));
    return FailedPreconditionError(fmt::format("state dir identity {}: cannot read it: {}",
                                               path.string(), std::strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  // Read but not an identity: kInvalidArgument (OpenStateStore rebuilds it from an intact store,
  // as a missing one), saying what is wrong in words, not the JSON library's (a trial read
  // "[json.exception.out_of_range.403] key 'format' not found").
  auto invalid = [&](const std::string& why) {
    return InvalidArgumentError(
        fmt::format("state dir identity {} is not valid ({})", path.string(), why));
  };
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return invalid(text.str().empty() ? "the file is empty" : "not JSON, or cut short");
  }
  if (!j.is_object()) return invalid("not a JSON object");
  auto field = [&](const char* key, bool (nlohmann::json::*is)() const noexcept,
                   const char* what) -> Status {
    if (!j.contains(key)) return invalid(fmt::format("no \"{}\"", key));
    if (!(j[key].*is)()) return invalid(fmt::format("\"{}\" is not {}", key, what));
    return Status();
  };
  RETURN_IF_ERROR(field("format", &nlohmann::json::is_number_integer, "an integer"));
  RETURN_IF_ERROR(field("store", &nlohmann::json::is_string, "a string"));
  RETURN_IF_ERROR(field("generation", &nlohmann::json::is_string, "a string"));
  RETURN_IF_ERROR(field("created_at", &nlohmann::json::is_number, "a number"));
  RETURN_IF_ERROR(
      field("job_ids_reserved_below", &nlohmann::json::is_number_integer, "an integer"));
  RETURN_IF_ERROR(field("untagged_below", &nlohmann::json::is_number_integer, "an integer"));
  if (j["format"].get<int64_t>() != 1) return invalid("\"format\" is not 1");
  StateIdentity id;
  id.store = j["store"].get<std::string>();
  id.generation = j["generation"].get<std::string>();
  id.created_at = j["created_at"].get<double>();
  id.job_ids_reserved_below = j["job_ids_reserved_below"].get<DaemonJobId>();
  id.untagged_below = j["untagged_below"].get<DaemonJobId>();
  if (id.store != kStoreName) return invalid(fmt::format("\"store\" is not {}", kStoreName));
  if (id.generation.empty()) return invalid("\"generation\" is empty");
  return id;
}

Status WriteStateIdentity(const std::filesystem::path& state_dir, const StateIdentity& id) {
  const std::filesystem::path path = IdentityPath(state_dir);
  const std::string tmp = path.string() + ".tmp";
  const std::string text = JsonText(nlohmann::json{
                               {"format", 1},
                               {"store", id.store},
                               {"generation", id.generation},
                               {"created_at", id.created_at},
                               {"job_ids_reserved_below", id.job_ids_reserved_below},
                               {"untagged_below", id.untagged_below},
                           }) +
                           "\n";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  auto fail = [&](const char* what) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    return UnavailableError(fmt::format("state dir identity {}: cannot {}: {}", path.string(), what,
                                        std::strerror(err)));
  };
  if (fd < 0) return fail("create the temporary file");
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("write");
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("fsync");
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return UnavailableError(fmt::format("state dir identity {}: cannot rename {}: {}",
                                        path.string(), tmp, std::strerror(errno)));
  }
  const int dir_fd = ::open(state_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    (void)::fsync(dir_fd);
    ::close(dir_fd);
  }
  return Status();
}

StatusOr<OpenedStore> OpenStateStore(const std::filesystem::path& dir,
                                     const OpenStoreOptions& options) {
  const std::filesystem::path db = dir / kStoreName;
  const std::string id_file = IdentityPath(dir).string();
  StatusOr<StateIdentity> ident = ReadStateIdentity(dir);
  const bool have_identity = ident.ok();
  // A file that was read but holds no identity (empty, cut short, edited): like a lost one, it is
  // rebuilt from an intact store, and kept aside; it still says the state dir was used.
  const bool damaged_identity =
      !ident.ok() && ident.status().code() == StatusCode::kInvalidArgument;
  const DaemonJobId highest_dir = HighestJobDir(dir / "jobs");

  std::string problem;
  std::unique_ptr<JobStore> store;
  std::string store_generation;
  if (!ident.ok() && ident.status().code() != StatusCode::kNotFound && !damaged_identity) {
    problem = ident.status().message();
  }
  struct stat st;
  const bool db_exists = ::stat(db.c_str(), &st) == 0;
  const bool db_empty = db_exists && st.st_size == 0;
  if (problem.empty() && (!db_exists || db_empty)) {
    const char* how = db_exists ? "empty (zero length)" : "missing";
    if (damaged_identity) {
      problem =
          fmt::format("the job store {} is {}, and {}", db.string(), how, ident.status().message());
    } else if (have_identity) {
      problem =
          fmt::format("the job store {} is {}, but {} says this state dir has one (generation {})",
                      db.string(), how, id_file, ident->generation);
    } else if (highest_dir > 0) {
      problem = fmt::format(
          "the job store {} is {}, but {}/jobs holds job directories (up to job {}): this state "
          "dir was used",
          db.string(), how, dir.string(), highest_dir);
    }
  } else if (problem.empty()) {
    StatusOr<std::unique_ptr<JobStore>> opened = JobStore::Open(dir, options.busy_timeout_ms);
    if (!opened.ok()) {
      problem = fmt::format("the job store {} is damaged or unreadable ({})", db.string(),
                            opened.status().message());
    } else {
      store = std::move(*opened);
      StatusOr<bool> checked = store->QuickCheck(options.integrity_budget_s);
      StatusOr<std::string> gen =
          checked.ok() ? store->Meta("generation") : StatusOr<std::string>(checked.status());
      if (!checked.ok()) {
        problem = fmt::format("the job store {} is damaged ({})", db.string(),
                              checked.status().message());
      } else if (!gen.ok()) {
        problem =
            fmt::format("the job store {} is damaged ({})", db.string(), gen.status().message());
      } else {
        if (!*checked) {
          spdlog::warn(
              "job store {} ({} MB): its integrity check did not finish within {} s and checked "
              "it in part; check it all while the daemon is stopped: sqlite3 {} 'PRAGMA "
              "integrity_check'",
              db.string(), st.st_size >> 20, options.integrity_budget_s, db.string());
        }
        store_generation = *gen;
        if (have_identity && store_generation != ident->generation) {
          problem = fmt::format(
              "the job store {} is of generation {}, but {} names generation {}: the store belongs "
              "to another state dir or to an earlier start afresh",
              db.string(), store_generation.empty() ? "(none)" : store_generation, id_file,
              ident->generation);
        }
      }
    }
  }

  if (!problem.empty()) {
    if (!options.fresh) {
      return FailedPreconditionError(
          fmt::format("state_dir {}: {}; {}", dir.string(), problem, kFreshHint));
    }
    store.reset();
    std::string suffix = fmt::format(".discarded-{}", static_cast<int64_t>(::time(nullptr)));
    for (int n = 2; ::access((db.string() + suffix).c_str(), F_OK) == 0; ++n) {
      suffix = fmt::format(".discarded-{}-{}", static_cast<int64_t>(::time(nullptr)), n);
    }
    for (const char* ext : {"", "-wal", "-shm"}) {
      const std::string from = db.string() + ext;
      if (::access(from.c_str(), F_OK) != 0) continue;
      const std::string to = db.string() + suffix + ext;
      if (::rename(from.c_str(), to.c_str()) != 0) {
        return FailedPreconditionError(fmt::format("--fresh-store: cannot rename {} to {}: {}",
                                                   from, to, std::strerror(errno)));
      }
      spdlog::warn("--fresh-store: kept the old {} as {}", from, to);
    }
    spdlog::warn("--fresh-store: state_dir {}: {}; starting a new job store", dir.string(),
                 problem);
  } else if (options.fresh) {
    spdlog::info("--fresh-store: the job store {} is intact: nothing to start afresh", db.string());
  }

  // Every id this state dir may have given is below `floor`.
  const DaemonJobId floor =
      std::max(have_identity ? ident->job_ids_reserved_below : 1, highest_dir + 1);
  StateIdentity identity;
  if (store == nullptr) {
    // A new store: a new state dir, or a start afresh.
    ASSIGN_OR_RETURN(store, JobStore::Open(dir, options.busy_timeout_ms));
    ASSIGN_OR_RETURN(identity.generation, NewGeneration());
    identity.created_at = static_cast<double>(::time(nullptr));
    RETURN_IF_ERROR(store->SetMeta("generation", identity.generation));
    if (floor > 1) RETURN_IF_ERROR(store->SetMeta("job_id_floor", std::to_string(floor)));
  } else if (store_generation.empty()) {
    // A store from before identities: adopted.
    ASSIGN_OR_RETURN(DaemonJobId next, store->NextJobId());
    ASSIGN_OR_RETURN(identity.generation, NewGeneration());
    identity.created_at = static_cast<double>(::time(nullptr));
    identity.untagged_below = next;
    RETURN_IF_ERROR(store->SetMeta("untagged_below", std::to_string(next)));
    RETURN_IF_ERROR(store->SetMeta("generation", identity.generation));
    spdlog::info("state_dir {}: the job store gets an identity ({}, generation {})", dir.string(),
                 id_file, identity.generation);
  } else if (!have_identity) {
    // The identity file was lost, or damaged, beside an intact store: rebuilt from the store (the
    // ids it reserved: above every id of the store and every job directory, below).
    identity.generation = store_generation;
    identity.created_at = static_cast<double>(::time(nullptr));
    ASSIGN_OR_RETURN(identity.untagged_below, MetaId(store.get(), "untagged_below"));
    if (damaged_identity) {
      const std::string aside =
          fmt::format("{}.damaged-{}", id_file, static_cast<int64_t>(::time(nullptr)));
      if (::rename(id_file.c_str(), aside.c_str()) != 0) {
        return FailedPreconditionError(
            fmt::format("state_dir {}: {}; cannot keep it aside as {}: {}", dir.string(),
                        ident.status().message(), aside, std::strerror(errno)));
      }
      spdlog::warn(
          "state_dir {}: {}; kept aside as {} and rebuilt from the intact job store (generation "
          "{})",
          dir.string(), ident.status().message(), aside, store_generation);
    } else {
      spdlog::warn("state_dir {}: {} was missing; rebuilt from the job store (generation {})",
                   dir.string(), id_file, store_generation);
    }
  } else {
    identity = *ident;
  }
  ASSIGN_OR_RETURN(DaemonJobId next, store->NextJobId());
  if (next <= highest_dir) {
    // Job directories above the store's ids are not its jobs (e.g. a store
    // restored from an older backup): new ids go above them.
    spdlog::warn(
        "state_dir {}: jobs/ holds job {} but the job store's next id is {}; new ids "
        "start at {}",
        dir.string(), highest_dir, next, highest_dir + 1);
    RETURN_IF_ERROR(store->SetMeta("job_id_floor", std::to_string(highest_dir + 1)));
    next = highest_dir + 1;
  }
  identity.job_ids_reserved_below =
      std::max({identity.job_ids_reserved_below, floor, next + kIdBlock});
  RETURN_IF_ERROR(WriteStateIdentity(dir, identity));
  auto shared = std::make_shared<StateIdentity>(identity);
  store->SetIdReserver(
      [dir, shared](DaemonJobId highest) -> StatusOr<DaemonJobId> {
        StateIdentity next_identity = *shared;
        next_identity.job_ids_reserved_below = highest + kIdBlock;
        RETURN_IF_ERROR(WriteStateIdentity(dir, next_identity));
        *shared = next_identity;
        return next_identity.job_ids_reserved_below;
      },
      identity.job_ids_reserved_below);
  return OpenedStore{std::move(store), identity};
}

}  // namespace migsched
