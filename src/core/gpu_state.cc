#include "core/gpu_state.h"

#include <fmt/format.h>

#include <algorithm>

namespace migsched {

int GpuState::IndexAt(int start) const {
  for (size_t i = 0; i < instances_.size(); ++i) {
    if (instances_[i].start == start) return static_cast<int>(i);
  }
  return -1;
}

int GpuState::CountProfile(int profile) const {
  int n = 0;
  for (const Instance& in : instances_) n += in.profile == profile ? 1 : 0;
  return n;
}

Status GpuState::Create(int profile, int start) {
  if (profile < 0 || profile >= static_cast<int>(model_->profiles().size())) {
    return InternalError(fmt::format("create: no profile #{} on {}", profile, model_->name()));
  }
  const Profile& p = model_->profile(profile);
  const int slot = model_->SlotOf(profile, start);
  if (slot < 0) {
    return InternalError(fmt::format("create {}@{}: {} is not a placement of {} on {}", p.name,
                                     start, start, p.name, model_->name()));
  }
  const uint64_t units = model_->slots()[slot].unit_mask;
  for (const Instance& in : instances_) {
    if (model_->slots()[in.slot].unit_mask & units) {
      return InternalError(fmt::format("create {}@{}: overlaps {}@{}", p.name, start,
                                       model_->profile(in.profile).name, in.start));
    }
  }
  const ConfigId all = table_->Add(all_config_, slot);
  if (all == kInvalidConfig) {
    return InternalError(
        fmt::format("create {}@{}: exceeds the {} compute slices of {} or the "
                    "profile's max instances",
                    p.name, start, model_->compute_slices(), model_->name()));
  }
  if (CountProfile(profile) + 1 > p.max_instances) {
    return InternalError(fmt::format("create {}@{}: {} allows at most {} instance(s)", p.name,
                                     start, p.name, p.max_instances));
  }
  Instance in;
  in.profile = profile;
  in.start = start;
  in.slot = slot;
  instances_.insert(
      std::upper_bound(instances_.begin(), instances_.end(), in,
                       [](const Instance& a, const Instance& b) { return a.start < b.start; }),
      in);
  all_config_ = all;
  return Status();
}

Status GpuState::Destroy(int start) {
  const int i = IndexAt(start);
  if (i < 0) return InternalError(fmt::format("destroy @{}: no instance starts there", start));
  const Instance& in = instances_[i];
  if (in.busy()) {
    return InternalError(fmt::format("destroy {}@{}: busy with job {}",
                                     model_->profile(in.profile).name, start, in.job));
  }
  all_config_ = table_->Remove(all_config_, in.slot);
  instances_.erase(instances_.begin() + i);
  return Status();
}

std::string Instance::HolderString() const {
  if (!busy()) return "";
  return fmt::format("{} {}", HolderName(holder), job);
}

Status GpuState::StartJob(int profile, int start, JobId job, Holder holder) {
  const int i = IndexAt(start);
  const std::string who = fmt::format("{} {}", HolderName(holder), job);
  if (i < 0)
    return InternalError(fmt::format("start {} @{}: no instance starts there", who, start));
  Instance& in = instances_[i];
  if (in.profile != profile) {
    return InternalError(fmt::format("start {} on {}@{}: the instance there is {}", who,
                                     model_->profile(profile).name, start,
                                     model_->profile(in.profile).name));
  }
  if (in.busy()) {
    return InternalError(fmt::format("start {} on {}@{}: already busy with {}", who,
                                     model_->profile(in.profile).name, start, in.HolderString()));
  }
  if (job == kNoJob) return InternalError("start: no job given");
  in.job = job;
  in.holder = holder;
  busy_config_ = table_->Add(busy_config_, in.slot);
  if (busy_config_ == kInvalidConfig)
    return InternalError("start: busy configuration became invalid");
  settled_config_ = table_->Add(settled_config_, in.slot);  // a subset of busy: valid
  return Status();
}

Status GpuState::ReleaseJob(int start, JobId job, Holder holder) {
  const int i = IndexAt(start);
  const std::string who = fmt::format("{} {}", HolderName(holder), job);
  if (i < 0) {
    return InternalError(fmt::format("release {} @{}: no instance starts there", who, start));
  }
  Instance& in = instances_[i];
  if (in.job != job || in.holder != holder || !in.busy()) {
    return InternalError(fmt::format("release {} @{}: the instance is held by {}", who, start,
                                     in.busy() ? in.HolderString() : "nobody"));
  }
  in.job = kNoJob;
  in.holder = Holder::kJob;
  // A migration source is not in the settled configuration any more.
  if (in.migration != MigrationRole::kSource) {
    settled_config_ = table_->Remove(settled_config_, in.slot);
  }
  in.migration = MigrationRole::kNone;
  in.peer_gpu = -1;
  in.peer_start = -1;
  busy_config_ = table_->Remove(busy_config_, in.slot);
  return Status();
}

Status GpuState::BeginMigrationTarget(int profile, int start, JobId job, int peer_gpu,
                                      int peer_start) {
  if (peer_gpu < 0 || peer_start < 0) return InternalError("migration target: no source given");
  RETURN_IF_ERROR(StartJob(profile, start, job).WithPrefix("migration target"));
  Instance& in = instances_[IndexAt(start)];
  in.migration = MigrationRole::kTarget;
  in.peer_gpu = peer_gpu;
  in.peer_start = peer_start;
  return Status();
}

Status GpuState::BeginMigrationSource(int start, JobId job, int peer_gpu, int peer_start) {
  const int i = IndexAt(start);
  if (i < 0)
    return InternalError(fmt::format("migration source @{}: no instance starts there", start));
  Instance& in = instances_[i];
  if (!in.runs_job() || in.job != job || job == kNoJob) {
    return InternalError(fmt::format("migration source {}@{}: {}, not job {}",
                                     model_->profile(in.profile).name, start,
                                     in.runs_job() ? fmt::format("runs job {}", in.job)
                                     : in.busy()   ? "held by " + in.HolderString()
                                                   : std::string("idle"),
                                     job));
  }
  if (in.migration != MigrationRole::kNone) {
    return InternalError(fmt::format("migration source {}@{}: job {} is already being moved",
                                     model_->profile(in.profile).name, start, job));
  }
  if (peer_gpu < 0 || peer_start < 0) return InternalError("migration source: no target given");
  in.migration = MigrationRole::kSource;
  in.peer_gpu = peer_gpu;
  in.peer_start = peer_start;
  settled_config_ = table_->Remove(settled_config_, in.slot);
  return Status();
}

namespace {

// The instance at `start` of `instances` in `role` for `job` with that peer, or an error.
Status CheckEnd(const GpuModel& m, const std::vector<Instance>& instances, int index, int start,
                JobId job, MigrationRole role, int peer_gpu, int peer_start) {
  const char* what = role == MigrationRole::kSource ? "source" : "target";
  if (index < 0)
    return InternalError(fmt::format("migration {} @{}: no instance starts there", what, start));
  const Instance& in = instances[index];
  if (!in.runs_job() || in.job != job || in.migration != role || in.peer_gpu != peer_gpu ||
      in.peer_start != peer_start) {
    return InternalError(
        fmt::format("{}@{} is not the migration {} of job {} paired with GPU {} @{}",
                    m.profile(in.profile).name, start, what, job, peer_gpu, peer_start));
  }
  return Status();
}

}  // namespace

Status GpuState::EndMigrationTarget(int start, JobId job, int peer_gpu, int peer_start) {
  const int i = IndexAt(start);
  RETURN_IF_ERROR(
      CheckEnd(*model_, instances_, i, start, job, MigrationRole::kTarget, peer_gpu, peer_start));
  Instance& in = instances_[i];
  in.migration = MigrationRole::kNone;
  in.peer_gpu = -1;
  in.peer_start = -1;
  return Status();
}

Status GpuState::EndMigrationSource(int start, JobId job, int peer_gpu, int peer_start) {
  const int i = IndexAt(start);
  RETURN_IF_ERROR(
      CheckEnd(*model_, instances_, i, start, job, MigrationRole::kSource, peer_gpu, peer_start));
  return ReleaseJob(start, job);
}

Status GpuState::AbortMigrationTarget(int start, JobId job, int peer_gpu, int peer_start) {
  const int i = IndexAt(start);
  RETURN_IF_ERROR(
      CheckEnd(*model_, instances_, i, start, job, MigrationRole::kTarget, peer_gpu, peer_start));
  return ReleaseJob(start, job);
}

Status GpuState::AbortMigrationSource(int start, JobId job, int peer_gpu, int peer_start) {
  const int i = IndexAt(start);
  RETURN_IF_ERROR(
      CheckEnd(*model_, instances_, i, start, job, MigrationRole::kSource, peer_gpu, peer_start));
  Instance& in = instances_[i];
  in.migration = MigrationRole::kNone;
  in.peer_gpu = -1;
  in.peer_start = -1;
  // The source counts in the settled configuration again (sources are left out of it).
  settled_config_ = table_->Add(settled_config_, in.slot);
  if (settled_config_ == kInvalidConfig) {
    return InternalError("abort migration source: settled configuration became invalid");
  }
  return Status();
}

Status GpuState::CheckInvariants() const {
  uint64_t units = 0, busy_mask = 0, all_mask = 0, settled_mask = 0;
  int cs = 0;
  for (size_t i = 0; i < instances_.size(); ++i) {
    const Instance& in = instances_[i];
    const Profile& p = model_->profile(in.profile);
    if (model_->SlotOf(in.profile, in.start) != in.slot || in.slot < 0) {
      return InternalError(
          fmt::format("{}: {}@{} is not a valid placement", model_->name(), p.name, in.start));
    }
    const uint64_t m = model_->slots()[in.slot].unit_mask;
    if (units & m) {
      return InternalError(fmt::format("{}: {}@{} shares a placement unit with another instance",
                                       model_->name(), p.name, in.start));
    }
    if (i > 0 && instances_[i - 1].start >= in.start) {
      return InternalError(fmt::format("{}: instances not sorted by start", model_->name()));
    }
    if (in.migration != MigrationRole::kNone &&
        (!in.runs_job() || in.peer_gpu < 0 || in.peer_start < 0)) {
      return InternalError(fmt::format("{}: {}@{} has a migration role but {}", model_->name(),
                                       p.name, in.start, in.runs_job() ? "no peer" : "no job"));
    }
    if (!in.busy() && in.holder != Holder::kJob) {
      return InternalError(
          fmt::format("{}: idle {}@{} names a holder kind", model_->name(), p.name, in.start));
    }
    if (in.migration == MigrationRole::kNone && (in.peer_gpu != -1 || in.peer_start != -1)) {
      return InternalError(fmt::format("{}: {}@{} has a migration peer but no role", model_->name(),
                                       p.name, in.start));
    }
    units |= m;
    cs += p.compute_slices;
    all_mask |= uint64_t{1} << in.slot;
    if (in.busy()) busy_mask |= uint64_t{1} << in.slot;
    if (in.busy() && in.migration != MigrationRole::kSource) settled_mask |= uint64_t{1} << in.slot;
    if (CountProfile(in.profile) > p.max_instances) {
      return InternalError(fmt::format("{}: more than {} instance(s) of {}", model_->name(),
                                       p.max_instances, p.name));
    }
  }
  if (cs > model_->compute_slices()) {
    return InternalError(fmt::format("{}: instances use {} compute slices, the model has {}",
                                     model_->name(), cs, model_->compute_slices()));
  }
  if (table_->Find(all_mask) != all_config_ || all_config_ == kInvalidConfig) {
    return InternalError(fmt::format("{}: cached configuration out of date", model_->name()));
  }
  if (table_->Find(busy_mask) != busy_config_ || busy_config_ == kInvalidConfig) {
    return InternalError(fmt::format("{}: cached busy configuration out of date", model_->name()));
  }
  if (table_->Find(settled_mask) != settled_config_ || settled_config_ == kInvalidConfig) {
    return InternalError(
        fmt::format("{}: cached settled configuration out of date", model_->name()));
  }
  return Status();
}

std::string GpuState::DebugString() const {
  std::string s;
  for (const Instance& in : instances_) {
    if (!s.empty()) s += ' ';
    s += fmt::format("{}@{}", model_->profile(in.profile).name, in.start);
    if (in.migration != MigrationRole::kNone) {
      s += fmt::format(
          "[{}:job {}{}{}@{}]", in.migration == MigrationRole::kSource ? "source" : "target",
          in.job, in.migration == MigrationRole::kSource ? "->" : "<-", in.peer_gpu, in.peer_start);
    } else {
      s += in.busy() ? fmt::format("[busy:{}]", in.HolderString()) : std::string("[idle]");
    }
  }
  return s.empty() ? "(empty)" : s;
}

}  // namespace migsched
