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

StatusOr<ScontrolRecord> SlurmClient::Job(int64_t id) { return Job(std::to_string(id)); }

StatusOr<ScontrolRecord> SlurmClient::Job(const std::string& spec) {
  ASSIGN_OR_RETURN(CommandResult r, Run({"scontrol", "-o", "show", "job", spec}));
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
  return SetAdminComment(std::to_string(job), text);
}

Status SlurmClient::SetAdminComment(const std::string& spec, const std::string& text) {
  return RunOk({"scontrol", "update", "JobId=" + spec, "AdminComment=" + text});
}

Status SlurmClient::Requeue(int64_t job) { return Requeue(std::to_string(job)); }

Status SlurmClient::Requeue(const std::string& spec) {
  return RunOk({"scontrol", "requeue", spec});
}

Status SlurmClient::Hold(int64_t job) { return Hold(std::to_string(job)); }

Status SlurmClient::Hold(const std::string& spec) { return RunOk({"scontrol", "hold", spec}); }

Status SlurmClient::StartNow(int64_t job) { return StartNow(std::to_string(job)); }

Status SlurmClient::StartNow(const std::string& spec) {
  return RunOk({"scontrol", "update", "JobId=" + spec, "StartTime=now"});
}

}  // namespace migsched::slurm
