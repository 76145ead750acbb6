#include "sched/joint_search.h"

#include <algorithm>
#include <unordered_set>

namespace migsched {

bool JointCostBefore(const JointCost& a, const JointCost& b) {
  if (a.reserve_deficit != b.reserve_deficit) return a.reserve_deficit < b.reserve_deficit;
  if (a.reconfigurations != b.reconfigurations) return a.reconfigurations < b.reconfigurations;
  if (a.metric < b.metric - 1e-9) return true;
  if (b.metric < a.metric - 1e-9) return false;
  return a.moved < b.moved;
}

namespace {

class JointSearch {
 public:
  JointSearch(const JointSearchInput& in, LayoutSolver* solver)
      : in_(in), solver_(solver), prefer_largest_(in.reserve_full > 0) {}

  JointSearchResult Run() {
    const size_t nt = in_.targets.size();
    ms_.resize(nt);
    lb_.assign(nt, 0);
    for (size_t t = 0; t < nt; ++t) {
      ms_[t] = in_.targets[t].fixed;
      SortForLayout(in_.targets[t].pre->model(), &ms_[t]);
      const GpuLayout& lay = Layout(t);
      if (!lay.feasible) return result_;  // cannot happen: the fixed ones hold there now
      lb_[t] = lay.cost.reconfigurations;
    }
    target_of_.assign(in_.items.size(), -1);
    option_of_.assign(in_.items.size(), -1);
    Walk(0);
    result_.nodes = nodes_;
    return result_;
  }

 private:
  struct Outcome {
    bool found = false;  // a complete assignment below
    bool cut = false;    // the budget or the bound cut part of the walk below
  };

  const GpuLayout& Layout(size_t t) {
    const JointTarget& tg = in_.targets[t];
    return solver_->Solve(*tg.pre, tg.pre_key, ms_[t], prefer_largest_);
  }

  std::string Signature(size_t i, int start) const {
    std::string s;
    s.push_back(static_cast<char>(i & 0xff));
    s.push_back(static_cast<char>(i >> 8));
    s.push_back(static_cast<char>(start));
    for (const std::vector<int>& m : ms_) {
      for (int p : m) s.push_back(static_cast<char>(p + 1));
      s.push_back('\0');
    }
    return s;
  }

  void Leaf() {
    JointCost c;
    const size_t nt = in_.targets.size();
    std::vector<int> delta(in_.hosts_largest.size(), 0);
    for (size_t t = 0; t < nt; ++t) {
      const JointTarget& tg = in_.targets[t];
      LayoutCost lc;
      if (ms_[t] == tg.current) {
        lc = tg.current_cost;
      } else {
        lc = Layout(t).cost;
      }
      c.reconfigurations += lc.reconfigurations;
      c.metric += lc.metric;
      if (tg.model_index < static_cast<int>(delta.size())) {
        delta[tg.model_index] += (lc.admits_largest ? 1 : 0) - (tg.admits_largest_now ? 1 : 0);
      }
    }
    if (in_.reserve_full > 0) {
      for (size_t m = 0; m < delta.size(); ++m) {
        c.reserve_deficit += std::max(0, in_.reserve_full - (in_.hosts_largest[m] + delta[m]));
      }
    }
    // Interchangeable items: as many as possible stay where they are.
    int stay = 0, movable = 0;
    const std::vector<JointItem>& items = in_.items;
    for (size_t a = 0; a < items.size(); ++a) {
      if (items[a].current >= 0) ++movable;
      bool first = true;  // the first item of its (shape, current target) pair counts the pair
      for (size_t b = 0; b < a; ++b) {
        first =
            first && !(items[b].shape == items[a].shape && items[b].current == items[a].current);
      }
      if (!first || items[a].current < 0) continue;
      int now = 0, assigned = 0;
      for (size_t b = 0; b < items.size(); ++b) {
        if (items[b].shape != items[a].shape) continue;
        now += items[b].current == items[a].current;
        assigned += target_of_[b] == items[a].current;
      }
      stay += std::min(now, assigned);
    }
    c.moved = movable - stay;
    if (!result_.found || JointCostBefore(c, result_.cost)) {
      result_.found = true;
      result_.cost = c;
      result_.target_of = target_of_;
      result_.multisets = ms_;
    }
  }

  Outcome Walk(size_t i) {
    Outcome out;
    if (i == in_.items.size()) {
      Leaf();
      out.found = true;
      return out;
    }
    // Reconfigurations only grow as instances are added to a target.
    if (result_.found && result_.cost.reserve_deficit == 0) {
      int lb = 0;
      for (int r : lb_) lb += r;
      if (lb > result_.cost.reconfigurations) {
        out.cut = true;
        return out;
      }
    }
    const JointItem& item = in_.items[i];
    const int start = i > 0 && in_.items[i - 1].shape == item.shape ? option_of_[i - 1] : 0;
    const std::string sig = Signature(i, start);
    if (nogood_.count(sig)) return out;
    for (int o = start; o < static_cast<int>(item.options.size()); ++o) {
      if (nodes_ >= in_.max_nodes) {
        result_.budget_exhausted = true;
        out.cut = true;
        break;
      }
      ++nodes_;
      const auto [t, profile] = item.options[o];
      std::vector<int>& m = ms_[t];
      const GpuModel& model = in_.targets[t].pre->model();
      m.push_back(profile);
      SortForLayout(model, &m);
      const GpuLayout& lay = Layout(t);
      if (lay.feasible) {
        const int old = lb_[t];
        lb_[t] = lay.cost.reconfigurations;
        target_of_[i] = t;
        option_of_[i] = o;
        const Outcome below = Walk(i + 1);
        out.found = out.found || below.found;
        out.cut = out.cut || below.cut;
        lb_[t] = old;
      }
      m.erase(std::find(m.begin(), m.end(), profile));
    }
    target_of_[i] = -1;
    if (!out.found && !out.cut) nogood_.insert(sig);
    return out;
  }

  const JointSearchInput& in_;
  LayoutSolver* solver_;
  const bool prefer_largest_;
  std::vector<std::vector<int>> ms_;  // per target: fixed + assigned, canonical
  std::vector<int> lb_;               // per target: reconfigurations of its best layout
  std::vector<int> target_of_;
  std::vector<int> option_of_;
  std::unordered_set<std::string> nogood_;
  int64_t nodes_ = 0;
  JointSearchResult result_;
};

}  // namespace

JointSearchResult SearchJoint(const JointSearchInput& input, LayoutSolver* solver) {
  return JointSearch(input, solver).Run();
}

}  // namespace migsched
