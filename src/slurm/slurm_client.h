// SlurmClient: the Slurm commands the controller and the hooks run, typed
// (each a `squeue`/`sinfo`/`scontrol` invocation through a CommandRunner).
// A command that exits non-zero is kUnavailable with its stderr; output that
// does not parse is kInvalidArgument (slurm/slurm_output.h).
//
// Thread-safety: as the runner.
#ifndef MIGSCHED_SLURM_SLURM_CLIENT_H_
#define MIGSCHED_SLURM_SLURM_CLIENT_H_

#include <string>
#include <vector>

#include "cluster/capacity.h"
#include "slurm/command_runner.h"
#include "slurm/slurm_output.h"

namespace migsched::slurm {

class SlurmClient {
 public:
  // `runner` must outlive the client.
  SlurmClient(CommandRunner* runner, double timeout_s) : runner_(runner), timeout_s_(timeout_s) {}

  StatusOr<std::vector<SlurmJob>> Jobs();    // squeue --json
  StatusOr<std::vector<SlurmNode>> Nodes();  // sinfo --json
  // scontrol -o show job ID / show partition NAME. `spec` is what scontrol takes for one job:
  // its id, or ARRAYID_TASKID for a task of a job array (slurm/hooks.h JobRefFromEnv).
  StatusOr<ScontrolRecord> Job(int64_t id);
  StatusOr<ScontrolRecord> Job(const std::string& spec);
  StatusOr<ScontrolRecord> Partition(const std::string& name);

  // scontrol update NodeName=N Gres=<gres>: the whole GRES list of the node.
  Status SetNodeGres(const std::string& node, const std::vector<GresCount>& gres);
  // scontrol update PartitionName=P State=UP|DOWN.
  Status SetPartitionUp(const std::string& partition, bool up);
  Status SetAdminComment(int64_t job, const std::string& text);
  Status SetAdminComment(const std::string& spec, const std::string& text);
  Status Requeue(int64_t job);  // scontrol requeue
  Status Requeue(const std::string& spec);
  Status Hold(int64_t job);  // scontrol hold
  Status Hold(const std::string& spec);
  Status StartNow(int64_t job);  // scontrol update JobId=J StartTime=now
  Status StartNow(const std::string& spec);

 private:
  StatusOr<CommandResult> Run(const std::vector<std::string>& argv);
  Status RunOk(const std::vector<std::string>& argv);

  CommandRunner* runner_;
  double timeout_s_;
};

// "mig:1g.5gb:2,gpu:a100:4": a Gres= value (entries without a type as name:count).
std::string FormatGresValue(const std::vector<GresCount>& gres);

}  // namespace migsched::slurm

#endif  // MIGSCHED_SLURM_SLURM_CLIENT_H_
