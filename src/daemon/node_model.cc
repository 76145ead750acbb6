#include "daemon/node_model.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "sched/policy.h"

namespace migsched {
namespace {

// 16 random bytes as 32 hex characters (a fresh id per daemon start).
std::string RandomId(Clock* clock) {
  unsigned char bytes[16] = {};
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  bool ok = false;
  if (fd >= 0) {
    ok = ::read(fd, bytes, sizeof bytes) == static_cast<ssize_t>(sizeof bytes);
    ::close(fd);
  }
  if (!ok) {  // unlikely: fall back on the time and the pid
    const int64_t t = clock->UnixNanos() ^ (static_cast<int64_t>(::getpid()) << 40);
    for (size_t i = 0; i < sizeof bytes; ++i)
      bytes[i] = static_cast<unsigned char>(t >> (8 * (i % 8)));
  }
  std::string out;
  for (unsigned char b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

}  // namespace

StatusOr<std::unique_ptr<NodeModel>> NodeModel::Create(NodeInventory inventory,
                                                       const std::string& policy,
                                                       const SchedulerOptions& options,
                                                       Clock* clock) {
  std::unique_ptr<NodeModel> m(new NodeModel());
  m->inventory_ = std::move(inventory);
  m->policy_ = policy;
  std::vector<const GpuModel*> models;
  for (const DiscoveredGpu& d : m->inventory_.gpus) models.push_back(d.model);
  m->cluster_ = std::make_unique<Cluster>(models, &m->tables_);
  for (int g = 0; g < m->cluster_->size(); ++g) {
    m->cluster_->SetGpuName(g, fmt::format("GPU {}", m->nvml(g)));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<PlacementPolicy> p, MakePolicy(policy, options));
  m->scheduler_ = std::make_unique<Scheduler>(m->cluster_.get(), std::move(p), options, clock);
  // A daemon serves jobs: an internal error refuses one decision, never the daemon.
  m->scheduler_->SetContainInternalErrors(true, kInternalErrorRetryS);
  m->boot_id_ = RandomId(clock);
  return m;
}

int NodeModel::ClusterIndex(NvmlIndex nvml_index) const {
  for (int g = 0; g < size(); ++g) {
    if (nvml(g) == nvml_index) return g;
  }
  return -1;
}

int NodeModel::ProfileIndex(int gpu, const std::string& profile) const {
  return cluster_->gpu(gpu).model().FindProfile(profile);
}

std::string NodeModel::OfferedProfiles() const {
  std::vector<std::string> names;
  for (const GpuModel* m : cluster_->models()) {
    for (int b : m->base_profiles()) {
      if (std::find(names.begin(), names.end(), m->profile(b).name) == names.end()) {
        names.push_back(m->profile(b).name);
      }
    }
  }
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

Status NodeModel::CheckOffered(const Job& job) const {
  for (const GpuModel* m : cluster_->models()) {
    if (ResolveProfile(*m, job) >= 0) return Status();
  }
  if (!job.profile.empty()) {
    return InvalidArgumentError(
        fmt::format("unknown profile '{}': no GPU of this node offers it (profiles: {})",
                    job.profile, OfferedProfiles()));
  }
  return InvalidArgumentError(
      fmt::format("gpu_fraction {}: no profile of this node is large enough", job.gpu_fraction));
}

StatusOr<InstanceRef> NodeModel::Resolve(NvmlIndex nvml_index, const std::string& profile,
                                         int start) const {
  const int g = ClusterIndex(nvml_index);
  if (g < 0) {
    std::string managed;
    for (int i = 0; i < size(); ++i) managed += fmt::format("{}{}", i ? ", " : "", nvml(i));
    return NotFoundError(
        fmt::format("GPU {} is not managed by this daemon (GPUs: {})", nvml_index, managed));
  }
  const GpuModel& model = cluster_->gpu(g).model();
  const int p = model.FindProfile(profile);
  if (p < 0) {
    std::string offered;
    for (int b : model.base_profiles())
      offered += (offered.empty() ? "" : ", ") + model.profile(b).name;
    return InvalidArgumentError(fmt::format("GPU {} ({}) has no profile '{}' (profiles: {})",
                                            nvml_index, model.name(), profile, offered));
  }
  return InstanceRef{g, p, start};
}

void NodeModel::SetDrain(int gpu, DrainReason reason, bool on, const Status& why) {
  if (reason == DrainReason::kOperator) {
    if (on) {
      operator_drained_[gpu] = true;
    } else {
      operator_drained_.erase(gpu);
    }
  } else if (on) {
    unreachable_[gpu] = why;
  } else {
    unreachable_.erase(gpu);
  }
  cluster_->SetDrained(gpu, operator_drained_.count(gpu) > 0 || unreachable_.count(gpu) > 0);
  Touch();
}

bool NodeModel::drained_by_operator(int gpu) const { return operator_drained_.count(gpu) > 0; }

std::string NodeModel::unreachable(int gpu) const {
  auto it = unreachable_.find(gpu);
  return it == unreachable_.end() ? "" : it->second.message();
}

bool NodeModel::needs_reset(int gpu) const {
  auto it = unreachable_.find(gpu);
  return it != unreachable_.end() && it->second.reason() == StatusReason::kNeedsReset;
}

std::vector<std::string> NodeModel::OperatorDrainedUuids() const {
  std::vector<std::string> out;
  for (const auto& [g, on] : operator_drained_) out.push_back(uuid(g));
  return out;
}

uint64_t NodeModel::generation() const { return cluster_->change_cursor().position + touches_; }

}  // namespace migsched
