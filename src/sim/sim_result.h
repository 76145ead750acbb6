// What a simulation returns (§9 of docs/algorithms.md): the metrics, one
// record per job, the timeline of cluster state, and (fill mode) the load
// curve. Column meanings and units: docs/formats/outputs.md.
//
// Thread-safety: values.
#ifndef MIGSCHED_SIM_SIM_RESULT_H_
#define MIGSCHED_SIM_SIM_RESULT_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/job.h"
#include "sched/scheduler.h"
#include "sim/metrics.h"

namespace migsched {

enum class JobOutcome {
  kCompleted,  // online: ran to completion
  kTimeout,    // online: ended at its time limit while still running (Job::time_limit_s)
  kRejected,   // online: can never run on this cluster (reason given)
  kPlaced,     // fill: placed at arrival
  kFailed,     // fill: no room at arrival
};
// "completed", "timeout", "rejected", "placed", "failed".
std::string_view JobOutcomeName(JobOutcome o);

// One job (online) or one arrival (fill; a job taken again when the workload
// is cycled gets another record with the same id). Times are virtual seconds;
// NaN where they do not apply (a rejected job has no start; fill mode has no
// times at all).
struct JobRecord {
  JobId id = kNoJob;    // index in the workload
  std::string name;     // Job::name
  std::string request;  // Job::RequestString()
  double arrival_s = 0;
  double placed_s = 0;  // decision time (its reconfigurations start then)
  double start_s = 0;   // starts running (after its reconfigurations)
  double end_s = 0;
  double wait_s = 0;      // start - arrival
  double jct_s = 0;       // end - arrival
  std::string instances;  // "gpu:profile@start" joined by ';', e.g. "0:3g.20gb@4;1:3g.20gb@0"
  JobOutcome outcome = JobOutcome::kCompleted;
  std::string reason;      // why it was rejected; empty otherwise
  int64_t migrations = 0;  // §6 moves of the job completed
  double duration_s = 0;   // Job::duration_s (run time without contention); NaN in fill mode
  double time_limit_s = std::numeric_limits<double>::quiet_NaN();  // Job::time_limit_s; NaN: none
  bool operator==(const JobRecord&) const;                         // NaN == NaN here
};

// The cluster right after every event time (events at one time coalesced).
struct TimelineSample {
  double time_s = 0;
  int64_t queue_length = 0;  // jobs waiting in the scheduler's queue
  int64_t running_jobs = 0;  // jobs holding instances (placed, not completed)
  double utilization = 0;    // busy / total compute slices
  double frag_rate = 0;      // mean FragCost over GPUs (§2)
  double stranded = 0;       // stranded share (sim/cluster_tracker.h)
  bool operator==(const TimelineSample&) const = default;
};

// Fill mode: the state when requested compute first reaches `target_share`.
struct FillPoint {
  double target_share = 0;     // 0.05, 0.10, ... (requested / cluster compute slices)
  double requested_share = 0;  // the actual requested share at that arrival
  double allocation = 0;       // busy / total compute slices
  double acceptance = 0;       // placed / arrived
  double frag_rate = 0;
  int64_t arrived = 0;
  int64_t placed = 0;
  bool operator==(const FillPoint&) const = default;
};

// The MIG instances of the cluster at one instant (SimOptions::snapshot_times,
// snapshot_peak_frag), for the report's slot maps.
struct SnapshotInstance {
  std::string profile;  // profile name, e.g. "3g.20gb"
  int start = 0;        // placement units
  int size = 0;         // placement units
  JobId job = kNoJob;   // the job running on it; kNoJob: idle
  bool operator==(const SnapshotInstance&) const = default;
};
struct GpuSnapshot {
  std::string model;                        // GpuModel::name()
  int placement_units = 0;                  // width of its placement grid
  double fragcost = 0;                      // FragCost of its busy instances (§2)
  std::vector<SnapshotInstance> instances;  // ascending start
  bool operator==(const GpuSnapshot&) const = default;
};
struct ClusterSnapshot {
  // The state holding at time_s: after every event at or before it.
  double time_s = 0;
  bool peak_fragmentation = false;  // taken at the run's fragmentation peak
  double frag_rate = 0;             // mean FragCost over GPUs (§2)
  double utilization = 0;           // busy / total compute slices
  std::vector<GpuSnapshot> gpus;    // GPU i at index i
  bool operator==(const ClusterSnapshot&) const = default;
};
// The instances of `cluster` now, labelled `time_s`.
ClusterSnapshot SnapshotCluster(const Cluster& cluster, double time_s);

struct SimResult {
  Metrics metrics;
  std::vector<JobRecord> jobs;           // SimOptions::record_jobs
  std::vector<TimelineSample> timeline;  // online, SimOptions::record_timeline
  std::vector<FillPoint> fill_curve;     // fill mode
  // Online: one per SimOptions::snapshot_times (ascending time), then the
  // fragmentation peak if SimOptions::snapshot_peak_frag.
  std::vector<ClusterSnapshot> snapshots;
  // Online: the event times processed (each followed by one queue scan at most, and by one
  // self-check when SimOptions::self_check is on). Every event time holds at least one event
  // (an arrival, a start or completion, a move's steps, a timer, a periodic migration tick), so
  // the run's work is proportional to it. 0 in fill mode.
  int64_t event_times = 0;
};

// "0:3g.20gb@4;1:3g.20gb@0" for the instances of one job.
std::string DescribeInstances(const Cluster& cluster, const std::vector<InstanceRef>& instances);

}  // namespace migsched

#endif  // MIGSCHED_SIM_SIM_RESULT_H_
