// The daemon's configuration (`migsched serve --config FILE.yaml`, docs/daemon.md).
//
// Keys (YAML mapping; an unknown key, or one given twice, is an error naming the key):
//   listen: "127.0.0.1:7070"      host:port; 127.0.0.1 by default (port 0 = pick a free one)
//   state_dir: "/var/lib/migsched" SQLite database, job logs, token file
//   token_file: ""                default <state_dir>/token, created 0600 at first start
//   token: ""                     optional: the token itself (then no file is written)
//   backend: fake | nvml
//   gpus: ...                     fake: a cluster spec ("4xA100-40GB"); nvml: list of indices or
//                                 UUIDs (default: all)
//   nvml_library: libnvidia-ml.so.1
//   tick_ms: 100                  control-loop period
//   kill_grace_s: 10              SIGTERM → SIGKILL grace, cancel and restart-migration (0..86400)
//   on_shutdown: leave | drain    SIGTERM: leave jobs running (re-adopted at restart) or drain them
//   max_body_bytes: 1048576
//   checkpoint_command / restore_command: argv templates for `checkpoint` jobs ({pid}, {dir})
//   pcie_in_lazy_busy: false      use measured PCIe throughput in the lazy/busy rule
//   pcie_saturation_gbps: 0       > 0: log an advisory when a GPU's PCIe stays above it
//   fake: {fail_create: N, destroy_in_use: N, disappear_gpu: I}  fault injection (fake backend)
//   job_user: ""                  jobs run as this user (default, daemon root: a uid of its own
//                                 per job from job_uids)
//   job_uids: "61184-65519"       per-job user ids (empty: jobs run as nobody)
//   allow_root_jobs: false        accept job_user / job_users naming root
//   job_users: []                 other users a job may ask for (JobRequest::user)
//   work_dir: ""                  jobs' working directories (default <state_dir>-work)
//   retention_s: 604800           finished jobs are pruned this long after their end (< 0: never)
//   reservation_ttl_s: 60         default lifetime of a reservation
//   reservation_max_ttl_s: 600    the longest a reservation may ask for
//   node_name: ""                 the node's name in GET /v1/node (default: the host name)
//   idle_timeout_s: 5             an idle keep-alive connection is closed after this
//   request_timeout_s: 10         a client gets this long to send a request (per read)
//   max_connections: 1024         connections served at once (more wait to be accepted)
//   header_timeout_s: 5           a request head must arrive within this, in all
//   body_timeout_s: 30            a request body must arrive within this, in all
//   max_connections_per_peer: 256 connections from one remote address (http_server.h)
//   max_unauthenticated_connections: 0  connections without a valid token yet, in all
//                                 (0: max_connections / 4; the server keeps it below
//                                 max_connections)
//   store_check_s: 5              time for the job store's integrity check at start (a larger
//                                 store is checked in part, and the log says so)
//   scheduler: {policy: full, threshold: 0.4, ...}   the simulator's option names; the
//                                 policy's own defaults (sched/policy.h registry) apply to
//                                 what is not given, as in `migsched simulate`
//
// Thread-safety: plain values.
#ifndef MIGSCHED_DAEMON_CONFIG_H_
#define MIGSCHED_DAEMON_CONFIG_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "sched/options.h"
#include "sched/policy.h"

namespace migsched {

struct FakeFaults {
  int fail_create = 0;     // the next N CreateInstance calls fail (kUnavailable)
  int destroy_in_use = 0;  // each DestroyInstance answers "in use" N times before succeeding
  int disappear_gpu = -1;  // this GPU index vanishes after start (kUnavailable on every call)
};

struct DaemonConfig {
  std::string listen = "127.0.0.1:7070";
  std::string state_dir;
  std::string token_file;  // empty: <state_dir>/token
  std::string token;       // non-empty: use it, write no file
  std::string backend = "fake";
  std::string fake_gpus = "1xA100-40GB";  // fake backend: cluster spec
  std::vector<std::string> nvml_gpus;     // nvml backend: indices or UUIDs; empty = all
  std::string nvml_library = "libnvidia-ml.so.1";
  int tick_ms = 100;
  double kill_grace_s = 10;
  std::string on_shutdown = "leave";  // "leave" | "drain"
  size_t max_body_bytes = 1 << 20;
  std::vector<std::string> checkpoint_command;
  std::vector<std::string> restore_command;
  bool pcie_in_lazy_busy = false;
  double pcie_saturation_gbps = 0;
  FakeFaults fake;
  std::string
      job_user;  // empty: per-job uids (job_uids) when the daemon runs as root, else its user
  std::vector<std::string> job_users;    // users a request may name besides job_user
  std::string job_uids = "61184-65519";  // per-job uids (ParseUidRange); empty: nobody
  bool allow_root_jobs = false;
  std::string work_dir;                // empty: <state_dir>-work
  double retention_s = 7 * 24 * 3600;  // < 0: keep finished jobs forever
  double reservation_ttl_s = 60;
  double reservation_max_ttl_s = 600;
  std::string node_name;  // empty: the host name
  double idle_timeout_s = 5;
  double request_timeout_s = 10;
  int max_connections = 1024;
  double header_timeout_s = 5;
  double body_timeout_s = 30;
  int max_connections_per_peer = 256;
  int max_unauthenticated_connections = 0;  // 0: max_connections / 4 (at least 1)
  double store_check_s = 5;                 // real time for the store's integrity check at start
  // Not a file key: `migsched serve --fresh-store` (state_identity.h).
  bool fresh_store = false;
  std::string policy = std::string(kDefaultPolicy);
  // The scheduler options as the policy runs with them: what the file gives,
  // the policy's registry defaults for the rest (PolicyOptions).
  SchedulerOptions scheduler;
  ExplicitOptions explicit_options;  // which of the policy-defaulted options the file gave

  // The directory jobs' working directories go in.
  std::string WorkDir() const { return work_dir.empty() ? state_dir + "-work" : work_dir; }

  // Where the file said it (ParseDaemonConfig): its name and the line of each top-level key, for
  // the errors of checks that only the start can make (a cluster spec against the catalog, a
  // user against the system): Where("gpus") is "c.yaml:4", or "c.yaml" for a key not written,
  // or "config" for a config not read from a file.
  std::string origin;
  std::map<std::string, int> key_lines;
  std::string Where(const std::string& key) const {
    auto it = key_lines.find(key);
    const std::string file = origin.empty() ? "config" : origin;
    return it == key_lines.end() ? file : file + ":" + std::to_string(it->second);
  }
};

// "FIRST-LAST" (1000 <= FIRST <= LAST < 2^31-1): the per-job uid range.
StatusOr<std::pair<uint32_t, uint32_t>> ParseUidRange(const std::string& text);

// Parses a YAML config; errors name the file, the key and what is wrong
// (kInvalidArgument).
StatusOr<DaemonConfig> ParseDaemonConfig(const std::string& yaml_text, const std::string& origin);
StatusOr<DaemonConfig> LoadDaemonConfig(const std::string& path);
// A commented example config (`migsched serve --print-default-config
// [--policy NAME]`): every key with its default; the scheduler section with
// the options policy `policy` runs with (its name or an alias; the registry's
// defaults, OptionsForPolicy, as `migsched simulate --policy NAME` runs it),
// and a comment with each registered policy's own defaults. kNotFound listing
// the known policies for an unknown name.
StatusOr<std::string> DefaultDaemonConfigYaml(std::string_view policy);
// The same for `full`, the daemon's default policy.
std::string DefaultDaemonConfigYaml();

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_CONFIG_H_
