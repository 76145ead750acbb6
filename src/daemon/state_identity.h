// State dir identity: which job store a state directory belongs with, so that
// a daemon never starts afresh by accident in a used state dir.
//
//   <state_dir>/identity (0600, JSON, written by write-then-rename + fsync):
//     {"format": 1, "store": "migsched.db", "generation": "<32 hex digits>",
//      "created_at": <Unix s>, "job_ids_reserved_below": N, "untagged_below": M}
//   generation              random, new each time a store is created; the store
//                           keeps the same value in its meta table ('generation')
//   job_ids_reserved_below  every job id ever given in this state dir is below
//                           it: reserved in blocks (kIdBlock) before a job with
//                           such an id is stored (JobStore::SetIdReserver), so a
//                           store started afresh continues above it and never
//                           gives an id twice (logs, exit files, clients' ids)
//   untagged_below          exit files without a generation tag (written before
//                           tags existed) are read only for jobs below it
//                           (ProcessRunner::SetRunTag)
//
// OpenStateStore opens the store and refuses (kFailedPrecondition naming the
// files and the fix) a state dir whose store is
//   * missing or empty (zero length) while the identity file says one exists,
//     or while jobs/ holds job directories;
//   * of another generation than the identity file (another state dir's, or an
//     older copy);
//   * not a database, or damaged (SQLite's quick_check, given
//     `integrity_budget_s` of real time: a larger store is checked as far as
//     the budget goes and the daemon says so in the log);
//   * unreadable identity file.
// `fresh` (migsched serve --fresh-store) deliberately starts a new store in such
// a state dir: the old store files are kept, renamed to
// migsched.db.discarded-<Unix s>[-wal|-shm]; job ids continue above every id the
// identity reserved and every directory under jobs/. With an intact store,
// `fresh` does nothing (logged).
// A store without an identity file and without a generation (made before
// identities existed) is adopted: it gets a generation and an identity file.
// An identity file lost beside an intact store is rewritten from the store.
//
// Thread-safety: OpenStateStore runs once at start; the id reserver it installs
// runs on the store writer's thread.
#ifndef MIGSCHED_DAEMON_STATE_IDENTITY_H_
#define MIGSCHED_DAEMON_STATE_IDENTITY_H_

#include <filesystem>
#include <memory>
#include <string>

#include "core/status.h"
#include "daemon/job_store.h"

namespace migsched {

struct StateIdentity {
  std::string store = "migsched.db";
  std::string generation;
  double created_at = 0;
  DaemonJobId job_ids_reserved_below = 1;
  DaemonJobId untagged_below = 0;
};

// Ids are reserved this many at a time (one identity write per block).
constexpr DaemonJobId kIdBlock = 1000;

// kNotFound when the file does not exist; kFailedPrecondition when it cannot
// be read; kInvalidArgument when it was read but holds no valid identity (empty, cut short,
// edited), naming it.
StatusOr<StateIdentity> ReadStateIdentity(const std::filesystem::path& state_dir);
Status WriteStateIdentity(const std::filesystem::path& state_dir, const StateIdentity& id);

struct OpenStoreOptions {
  bool fresh = false;             // migsched serve --fresh-store
  double integrity_budget_s = 5;  // real time for quick_check at start
  int busy_timeout_ms = 100;
};

struct OpenedStore {
  std::unique_ptr<JobStore> store;
  StateIdentity identity;
};

// See the file comment. The returned store reserves ids through the identity
// file (JobStore::SetIdReserver).
StatusOr<OpenedStore> OpenStateStore(const std::filesystem::path& state_dir,
                                     const OpenStoreOptions& options);

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_STATE_IDENTITY_H_
