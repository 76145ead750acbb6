// Parsers of what Slurm 22.05's commands print (the shapes of
// tests/data/slurm/, captured from a running cluster):
//   * `squeue --json` (OpenAPI v0.0.38 "jobs"; note: in 22.05 it lists every
//     job, ignoring -j/-p filters);
//   * `sinfo --json` ("nodes": gres, gres_used, state, reason, partitions);
//   * `scontrol -o show job ID` / `scontrol -o show partition NAME`: one line
//     of Key=Value words (Debian's 22.05 scontrol has no --json).
// GRES strings: "mig:1g.5gb:2,gpu:a100:4(S:0-1)" (nodes) and
// "gres:mig:1g.5gb:2,gres:mig:3g.20gb:1" (a job's tres_per_node).
//
// Errors (kInvalidArgument) name the origin (e.g. "squeue --json"), the
// job or node, the field and what is wrong; a field Slurm leaves out is its
// default (Slurm omits empty ones), a field of the wrong type is an error.
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_SLURM_SLURM_OUTPUT_H_
#define MIGSCHED_SLURM_SLURM_OUTPUT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace migsched::slurm {

// One GRES entry: "mig:3g.20gb:2" -> {mig, 3g.20gb, 2}; "mig:2" -> {mig, "", 2};
// "mig:3g.20gb" -> {mig, 3g.20gb, 1}. A "(...)" suffix (sockets, indices) is dropped.
struct GresCount {
  std::string name;
  std::string type;
  int64_t count = 0;
  bool operator==(const GresCount&) const = default;
};
// Parses a comma-separated GRES list; a leading "gres:" or "gres/" on each
// entry is dropped. "" and "N/A" and "(null)" are empty lists.
StatusOr<std::vector<GresCount>> ParseGresList(std::string_view text);

struct SlurmJob {
  int64_t id = 0;
  std::string name;
  std::string user;
  std::string state;   // PENDING, CONFIGURING, RUNNING, COMPLETING, COMPLETED, FAILED, ...
  std::string reason;  // state_reason: None, Resources, BeginTime, JobHeldAdmin, ...
  std::string partition;
  std::vector<std::string> nodes;  // allocated nodes, expanded ("" when pending)
  int node_count = 1;
  std::vector<GresCount> tres_per_node;  // every GRES asked per node
  std::string comment;
  std::string admin_comment;
  int restarts = 0;
  bool requeue = false;  // may be requeued (--requeue or the default)
  int64_t priority = 0;
  int64_t submit_time = 0;  // Unix seconds; 0 if unknown
  int64_t eligible_time = 0;
  int64_t start_time = 0;
  // TimeLimit in minutes (OpenAPI v0.0.38 "time_limit"; null, i.e. 0 here, for none/INFINITE).
  int64_t time_limit_min = 0;
  std::vector<std::string> required_nodes;  // --nodelist, expanded
  std::vector<std::string> excluded_nodes;  // --exclude, expanded
  // Job arrays: the array's id, this task's index (-1: none, or the array's pending rest) and
  // the pending rest's indexes ("3-4"; empty otherwise).
  int64_t array_job_id = 0;
  int64_t array_task_id = -1;
  std::string array_task_string;
  // What scontrol is told to address this record alone: "48_2" for a task of array 48,
  // "48_[3-4]" for its tasks not yet started, the job id otherwise. The array's id names every
  // task of the array (one task keeps it as its own job id), so `scontrol update JobId=48` would
  // write into, hold or requeue all of them (regression:
  // array_task_bound_to_another_tasks_instance).
  std::string Spec() const;
  // Whether the job holds its nodes now (Slurm counts its GRES as used):
  // RUNNING, CONFIGURING, COMPLETING, SUSPENDED.
  bool Active() const;
  bool Pending() const { return state == "PENDING"; }
};
StatusOr<std::vector<SlurmJob>> ParseSqueueJson(std::string_view text);

struct SlurmNode {
  std::string name;
  std::string state;                     // idle, mixed, allocated, down, drained, ...
  std::vector<std::string> state_flags;  // DRAIN, NOT_RESPONDING, ...
  std::vector<GresCount> gres;           // configured now (what `scontrol update` set)
  std::vector<GresCount> gres_used;      // in use by jobs
  std::vector<std::string> partitions;
  std::string reason;
};
StatusOr<std::vector<SlurmNode>> ParseSinfoJson(std::string_view text);
// Whether Slurm starts no new job on the node: drained or draining (flag DRAIN), failing (FAIL)
// or down.
bool StartsNoJob(const SlurmNode& node);
// Whether Slurm has allocated every CPU of the node (state "allocated", e.g. an --exclusive job):
// it starts no other job there until one ends.
bool AllocatedWhole(const SlurmNode& node);

// A `scontrol -o show ...` line: Key=Value words. Value(key) is the word
// after "Key=" up to the next space ("" if absent); for values with spaces
// (Comment=, AdminComment=) use Rest(key): everything after "Key=" to the end.
class ScontrolRecord {
 public:
  explicit ScontrolRecord(std::string line) : line_(std::move(line)) {}
  std::optional<std::string> Value(std::string_view key) const;
  std::optional<std::string> Rest(std::string_view key) const;
  const std::string& line() const { return line_; }

 private:
  size_t Find(std::string_view key) const;
  std::string line_;
};

}  // namespace migsched::slurm

#endif  // MIGSCHED_SLURM_SLURM_OUTPUT_H_
