// lb+frag (alias frag-aware): the placement of §4 (steps 1-4, 7) of
// docs/algorithms.md, scored by the metric chosen with --metric (§2).
#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sched/metrics.h"
#include "sched/policies/common.h"
#include "sched/policies/policies.h"

namespace migsched {
namespace {

class FragAwarePolicy : public PlacementPolicy {
 public:
  FragAwarePolicy(const SchedulerOptions& options, MetricKind metric, std::string name)
      : options_(options), scorer_(metric, options.demand_window), name_(std::move(name)) {}

  bool FeasibilityIsPerGpu() const override { return true; }
  std::string_view name() const override { return name_; }

  void ObserveArrival(const Cluster& cluster, const Job& job) override {
    scorer_.ObserveArrival(cluster, job);
  }

  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    // Steps 1 and 7: candidates on every GPU, the full-size reserve applied.
    // Step 2: conditional load balancing (candidates on lazy GPUs if any);
    // with reuse first, the reuse candidates of all GPUs before that split;
    // with anchored together, for a job that cannot leave its GPU, all of this
    // among the anchored GPUs first, and among all only if they have none.
    // Idle instances to destroy are counted only for the candidates that tie
    // on the score (step 4 needs them; most candidates lose on step 3). The
    // choice is a strict total order (step 4 ends with GPU index and start):
    // candidate order does not matter.
    CollectOptions collect{.reserve_full = options_.reserve_full,
                           .count_destroys = false,
                           .ascending = false,
                           .threshold = options_.threshold};
    near_.clear();
    best_score_ = INFINITY;
    before_gpu_ = -1;
    // Anchored together (step 2): a job that can never leave its GPU goes where such jobs run
    // already whenever one of those GPUs has a candidate.
    const bool anchor = options_.anchored_together && req.spec != nullptr && req.spec->anchors() &&
                        cluster.num_anchored() > 0;
    if (options_.reserve_full > 0) {
      // The reserve is judged over all candidates before the lazy/busy split.
      CollectCandidates(cluster, req, collect, &candidates_);
      if (anchor && std::any_of(candidates_.begin(), candidates_.end(),
                                [&](const Candidate& c) { return cluster.anchored(c.gpu); })) {
        std::erase_if(candidates_, [&](const Candidate& c) { return !cluster.anchored(c.gpu); });
      }
      if (options_.reuse_first && std::any_of(candidates_.begin(), candidates_.end(),
                                              [](const Candidate& c) { return c.reuse; })) {
        std::erase_if(candidates_, [](const Candidate& c) { return !c.reuse; });
      } else {
        KeepLazyIfAny(cluster, options_.threshold, &candidates_);
      }
      for (const Candidate& c : candidates_) Score(cluster, c);
    } else {
      // The same result without storing every candidate, and without looking
      // at busy GPUs when a lazy one will do.
      const auto score = [&](const Candidate& c) { Score(cluster, c); };
      // `only_anchored`: the anchored GPUs' candidates alone (the first round of an anchoring
      // job); the second round, when that found none, is every GPU's.
      bool only_anchored = anchor;
      // A GPU whose best possible score is already beaten by more than 1e-9
      // is skipped: Score would drop every one of its candidates.
      const auto may_win = [&](int gpu, int profile) {
        if (only_anchored && !cluster.anchored(gpu)) return false;
        return best_score_ == INFINITY ||
               BestScoreOn(cluster.gpu(gpu), profile) <= best_score_ + 1e-9;
      };
      const auto choose_among = [&] {
        collect.load = CollectOptions::Load::kAll;
        if (options_.reuse_first) {
          // Reuse first: the reuse candidates of every GPU (of the round), lazy or busy.
          collect.allow_create = false;
          ForEachCandidate(cluster, req, collect, score, may_win);
          collect.allow_create = true;
        }
        collect.load = CollectOptions::Load::kLazy;
        if (near_.empty()) ForEachCandidate(cluster, req, collect, score, may_win);
        if (near_.empty()) {
          collect.load = CollectOptions::Load::kBusy;
          ForEachCandidate(cluster, req, collect, score, may_win);
        }
      };
      choose_among();
      if (near_.empty() && only_anchored) {
        only_anchored = false;
        choose_among();
      }
    }
    if (near_.empty()) return std::nullopt;

    // Step 4 among the step-3 minima (within 1e-9): reuse, fewest destroys,
    // lower util, lower GPU index, higher start.
    // Reuse comes first: if any minimum reuses an idle instance, only those
    // can win, and only theirs need the idle instances to destroy counted.
    bool any_reuse = false;
    for (const auto& [c, s] : near_) any_reuse = any_reuse || (c.reuse && s <= best_score_ + 1e-9);
    Candidate* best = nullptr;
    for (auto& [c, s] : near_) {
      if (s > best_score_ + 1e-9 || c.reuse != any_reuse) continue;
      if (c.destroys < 0) {
        c.destroys = CountIdleInstancesToDestroy(cluster.gpu(c.gpu), c.profile, c.start);
      }
      if (best == nullptr || ReuseOrderBefore(cluster, c, *best)) best = &c;
    }
    return *best;
  }

 private:
  SchedulerOptions options_;
  MetricScorer scorer_;
  std::string name_;
  // Step 3 for one candidate: its score, the metric's change (or its value
  // after, --frag-objective post). Keeps it in near_ unless it is already
  // beaten by more than 1e-9: a candidate dropped here is above the final
  // minimum + 1e-9 too (the running minimum only falls), and Choose filters
  // near_ by the final minimum, so the result is that of scoring all first.
  void Score(const Cluster& cluster, const Candidate& c) {
    const GpuState& g = cluster.gpu(c.gpu);
    const bool post = options_.frag_objective == FragObjective::kPost;
    // A GPU's candidates come together: its value before the placement is
    // computed once (Delta = Value(after) - Value(before)).
    if (!post && c.gpu != before_gpu_) {
      before_ = scorer_.Value(g.table(), g.busy_config());
      before_gpu_ = c.gpu;
    }
    const double after = scorer_.Value(g.table(), c.busy_after);
    const double s = post ? after : after - before_;
    if (s > best_score_ + 1e-9) return;
    best_score_ = std::min(best_score_, s);
    near_.emplace_back(c, s);
  }

  // The lowest score any candidate of `profile` on a GPU in state `g` can
  // have: the minimum of Score's expression over the profile's slots that
  // fit the busy configuration (variant instance limits ignored: a lower
  // bound), memoised per (busy configuration, profile) until the metric's
  // generation changes.
  double BestScoreOn(const GpuState& g, int profile) {
    const ConfigTable& t = g.table();
    BoundMemo* memo = nullptr;
    for (BoundMemo& b : bounds_) memo = b.table == &t ? &b : memo;
    if (memo == nullptr) {
      memo = &bounds_.emplace_back();
      memo->table = &t;
      memo->profiles = static_cast<int>(g.model().profiles().size());
      memo->value.assign(static_cast<size_t>(t.num_configs()) * memo->profiles, 0);
      memo->stamp.assign(memo->value.size(), 0);
    }
    const size_t k = static_cast<size_t>(g.busy_config()) * memo->profiles + profile;
    if (memo->stamp[k] == scorer_.generation()) return memo->value[k];
    const bool post = options_.frag_objective == FragObjective::kPost;
    const double before = post ? 0 : scorer_.Value(t, g.busy_config());
    double best = INFINITY;
    for (int slot : g.model().SlotsOfProfile(profile)) {
      const ConfigId after = t.Add(g.busy_config(), slot);
      if (after == kInvalidConfig) continue;
      const double v = scorer_.Value(t, after);
      best = std::min(best, post ? v : v - before);
    }
    memo->value[k] = best;
    memo->stamp[k] = scorer_.generation();
    return best;
  }

  struct BoundMemo {
    const ConfigTable* table = nullptr;
    int profiles = 0;
    std::vector<double> value;    // [busy configuration * profiles + profile]
    std::vector<uint64_t> stamp;  // valid where == scorer_.generation()
  };
  std::deque<BoundMemo> bounds_;  // per model's table (few: linear lookup)

  std::vector<Candidate> candidates_;               // with --reserve-full only
  std::vector<std::pair<Candidate, double>> near_;  // (candidate, score) near the minimum
  double best_score_ = INFINITY;
  int before_gpu_ = -1;
  double before_ = 0;
};

}  // namespace

std::unique_ptr<PlacementPolicy> NewFragAwarePolicy(const SchedulerOptions& options,
                                                    MetricKind metric, std::string name) {
  return std::make_unique<FragAwarePolicy>(options, metric, std::move(name));
}

}  // namespace migsched
