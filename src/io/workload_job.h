// A workload's job: the request that a scheduler sees, and the run's truth
// that only the simulator knows (docs/algorithms.md §9, "Run-time knowledge").
//
// Traces (io/trace_reader.h, io/alibaba_loader.h) and the simulator's
// generators (sim/) produce WorkloadJobs. The simulator hands the scheduler
// only the request part, through one function (sim/knowledge.h:
// SchedulerVisibleJob), and plays the run from the truth. The scheduler, its
// policies and the drivers (daemon, Slurm, Kubernetes) take `Job`, which has no
// field for the truth, so the compiler keeps them from reading it. This header
// is for io/, sim/ and what sits on them (cli/, report/, bench/, fuzz/, tests);
// sched/, cluster/, daemon/, slurm/ and k8s/ never include it (checked by the
// layering test, tests/layering_test.sh).
//
// Thread-safety: plain values.
#ifndef MIGSCHED_IO_WORKLOAD_JOB_H_
#define MIGSCHED_IO_WORKLOAD_JOB_H_

#include "core/job.h"

namespace migsched {

// What happens when a job runs: known to the simulator, never to a scheduler.
struct RunTruth {
  double duration_s = 0;  // run time without contention, seconds, > 0
  double pcie_gbps = 0;   // PCIe demand, GB/s (§8); 0 = not PCIe-bound
  double alpha = 1.0;     // contention sensitivity (§8), > 0
};

// The run times a workload may give (RunTruth::duration_s), seconds: from 1 µs to 1e15 s (about
// 32 million years). Beyond them the outputs' sums and ratios leave the doubles (a duration of
// 1e308 s made the utilisation inf / inf, one of 5e-324 s an infinite slowdown), so a trace or
// a workload outside them is refused with the bound (regression:
// extreme_durations_printed_nan).
inline constexpr double kMinDurationS = 1e-6;
inline constexpr double kMaxDurationS = 1e15;

// One job of a workload: the request (Job) and the run's truth (RunTruth).
// Where a `const Job&` is expected it passes the request alone; where a
// `const RunTruth&` is expected, the truth alone.
struct WorkloadJob : Job, RunTruth {
  const Job& request() const { return *this; }
};

}  // namespace migsched

#endif  // MIGSCHED_IO_WORKLOAD_JOB_H_
