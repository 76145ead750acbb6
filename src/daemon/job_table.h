// JobTable: the daemon's jobs and allocations in memory, each in two
// versions:
//   current  what the daemon knows now (it drives the control loop);
//   visible  the last version committed to the job store: the only one the
//            API shows (the daemon never shows a state it has not stored).
// Every change of `current` gets a version number; a commit makes that
// version visible unless a newer one already is (commits are in order).
//
// Also the indices the API needs: by idempotency key, by owner (allocations),
// and ordered by id for paged listings.
//
// Thread-safety: none; the daemon's state lock guards it.
#ifndef MIGSCHED_DAEMON_JOB_TABLE_H_
#define MIGSCHED_DAEMON_JOB_TABLE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/job.h"
#include "nodeapi/api_types.h"
#include "nodeapi/job_record.h"

namespace migsched {

class JobTable {
 public:
  // Adds a record committed to the store (visible at once): an allocation, or a job that ended.
  void AddStored(const DaemonJobRecord& r);
  // The same for a job that may still run, with `job`, the scheduler core's view of its request
  // (JobRequest::ToJob). A job's Job is derived once, where the job enters the daemon (Submit,
  // or recovery from the store), and kept here for every later use (JobOf): the queue, requeues
  // after a failed placement, the waiting reasons.
  void AddStored(const DaemonJobRecord& r, Job job);
  // The Job kept with job `id` (AddStored with a Job), or nullptr (an unknown id, an allocation,
  // a job that had ended when it was added).
  const Job* JobOf(DaemonJobId id) const;
  bool contains(DaemonJobId id) const { return entries_.count(id) > 0; }
  // The current version (nullptr if unknown).
  DaemonJobRecord* Current(DaemonJobId id);
  const DaemonJobRecord* Current(DaemonJobId id) const;
  // The visible version (nullptr if unknown).
  const DaemonJobRecord* Visible(DaemonJobId id) const;
  // Replaces the current version; returns its version number.
  uint64_t Update(const DaemonJobRecord& r);
  // A commit of version `version` of `r`: visible unless a newer version is.
  void Committed(const DaemonJobRecord& r, uint64_t version);
  // Forgets a job (pruned).
  void Erase(DaemonJobId id);

  // The job that was given idempotency key `key`, or 0.
  DaemonJobId ByKey(const std::string& key) const;
  // Visible records matching `q`.
  JobPage List(const JobQuery& q) const;
  // Ids of the current records that are not terminal, ascending.
  std::vector<DaemonJobId> Live() const;
  // Ids of allocations of owner `owner` that are not terminal.
  std::vector<DaemonJobId> LiveAllocationsOf(const std::string& owner) const;
  // Terminal jobs (visible) that ended before `before` (Unix seconds).
  std::vector<DaemonJobId> EndedBefore(double before) const;
  // Visible records per state (every state, 0 included).
  std::map<std::string, int64_t> CountByState() const;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::optional<Job> job;  // kJob records added with their Job
    DaemonJobRecord current;
    DaemonJobRecord visible;
    uint64_t version = 0;
    uint64_t visible_version = 0;
  };
  std::map<DaemonJobId, Entry> entries_;
  std::map<std::string, DaemonJobId> by_key_;
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_JOB_TABLE_H_
