#include "core/plan.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <string>

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
    case StepKind::kMigrateBegin:
      return "migrate-begin";
    case StepKind::kMigrateEnd:
      return "migrate-end";
    case StepKind::kMigrateAbort:
      return "migrate-abort";
  }
  return "?";
}

int Plan::reconfigurations() const {
  int n = 0;
  for (const Step& s : steps) n += (s.kind == StepKind::kCreate || s.kind == StepKind::kDestroy);
  return n;
}

std::string DescribeStep(const Step& s, const Cluster& cluster, bool with_holder) {
  std::string profile = "?";
  if (s.gpu >= 0 && s.gpu < cluster.size() && s.profile >= 0 &&
      s.profile < static_cast<int>(cluster.gpu(s.gpu).model().profiles().size())) {
    profile = cluster.gpu(s.gpu).model().profile(s.profile).name;
  }
  std::string job =
      s.job == kNoJob || !with_holder ? "" : fmt::format(" ({} {})", HolderName(s.holder), s.job);
  if (s.kind == StepKind::kMigrateBegin || s.kind == StepKind::kMigrateEnd ||
      s.kind == StepKind::kMigrateAbort) {
    job = fmt::format(" (job {}, from {} @{})", s.job, cluster.GpuName(s.from_gpu), s.from_start);
  }
  return fmt::format("{} {}@{} on {}{}", StepKindName(s.kind), profile, s.start,
                     cluster.GpuName(s.gpu), job);
}

std::string DescribePlan(const Plan& plan, const Cluster& cluster) {
  std::string out;
  for (const Step& s : plan.steps) {
    if (!out.empty()) out += "; ";
    out += DescribeStep(s, cluster);
  }
  return out;
}

namespace {

// Every instance with a migration role on the GPUs in `gpus` must have its
// other end: on GPU peer_gpu at peer_start, same job, opposite role, pointing
// back. `state(g)` is the GPU's state after the plan.
template <typename StateOf>
Status CheckMigrationPairs(const std::set<int>& gpus, int num_gpus, const StateOf& state) {
  for (int gpu : gpus) {
    for (const Instance& in : state(gpu).instances()) {
      if (in.migration == MigrationRole::kNone) continue;
      const GpuState& g = state(gpu);
      const std::string me = fmt::format("{}@{} on GPU {} (job {})",
                                         g.model().profile(in.profile).name, in.start, gpu, in.job);
      if (in.peer_gpu < 0 || in.peer_gpu >= num_gpus) {
        return InternalError(
            fmt::format("{} points at GPU {}, which does not exist", me, in.peer_gpu));
      }
      const GpuState& peer_state = state(in.peer_gpu);
      const int k = peer_state.IndexAt(in.peer_start);
      const MigrationRole want =
          in.migration == MigrationRole::kSource ? MigrationRole::kTarget : MigrationRole::kSource;
      if (k < 0) {
        return InternalError(
            fmt::format("{} is a migration {} whose other end (GPU {} @{}) does not "
                        "exist",
                        me, in.migration == MigrationRole::kSource ? "source" : "target",
                        in.peer_gpu, in.peer_start));
      }
      const Instance& peer = peer_state.instances()[k];
      if (peer.job != in.job || peer.migration != want || peer.peer_gpu != gpu ||
          peer.peer_start != in.start) {
        return InternalError(fmt::format("{} and its migration peer on GPU {} @{} do not match", me,
                                         in.peer_gpu, in.peer_start));
      }
    }
  }
  return Status();
}

}  // namespace

Status ApplyPlan(const Plan& plan, Cluster* cluster) {
  std::map<int, GpuState> scratch;
  auto touch = [&](int gpu) -> GpuState& {
    auto it = scratch.find(gpu);
    if (it == scratch.end()) it = scratch.emplace(gpu, cluster->gpu(gpu)).first;
    return it->second;
  };
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& s = plan.steps[i];
    auto fail = [&](const Status& st) {
      return InternalError(
          fmt::format("plan step {} ({}): {}", i + 1, DescribeStep(s, *cluster), st.message()));
    };
    if (s.gpu < 0 || s.gpu >= cluster->size()) return fail(InternalError("no such GPU"));
    const bool migrate = s.kind == StepKind::kMigrateBegin || s.kind == StepKind::kMigrateEnd;
    if (migrate && (s.from_gpu < 0 || s.from_gpu >= cluster->size())) {
      return fail(InternalError("no such source GPU"));
    }
    if (migrate && s.from_gpu == s.gpu && s.from_start == s.start) {
      return fail(InternalError("a move's target cannot be its own source"));
    }
    GpuState& g = touch(s.gpu);
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
        st = g.StartJob(s.profile, s.start, s.job, s.holder);
        break;
      case StepKind::kRelease:
        st = g.ReleaseJob(s.start, s.job, s.holder);
        break;
      case StepKind::kMigrateAbort:
        st = g.AbortMigrationTarget(s.start, s.job, s.from_gpu, s.from_start);
        if (st.ok()) {
          st = touch(s.from_gpu).AbortMigrationSource(s.from_start, s.job, s.gpu, s.start);
        }
        break;
      case StepKind::kMigrateBegin: {
        st = g.BeginMigrationTarget(s.profile, s.start, s.job, s.from_gpu, s.from_start);
        if (st.ok())
          st = touch(s.from_gpu).BeginMigrationSource(s.from_start, s.job, s.gpu, s.start);
        break;
      }
      case StepKind::kMigrateEnd: {
        const int idx = g.IndexAt(s.start);
        if (idx >= 0 && g.instances()[idx].profile != s.profile) {
          st = InternalError(fmt::format("the instance at {} is {}", s.start,
                                         g.model().profile(g.instances()[idx].profile).name));
        } else {
          st = g.EndMigrationTarget(s.start, s.job, s.from_gpu, s.from_start);
        }
        if (st.ok()) st = touch(s.from_gpu).EndMigrationSource(s.from_start, s.job, s.gpu, s.start);
        break;
      }
    }
    if (!st.ok()) return fail(st);
  }
  std::set<int> check;
  for (const auto& [gpu, g] : scratch) {
    Status st = g.CheckInvariants();
    if (!st.ok())
      return InternalError(fmt::format("plan leaves GPU {} invalid: {}", gpu, st.message()));
    check.insert(gpu);
    // Peers of roles before and after the plan: a step may have ended one end only.
    for (const GpuState* state : {&g, &cluster->gpu(gpu)}) {
      for (const Instance& in : state->instances()) {
        if (in.migration != MigrationRole::kNone && in.peer_gpu >= 0 &&
            in.peer_gpu < cluster->size()) {
          check.insert(in.peer_gpu);
        }
      }
    }
  }
  auto state_of = [&](int gpu) -> const GpuState& {
    auto it = scratch.find(gpu);
    return it == scratch.end() ? cluster->gpu(gpu) : it->second;
  };
  Status pairs = CheckMigrationPairs(check, cluster->size(), state_of);
  if (!pairs.ok())
    return InternalError("plan leaves a move unmatched: " + std::string(pairs.message()));
  for (auto& [gpu, g] : scratch) cluster->SetGpu(gpu, std::move(g));
  return Status();
}

}  // namespace migsched
