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

// One job of a workload: the request (Job) and the run's truth (RunTruth).
// Where a `const Job&` is expected it passes the request alone; where a
// `const RunTruth&` is expected, the truth alone.
struct WorkloadJob : Job, RunTruth {
  const Job& request() const { return *this; }
};

}  // namespace migsched

#endif  // MIGSCHED_IO_WORKLOAD_JOB_H_
