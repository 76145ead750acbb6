#include "sched/metrics.h"

#include <fmt/format.h>

#include <bit>

namespace migsched {
namespace {

// Position of the base profile of `profile` in model.base_profiles(), or -1.
int TermOf(const GpuModel& model, int profile) {
  if (profile < 0) return -1;
  const int base = model.BaseOf(profile);
  const std::vector<int>& bases = model.base_profiles();
  for (size_t t = 0; t < bases.size(); ++t) {
    if (bases[t] == base) return static_cast<int>(t);
  }
  return -1;
}

}  // namespace

std::string_view MetricName(MetricKind kind) {
  switch (kind) {
    case MetricKind::kBlockedPlacements:
      return "blocked-placements";
    case MetricKind::kDemandWeighted:
      return "demand-weighted";
    case MetricKind::kFragCost:
      break;
  }
  return "fragcost";
}

std::vector<std::string> MetricNames() {
  return {"fragcost", "blocked-placements", "demand-weighted"};
}

StatusOr<MetricKind> ParseMetric(std::string_view name) {
  for (MetricKind k :
       {MetricKind::kFragCost, MetricKind::kBlockedPlacements, MetricKind::kDemandWeighted}) {
    if (name == MetricName(k)) return k;
  }
  return InvalidArgumentError(
      fmt::format("metric '{}' is not one of fragcost, blocked-placements, demand-weighted", name));
}

int ComputeBlockedPlacements(const ConfigTable& table, ConfigId c) {
  const GpuModel& m = table.model();
  const uint64_t busy_units = table.unit_mask(c);
  const int free_cs = m.compute_slices() - table.compute_used(c);
  const int free_units = m.placement_units() - std::popcount(busy_units);
  int total = 0;
  const std::vector<int>& bases = m.base_profiles();
  for (size_t term = 0; term < bases.size(); ++term) {
    const Profile& p = m.profile(bases[term]);
    if (p.compute_slices > free_cs || p.size() > free_units ||
        table.Count(c, static_cast<int>(term)) >= p.max_instances) {
      continue;  // no longer fits by capacity: not fragmentation
    }
    int blocked = 0;
    for (int slot : m.SlotsOfProfile(bases[term])) {
      blocked += (m.slots()[slot].unit_mask & busy_units) != 0;
    }
    total += blocked * p.memory_slices;
  }
  return total;
}

BlockedPlacementsTable::BlockedPlacementsTable(const ConfigTable& table) : table_(&table) {
  values_.resize(table.num_configs());
  for (ConfigId c = 0; c < table.num_configs(); ++c)
    values_[c] = ComputeBlockedPlacements(table, c);
}

double DemandWeightedValue(const ConfigTable& table, ConfigId c,
                           const std::vector<double>& shares) {
  const GpuModel& m = table.model();
  const int free_cs = m.compute_slices() - table.compute_used(c);
  double f = 0;
  for (int term = 0; term < table.num_terms(); ++term) {
    if (shares[term] == 0) continue;
    const int cs = m.profile(m.base_profiles()[term]).compute_slices;
    f += shares[term] * (free_cs - cs * table.Feasible(c, term));
  }
  return f;
}

DemandWindow::PerModel& DemandWindow::Of(const GpuModel& model) {
  for (PerModel& pm : models_) {
    if (pm.model == &model) return pm;
  }
  PerModel pm;
  pm.model = &model;
  pm.counts.assign(model.base_profiles().size(), 0);
  models_.push_back(std::move(pm));
  return models_.back();
}

void DemandWindow::Observe(const Cluster& cluster, const Job& job) {
  for (const GpuModel* m : cluster.models()) Of(*m);  // entries index models_ by position
  Entry entry;
  entry.terms.assign(models_.size(), -1);
  // A gang asks for `count` placements of its profile (regression: gang_counted_once: with 48
  // one-slice tasks and one 8x7g gang in the window, p_7g was 1/49 and the tasks went one per GPU
  // over 16 GPUs, so the gang that followed waited an hour where first-fit started it at once).
  entry.weight = std::max<int64_t>(1, job.count);
  for (size_t i = 0; i < models_.size(); ++i) {
    const int term = TermOf(*models_[i].model, ResolveProfile(*models_[i].model, job));
    entry.terms[i] = term;
    if (term >= 0) {
      models_[i].counts[term] += entry.weight;
      models_[i].total += entry.weight;
      models_[i].dirty = true;
    }
  }
  entries_.push_back(std::move(entry));
  if (static_cast<int>(entries_.size()) > window_) {
    const Entry& old = entries_.front();
    for (size_t i = 0; i < old.terms.size(); ++i) {
      if (old.terms[i] < 0) continue;
      models_[i].counts[old.terms[i]] -= old.weight;
      models_[i].total -= old.weight;
      models_[i].dirty = true;
    }
    entries_.pop_front();
  }
}

const std::vector<double>& DemandWindow::Shares(const GpuModel& model) {
  PerModel& pm = Of(model);
  if (pm.dirty) {
    const size_t n = pm.counts.size();
    pm.shares.assign(n, n == 0 ? 0.0 : 1.0 / static_cast<double>(n));
    if (pm.total > 0) {
      for (size_t t = 0; t < n; ++t)
        pm.shares[t] = static_cast<double>(pm.counts[t]) / static_cast<double>(pm.total);
    }
    pm.dirty = false;
  }
  return pm.shares;
}

MetricScorer::MetricScorer(MetricKind kind, int demand_window)
    : kind_(kind), demand_(demand_window) {}

void MetricScorer::ObserveArrival(const Cluster& cluster, const Job& job) {
  if (kind_ == MetricKind::kDemandWeighted) {
    demand_.Observe(cluster, job);
    ++generation_;  // the shares may have changed: every memoised value is stale
  }
}

MetricScorer::ValueMemo& MetricScorer::MemoOf(const ConfigTable& table) {
  if (last_memo_ < memos_.size() && memos_[last_memo_].table == &table) return memos_[last_memo_];
  for (size_t i = 0; i < memos_.size(); ++i) {
    if (memos_[i].table == &table) return memos_[last_memo_ = i];
  }
  ValueMemo& m = memos_.emplace_back();
  m.table = &table;
  m.value.assign(table.num_configs(), 0);
  m.stamp.assign(table.num_configs(), 0);
  last_memo_ = memos_.size() - 1;
  return m;
}

const BlockedPlacementsTable& MetricScorer::Blocked(const ConfigTable& table) {
  for (const auto& b : blocked_) {
    if (&b->config_table() == &table) return *b;
  }
  blocked_.push_back(std::make_unique<BlockedPlacementsTable>(table));
  return *blocked_.back();
}

double MetricScorer::Value(const ConfigTable& table, ConfigId c) {
  switch (kind_) {
    case MetricKind::kBlockedPlacements:
      return Blocked(table).Value(c);
    case MetricKind::kDemandWeighted: {
      ValueMemo& memo = MemoOf(table);
      if (memo.stamp[c] != generation_) {
        memo.value[c] = DemandWeightedValue(table, c, demand_.Shares(table.model()));
        memo.stamp[c] = generation_;
      }
      return memo.value[c];
    }
    case MetricKind::kFragCost:
      break;
  }
  return table.FragCost(c);
}

}  // namespace migsched
