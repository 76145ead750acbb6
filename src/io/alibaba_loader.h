// Loading Alibaba cluster-trace-gpu-v2023 pod lists (the "openb" trace of
// Weng et al., "Beware of Fragmentation", USENIX ATC'23) as a workload (§10
// of docs/algorithms.md; the mapping is described in docs/formats/trace.md).
//
// Input: openb_pod_list_*.csv with the header
//   name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,
//   creation_time,deletion_time,scheduled_time
// Columns are found by name; name, num_gpu, gpu_milli, creation_time,
// deletion_time and scheduled_time are required (so the multigpu* files, which
// carry no times, are rejected); qos and pod_phase are optional; the other
// columns (cpu_milli, memory_mib, gpu_spec) are read past, unused. Times are in
// seconds from the trace start; an empty scheduled_time/deletion_time means
// "not recorded". The file is read with io/strict_csv.h (no quoting).
//
// Mapping of one pod to a Job (our choice, documented in docs/formats/trace.md):
//  * num_gpu == 0 (CPU-only): no job; counted as skipped.
//  * num_gpu == 1: gpu_fraction = gpu_milli / 1000 (1.0 for a whole GPU),
//    resolved on each GPU model by options.fraction_rule (compute by default:
//    the smallest base profile with compute slices / model slices >= fraction;
//    memory: the same with memory slices), see core/job.h ResolveProfile.
//  * num_gpu > 1: a gang of num_gpu full-GPU instances (count = num_gpu,
//    gpu_fraction 1.0); the trace's multi-GPU pods always have gpu_milli 1000.
//  * duration_s = deletion_time - scheduled_time. A pod without
//    scheduled_time (never scheduled: Pending) or without deletion_time has
//    no run time: no job, counted as skipped with the reason; likewise a pod
//    whose deletion_time <= scheduled_time.
//  * arrival_s = creation_time, unchanged. These times do not describe load
//    (§10): regenerate them with sim/arrivals.h before simulating.
//  * latency_sensitive = (qos == "LS") (Alibaba's "latency-sensitive" class;
//    BE, Burstable, Guaranteed are not), unless options say otherwise.
//  * migratable = options.migratable (default checkpoint: the trace says
//    nothing; most of its pods are ML training/inference containers that can
//    be checkpointed; this is our assumption). pcie_gbps 0, alpha 1.
//
// Errors (kInvalidArgument; kNotFound when the file cannot be opened) name the
// file, line, field and reason, e.g.
//   "pods.csv:12: field 'num_gpu': 'x' must be an integer >= 0".
// The first error stops the load.
//
// Thread-safety: functions are reentrant.
#ifndef MIGSCHED_IO_ALIBABA_LOADER_H_
#define MIGSCHED_IO_ALIBABA_LOADER_H_

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/workload_job.h"

namespace migsched {

struct AlibabaOptions {
  // How gpu_fraction becomes a profile on each model (default: compute).
  FractionRule fraction_rule = FractionRule::kCompute;
  // migratable of every job (the trace carries no such information).
  Migratable migratable = Migratable::kCheckpoint;
  // true: qos "LS" pods are latency-sensitive (never moved between GPUs, §6);
  // false: no job is latency-sensitive.
  bool ls_is_latency_sensitive = true;
  // Keep only the first max_jobs jobs by creation_time (ties: file order);
  // 0 = all. The rest are counted as skipped. Must be >= 0.
  int64_t max_jobs = 0;
};

// The most GPUs one pod may ask for (num_gpu; the bundled pod list's ask for at most 8).
inline constexpr int64_t kMaxPodGpus = 1'000'000;

// One row of a pod list, validated but not yet mapped.
struct AlibabaPod {
  int line = 0;  // 1-based line in the file
  std::string name;
  int num_gpu = 0;                       // GPUs wanted, 0..kMaxPodGpus
  int gpu_milli = 0;                     // per-GPU share in thousandths, 0..1000
  std::string qos;                       // "" when the column is absent
  std::string pod_phase;                 // "" when the column is absent
  double creation_time = 0;              // seconds
  std::optional<double> scheduled_time;  // seconds; empty when not recorded
  std::optional<double> deletion_time;   // seconds; empty when not recorded
};

// A group of pods that produced no job, e.g. {861, "pending pods without
// scheduled_time"}.
struct SkippedPods {
  int64_t count = 0;
  std::string reason;
  // "861 pending pods without scheduled_time".
  std::string ToString() const;
};

struct AlibabaWorkload {
  std::vector<WorkloadJob> jobs;     // sorted by arrival_s (stable)
  std::vector<SkippedPods> skipped;  // non-zero groups, in order of first occurrence
  int64_t pods = 0;                  // data rows read
};

// Reads and validates every row. Errors as above; also a duplicate pod name,
// num_gpu not an integer >= 0 or above kMaxPodGpus (out of range), gpu_milli not
// an integer in [0, 1000],
// gpu_milli 0 on a GPU pod, gpu_milli != 1000 on a multi-GPU pod, and times
// that are not finite numbers >= 0.
StatusOr<std::vector<AlibabaPod>> ParseAlibabaPods(std::istream& in, const std::string& origin);

// The job a GPU pod (num_gpu >= 1) asks for, by the mapping above; arrival_s
// = creation_time, duration_s = deletion_time - scheduled_time when both are
// recorded, else 0 (the caller skips such pods).
WorkloadJob AlibabaPodToJob(const AlibabaPod& pod, const AlibabaOptions& options);

// Parses a pod list and maps it to a workload (jobs + skipped summary).
StatusOr<AlibabaWorkload> ParseAlibabaPodList(std::istream& in, const std::string& origin,
                                              const AlibabaOptions& options);
// Same, from a file.
StatusOr<AlibabaWorkload> LoadAlibabaPodList(const std::string& path,
                                             const AlibabaOptions& options);

}  // namespace migsched

#endif  // MIGSCHED_IO_ALIBABA_LOADER_H_
