#include "core/config_table.h"

#include <algorithm>
#include <bit>
#include <map>

namespace migsched {
namespace {

// Most pairwise-disjoint slots among `slots` (all of one profile) that avoid
// `used_units`, at most `cap` of them.
int MaxDisjoint(const std::vector<Slot>& all, const std::vector<int>& slots, size_t i,
                uint64_t used_units, int cap) {
  if (cap <= 0 || i == slots.size()) return 0;
  int best = MaxDisjoint(all, slots, i + 1, used_units, cap);
  const Slot& s = all[slots[i]];
  if ((s.unit_mask & used_units) == 0) {
    best = std::max(best, 1 + MaxDisjoint(all, slots, i + 1, used_units | s.unit_mask, cap - 1));
  }
  return best;
}

}  // namespace

std::shared_ptr<const ConfigTable> ConfigTable::Build(const GpuModel& model) {
  std::shared_ptr<ConfigTable> t(new ConfigTable());
  t->model_ = &model;
  const std::vector<Slot>& slots = model.slots();
  const std::vector<int>& bases = model.base_profiles();
  t->num_slots_ = static_cast<int>(slots.size());
  t->num_terms_ = static_cast<int>(bases.size());
  t->term_of_slot_.resize(slots.size());
  std::vector<int> term_of_profile(model.profiles().size(), -1);
  for (int term = 0; term < t->num_terms_; ++term) term_of_profile[bases[term]] = term;
  for (int k = 0; k < t->num_slots_; ++k) t->term_of_slot_[k] = term_of_profile[slots[k].profile];
  std::vector<int> max_count(t->num_terms_);
  for (int term = 0; term < t->num_terms_; ++term) {
    max_count[term] = model.profile(bases[term]).max_instances;
  }

  // 1. Enumerate valid configurations depth-first; the empty one comes first.
  const int total_cs = model.compute_slices();
  std::vector<int> counts(t->num_terms_, 0);
  auto dfs = [&](auto&& self, int from, uint64_t mask, uint64_t units, int cs) -> void {
    t->masks_.push_back(mask);
    t->units_.push_back(units);
    t->compute_.push_back(cs);
    for (int k = from; k < t->num_slots_; ++k) {
      const Slot& s = slots[k];
      const int term = t->term_of_slot_[k];
      if ((s.unit_mask & units) != 0 || cs + s.compute_slices > total_cs ||
          counts[term] >= max_count[term]) {
        continue;
      }
      ++counts[term];
      self(self, k + 1, mask | (uint64_t{1} << k), units | s.unit_mask, cs + s.compute_slices);
      --counts[term];
    }
  };
  dfs(dfs, 0, 0, 0, 0);
  const int n = static_cast<int>(t->masks_.size());
  t->index_.reserve(n * 2);
  for (int c = 0; c < n; ++c) t->index_.emplace(t->masks_[c], c);

  // 2. Transitions.
  t->add_.assign(static_cast<size_t>(n) * t->num_slots_, kInvalidConfig);
  t->remove_.assign(static_cast<size_t>(n) * t->num_slots_, kInvalidConfig);
  for (int c = 0; c < n; ++c) {
    for (int k = 0; k < t->num_slots_; ++k) {
      const uint64_t bit = uint64_t{1} << k;
      const size_t at = static_cast<size_t>(c) * t->num_slots_ + k;
      if (t->masks_[c] & bit) {
        t->remove_[at] = t->Find(t->masks_[c] & ~bit);
      } else {
        t->add_[at] = t->Find(t->masks_[c] | bit);
      }
    }
  }

  // 3. feasible_m: most instances of m creatable together in the free units.
  std::vector<std::vector<int>> slots_of_term(t->num_terms_);
  for (int k = 0; k < t->num_slots_; ++k) slots_of_term[t->term_of_slot_[k]].push_back(k);
  t->feasible_.assign(static_cast<size_t>(n) * t->num_terms_, 0);
  for (int c = 0; c < n; ++c) {
    const int free_cs = total_cs - t->compute_[c];
    for (int term = 0; term < t->num_terms_; ++term) {
      const int cs_m = model.profile(bases[term]).compute_slices;
      const int cap = std::min(free_cs / cs_m, max_count[term] - t->Count(c, term));
      t->feasible_[static_cast<size_t>(c) * t->num_terms_ + term] =
          MaxDisjoint(slots, slots_of_term[term], 0, t->units_[c], cap);
    }
  }

  // 4. ideal_m: the best feasible_m over configurations with the same multiset.
  std::map<std::vector<int>, std::vector<int>> best_by_multiset;
  std::vector<std::vector<int>> multiset_of(n);
  for (int c = 0; c < n; ++c) {
    std::vector<int> key(t->num_terms_);
    for (int term = 0; term < t->num_terms_; ++term) key[term] = t->Count(c, term);
    auto& best = best_by_multiset[key];
    best.resize(t->num_terms_, 0);
    for (int term = 0; term < t->num_terms_; ++term) {
      best[term] = std::max(best[term], t->Feasible(c, term));
    }
    multiset_of[c] = std::move(key);
  }
  t->ideal_.assign(static_cast<size_t>(n) * t->num_terms_, 0);
  t->fragcost_.assign(n, 0.0);
  for (int c = 0; c < n; ++c) {
    const std::vector<int>& best = best_by_multiset[multiset_of[c]];
    double sum = 0;
    int m_prime = 0;
    for (int term = 0; term < t->num_terms_; ++term) {
      t->ideal_[static_cast<size_t>(c) * t->num_terms_ + term] = best[term];
      if (best[term] > 0) {
        ++m_prime;
        sum += static_cast<double>(t->Feasible(c, term)) / best[term];
      }
    }
    t->fragcost_[c] = m_prime == 0 ? 0.0 : 1.0 - sum / m_prime;
  }
  return t;
}

ConfigId ConfigTable::Find(uint64_t slot_mask) const {
  auto it = index_.find(slot_mask);
  return it == index_.end() ? kInvalidConfig : it->second;
}

int ConfigTable::Count(ConfigId c, int term) const {
  int count = 0;
  uint64_t mask = masks_[c];
  while (mask != 0) {
    const int k = std::countr_zero(mask);
    mask &= mask - 1;
    if (term_of_slot_[k] == term) ++count;
  }
  return count;
}

const ConfigTable& ConfigTableCache::Get(const GpuModel& model) {
  auto it = tables_.find(&model);
  if (it != tables_.end()) return *it->second;
  auto table = ConfigTable::Build(model);
  const ConfigTable& ref = *table;
  tables_.emplace(&model, std::move(table));
  return ref;
}

}  // namespace migsched
