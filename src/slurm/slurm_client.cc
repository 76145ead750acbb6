#include "slurm/slurm_client.h"

#include <fmt/format.h>

namespace migsched::slurm {

std::string FormatGresValue(const std::vector<GresCount>& gres) {
  std::vector<std::string> parts;
  for (const GresCount& g : gres) {
    parts.push_back(g.type.empty() ? fmt::format("{}:{}", g.name, g.count)
                                   : fmt::format("{}:{}:{}", g.name, g.type, g.count));
  }
  return fmt::format("{}", fmt::join(parts, ","));
}

StatusOr<CommandResult> SlurmClient::Run(const std::vector<std::string>& argv) {
  ASSIGN_OR_RETURN(CommandResult r, runner_->Run(argv, timeout_s_));
  if (r.exit_code != 0) {
    std::string err = r.err.empty() ? r.out : r.err;
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    return UnavailableError(
        fmt::format("{} exited with {}: {}", CommandLine(argv), r.exit_code, err));
  }
  return r;
}

Status SlurmClient::RunOk(const std::vector<std::string>& argv) { return Run(argv).status(); }

StatusOr<std::vector<SlurmJob>> SlurmClient::Jobs() {
  ASSIGN_OR_RETURN(CommandResult r, Run({"squeue", "--json"}));
  return ParseSqueueJson(r.out);
}

StatusOr<std::vector<SlurmNode>> SlurmClient::Nodes() {
  ASSIGN_OR_RETURN(CommandResult r, Run({"sinfo", "--json"}));
  return ParseSinfoJson(r.out);
}

StatusOr<ScontrolRecord> SlurmClient::Job(int64_t id) {
  ASSIGN_OR_RETURN(CommandResult r, Run({"scontrol", "-o", "show", "job", std::to_string(id)}));
  return ScontrolRecord(r.out);
}

StatusOr<ScontrolRecord> SlurmClient::Partition(const std::string& name) {
  ASSIGN_OR_RETURN(CommandResult r, Run({"scontrol", "-o", "show", "partition", name}));
  return ScontrolRecord(r.out);
}

Status SlurmClient::SetNodeGres(const std::string& node, const std::vector<GresCount>& gres) {
  return RunOk({"scontrol", "update", "NodeName=" + node, "Gres=" + FormatGresValue(gres)});
}

Status SlurmClient::SetPartitionUp(const std::string& partition, bool up) {
  return RunOk(
      {"scontrol", "update", "PartitionName=" + partition, up ? "State=UP" : "State=DOWN"});
}

Status SlurmClient::SetAdminComment(int64_t job, const std::string& text) {
  return RunOk({"scontrol", "update", fmt::format("JobId={}", job), "AdminComment=" + text});
}

Status SlurmClient::Requeue(int64_t job) {
  return RunOk({"scontrol", "requeue", std::to_string(job)});
}

Status SlurmClient::Hold(int64_t job) { return RunOk({"scontrol", "hold", std::to_string(job)}); }

Status SlurmClient::StartNow(int64_t job) {
  return RunOk({"scontrol", "update", fmt::format("JobId={}", job), "StartTime=now"});
}

}  // namespace migsched::slurm
