#include "sched/joint_placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "sched/candidates.h"
#include "sched/joint_search.h"

namespace migsched {

namespace {

MetricKind MetricOf(const SchedulerOptions& o) {
  StatusOr<MetricKind> k = ParseMetric(o.metric);
  return k.ok() ? *k : MetricKind::kFragCost;
}

// Whether `g` (busy instances only: idle ones may go) has a placement for one
// instance of `profile`.
bool Admits(const GpuState& g, int profile) {
  const GpuModel& m = g.model();
  int same = 0;
  for (const Instance& in : g.instances()) same += in.busy() && in.profile == profile;
  if (same >= m.profile(profile).max_instances) return false;
  for (int slot : m.SlotsOfProfile(profile)) {
    if (g.table().Add(g.busy_config(), slot) != kInvalidConfig) return true;
  }
  return false;
}

}  // namespace

JointPlacer::JointPlacer(const SchedulerOptions& options)
    : reserve_full_(options.reserve_full),
      scorer_(MetricOf(options), options.demand_window),
      solver_(&scorer_) {}

void JointPlacer::BeginRound() {
  entries_.clear();
  saved_.clear();
  touched_.clear();
}

void JointPlacer::Touch(const Cluster& cluster, int gpu) {
  if (saved_.count(gpu)) return;
  saved_.emplace(gpu, Saved{cluster.gpu(gpu), cluster.group_key(gpu)});
  touched_.push_back(gpu);
}

const JointPlacer::Saved& JointPlacer::PreState(const Cluster& cluster, int gpu) {
  Touch(cluster, gpu);
  return saved_.at(gpu);
}

void JointPlacer::Add(JobId id, const Job& job, Decision decision) {
  entries_.push_back({id, job, std::move(decision)});
}

// The round's instances per GPU (entry, instance), built for one Place call.
class JointPlacer::RoundIndex {
 public:
  explicit RoundIndex(const std::vector<Entry>& entries) : entries_(entries) {
    for (size_t e = 0; e < entries.size(); ++e) {
      const std::vector<InstanceRef>& ins = entries[e].decision.instances;
      for (size_t k = 0; k < ins.size(); ++k) {
        by_gpu_[ins[k].gpu].push_back({static_cast<int>(e), static_cast<int>(k)});
      }
    }
  }
  const std::vector<ItemRef>& On(int gpu) const {
    static const std::vector<ItemRef> kNone;
    auto it = by_gpu_.find(gpu);
    return it == by_gpu_.end() ? kNone : it->second;
  }
  const InstanceRef& Instance(const ItemRef& r) const {
    return entries_[r.entry].decision.instances[r.inst];
  }
  // Compute slices of the round's instances on `gpu`.
  int ComputeSlices(const Cluster& cluster, int gpu) const {
    int cs = 0;
    for (const ItemRef& r : On(gpu)) {
      cs += cluster.gpu(gpu).model().profile(Instance(r).profile).compute_slices;
    }
    return cs;
  }

 private:
  const std::vector<Entry>& entries_;
  std::map<int, std::vector<ItemRef>> by_gpu_;
};

// One search: the GPUs searched (`gpus`, whose round instances may move,
// then the policy's GPUs), the instances, their requests, and the input.
struct JointPlacer::Problem {
  std::vector<int> gpus;                 // searched, round instances movable
  std::vector<int> targets;              // gpus, then the policy's GPUs outside them
  std::vector<ItemRef> refs;             // the instances (entry -1: the waiting job's)
  std::vector<std::vector<int>> shapes;  // distinct requests: profile per model
  std::vector<int> shape_of;             // per ref
  std::vector<size_t> order;             // input.items[k] is refs[order[k]]
  JointSearchInput input;
  bool searched(int gpu) const { return std::find(gpus.begin(), gpus.end(), gpu) != gpus.end(); }
};

StatusOr<bool> JointPlacer::Place(Cluster* cluster, PlacementPolicy* policy, JobId id,
                                  const Job& job) {
  if (entries_.empty()) return false;
  const RoundIndex round(entries_);
  Problem pb;
  pb.gpus = GpusToSearch(*cluster, job, round);
  if (pb.gpus.empty()) return false;
  ++stats_.searches;
  BuildSearch(cluster, policy, id, job, round, &pb);
  const JointSearchResult res = SearchJoint(pb.input, &solver_);
  stats_.nodes += res.nodes;
  if (res.budget_exhausted) ++stats_.budget_exhausted;
  if (!res.found) return false;
  ++stats_.placed;
  RETURN_IF_ERROR(Apply(cluster, id, job, round, pb, res));
  return true;
}

std::vector<int> JointPlacer::GpusToSearch(const Cluster& cluster, const Job& job,
                                           const RoundIndex& round) const {
  auto profile_of = [&](int gpu) { return ResolveProfile(cluster.gpu(gpu).model(), job); };
  // First the GPUs that could hold the job once the round's instances move:
  // those the round placed on whose state before the scan admits it.
  std::vector<int> admit;
  for (int g : touched_) {
    if (!cluster.accepts_placements(g) || round.On(g).empty()) continue;
    const int p = profile_of(g);
    if (p >= 0 && Admits(saved_.at(g).state, p)) admit.push_back(g);
  }
  if (admit.empty()) return admit;
  // Those where the compute slices suffice for the job and the round's
  // instances first, then fewer of the round's compute slices to move
  // (stable: in the order the round touched them).
  std::stable_sort(admit.begin(), admit.end(), [&](int a, int b) {
    auto key = [&](int g) {
      const GpuState& pre = saved_.at(g).state;
      const int cs = round.ComputeSlices(cluster, g);
      const int need = cs + pre.model().profile(profile_of(g)).compute_slices;
      return std::make_pair(need > pre.free_compute_slices(), cs);
    };
    return key(a) < key(b);
  });
  std::vector<int> gpus(admit.begin(), admit.begin() + std::min<size_t>(admit.size(), kMaxGpus));
  auto taken = [&](int g) { return std::find(gpus.begin(), gpus.end(), g) != gpus.end(); };
  // Then the round's other GPUs.
  for (int g : touched_) {
    if (static_cast<int>(gpus.size()) >= kMaxGpus) break;
    if (cluster.accepts_placements(g) && !round.On(g).empty() && !taken(g)) gpus.push_back(g);
  }
  // Then the lowest-index others (a group's members are alike, but the search
  // may want several of them), visiting only as many groups as needed.
  for (int rep : cluster.representatives()) {
    if (static_cast<int>(gpus.size()) >= kMaxGpus) break;
    cluster.ForEachInGroup(rep, [&](int g) {
      if (cluster.accepts_placements(g) && round.On(g).empty() && !taken(g)) gpus.push_back(g);
      return static_cast<int>(gpus.size()) < kMaxGpus;
    });
  }
  return gpus;
}

void JointPlacer::BuildSearch(Cluster* cluster, PlacementPolicy* policy, JobId id, const Job& job,
                              const RoundIndex& round, Problem* pb) {
  const std::vector<const GpuModel*>& models = cluster->models();
  // The items: the round's instances on the searched GPUs and the job's own.
  for (int g : pb->gpus) {
    for (const ItemRef& r : round.On(g)) pb->refs.push_back(r);
  }
  for (int k = 0; k < std::max(1, job.count); ++k) pb->refs.push_back({-1, k});
  auto job_of = [&](const ItemRef& r) -> const Job& {
    return r.entry < 0 ? job : entries_[r.entry].job;
  };
  // Requests: the profile on every model (equal requests are interchangeable).
  for (const ItemRef& r : pb->refs) {
    std::vector<int> s;
    for (const GpuModel* m : models) s.push_back(ResolveProfile(*m, job_of(r)));
    auto it = std::find(pb->shapes.begin(), pb->shapes.end(), s);
    pb->shape_of.push_back(static_cast<int>(it - pb->shapes.begin()));
    if (it == pb->shapes.end()) pb->shapes.push_back(std::move(s));
  }

  // Outside the searched GPUs, for each request, the GPU the policy would give it.
  pb->targets = pb->gpus;
  for (int g : pb->gpus) cluster->SetReserved(g, true);
  for (size_t s = 0; s < pb->shapes.size(); ++s) {
    const size_t i = std::find(pb->shape_of.begin(), pb->shape_of.end(), static_cast<int>(s)) -
                     pb->shape_of.begin();
    const ItemRef& r = pb->refs[i];
    const PlacementRequest req =
        MakeRequest(*cluster, r.entry < 0 ? id : entries_[r.entry].id, job_of(r));
    std::optional<Candidate> c = policy->Choose(*cluster, req);
    if (c && cluster->accepts_placements(c->gpu) &&
        std::find(pb->targets.begin(), pb->targets.end(), c->gpu) == pb->targets.end()) {
      pb->targets.push_back(c->gpu);
    }
  }
  for (int g : pb->gpus) cluster->SetReserved(g, false);

  JointSearchInput& in = pb->input;
  in.reserve_full = reserve_full_;
  in.max_nodes = kMaxNodes;
  if (reserve_full_ > 0) {
    const FullSizeReserve reserve(*cluster, reserve_full_);
    for (const GpuModel* m : models) in.hosts_largest.push_back(reserve.Hosts(*m));
  }
  for (int g : pb->targets) {
    const Saved& pre = PreState(*cluster, g);
    const GpuState& now = cluster->gpu(g);
    const ConfigTable& table = now.table();
    JointTarget tg;
    tg.pre = &pre.state;
    tg.pre_key = pre.key;
    tg.model_index = cluster->model_index(g);
    for (const ItemRef& r : round.On(g)) {
      const int p = round.Instance(r).profile;
      tg.current.push_back(p);
      if (!pb->searched(g)) tg.fixed.push_back(p);
    }
    SortForLayout(now.model(), &tg.current);
    // The layout now, against the state before the scan.
    for (const Entry& e : entries_) {
      for (const Step& st : e.decision.plan.steps) {
        const bool reconfig = st.kind == StepKind::kCreate || st.kind == StepKind::kDestroy;
        tg.current_cost.reconfigurations += reconfig && st.gpu == g ? 1 : 0;
      }
    }
    tg.current_cost.metric =
        scorer_.Value(table, now.busy_config()) - scorer_.Value(table, pre.state.busy_config());
    tg.current_cost.admits_largest = table.Feasible(now.busy_config(), table.num_terms() - 1) > 0;
    tg.admits_largest_now = tg.current_cost.admits_largest;
    in.targets.push_back(std::move(tg));
  }

  // The items, largest first, equal requests together.
  auto cs_of = [&](size_t i) {
    for (size_t mi = 0; mi < models.size(); ++mi) {
      const int p = pb->shapes[pb->shape_of[i]][mi];
      if (p >= 0) return models[mi]->profile(p).compute_slices;
    }
    return 0;
  };
  pb->order.resize(pb->refs.size());
  for (size_t i = 0; i < pb->refs.size(); ++i) pb->order[i] = i;
  std::stable_sort(pb->order.begin(), pb->order.end(), [&](size_t a, size_t b) {
    return std::make_pair(-cs_of(a), pb->shape_of[a]) < std::make_pair(-cs_of(b), pb->shape_of[b]);
  });
  for (size_t i : pb->order) {
    JointItem it;
    it.shape = pb->shape_of[i];
    it.compute_slices = cs_of(i);
    if (pb->refs[i].entry >= 0) {
      const int g = round.Instance(pb->refs[i]).gpu;
      it.current = static_cast<int>(std::find(pb->targets.begin(), pb->targets.end(), g) -
                                    pb->targets.begin());
    }
    for (size_t t = 0; t < pb->targets.size(); ++t) {
      const int p = pb->shapes[it.shape][cluster->model_index(pb->targets[t])];
      if (p >= 0) it.options.emplace_back(static_cast<int>(t), p);
    }
    in.items.push_back(std::move(it));
  }
}

Status JointPlacer::Apply(Cluster* cluster, JobId id, const Job& job, const RoundIndex& round,
                          const Problem& pb, const JointSearchResult& res) {
  const std::vector<JointItem>& items = pb.input.items;
  const size_t n = items.size();
  const size_t nt = pb.targets.size();
  const size_t ns = pb.shapes.size();
  // Which instance goes where: per request, as many as can stay on their GPU do.
  std::vector<int> final_target(n, -1);  // per item
  std::vector<int> want(nt * ns, 0);
  for (size_t k = 0; k < n; ++k) ++want[res.target_of[k] * ns + items[k].shape];
  for (size_t k = 0; k < n; ++k) {
    if (items[k].current < 0) continue;
    int& w = want[items[k].current * ns + items[k].shape];
    if (w > 0) {
      final_target[k] = items[k].current;
      --w;
    }
  }
  for (size_t k = 0; k < n; ++k) {
    for (size_t t = 0; t < nt && final_target[k] < 0; ++t) {
      int& w = want[t * ns + items[k].shape];
      if (w > 0) {
        final_target[k] = static_cast<int>(t);
        --w;
      }
    }
  }
  // A target changes when an instance leaves or joins it.
  std::vector<int> changed;
  for (size_t t = 0; t < nt; ++t) {
    bool moves = false;
    for (size_t k = 0; k < n; ++k) {
      moves = moves || ((items[k].current == static_cast<int>(t)) !=
                        (final_target[k] == static_cast<int>(t)));
    }
    if (moves) changed.push_back(pb.targets[t]);
  }

  // The instances on every changed target, in round order (the waiting job
  // last), with the starts of its exact layout, and their steps from the
  // state before the scan.
  const int q_entry = static_cast<int>(entries_.size());
  std::vector<InstanceRef> q_instances(std::max(1, job.count));
  std::vector<std::vector<Step>> new_steps(entries_.size() + 1);
  struct Placed {
    int entry;
    int inst;
    int profile;
    int start = -1;
  };
  for (size_t t = 0; t < nt; ++t) {
    const int g = pb.targets[t];
    if (std::find(changed.begin(), changed.end(), g) == changed.end()) continue;
    std::vector<Placed> here;
    // Fixed instances (not searched) stay on g and are re-laid with the others.
    if (!pb.searched(g)) {
      for (const ItemRef& r : round.On(g))
        here.push_back({r.entry, r.inst, round.Instance(r).profile});
    }
    for (size_t k = 0; k < n; ++k) {
      if (final_target[k] != static_cast<int>(t)) continue;
      const ItemRef& r = pb.refs[pb.order[k]];
      here.push_back({r.entry < 0 ? q_entry : r.entry, r.inst,
                      pb.shapes[items[k].shape][cluster->model_index(g)]});
    }
    std::sort(here.begin(), here.end(), [](const Placed& a, const Placed& b) {
      return std::make_pair(a.entry, a.inst) < std::make_pair(b.entry, b.inst);
    });
    const Saved& pre = saved_.at(g);
    const GpuLayout& lay = solver_.Solve(pre.state, pre.key, res.multisets[t], reserve_full_ > 0);
    if (!lay.feasible) {
      return InternalError(fmt::format("joint placement: GPU {} lost its layout", g));
    }
    // Starts per profile; an instance already at one of them keeps it.
    std::vector<bool> used(lay.starts.size(), false);
    auto take = [&](Placed& pl, bool keep_only) {
      const InstanceRef* now = pl.entry == q_entry ? nullptr : &round.Instance({pl.entry, pl.inst});
      for (size_t s = 0; s < lay.starts.size() && pl.start < 0; ++s) {
        if (used[s] || lay.profiles[s] != pl.profile) continue;
        if (keep_only && !(now && now->gpu == g && now->start == lay.starts[s])) continue;
        used[s] = true;
        pl.start = lay.starts[s];
      }
    };
    for (Placed& pl : here) take(pl, /*keep_only=*/true);
    for (Placed& pl : here) take(pl, /*keep_only=*/false);
    std::vector<RelayInstance> relay;
    for (const Placed& pl : here) {
      relay.push_back({pl.entry == q_entry ? id : entries_[pl.entry].id, pl.profile, pl.start});
    }
    ASSIGN_OR_RETURN(std::vector<std::vector<Step>> steps, RelayPlans(pre.state, g, relay));
    for (size_t i = 0; i < here.size(); ++i) {
      new_steps[here[i].entry].insert(new_steps[here[i].entry].end(), steps[i].begin(),
                                      steps[i].end());
    }
    // The new instance references (after the layout: `round` reads the old ones above).
    for (const Placed& pl : here) {
      const InstanceRef ref{g, pl.profile, pl.start};
      if (pl.entry == q_entry) {
        q_instances[pl.inst] = ref;
      } else {
        entries_[pl.entry].decision.instances[pl.inst] = ref;
      }
    }
  }

  // Roll the changed GPUs back to their state before the scan and apply the
  // rewritten steps in round order; each decision keeps its steps on the
  // other GPUs.
  for (int g : changed) cluster->SetGpu(g, saved_.at(g).state);
  auto on_changed = [&](const Step& s) {
    return std::find(changed.begin(), changed.end(), s.gpu) != changed.end();
  };
  for (size_t e = 0; e <= entries_.size(); ++e) {
    Plan part;
    part.steps = new_steps[e];
    if (!part.empty()) RETURN_IF_ERROR(ApplyPlan(part, cluster).WithPrefix("joint placement"));
    if (e == entries_.size()) break;
    Plan& plan = entries_[e].decision.plan;
    std::vector<Step> kept;
    for (const Step& s : plan.steps) {
      if (!on_changed(s)) kept.push_back(s);
    }
    kept.insert(kept.end(), new_steps[e].begin(), new_steps[e].end());
    plan.steps = std::move(kept);
  }
  Decision d;
  d.job = id;
  d.plan.steps = new_steps[q_entry];
  d.instances = q_instances;
  Add(id, job, std::move(d));
  return Status();
}

}  // namespace migsched
