// The Slurm hooks (docs/slurm.md "Hooks"), run by Slurm with no arguments
// through the scripts `migsched slurm config --write-hooks` writes:
//
//   PrologSlurmctld = `migsched slurm prolog`: on the slurmctld host, as
//     SlurmUser, when Slurm has allocated the job. For each of the job's
//     nodes it has the node daemon create the job's instances, one allocation
//     per instance, each bound to a room of its profile (a reservation under
//     "slurm-room:"; any such room fits), or, if the node has none (the
//     controller was not running), at a free placement the daemon chooses. All nodes or none: on a
//     failure the allocations made are released, AdminComment says "bind failed (attempt N of M):
//     why" and the prolog exits 1, so Slurm requeues the batch job (never a node Prolog, whose
//     failure drains the node); at the M-th failure the job is also held. On success AdminComment
//     records the binding (slurm/admin_comment.h).
//   TaskProlog = `migsched slurm task-prolog`: on the node, as the job's
//     user, before each task. Prints `export CUDA_VISIBLE_DEVICES=MIG-...`
//     and the MIGSCHED_* facts of the job's instances on this node, read from
//     the job's AdminComment; exits 1 (the task does not start) when the job
//     asks for MIG instances and none is bound here.
//   EpilogSlurmctld = `migsched slurm epilog`: releases the job's allocations
//     on its nodes (kept idle for reuse or destroyed, as the daemon does).
//     Its failures are only logged by Slurm; the controller reclaims
//     allocations of ended jobs anyway.
//
// Each returns the process exit code and writes its messages to `err`.
//
// Thread-safety: single-threaded.
#ifndef MIGSCHED_SLURM_HOOKS_H_
#define MIGSCHED_SLURM_HOOKS_H_

#include <functional>
#include <ostream>
#include <string>

#include "cluster/node_daemons.h"
#include "slurm/controller_config.h"
#include "slurm/slurm_client.h"

namespace migsched::slurm {

// The environment (getenv in production).
using Env = std::function<std::string(const std::string& name)>;

// How scontrol is told the hook's job: SLURM_JOB_ID, or, for a task of a job array,
// SLURM_ARRAY_JOB_ID_SLURM_ARRAY_TASK_ID ("48_2"). An array's job id also names every task of
// the array (one task keeps it as its own id), so `scontrol update JobId=48` would write one
// task's binding into all of them (regression: array_task_bound_to_another_tasks_instance).
// Empty when SLURM_JOB_ID is not a positive integer. The allocations' owner stays
// "slurm:<SLURM_JOB_ID>", unique per task.
std::string JobSpecFromEnv(const Env& env);

// Sleeps `seconds` (real time in production; tests pass their own).
using Sleep = std::function<void(double seconds)>;
void RealSleep(double seconds);

// A bind that finds no room and no free placement on a node
// (kFailedPrecondition) is retried every 0.25 s for up to config.bind_wait_s:
// Slurm frees an ended job's GRES before its EpilogSlurmctld has released
// the instance, and may start the next job of that profile there at once.
int RunProlog(const ControllerConfig& config, SlurmClient* slurm, NodeDaemons* nodes,
              const Env& env, std::ostream& err, const Sleep& sleep = RealSleep);
int RunTaskProlog(const std::string& gres_name, SlurmClient* slurm, const Env& env,
                  std::ostream& out, std::ostream& err);
int RunEpilog(const ControllerConfig& config, SlurmClient* slurm, NodeDaemons* nodes,
              const Env& env, std::ostream& err);

}  // namespace migsched::slurm

#endif  // MIGSCHED_SLURM_HOOKS_H_
