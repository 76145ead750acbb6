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

// One instance of the search: of round entry `entry` (or of the waiting job
// when entry == -1), its `inst`-th instance.
struct ItemRef {
  int entry = -1;
  int inst = 0;
};

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

StatusOr<bool> JointPlacer::Place(Cluster* cluster, PlacementPolicy* policy, JobId id,
                                  const Job& job) {
  if (entries_.empty()) return false;
  const std::vector<const GpuModel*>& models = cluster->models();
  // The round's instances per GPU.
  std::map<int, std::vector<ItemRef>> by_gpu;
  for (size_t e = 0; e < entries_.size(); ++e) {
    const std::vector<InstanceRef>& ins = entries_[e].decision.instances;
    for (size_t k = 0; k < ins.size(); ++k) {
      by_gpu[ins[k].gpu].push_back({static_cast<int>(e), static_cast<int>(k)});
    }
  }
  static const std::vector<ItemRef> kNone;
  auto on_gpu = [&](int g) -> const std::vector<ItemRef>& {
    auto it = by_gpu.find(g);
    return it == by_gpu.end() ? kNone : it->second;
  };
  auto profile_of = [&](const Job& j, int gpu) {
    return ResolveProfile(cluster->gpu(gpu).model(), j);
  };
  auto round_cs = [&](int gpu) {
    int cs = 0;
    for (const ItemRef& r : on_gpu(gpu)) {
      const InstanceRef& in = entries_[r.entry].decision.instances[r.inst];
      cs += cluster->gpu(gpu).model().profile(in.profile).compute_slices;
    }
    return cs;
  };

  // 1. The GPUs that could hold the job once the round's instances move:
  // those whose state before the scan admits it.
  std::vector<int> admit;
  for (int g : touched_) {
    if (cluster->reserved(g) || on_gpu(g).empty()) continue;
    const int p = profile_of(job, g);
    if (p >= 0 && Admits(saved_.at(g).state, p)) admit.push_back(g);
  }
  if (admit.empty()) return false;
  ++stats_.searches;
  // Those where the compute slices suffice for all first, then fewer of the
  // round's compute slices to move (stable: in the order the round touched them).
  std::stable_sort(admit.begin(), admit.end(), [&](int a, int b) {
    auto key = [&](int g) {
      const GpuState& pre = saved_.at(g).state;
      const int need = round_cs(g) + pre.model().profile(profile_of(job, g)).compute_slices;
      return std::make_pair(need > pre.free_compute_slices(), round_cs(g));
    };
    return key(a) < key(b);
  });
  std::vector<int> gpus(admit.begin(), admit.begin() + std::min<size_t>(admit.size(), kMaxGpus));
  auto in_gpus = [&](int g) { return std::find(gpus.begin(), gpus.end(), g) != gpus.end(); };
  for (int g : touched_) {
    if (static_cast<int>(gpus.size()) >= kMaxGpus) break;
    if (!cluster->reserved(g) && !on_gpu(g).empty() && !in_gpus(g)) gpus.push_back(g);
  }
  // The lowest-index others (a group's members are alike, but the search may
  // want several of them), visiting only as many groups as needed.
  for (int rep : cluster->representatives()) {
    if (static_cast<int>(gpus.size()) >= kMaxGpus) break;
    cluster->ForEachInGroup(rep, [&](int g) {
      if (!cluster->reserved(g) && on_gpu(g).empty() && !in_gpus(g)) gpus.push_back(g);
      return static_cast<int>(gpus.size()) < kMaxGpus;
    });
  }

  // 2. The items: the round's instances on those GPUs and the job's own.
  std::vector<ItemRef> refs;
  for (int g : gpus) {
    for (const ItemRef& r : on_gpu(g)) refs.push_back(r);
  }
  for (int k = 0; k < std::max(1, job.count); ++k) refs.push_back({-1, k});
  auto job_of = [&](const ItemRef& r) -> const Job& {
    return r.entry < 0 ? job : entries_[r.entry].job;
  };
  auto id_of = [&](const ItemRef& r) { return r.entry < 0 ? id : entries_[r.entry].id; };
  // Shapes: the profile on every model (equal requests are interchangeable).
  std::vector<std::vector<int>> shapes;
  std::vector<int> shape_of;
  for (const ItemRef& r : refs) {
    std::vector<int> s;
    for (const GpuModel* m : models) s.push_back(ResolveProfile(*m, job_of(r)));
    auto it = std::find(shapes.begin(), shapes.end(), s);
    shape_of.push_back(static_cast<int>(it - shapes.begin()));
    if (it == shapes.end()) shapes.push_back(std::move(s));
  }

  // 3. Outside those GPUs, for each request, the GPU the policy would give it.
  std::vector<int> targets = gpus;
  for (int g : gpus) cluster->SetReserved(g, true);
  for (size_t s = 0; s < shapes.size(); ++s) {
    const size_t i =
        std::find(shape_of.begin(), shape_of.end(), static_cast<int>(s)) - shape_of.begin();
    const Job& j = job_of(refs[i]);
    const PlacementRequest req = MakeRequest(*cluster, id_of(refs[i]), j);
    std::optional<Candidate> c = policy->Choose(*cluster, req);
    if (c && !cluster->reserved(c->gpu) &&
        std::find(targets.begin(), targets.end(), c->gpu) == targets.end()) {
      targets.push_back(c->gpu);
    }
  }
  for (int g : gpus) cluster->SetReserved(g, false);

  // 4. The search.
  JointSearchInput in;
  in.reserve_full = reserve_full_;
  in.max_nodes = kMaxNodes;
  if (reserve_full_ > 0) {
    const FullSizeReserve reserve(*cluster, reserve_full_);
    for (const GpuModel* m : models) in.hosts_largest.push_back(reserve.Hosts(*m));
  }
  for (size_t t = 0; t < targets.size(); ++t) {
    const int g = targets[t];
    const Saved& pre = PreState(*cluster, g);
    const GpuState& now = cluster->gpu(g);
    const ConfigTable& table = now.table();
    JointTarget tg;
    tg.pre = &pre.state;
    tg.pre_key = pre.key;
    tg.model_index = cluster->model_index(g);
    for (const ItemRef& r : on_gpu(g)) {
      const int p = entries_[r.entry].decision.instances[r.inst].profile;
      tg.current.push_back(p);
      if (!in_gpus(g)) tg.fixed.push_back(p);
    }
    SortForLayout(now.model(), &tg.current);
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
  std::vector<size_t> order(refs.size());
  for (size_t i = 0; i < refs.size(); ++i) order[i] = i;
  auto cs_of = [&](size_t i) {
    for (size_t mi = 0; mi < models.size(); ++mi) {
      const int p = shapes[shape_of[i]][mi];
      if (p >= 0) return models[mi]->profile(p).compute_slices;
    }
    return 0;
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_pair(-cs_of(a), shape_of[a]) < std::make_pair(-cs_of(b), shape_of[b]);
  });
  for (size_t i : order) {
    JointItem it;
    it.shape = shape_of[i];
    it.compute_slices = cs_of(i);
    if (refs[i].entry >= 0) {
      const int g = entries_[refs[i].entry].decision.instances[refs[i].inst].gpu;
      it.current = static_cast<int>(std::find(targets.begin(), targets.end(), g) - targets.begin());
    }
    for (size_t t = 0; t < targets.size(); ++t) {
      const int p = shapes[it.shape][cluster->model_index(targets[t])];
      if (p >= 0) it.options.emplace_back(static_cast<int>(t), p);
    }
    in.items.push_back(std::move(it));
  }
  const JointSearchResult res = SearchJoint(in, &solver_);
  stats_.nodes += res.nodes;
  if (res.budget_exhausted) ++stats_.budget_exhausted;
  if (!res.found) return false;
  ++stats_.placed;

  // 5. Which instance goes where: per request, as many as can stay on their GPU do.
  const size_t n = refs.size();
  std::vector<int> final_target(n, -1);  // by position in `order`
  {
    std::vector<int> want(targets.size() * shapes.size(), 0);
    for (size_t k = 0; k < n; ++k) ++want[res.target_of[k] * shapes.size() + in.items[k].shape];
    for (size_t k = 0; k < n; ++k) {
      const int cur = in.items[k].current;
      if (cur < 0) continue;
      int& w = want[cur * shapes.size() + in.items[k].shape];
      if (w > 0) {
        final_target[k] = cur;
        --w;
      }
    }
    for (size_t k = 0; k < n; ++k) {
      if (final_target[k] >= 0) continue;
      for (size_t t = 0; t < targets.size(); ++t) {
        int& w = want[t * shapes.size() + in.items[k].shape];
        if (w > 0) {
          final_target[k] = static_cast<int>(t);
          --w;
          break;
        }
      }
    }
  }

  // 6. The new instances on every target whose multiset changed, in round
  // order (the waiting job last), with the starts of its exact layout.
  const int q_entry = static_cast<int>(entries_.size());
  auto entry_index = [&](const ItemRef& r) { return r.entry < 0 ? q_entry : r.entry; };
  std::vector<InstanceRef> q_instances(std::max(1, job.count));
  std::vector<std::vector<Step>> new_steps(entries_.size() + 1);
  // A target changes when an instance leaves or joins it.
  std::vector<int> changed;
  for (size_t t = 0; t < targets.size(); ++t) {
    bool moves = false;
    for (size_t k = 0; k < n; ++k) {
      moves = moves || ((in.items[k].current == static_cast<int>(t)) !=
                        (final_target[k] == static_cast<int>(t)));
    }
    if (moves) changed.push_back(targets[t]);
  }
  struct Placed {
    int entry;
    int inst;
    int profile;
    int start = -1;
  };
  for (size_t t = 0; t < targets.size(); ++t) {
    const int g = targets[t];
    if (std::find(changed.begin(), changed.end(), g) == changed.end()) continue;
    std::vector<Placed> here;
    // Fixed instances (not searched) stay on g and are re-laid with the others.
    if (!in_gpus(g)) {
      for (const ItemRef& r : on_gpu(g)) {
        here.push_back({r.entry, r.inst, entries_[r.entry].decision.instances[r.inst].profile});
      }
    }
    for (size_t k = 0; k < n; ++k) {
      if (final_target[k] != static_cast<int>(t)) continue;
      const ItemRef& r = refs[order[k]];
      here.push_back({entry_index(r), r.inst, shapes[in.items[k].shape][cluster->model_index(g)]});
    }
    std::sort(here.begin(), here.end(), [](const Placed& a, const Placed& b) {
      return std::make_pair(a.entry, a.inst) < std::make_pair(b.entry, b.inst);
    });
    const Saved& pre = saved_.at(g);
    const GpuLayout& lay = solver_.Solve(pre.state, pre.key, res.multisets[t], reserve_full_ > 0);
    if (!lay.feasible)
      return InternalError(fmt::format("joint placement: GPU {} lost its layout", g));
    // Starts per profile; an instance already at one of them keeps it.
    std::vector<bool> used(lay.starts.size(), false);
    for (Placed& pl : here) {
      if (pl.entry == q_entry) continue;
      const InstanceRef& now = entries_[pl.entry].decision.instances[pl.inst];
      if (now.gpu != g) continue;
      for (size_t s = 0; s < lay.starts.size(); ++s) {
        if (!used[s] && lay.profiles[s] == pl.profile && lay.starts[s] == now.start) {
          used[s] = true;
          pl.start = now.start;
          break;
        }
      }
    }
    for (Placed& pl : here) {
      if (pl.start >= 0) continue;
      for (size_t s = 0; s < lay.starts.size(); ++s) {
        if (!used[s] && lay.profiles[s] == pl.profile) {
          used[s] = true;
          pl.start = lay.starts[s];
          break;
        }
      }
    }
    std::vector<RelayInstance> relay;
    for (const Placed& pl : here) {
      relay.push_back({pl.entry == q_entry ? id : entries_[pl.entry].id, pl.profile, pl.start});
    }
    ASSIGN_OR_RETURN(std::vector<std::vector<Step>> steps, RelayPlans(pre.state, g, relay));
    for (size_t i = 0; i < here.size(); ++i) {
      const Placed& pl = here[i];
      new_steps[pl.entry].insert(new_steps[pl.entry].end(), steps[i].begin(), steps[i].end());
      const InstanceRef ref{g, pl.profile, pl.start};
      if (pl.entry == q_entry) {
        q_instances[pl.inst] = ref;
      } else {
        entries_[pl.entry].decision.instances[pl.inst] = ref;
      }
    }
  }

  // 7. Roll the changed GPUs back to their state before the scan and apply
  // the rewritten plans in round order.
  for (int g : changed) cluster->SetGpu(g, saved_.at(g).state);
  auto on_changed = [&](const Step& s) {
    return std::find(changed.begin(), changed.end(), s.gpu) != changed.end();
  };
  for (size_t e = 0; e <= entries_.size(); ++e) {
    Plan part;
    part.steps = new_steps[e];
    if (!part.empty()) {
      if (Status st = ApplyPlan(part, cluster); !st.ok()) {
        return st.WithPrefix("joint placement");
      }
    }
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
  return true;
}

}  // namespace migsched
