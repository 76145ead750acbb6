#include "core/gpu_state.h"

#include <algorithm>

#include <fmt/format.h>

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
    return InternalError(fmt::format("create {}@{}: {} is not a placement of {} on {}", p.name, start,
                                     start, p.name, model_->name()));
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
    return InternalError(fmt::format("create {}@{}: exceeds the {} compute slices of {} or the "
                                     "profile's max instances",
                                     p.name, start, model_->compute_slices(), model_->name()));
  }
  if (CountProfile(profile) + 1 > p.max_instances) {
    return InternalError(fmt::format("create {}@{}: {} allows at most {} instance(s)", p.name, start,
                                     p.name, p.max_instances));
  }
  Instance in;
  in.profile = profile;
  in.start = start;
  in.slot = slot;
  instances_.insert(std::upper_bound(instances_.begin(), instances_.end(), in,
                                     [](const Instance& a, const Instance& b) {
                                       return a.start < b.start;
                                     }),
                    in);
  all_config_ = all;
  return Status();
}

Status GpuState::Destroy(int start) {
  const int i = IndexAt(start);
  if (i < 0) return InternalError(fmt::format("destroy @{}: no instance starts there", start));
  const Instance& in = instances_[i];
  if (in.busy()) {
    return InternalError(fmt::format("destroy {}@{}: busy with job {}", model_->profile(in.profile).name,
                                     start, in.job));
  }
  all_config_ = table_->Remove(all_config_, in.slot);
  instances_.erase(instances_.begin() + i);
  return Status();
}

Status GpuState::StartJob(int profile, int start, JobId job) {
  const int i = IndexAt(start);
  if (i < 0) return InternalError(fmt::format("start job {} @{}: no instance starts there", job, start));
  Instance& in = instances_[i];
  if (in.profile != profile) {
    return InternalError(fmt::format("start job {} on {}@{}: the instance there is {}", job,
                                     model_->profile(profile).name, start,
                                     model_->profile(in.profile).name));
  }
  if (in.busy()) {
    return InternalError(fmt::format("start job {} on {}@{}: already busy with job {}", job,
                                     model_->profile(in.profile).name, start, in.job));
  }
  if (job == kNoJob) return InternalError("start: no job given");
  in.job = job;
  busy_config_ = table_->Add(busy_config_, in.slot);
  if (busy_config_ == kInvalidConfig) return InternalError("start: busy configuration became invalid");
  return Status();
}

Status GpuState::ReleaseJob(int start, JobId job) {
  const int i = IndexAt(start);
  if (i < 0) return InternalError(fmt::format("release job {} @{}: no instance starts there", job, start));
  Instance& in = instances_[i];
  if (in.job != job) {
    return InternalError(fmt::format("release job {} @{}: the instance runs job {}", job, start, in.job));
  }
  in.job = kNoJob;
  busy_config_ = table_->Remove(busy_config_, in.slot);
  return Status();
}

Status GpuState::CheckInvariants() const {
  uint64_t units = 0, busy_mask = 0, all_mask = 0;
  int cs = 0;
  for (size_t i = 0; i < instances_.size(); ++i) {
    const Instance& in = instances_[i];
    const Profile& p = model_->profile(in.profile);
    if (model_->SlotOf(in.profile, in.start) != in.slot || in.slot < 0) {
      return InternalError(fmt::format("{}: {}@{} is not a valid placement", model_->name(), p.name, in.start));
    }
    const uint64_t m = model_->slots()[in.slot].unit_mask;
    if (units & m) {
      return InternalError(fmt::format("{}: {}@{} shares a placement unit with another instance",
                                       model_->name(), p.name, in.start));
    }
    if (i > 0 && instances_[i - 1].start >= in.start) {
      return InternalError(fmt::format("{}: instances not sorted by start", model_->name()));
    }
    units |= m;
    cs += p.compute_slices;
    all_mask |= uint64_t{1} << in.slot;
    if (in.busy()) busy_mask |= uint64_t{1} << in.slot;
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
  return Status();
}

std::string GpuState::DebugString() const {
  std::string s;
  for (const Instance& in : instances_) {
    if (!s.empty()) s += ' ';
    s += fmt::format("{}@{}", model_->profile(in.profile).name, in.start);
    s += in.busy() ? fmt::format("[busy:job {}]", in.job) : std::string("[idle]");
  }
  return s.empty() ? "(empty)" : s;
}

}  // namespace migsched
