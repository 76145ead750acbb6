#include "sched/migration_planner.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "sched/candidates.h"

namespace migsched {
namespace {

constexpr double kEps = 1e-9;
constexpr double kInf = std::numeric_limits<double>::infinity();

// A target placement for a move, chosen by the §4 order.
struct Target {
  int gpu = -1;
  int profile = -1;
  int start = 0;
  int slot = -1;
  bool reuse = false;
  int destroys = 0;
  ConfigId settled_after = kInvalidConfig;  // settled configuration of the target GPU with it
  double score = 0;                         // ΔFragCost (or FragCost after, --frag-objective post)
};

// util(a) < util(b), compared exactly (compute slices cross-multiplied).
bool LessUtil(int cs_a, int total_a, int cs_b, int total_b) {
  return cs_a * total_b < cs_b * total_a;
}

class Pass {
 public:
  Pass(Cluster* cluster, const MigrationContext& ctx)
      : cluster_(cluster), ctx_(ctx), opts_(*ctx.options), reserved_(cluster->size(), 0) {
    for (const Reservation& r : ctx.reservations) {
      if (r.gpu >= 0 && r.gpu < cluster->size()) reserved_[r.gpu] = 1;
    }
  }

  StatusOr<std::vector<MigrationStart>> Run() {
    for (const Reservation& r : ctx_.reservations) RETURN_IF_ERROR(Evacuate(r));
    if (ctx_.trigger == MigrationTrigger::kFragmented) {
      for (const Job* job : ctx_.fragmented) RETURN_IF_ERROR(MakeRoom(*job));
    } else {
      RETURN_IF_ERROR(IntraPass());
      RETURN_IF_ERROR(InterPass());
    }
    return std::move(out_);
  }

 private:
  // ---- helpers ----

  double Frag(const GpuState& g, ConfigId c) const { return g.table().FragCost(c); }
  int Cs(const GpuState& g, ConfigId c) const { return g.table().compute_used(c); }
  bool Busy(const GpuState& g, ConfigId settled) const {
    return static_cast<double>(Cs(g, settled)) / g.model().compute_slices() >= opts_.threshold;
  }

  // The rights of the job on `in` in this pass.
  MoveRights Rights(const Instance& in) const {
    if (!in.busy() || in.migration != MigrationRole::kNone || moved_.count(in.job)) {
      return MoveRights::kNone;
    }
    return ctx_.rights(in.job);
  }

  // §4 step 3 score of adding `slot` to the settled configuration of `g`.
  double Score(const GpuState& g, ConfigId settled, ConfigId after) const {
    return opts_.frag_objective == FragObjective::kPost ? Frag(g, after)
                                                        : Frag(g, after) - Frag(g, settled);
  }

  // The best placement of `profile` on GPU `gpu` of `c` (§4 steps 3-4 on one
  // GPU, no lazy preference), or nullopt.
  std::optional<Target> BestOn(const Cluster& c, int gpu, int profile) {
    if (reserved_[gpu]) return std::nullopt;
    const GpuState& g = c.gpu(gpu);
    const ConfigId settled = g.settled_config();
    cands_.clear();
    AppendCandidates(c, gpu, profile, /*allow_create=*/true, &cands_);
    std::optional<Target> best;
    for (const Candidate& k : cands_) {
      const ConfigId after = g.table().Add(settled, k.slot);
      if (after == kInvalidConfig) continue;  // cannot happen: settled is a subset of busy
      Target t{gpu, profile, k.start, k.slot, k.reuse, k.destroys, after, Score(g, settled, after)};
      if (!best || Better(c, t, *best)) best = t;
    }
    return best;
  }

  // §4: lower score (within 1e-9), reuse, fewer destroys, lower util, lower
  // GPU index, higher start.
  static bool Better(const Cluster& c, const Target& a, const Target& b) {
    if (a.score < b.score - kEps) return true;
    if (b.score < a.score - kEps) return false;
    if (a.reuse != b.reuse) return a.reuse;
    if (a.destroys != b.destroys) return a.destroys < b.destroys;
    const GpuState& ga = c.gpu(a.gpu);
    const GpuState& gb = c.gpu(b.gpu);
    const int ua = ga.busy_compute_slices(), ub = gb.busy_compute_slices();
    if (LessUtil(ua, ga.model().compute_slices(), ub, gb.model().compute_slices())) return true;
    if (LessUtil(ub, gb.model().compute_slices(), ua, ga.model().compute_slices())) return false;
    if (a.gpu != b.gpu) return a.gpu < b.gpu;
    return a.start > b.start;
  }

  // The best placement for `job` on any non-reserved GPU of `c` but `except`.
  std::optional<Target> BestElsewhere(const Cluster& c, const Job& job, int except) {
    std::optional<Target> best;
    for (int gpu = 0; gpu < c.size(); ++gpu) {
      if (gpu == except || reserved_[gpu]) continue;
      const int profile = ResolveProfile(c.gpu(gpu).model(), job);
      if (profile < 0) continue;
      std::optional<Target> t = BestOn(c, gpu, profile);
      if (t && (!best || Better(c, *t, *best))) best = t;
    }
    return best;
  }

  // Whether base slots of `profile` leave room for it in configuration `c`.
  static bool Fits(const GpuState& g, ConfigId c, int profile) {
    for (int slot : g.model().SlotsOfProfile(profile)) {
      if (g.table().Add(c, slot) != kInvalidConfig) return true;
    }
    return false;
  }

  Status Begin(const MigrationMove& mv) {
    Plan plan = MigrationBeginPlan(*cluster_, mv);
    RETURN_IF_ERROR(ApplyPlan(plan, cluster_).WithPrefix("migration planner"));
    moved_.insert(mv.job);
    out_.push_back({mv, std::move(plan)});
    return Status();
  }

  static MigrationMove MoveOf(int gpu, const Instance& in, const Target& t) {
    return MigrationMove{in.job, {gpu, in.profile, in.start}, {t.gpu, t.profile, t.start}};
  }

  // ---- 1. evacuation of reserved placements ----

  Status Evacuate(const Reservation& r) {
    if (r.gpu < 0 || r.gpu >= cluster_->size()) return Status();
    const GpuState& g = cluster_->gpu(r.gpu);
    const GpuModel& m = g.model();
    const ConfigTable& t = g.table();
    const int slot = m.SlotOf(r.profile, r.start);
    if (slot < 0) return Status();
    ConfigId rest = g.settled_config();
    if (t.Add(rest, slot) != kInvalidConfig) return Status();  // free once copies switch over
    std::vector<const Instance*> blockers, others;
    for (const Instance& in : g.instances()) {
      if (!in.busy() || in.migration == MigrationRole::kSource) continue;
      if (m.slots()[in.slot].unit_mask & m.slots()[slot].unit_mask) {
        blockers.push_back(&in);
        rest = t.Remove(rest, in.slot);
      } else {
        others.push_back(&in);
      }
    }
    std::stable_sort(others.begin(), others.end(), [&](const Instance* a, const Instance* b) {
      return ctx_.expected_end_s(a->job) > ctx_.expected_end_s(b->job);
    });
    for (const Instance* in : others) {
      if (t.Add(rest, slot) != kInvalidConfig) break;
      blockers.push_back(in);
      rest = t.Remove(rest, in->slot);
    }
    double end_all = -kInf, end_rest = ctx_.now_s;
    std::vector<const Instance*> movers;
    for (const Instance* in : blockers) {
      const double end = ctx_.expected_end_s(in->job);
      end_all = std::max(end_all, end);
      if (Rights(*in) == MoveRights::kAny && ctx_.job(in->job) != nullptr) {
        movers.push_back(in);
      } else {
        end_rest = std::max(end_rest, end);
      }
    }
    if (movers.empty() || !(end_rest < end_all)) return Status();
    // Dry run on a copy: every mover needs a target, else none moves.
    Cluster scratch = *cluster_;
    std::vector<MigrationMove> moves;
    for (const Instance* in : movers) {
      std::optional<Target> to = BestElsewhere(scratch, *ctx_.job(in->job), r.gpu);
      if (!to) return Status();
      const MigrationMove mv = MoveOf(r.gpu, *in, *to);
      RETURN_IF_ERROR(
          ApplyPlan(MigrationBeginPlan(scratch, mv), &scratch).WithPrefix("migration planner"));
      moves.push_back(mv);
    }
    for (const MigrationMove& mv : moves) RETURN_IF_ERROR(Begin(mv));
    return Status();
  }

  // ---- 2. moves aimed at making room (§4 step 6) ----

  Status MakeRoom(const Job& job) {
    struct Option {
      bool inter;
      double frag;
      int gpu;
      int source_start;
      int target_start;
      MigrationMove move;
    };
    std::optional<Option> best;
    // Intra first; then less FragCost (within 1e-9); lower GPU, lower source
    // start, higher target start.
    auto consider = [&](const Option& o) {
      if (best) {
        if (o.inter != best->inter) {
          if (o.inter) return;
        } else if (o.frag > best->frag + kEps) {
          return;
        } else if (o.frag >= best->frag - kEps &&
                   std::make_tuple(o.gpu, o.source_start, -o.target_start) >=
                       std::make_tuple(best->gpu, best->source_start, -best->target_start)) {
          return;
        }
      }
      best = o;
    };
    for (int gpu = 0; gpu < cluster_->size(); ++gpu) {
      if (reserved_[gpu]) continue;
      const GpuState& g = cluster_->gpu(gpu);
      const GpuModel& m = g.model();
      const ConfigTable& t = g.table();
      const int profile = ResolveProfile(m, job);
      if (profile < 0) continue;
      const Profile& p = m.profile(profile);
      const int free_units = std::popcount(m.all_units_mask() & ~t.unit_mask(g.busy_config()));
      if (g.free_compute_slices() < p.compute_slices || free_units < p.size()) continue;
      cands_.clear();
      AppendCandidates(*cluster_, gpu, profile, /*allow_create=*/true, &cands_);
      if (!cands_.empty()) continue;  // not fragmented: room now
      const ConfigId settled = g.settled_config();
      if (Fits(g, settled, profile)) continue;  // room once a copy in flight switches over
      for (const Instance& in : g.instances()) {
        const MoveRights rights = Rights(in);
        if (rights == MoveRights::kNone) continue;
        const ConfigId rest = t.Remove(settled, in.slot);
        if (!Fits(g, rest, profile)) continue;
        std::vector<Candidate> own;
        AppendCandidates(*cluster_, gpu, in.profile, /*allow_create=*/true, &own);
        for (const Candidate& k : own) {
          const ConfigId after = t.Add(rest, k.slot);
          if (after == kInvalidConfig || !Fits(g, after, profile)) continue;
          consider(
              {false, Frag(g, after), gpu, in.start, k.start,
               MigrationMove{in.job, {gpu, in.profile, in.start}, {gpu, in.profile, k.start}}});
        }
        const Job* spec = ctx_.job(in.job);
        if (rights == MoveRights::kAny && spec != nullptr) {
          std::optional<Target> to = BestElsewhere(*cluster_, *spec, gpu);
          if (to) {
            const GpuState& h = cluster_->gpu(to->gpu);
            const double frag = Frag(g, rest) + Frag(h, to->settled_after);
            consider({true, frag, gpu, in.start, to->start, MoveOf(gpu, in, *to)});
          }
        }
      }
    }
    if (best) RETURN_IF_ERROR(Begin(best->move));
    return Status();
  }

  // ---- 3. intra-GPU moves ----

  Status IntraPass() {
    for (int gpu = 0; gpu < cluster_->size(); ++gpu) {
      if (reserved_[gpu]) continue;
      for (int k = 0; k < opts_.migration.max_moves_per_pass; ++k) {
        const GpuState& g = cluster_->gpu(gpu);
        const ConfigId settled = g.settled_config();
        if (!Busy(g, settled)) break;
        const ConfigTable& t = g.table();
        const double before = Frag(g, settled);
        struct Option {
          double decrease;
          Candidate to;
          const Instance* from;
        };
        std::optional<Option> best;
        for (const Instance& in : g.instances()) {
          if (Rights(in) == MoveRights::kNone) continue;
          const ConfigId rest = t.Remove(settled, in.slot);
          cands_.clear();
          AppendCandidates(*cluster_, gpu, in.profile, /*allow_create=*/true, &cands_);
          for (const Candidate& c : cands_) {
            const ConfigId after = t.Add(rest, c.slot);
            if (after == kInvalidConfig) continue;
            const double dec = before - Frag(g, after);
            if (dec <= kEps) continue;
            if (!best || IntraBetter(dec, c, in, *best)) best = Option{dec, c, &in};
          }
        }
        if (!best) break;
        RETURN_IF_ERROR(Begin(MigrationMove{best->from->job,
                                            {gpu, best->from->profile, best->from->start},
                                            {gpu, best->to.profile, best->to.start}}));
      }
    }
    return Status();
  }

  template <typename Option>
  static bool IntraBetter(double dec, const Candidate& to, const Instance& from, const Option& b) {
    if (dec > b.decrease + kEps) return true;
    if (dec < b.decrease - kEps) return false;
    if (to.reuse != b.to.reuse) return to.reuse;
    if (to.destroys != b.to.destroys) return to.destroys < b.to.destroys;
    if (from.start != b.from->start) return from.start < b.from->start;
    return to.start > b.to.start;
  }

  // ---- 4. inter-GPU pulls onto lazy GPUs ----

  struct Pull {
    int gpu;
    int start;
    int slot;
    JobId job;
    int cs;
    double decrease;
  };

  void AddPulls(int h, std::vector<Pull>* pulls) {
    const GpuState& g = cluster_->gpu(h);
    const ConfigId settled = g.settled_config();
    if (!Busy(g, settled)) return;
    for (const Instance& in : g.instances()) {
      if (Rights(in) != MoveRights::kAny || ctx_.job(in.job) == nullptr) continue;
      const double dec = Frag(g, settled) - Frag(g, g.table().Remove(settled, in.slot));
      if (dec <= kEps) continue;
      pulls->push_back(
          {h, in.start, in.slot, in.job, g.model().profile(in.profile).compute_slices, dec});
    }
  }

  static void SortPulls(std::vector<Pull>* pulls) {
    std::stable_sort(pulls->begin(), pulls->end(), [](const Pull& a, const Pull& b) {
      if (std::abs(a.decrease - b.decrease) > kEps) return a.decrease > b.decrease;
      if (a.cs != b.cs) return a.cs > b.cs;
      if (a.gpu != b.gpu) return a.gpu < b.gpu;
      return a.start < b.start;
    });
  }

  Status InterPass() {
    std::vector<Pull> pulls;
    for (int h = 0; h < cluster_->size(); ++h) AddPulls(h, &pulls);
    if (pulls.empty()) return Status();
    SortPulls(&pulls);
    std::vector<int> lazy;
    for (int gpu = 0; gpu < cluster_->size(); ++gpu) {
      const GpuState& g = cluster_->gpu(gpu);
      if (!reserved_[gpu] && !Busy(g, g.settled_config())) lazy.push_back(gpu);
    }
    std::stable_sort(lazy.begin(), lazy.end(), [&](int a, int b) {
      const GpuState& ga = cluster_->gpu(a);
      const GpuState& gb = cluster_->gpu(b);
      return LessUtil(Cs(ga, ga.settled_config()), ga.model().compute_slices(),
                      Cs(gb, gb.settled_config()), gb.model().compute_slices());
    });
    // States of lazy GPUs that found no pull since the last accepted one.
    std::set<std::tuple<const GpuModel*, ConfigId, ConfigId, ConfigId>> no_pull;
    for (int gpu : lazy) {
      while (!pulls.empty()) {
        const GpuState& g = cluster_->gpu(gpu);
        const ConfigId settled_g = g.settled_config();
        if (Busy(g, settled_g)) break;
        const auto key = std::make_tuple(&g.model(), g.busy_config(), g.all_config(), settled_g);
        if (no_pull.count(key)) break;
        bool pulled = false;
        for (size_t i = 0; i < pulls.size(); ++i) {
          const Pull& pl = pulls[i];
          const GpuState& h = cluster_->gpu(pl.gpu);
          const ConfigId settled_h = h.settled_config();
          if (!LessUtil(Cs(g, settled_g), g.model().compute_slices(), Cs(h, settled_h),
                        h.model().compute_slices())) {
            continue;  // util(h) > util(g) required
          }
          const Job* spec = ctx_.job(pl.job);
          const int profile = ResolveProfile(g.model(), *spec);
          if (profile < 0) continue;
          std::optional<Target> to = BestOn(*cluster_, gpu, profile);
          if (!to) continue;
          const double before = Frag(h, settled_h) + Frag(g, settled_g);
          const double after =
              Frag(h, h.table().Remove(settled_h, pl.slot)) + Frag(g, to->settled_after);
          if (after > before + kEps) continue;
          const Instance& in = h.instances()[h.IndexAt(pl.start)];
          const int source = pl.gpu;
          RETURN_IF_ERROR(Begin(MoveOf(source, in, *to)));
          // The source GPU changed: recompute its candidates.
          pulls.erase(std::remove_if(pulls.begin(), pulls.end(),
                                     [&](const Pull& p) { return p.gpu == source; }),
                      pulls.end());
          AddPulls(source, &pulls);
          SortPulls(&pulls);
          no_pull.clear();
          pulled = true;
          break;
        }
        if (!pulled) {
          no_pull.insert(key);
          break;
        }
      }
    }
    return Status();
  }

  Cluster* cluster_;
  const MigrationContext& ctx_;
  const SchedulerOptions& opts_;
  std::vector<char> reserved_;
  std::set<JobId> moved_;
  std::vector<MigrationStart> out_;
  std::vector<Candidate> cands_;
};

class DefragPlanner : public MigrationPlanner {
 public:
  std::string_view name() const override { return "defrag"; }
  StatusOr<std::vector<MigrationStart>> RunPass(Cluster* cluster,
                                                const MigrationContext& ctx) override {
    if (ctx.options == nullptr || !ctx.rights || !ctx.job || !ctx.expected_end_s) {
      return InternalError("migration planner: incomplete context");
    }
    Pass pass(cluster, ctx);
    return pass.Run();
  }
};

}  // namespace

std::unique_ptr<MigrationPlanner> NewDefragPlanner() { return std::make_unique<DefragPlanner>(); }

Plan MigrationBeginPlan(const Cluster& cluster, const MigrationMove& mv) {
  const GpuState& g = cluster.gpu(mv.to.gpu);
  Plan plan;
  for (int s : IdleInstancesToDestroy(g, mv.to.profile, mv.to.start)) {
    plan.steps.push_back(
        {StepKind::kDestroy, mv.to.gpu, g.instances()[g.IndexAt(s)].profile, s, kNoJob});
  }
  const int at = g.IndexAt(mv.to.start);
  const bool reuse =
      at >= 0 && !g.instances()[at].busy() && g.instances()[at].profile == mv.to.profile;
  if (!reuse)
    plan.steps.push_back({StepKind::kCreate, mv.to.gpu, mv.to.profile, mv.to.start, kNoJob});
  plan.steps.push_back({StepKind::kMigrateBegin, mv.to.gpu, mv.to.profile, mv.to.start, mv.job,
                        mv.from.gpu, mv.from.start});
  return plan;
}

Plan MigrationEndPlan(const MigrationMove& mv) {
  Plan plan;
  plan.steps.push_back({StepKind::kMigrateEnd, mv.to.gpu, mv.to.profile, mv.to.start, mv.job,
                        mv.from.gpu, mv.from.start});
  plan.steps.push_back({StepKind::kDestroy, mv.from.gpu, mv.from.profile, mv.from.start, kNoJob});
  return plan;
}

double MigrationCopySeconds(double memory_mib, const SchedulerOptions::Migration& m) {
  return m.fixed_s + (memory_mib / 1024.0) / m.gbps;
}

}  // namespace migsched
