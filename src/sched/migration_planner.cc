#include "sched/migration_planner.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/numbers.h"
#include "sched/candidates.h"

namespace migsched {
namespace {

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

// util(a) < util(b), compared exactly (core/gpu_state.h UtilLess).
bool LessUtil(int cs_a, int total_a, int cs_b, int total_b) {
  return UtilLess(cs_a, total_a, cs_b, total_b);
}

// Facts about configurations that do not depend on which jobs may move,
// memoised across passes (they are pure functions of a model's table), so
// that a pass skips the many GPUs where nothing could improve without asking
// about their jobs.
class StateCache {
 public:
  // Whether some instance of `settled` has a free placement (in `busy`, the
  // occupied configuration) whose move lowers FragCost(settled) by > 1e-9.
  bool HasDecreasingMove(const GpuModel& m, const ConfigTable& t, ConfigId settled, ConfigId busy) {
    int8_t& memo = Of(t).Move(settled, busy);
    if (memo >= 0) return memo != 0;
    memo = 0;
    const double before = t.FragCost(settled);
    const uint64_t mask = t.slot_mask(settled);
    for (int a = 0; a < t.num_slots() && memo == 0; ++a) {
      if (!(mask >> a & 1)) continue;
      const ConfigId rest = t.Remove(settled, a);
      for (int b : m.SlotsOfProfile(m.slots()[a].profile)) {
        if (t.Add(busy, b) == kInvalidConfig) continue;
        const ConfigId after = t.Add(rest, b);
        if (after != kInvalidConfig && before - t.FragCost(after) > kEps) {
          memo = 1;
          break;
        }
      }
    }
    return memo != 0;
  }

  // Whether removing some instance of `settled` lowers its FragCost by > 1e-9.
  bool HasDecreasingLeave(const ConfigTable& t, ConfigId settled) {
    int8_t& memo = Of(t).leaves[settled];
    if (memo >= 0) return memo != 0;
    memo = 0;
    const uint64_t mask = t.slot_mask(settled);
    for (int a = 0; a < t.num_slots(); ++a) {
      if ((mask >> a & 1) && t.FragCost(settled) - t.FragCost(t.Remove(settled, a)) > kEps) {
        memo = 1;
        break;
      }
    }
    return memo != 0;
  }

 private:
  // Memos of one model's table: -1 unknown, 0 no, 1 yes. Leaves by settled
  // configuration; moves by (settled, busy) in a dense table while it stays
  // small (723 configurations: 0.5 MB), in a hash map beyond.
  struct Memo {
    explicit Memo(int n) : n(n), leaves(n, -1) {
      if (n <= kDense) moves.assign(static_cast<size_t>(n) * n, -1);
    }
    int8_t& Move(ConfigId settled, ConfigId busy) {
      if (!moves.empty()) return moves[static_cast<size_t>(settled) * n + busy];
      const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(settled)) << 32) |
                           static_cast<uint32_t>(busy);
      return sparse.try_emplace(key, static_cast<int8_t>(-1)).first->second;
    }
    static constexpr int kDense = 2048;
    int n;
    std::vector<int8_t> leaves;
    std::vector<int8_t> moves;
    std::unordered_map<uint64_t, int8_t> sparse;
  };
  Memo& Of(const ConfigTable& t) {
    if (last_ != nullptr && last_->first == &t) return last_->second;
    for (auto& entry : memos_) {
      if (entry.first == &t) {
        last_ = &entry;
        return entry.second;
      }
    }
    memos_.emplace_back(&t, Memo(t.num_configs()));
    last_ = &memos_.back();
    return last_->second;
  }
  // Few models per cluster: a linear search. Deque: references stay valid.
  std::deque<std::pair<const ConfigTable*, Memo>> memos_;
  std::pair<const ConfigTable*, Memo>* last_ = nullptr;  // the last one asked for
};

// What rules 3 and 4 need to know of a GPU's state before looking at its
// jobs: some intra move could lower its FragCost (kMove) / some instance's
// leaving could (kLeave). Both need the settled configuration busy (util >=
// t); a GPU whose busy configuration is lazy is lazy settled too.
enum : uint8_t { kMove = 1, kLeave = 2 };

uint8_t StateFlags(const GpuState& g, double threshold, StateCache* cache) {
  const auto busy = [&](ConfigId c) {
    return !IsLazyUtil(g.table().compute_used(c), g.model().compute_slices(), threshold);
  };
  if (!busy(g.busy_config())) return 0;
  const ConfigId settled = g.settled_config();
  if (!busy(settled)) return 0;
  uint8_t f = 0;
  if (cache->HasDecreasingMove(g.model(), g.table(), settled, g.busy_config())) f |= kMove;
  if (cache->HasDecreasingLeave(g.table(), settled)) f |= kLeave;
  return f;
}

// StateFlags of every GPU, kept across passes: between two passes only the
// GPUs changed by the events in between are looked at again (the cluster's
// change journal, Cluster::ChangedSince), so finding the GPUs of rules 3 and
// 4 costs O(changed GPUs + GPUs listed) per pass instead of O(groups). A
// cluster it has not seen (another object, a copy), a journal that has moved
// on, or another threshold: every GPU is looked at once, O(GPUs).
class StateScan {
 public:
  void Update(const Cluster& c, double threshold, StateCache* cache) {
    changed_.clear();
    const bool same = cursor_.cluster != 0 && threshold == threshold_ &&
                      static_cast<int>(flags_.size()) == c.size() &&
                      c.ChangedSince(cursor_, &changed_);
    if (!same) {
      flags_.assign(c.size(), 0);
      move_.clear();
      leave_.clear();
      threshold_ = threshold;
      changed_.resize(c.size());
      for (int i = 0; i < c.size(); ++i) changed_[i] = i;
    }
    for (int gpu : changed_) {
      const uint8_t f = StateFlags(c.gpu(gpu), threshold, cache);
      const uint8_t was = flags_[gpu];
      if (f == was) continue;
      flags_[gpu] = f;
      if ((f ^ was) & kMove) f& kMove ? (void)move_.insert(gpu) : (void)move_.erase(gpu);
      if ((f ^ was) & kLeave) f& kLeave ? (void)leave_.insert(gpu) : (void)leave_.erase(gpu);
    }
    cursor_ = c.change_cursor();
  }
  // The GPUs with kMove / kLeave, ascending.
  const std::set<int>& move() const { return move_; }
  const std::set<int>& leave() const { return leave_; }

 private:
  Cluster::ChangeCursor cursor_;
  double threshold_ = 0;
  std::vector<uint8_t> flags_;  // per GPU
  std::set<int> move_, leave_;
  std::vector<int> changed_;
};

class Pass {
 public:
  Pass(Cluster* cluster, const MigrationContext& ctx, StateCache* cache, StateScan* scan)
      : cluster_(cluster),
        ctx_(ctx),
        opts_(*ctx.options),
        cache_(cache),
        scan_(scan),
        reserved_(cluster->size(), 0) {
    for (const Reservation& r : ctx.reservations) {
      if (r.gpu >= 0 && r.gpu < cluster->size()) reserved_[r.gpu] = 1;
    }
  }

  StatusOr<std::vector<MigrationStart>> Run() {
    for (const Reservation& r : ctx_.reservations) RETURN_IF_ERROR(Evacuate(r));
    if (ctx_.trigger == MigrationTrigger::kFragmented) {
      for (const Job* job : ctx_.fragmented) RETURN_IF_ERROR(MakeRoom(*job));
    } else {
      // One look at every state group for both rules.
      std::vector<int> intra, leave;
      ScanStates(&intra, &leave);
      const size_t before = out_.size();
      RETURN_IF_ERROR(IntraPass(intra));
      // Intra moves changed their GPUs only: test those again for rule 4.
      std::vector<int> changed;
      for (size_t i = before; i < out_.size(); ++i) changed.push_back(out_[i].move.to.gpu);
      std::sort(changed.begin(), changed.end());
      changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
      if (!changed.empty()) {
        std::erase_if(leave,
                      [&](int g) { return std::binary_search(changed.begin(), changed.end(), g); });
        for (int g : changed) {
          if (HasLeave(g)) leave.push_back(g);
        }
        std::sort(leave.begin(), leave.end());
      }
      RETURN_IF_ERROR(InterPass(leave));
    }
    return std::move(out_);
  }

 private:
  // ---- helpers ----

  double Frag(const GpuState& g, ConfigId c) const { return g.table().FragCost(c); }
  int Cs(const GpuState& g, ConfigId c) const { return g.table().compute_used(c); }
  bool Busy(const GpuState& g, ConfigId settled) const {
    return !IsLazyUtil(Cs(g, settled), g.model().compute_slices(), opts_.threshold);
  }

  // The rights of the job on `in` in this pass (holds never move).
  MoveRights Rights(const Instance& in) const {
    if (!in.runs_job() || in.migration != MigrationRole::kNone || moved_.count(in.job)) {
      return MoveRights::kNone;
    }
    return ctx_.rights(in.job);
  }

  // When the busy instance `in` is expected to be free: its job's expected
  // end; never for a hold (a reservation or placeholder ends when its holder says).
  double EndOf(const Instance& in) const {
    return in.runs_job() ? ctx_.expected_end_s(in.job) : kInf;
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
    return Step4Before(c, {a.gpu, a.start, a.reuse, a.destroys},
                       {b.gpu, b.start, b.reuse, b.destroys});
  }

  // The best placement for `job` on any non-reserved GPU of `c` but `except`.
  // The GPUs of one state group offer the same targets and differ only in
  // the GPU index, the last §4 tie-break: only the lowest eligible member of
  // each group is looked at (every GPU with grouping off). O(groups ×
  // placements).
  std::optional<Target> BestElsewhere(const Cluster& c, const Job& job, int except) {
    std::optional<Target> best;
    for (int rep : c.representatives()) {
      int gpu = -1;
      c.ForEachInGroup(rep, [&](int m) {
        if (m == except || reserved_[m]) return true;
        gpu = m;
        return false;
      });
      if (gpu < 0) continue;
      const int profile = ResolveProfile(c.gpu(gpu).model(), job);
      if (profile < 0) continue;
      std::optional<Target> t = BestOn(c, gpu, profile);
      if (t && (!best || Better(c, *t, *best))) best = t;
    }
    return best;
  }

  // The GPUs that pass `keep`, a test of a GPU's state alone (the same for
  // every member of a state group), ascending, not reserved for the pass:
  // O(groups + members kept) with grouping on, O(GPUs) with it off.
  template <typename Keep>
  std::vector<int> GpusWhere(Keep keep) const {
    std::vector<int> out;
    for (int rep : cluster_->representatives()) {
      if (!keep(rep)) continue;
      cluster_->ForEachInGroup(rep, [&](int m) {
        if (!reserved_[m]) out.push_back(m);
        return true;
      });
    }
    std::sort(out.begin(), out.end());
    return out;
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
    if (r.hold || r.gpu < 0 || r.gpu >= cluster_->size()) return Status();
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
    std::stable_sort(others.begin(), others.end(),
                     [&](const Instance* a, const Instance* b) { return EndOf(*a) > EndOf(*b); });
    for (const Instance* in : others) {
      if (t.Add(rest, slot) != kInvalidConfig) break;
      blockers.push_back(in);
      rest = t.Remove(rest, in->slot);
    }
    double end_all = -kInf, end_rest = ctx_.now_s;
    std::vector<const Instance*> movers;
    // A job has at most one move in flight: a gang job with two blockers here
    // moves neither (it waits for its end like a job that may not move).
    std::map<JobId, int> blocks;
    for (const Instance* in : blockers) {
      if (in->runs_job()) ++blocks[in->job];
    }
    for (const Instance* in : blockers) {
      const double end = EndOf(*in);
      end_all = std::max(end_all, end);
      if (Rights(*in) == MoveRights::kAny && ctx_.job(in->job) != nullptr && blocks[in->job] == 1) {
        movers.push_back(in);
      } else {
        end_rest = std::max(end_rest, end);
      }
    }
    if (movers.empty() || !(end_rest < end_all)) return Status();
    // Every mover needs a target, else none moves. When each has a target on
    // a GPU of its own now, they all still will after the others moved (the
    // others only change their own targets' GPUs); otherwise dry-run the
    // moves on a copy of the cluster.
    std::set<int> target_gpus;
    bool distinct = true;
    for (const Instance* in : movers) {
      std::optional<Target> to = BestElsewhere(*cluster_, *ctx_.job(in->job), r.gpu);
      if (!to) return Status();
      distinct = distinct && target_gpus.insert(to->gpu).second;
    }
    if (!distinct) {
      Cluster scratch = *cluster_;
      for (const Instance* in : movers) {
        std::optional<Target> to = BestElsewhere(scratch, *ctx_.job(in->job), r.gpu);
        if (!to) return Status();
        RETURN_IF_ERROR(ApplyPlan(MigrationBeginPlan(scratch, MoveOf(r.gpu, *in, *to)), &scratch)
                            .WithPrefix("migration planner"));
      }
    }
    // The same choices on the cluster itself.
    std::vector<int> starts;
    for (const Instance* in : movers) starts.push_back(in->start);
    for (int start : starts) {
      const GpuState& g = cluster_->gpu(r.gpu);
      const Instance& in = g.instances()[g.IndexAt(start)];
      std::optional<Target> to = BestElsewhere(*cluster_, *ctx_.job(in.job), r.gpu);
      if (!to) return InternalError("migration planner: an evacuation target vanished");
      RETURN_IF_ERROR(Begin(MoveOf(r.gpu, in, *to)));
    }
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
    // The GPUs with enough free compute slices and units for the profile but
    // no valid placement: a property of the state (checked once per group).
    auto fragmented = [&](int gpu) {
      const GpuState& g = cluster_->gpu(gpu);
      const GpuModel& m = g.model();
      const ConfigTable& t = g.table();
      const int profile = ResolveProfile(m, job);
      if (profile < 0) return false;
      const Profile& p = m.profile(profile);
      const int free_units = std::popcount(m.all_units_mask() & ~t.unit_mask(g.busy_config()));
      if (g.free_compute_slices() < p.compute_slices || free_units < p.size()) return false;
      cands_.clear();
      AppendCandidates(*cluster_, gpu, profile, /*allow_create=*/true, &cands_);
      if (!cands_.empty()) return false;  // not fragmented: room now
      // Room once a copy in flight switches over?
      return !Fits(g, g.settled_config(), profile);
    };
    for (int gpu : GpusWhere(fragmented)) {
      const GpuState& g = cluster_->gpu(gpu);
      const ConfigTable& t = g.table();
      const int profile = ResolveProfile(g.model(), job);
      const ConfigId settled = g.settled_config();
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

  // Whether GPU h is busy and some instance's leaving would lower its
  // FragCost (rule 4 sources; a property of the state).
  bool HasLeave(int h) {
    const GpuState& g = cluster_->gpu(h);
    const ConfigId settled = g.settled_config();
    return Busy(g, settled) && cache_->HasDecreasingLeave(g.table(), settled);
  }

  // `intra` gets the non-reserved GPUs where some intra move could lower
  // FragCost (whoever may move; rule 3), `leave` the GPUs (reserved ones
  // too) where some leave could (rule 4), both ascending. Grouping on: from
  // the StateScan kept across passes, O(changed GPUs + GPUs listed); off
  // (the naive reference): every GPU's state is tested, O(GPUs).
  void ScanStates(std::vector<int>* intra, std::vector<int>* leave) {
    if (cluster_->grouping()) {
      scan_->Update(*cluster_, opts_.threshold, cache_);
      for (int m : scan_->move()) {
        if (!reserved_[m]) intra->push_back(m);
      }
      leave->assign(scan_->leave().begin(), scan_->leave().end());
      return;
    }
    for (int m = 0; m < cluster_->size(); ++m) {
      const uint8_t f = StateFlags(cluster_->gpu(m), opts_.threshold, cache_);
      if ((f & kMove) && !reserved_[m]) intra->push_back(m);
      if (f & kLeave) leave->push_back(m);
    }
  }

  // A move on a GPU changes that GPU only, so the GPUs where some move could
  // lower FragCost are found once, per group (ScanStates).
  Status IntraPass(const std::vector<int>& gpus) {
    for (int gpu : gpus) {
      for (int k = 0; k < opts_.migration.max_moves_per_pass; ++k) {
        const GpuState& g = cluster_->gpu(gpu);
        const ConfigId settled = g.settled_config();
        if (!Busy(g, settled)) break;
        const ConfigTable& t = g.table();
        // Nothing can lower FragCost here, whoever may move: skip the GPU.
        if (!cache_->HasDecreasingMove(g.model(), t, settled, g.busy_config())) break;
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
    if (!Busy(g, settled) || !cache_->HasDecreasingLeave(g.table(), settled)) return;
    for (const Instance& in : g.instances()) {
      if (!in.busy() || in.migration != MigrationRole::kNone) continue;
      const double dec = Frag(g, settled) - Frag(g, g.table().Remove(settled, in.slot));
      if (dec <= kEps) continue;
      if (Rights(in) != MoveRights::kAny || ctx_.job(in.job) == nullptr) continue;
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

  // The no-pull key of a lazy GPU: its model and configurations.
  using StateKey = std::tuple<const GpuModel*, ConfigId, ConfigId, ConfigId>;
  static StateKey KeyOf(const GpuState& g) {
    return std::make_tuple(&g.model(), g.busy_config(), g.all_config(), g.settled_config());
  }

  // Pulls onto lazy GPU `gpu` while it stays lazy and some pull is accepted
  // (rule 4). `no_pull`: states of lazy GPUs that found no pull since the
  // last accepted one (cleared by an accepted pull; `gpu`'s state is added
  // when it finds none). Sets *pulled_any when a pull was accepted.
  Status PullOnto(int gpu, std::vector<Pull>* pulls, std::set<StateKey>* no_pull,
                  bool* pulled_any) {
    while (!pulls->empty()) {
      const GpuState& g = cluster_->gpu(gpu);
      const ConfigId settled_g = g.settled_config();
      if (Busy(g, settled_g)) break;
      const StateKey key = KeyOf(g);
      if (no_pull->count(key)) break;
      // BestOn(gpu, profile) per profile: `gpu` does not change until a pull is accepted.
      std::vector<std::pair<int, std::optional<Target>>> best_on;
      bool pulled = false;
      for (size_t i = 0; i < pulls->size(); ++i) {
        const Pull& pl = (*pulls)[i];
        // One move per job and pass: another instance of a gang may have moved.
        if (moved_.count(pl.job)) continue;
        const GpuState& h = cluster_->gpu(pl.gpu);
        const ConfigId settled_h = h.settled_config();
        if (!LessUtil(Cs(g, settled_g), g.model().compute_slices(), Cs(h, settled_h),
                      h.model().compute_slices())) {
          continue;  // util(h) > util(g) required
        }
        const Job* spec = ctx_.job(pl.job);
        const int profile = ResolveProfile(g.model(), *spec);
        if (profile < 0) continue;
        const std::optional<Target>* to = nullptr;
        for (const auto& [p, t] : best_on) to = p == profile ? &t : to;
        if (to == nullptr) {
          best_on.emplace_back(profile, BestOn(*cluster_, gpu, profile));
          to = &best_on.back().second;
        }
        if (!*to) continue;
        const double before = Frag(h, settled_h) + Frag(g, settled_g);
        const double after =
            Frag(h, h.table().Remove(settled_h, pl.slot)) + Frag(g, (*to)->settled_after);
        if (after > before + kEps) continue;
        const Instance& in = h.instances()[h.IndexAt(pl.start)];
        const int source = pl.gpu;
        RETURN_IF_ERROR(Begin(MoveOf(source, in, **to)));
        // The source GPU changed: recompute its candidates.
        pulls->erase(std::remove_if(pulls->begin(), pulls->end(),
                                    [&](const Pull& p) { return p.gpu == source; }),
                     pulls->end());
        AddPulls(source, pulls);
        SortPulls(pulls);
        no_pull->clear();
        pulled = true;
        *pulled_any = true;
        break;
      }
      if (!pulled) {
        no_pull->insert(key);
        break;
      }
    }
    return Status();
  }

  // `sources`: the GPUs where a leave could lower FragCost (ScanStates).
  Status InterPass(const std::vector<int>& sources) {
    std::vector<Pull> pulls;
    for (int h : sources) AddPulls(h, &pulls);
    if (pulls.empty()) return Status();
    SortPulls(&pulls);
    return cluster_->grouping() ? PullGrouped(&pulls) : PullNaive(&pulls);
  }

  // The lazy, non-reserved GPUs by lower util, then lower index, each
  // offered the pulls in turn: O(GPUs log GPUs) per pass (the reference).
  Status PullNaive(std::vector<Pull>* pulls) {
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
    std::set<StateKey> no_pull;
    bool pulled_any = false;
    for (int gpu : lazy) RETURN_IF_ERROR(PullOnto(gpu, pulls, &no_pull, &pulled_any));
    return Status();
  }

  // The same order and the same choices as PullNaive, looking only at the
  // GPUs that can make a difference. Each lazy state group is a stream of
  // GPUs (its members at the start of the pass, ascending); a min-heap over
  // (util, GPU) holds the next GPU of each stream whose state is not in
  // `no_pull`. Between two accepted pulls only the first GPU of each state
  // is tried (the others are skipped by `no_pull` in PullNaive too); after
  // an accepted pull the streams left out are put back. Members are read
  // from the live groups: a GPU that changed in this pass (a pull's source
  // or target) is skipped, which leaves exactly the members at the start.
  // Cost: O(lazy groups × log) per accepted pull plus the tries.
  Status PullGrouped(std::vector<Pull>* pulls) {
    struct Stream {
      std::string group;  // Cluster::group_key
      StateKey key;
      int cs, total;  // util = cs / total (settled)
      bool queued = false;
    };
    std::vector<Stream> streams;
    for (int rep : cluster_->representatives()) {
      const GpuState& g = cluster_->gpu(rep);
      const ConfigId settled = g.settled_config();
      if (Busy(g, settled)) continue;
      streams.push_back(
          {cluster_->group_key(rep), KeyOf(g), Cs(g, settled), g.model().compute_slices()});
    }
    std::set<int> changed;  // GPUs changed in this pass since the streams were taken
    // Position in the lazy order: (util, GPU).
    struct Pos {
      int cs, total, gpu, stream;
    };
    auto later = [](const Pos& a, const Pos& b) {  // a after b: heap order (min first)
      if (LessUtil(b.cs, b.total, a.cs, a.total)) return true;
      if (LessUtil(a.cs, a.total, b.cs, b.total)) return false;
      return a.gpu > b.gpu;
    };
    // The first GPU of stream `s` after position `after` (nullopt: before all).
    auto next = [&](int s, const std::optional<Pos>& after) -> std::optional<Pos> {
      const Stream& st = streams[s];
      const std::set<int>* members = cluster_->FindGroup(st.group);
      if (members == nullptr) return std::nullopt;
      auto it = members->begin();
      if (after) {
        // A util below the position's: passed; an equal one: higher GPUs only.
        if (LessUtil(st.cs, st.total, after->cs, after->total)) return std::nullopt;
        if (!LessUtil(after->cs, after->total, st.cs, st.total)) {
          it = members->upper_bound(after->gpu);
        }
      }
      for (; it != members->end(); ++it) {
        if (!changed.count(*it) && !reserved_[*it]) return Pos{st.cs, st.total, *it, s};
      }
      return std::nullopt;
    };
    std::vector<Pos> heap;
    std::set<StateKey> no_pull;
    auto refill = [&](const std::optional<Pos>& after) {
      for (int s = 0; s < static_cast<int>(streams.size()); ++s) {
        if (streams[s].queued || no_pull.count(streams[s].key)) continue;
        if (std::optional<Pos> p = next(s, after)) {
          heap.push_back(*p);
          std::push_heap(heap.begin(), heap.end(), later);
          streams[s].queued = true;
        }
      }
    };
    refill(std::nullopt);
    while (!heap.empty() && !pulls->empty()) {
      std::pop_heap(heap.begin(), heap.end(), later);
      const Pos pos = heap.back();
      heap.pop_back();
      Stream& st = streams[pos.stream];
      st.queued = false;
      if (no_pull.count(st.key)) continue;  // dropped until the next accepted pull
      bool pulled_any = false;
      const size_t moves_before = out_.size();
      RETURN_IF_ERROR(PullOnto(pos.gpu, pulls, &no_pull, &pulled_any));
      for (size_t i = moves_before; i < out_.size(); ++i) {
        changed.insert(out_[i].move.from.gpu);
        changed.insert(out_[i].move.to.gpu);
      }
      if (!no_pull.count(st.key)) {
        // Accepted pulls (or none tried): the next GPU of this stream.
        if (std::optional<Pos> p = next(pos.stream, pos)) {
          heap.push_back(*p);
          std::push_heap(heap.begin(), heap.end(), later);
          st.queued = true;
        }
      }
      if (pulled_any) refill(pos);
    }
    return Status();
  }

  Cluster* cluster_;
  const MigrationContext& ctx_;
  const SchedulerOptions& opts_;
  StateCache* cache_;
  StateScan* scan_;
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
    Pass pass(cluster, ctx, &cache_, &scan_);
    return pass.Run();
  }

 private:
  StateCache cache_;
  StateScan scan_;
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

Plan MigrationEndPlan(const MigrationMove& mv, bool keep_source) {
  Plan plan;
  plan.steps.push_back({StepKind::kMigrateEnd, mv.to.gpu, mv.to.profile, mv.to.start, mv.job,
                        mv.from.gpu, mv.from.start});
  if (!keep_source) {
    plan.steps.push_back({StepKind::kDestroy, mv.from.gpu, mv.from.profile, mv.from.start, kNoJob});
  }
  return plan;
}

double MigrationCopySeconds(double memory_mib, const SchedulerOptions::Migration& m) {
  return m.fixed_s + (memory_mib / 1024.0) / m.gbps;
}

}  // namespace migsched
