// The memory a simulation run needs, estimated before it starts, and the
// refusal of a run that would not fit in the machine (--no-memory-check
// overrides it). The per-job costs are measured, not derived: see
// docs/performance.md ("Memory per job") for the runs behind them.
#ifndef MIGSCHED_CLI_MEMORY_CHECK_H_
#define MIGSCHED_CLI_MEMORY_CHECK_H_

#include <cstdint>
#include <string>

#include "core/status.h"

namespace migsched::cli {

// What a command is about to hold in memory.
struct RunShape {
  int64_t jobs = 0;       // jobs of each workload
  int workloads = 1;      // workloads held at once (a sweep over load or pcie-share: one a value)
  int parallel_runs = 1;  // simulations running at once (compare/report/sweep --threads)
  int total_runs = 1;     // simulations whose results are kept until the end
  bool record_jobs = false;      // per-job records kept (--jobs-csv, --report)
  bool record_timeline = false;  // the timeline kept (--timeline-csv, --report)
};

// Costs in bytes, measured (docs/performance.md: about 200, 225, 175 and 120)
// and rounded up so that the estimate errs on the high side.
inline constexpr double kWorkloadBytesPerJob = 250;  // a Job in the workload vector
inline constexpr double kRunBytesPerJob = 300;       // a running simulation's per-job state
inline constexpr double kRecordBytesPerJob = 200;    // a kept JobRecord (--jobs-csv, --report)
inline constexpr double kTimelineBytesPerJob = 150;  // timeline samples (--timeline-csv, --report)
inline constexpr double kBaseBytes = 32e6;           // the program, catalog and tables

// Bytes `shape` needs at its peak: workloads × jobs × kWorkloadBytesPerJob +
// parallel_runs × jobs × kRunBytesPerJob + total_runs × jobs × (records and
// timeline when kept) + kBaseBytes.
double EstimateMemoryBytes(const RunShape& shape);

// Bytes this process may still allocate: MemAvailable of /proc/meminfo, or the
// room left under the cgroup's memory.max when that is lower. 0 if unknown.
double AvailableMemoryBytes();

// kResourceExhausted when EstimateMemoryBytes(shape) exceeds `available_bytes`
// (> 0; 0 = unknown: no check), e.g. "this run needs about 41.0 GB (100000000
// jobs; 8 simulations at once) but 11.2 GB of memory is available: lower
// --jobs or --threads, or give --no-memory-check to run anyway".
Status CheckMemory(const RunShape& shape, double available_bytes);

// "11.2 GB", "640 MB".
std::string FormatBytes(double bytes);

}  // namespace migsched::cli

#endif  // MIGSCHED_CLI_MEMORY_CHECK_H_
