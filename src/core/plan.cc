#include "core/plan.h"

#include <map>

#include <fmt/format.h>

namespace migsched {

std::string_view StepKindName(StepKind k) {
  switch (k) {
    case StepKind::kCreate:
      return "create";
    case StepKind::kDestroy:
      return "destroy";
    case StepKind::kStart:
      return "start";
    case StepKind::kRelease:
      return "release";
  }
  return "?";
}

int Plan::reconfigurations() const {
  int n = 0;
  for (const Step& s : steps) n += (s.kind == StepKind::kCreate || s.kind == StepKind::kDestroy);
  return n;
}

std::string DescribeStep(const Step& s, const Cluster& cluster) {
  std::string profile = "?";
  if (s.gpu >= 0 && s.gpu < cluster.size() && s.profile >= 0 &&
      s.profile < static_cast<int>(cluster.gpu(s.gpu).model().profiles().size())) {
    profile = cluster.gpu(s.gpu).model().profile(s.profile).name;
  }
  std::string job = s.job == kNoJob ? "" : fmt::format(" (job {})", s.job);
  return fmt::format("{} {}@{} on GPU {}{}", StepKindName(s.kind), profile, s.start, s.gpu, job);
}

std::string DescribePlan(const Plan& plan, const Cluster& cluster) {
  std::string out;
  for (const Step& s : plan.steps) {
    if (!out.empty()) out += "; ";
    out += DescribeStep(s, cluster);
  }
  return out;
}

Status ApplyPlan(const Plan& plan, Cluster* cluster) {
  std::map<int, GpuState> scratch;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& s = plan.steps[i];
    auto fail = [&](const Status& st) {
      return InternalError(
          fmt::format("plan step {} ({}): {}", i + 1, DescribeStep(s, *cluster), st.message()));
    };
    if (s.gpu < 0 || s.gpu >= cluster->size()) return fail(InternalError("no such GPU"));
    auto it = scratch.find(s.gpu);
    if (it == scratch.end()) it = scratch.emplace(s.gpu, cluster->gpu(s.gpu)).first;
    GpuState& g = it->second;
    Status st;
    switch (s.kind) {
      case StepKind::kCreate:
        st = g.Create(s.profile, s.start);
        break;
      case StepKind::kDestroy: {
        const int idx = g.IndexAt(s.start);
        if (idx >= 0 && g.instances()[idx].profile != s.profile) {
          st = InternalError(fmt::format("the instance at {} is {}", s.start,
                                         g.model().profile(g.instances()[idx].profile).name));
        } else {
          st = g.Destroy(s.start);
        }
        break;
      }
      case StepKind::kStart:
        st = g.StartJob(s.profile, s.start, s.job);
        break;
      case StepKind::kRelease:
        st = g.ReleaseJob(s.start, s.job);
        break;
    }
    if (!st.ok()) return fail(st);
  }
  for (const auto& [gpu, g] : scratch) {
    Status st = g.CheckInvariants();
    if (!st.ok()) return InternalError(fmt::format("plan leaves GPU {} invalid: {}", gpu, st.message()));
  }
  for (auto& [gpu, g] : scratch) cluster->SetGpu(gpu, std::move(g));
  return Status();
}

}  // namespace migsched
