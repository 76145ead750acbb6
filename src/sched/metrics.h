// Fragmentation metrics selectable by name (§2 of docs/algorithms.md), and the
// scorer that placement policies use to compare candidates by them.
//
// Every metric is a function of one GPU's *busy* configuration B (a ConfigId
// of the model's ConfigTable); lower is better, and policies score a candidate
// by the metric's change `Value(B + new instance) - Value(B)` (§4 step 3).
//
//   fragcost            FragCost(B) (ConfigTable::FragCost), in [0, 1].
//
//   blocked-placements  after Zambianco et al. (arXiv 2511.18906), our reading
//                       of §2, in memory slices (an integer):
//                         BP(B) = sum over base profiles m that still fit of
//                                 mem_m * #{ placements p of m : p overlaps a
//                                            placement unit of B }
//                       where m "still fits" when cs_m <= free compute slices
//                       of B, size_m <= free placement units of B (a count;
//                       whether they are contiguous is exactly what the blocked
//                       placements measure), and fewer than max_instances of m
//                       are in B. Precomputed per configuration
//                       (BlockedPlacementsTable): O(1) per lookup.
//                       Example, A100 40GB with 1g.5gb@0 busy (6 compute
//                       slices, 7 units free): 1g.5gb 1 blocked × 1 + 1g.10gb
//                       1 × 2 + 2g 1 × 2 + 3g 1 × 4 + 4g 1 × 4 = 13; 7g (7
//                       slices) no longer fits and is left out.
//
//   demand-weighted     ours, after Alibaba's FGD (ATC'23), in compute slices:
//                         F(B) = sum over base profiles m of
//                                p_m * (free_cs(B) - cs_m * feasible_m(B))
//                       the expected compute left stranded for the demand that
//                       is arriving. p_m is the share of recent arrivals that
//                       request m on this model (DemandWindow). O(|M|) per
//                       lookup (6 terms on A100).
//
// Thread-safety: the tables are immutable after construction; DemandWindow and
// MetricScorer are thread-compatible (one scheduler's policy owns one).
#ifndef MIGSCHED_SCHED_METRICS_H_
#define MIGSCHED_SCHED_METRICS_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/config_table.h"
#include "core/gpu_model.h"
#include "core/job.h"
#include "core/status.h"

namespace migsched {

enum class MetricKind { kFragCost, kBlockedPlacements, kDemandWeighted };

// "fragcost", "blocked-placements", "demand-weighted".
std::string_view MetricName(MetricKind kind);
// The names MetricName gives, in that order.
std::vector<std::string> MetricNames();
// kInvalidArgument "metric 'x' is not one of fragcost, blocked-placements, demand-weighted".
StatusOr<MetricKind> ParseMetric(std::string_view name);

// blocked-placements of configuration `c` of `table`, computed directly from
// the definition above (O(slots)). Used to build the table and by tests.
int ComputeBlockedPlacements(const ConfigTable& table, ConfigId c);

// blocked-placements of every configuration of one model, precomputed.
// Build: O(configs × slots) (723 × 18 on A100). The table must outlive this.
class BlockedPlacementsTable {
 public:
  explicit BlockedPlacementsTable(const ConfigTable& table);
  const ConfigTable& config_table() const { return *table_; }
  int Value(ConfigId c) const { return values_[c]; }

 private:
  const ConfigTable* table_;
  std::vector<int> values_;
};

// F(B) of demand-weighted for configuration `c`, with `shares[term]` = p_m for
// the base profile at position `term` of GpuModel::base_profiles().
double DemandWeightedValue(const ConfigTable& table, ConfigId c, const std::vector<double>& shares);

// p_m over a sliding window of the last `window` arrivals (§2 demand-weighted).
//
// Each arriving job counts by its instances (a gang of k instances counts k times: it needs k
// placements of its profile), resolved on every model of the cluster with ResolveProfile; a
// variant counts for its base profile. On a model, p_m = instances requested of m by the
// arrivals in the window / instances requested by the arrivals in the window that the model can
// host; with no such arrival yet, p_m is uniform (1/|M|), so that an untrained scheduler still
// scores every profile. The window holds the last `window` arrivals (jobs, whatever their count).
class DemandWindow {
 public:
  // `window` >= 1 arrivals.
  explicit DemandWindow(int window) : window_(window < 1 ? 1 : window) {}

  // Records one arrival; the oldest one leaves when the window is full. O(models × |M|).
  void Observe(const Cluster& cluster, const Job& job);
  // p_m for every base profile of `model`, in base_profiles() order (sums to 1).
  const std::vector<double>& Shares(const GpuModel& model);
  // Arrivals currently in the window.
  int size() const { return static_cast<int>(entries_.size()); }
  int window() const { return window_; }

 private:
  struct PerModel {
    const GpuModel* model = nullptr;
    std::vector<int64_t> counts;  // per term: instances requested in the window
    int64_t total = 0;            // instances requested in the window that the model can host
    std::vector<double> shares;
    bool dirty = true;
  };
  PerModel& Of(const GpuModel& model);

  // One arrival: the term it requests on models_[i] (-1: cannot host), i < size, and its
  // instances.
  struct Entry {
    std::vector<int> terms;
    int64_t weight = 1;  // a trace's count may be up to 2^31 - 1, a window 1,000 of them
  };

  int window_;
  std::vector<PerModel> models_;
  std::deque<Entry> entries_;
};

// Scores configurations by one metric. Holds the per-model blocked-placements
// tables (built on first use) and, for demand-weighted, the DemandWindow.
class MetricScorer {
 public:
  MetricScorer(MetricKind kind, int demand_window);

  MetricKind kind() const { return kind_; }
  // Feeds the demand window (no effect for the other metrics).
  void ObserveArrival(const Cluster& cluster, const Job& job);
  const DemandWindow& demand() const { return demand_; }

  // The metric of busy configuration `c` of `table` (units above). The
  // demand-weighted value is memoised per configuration until the next
  // arrival changes the window (ObserveArrival): a placement scores hundreds
  // of candidates between two arrivals, over few distinct configurations.
  double Value(const ConfigTable& table, ConfigId c);
  // Changes whenever Value may change (an arrival fed to the demand window);
  // constant for the metrics that do not learn. For callers that memoise
  // values of their own.
  uint64_t generation() const { return generation_; }
  // Value(after) - Value(before).
  double Delta(const ConfigTable& table, ConfigId before, ConfigId after) {
    return Value(table, after) - Value(table, before);
  }

 private:
  const BlockedPlacementsTable& Blocked(const ConfigTable& table);
  // Demand-weighted values of one table's configurations, valid where
  // stamp[c] == generation_.
  struct ValueMemo {
    const ConfigTable* table = nullptr;
    std::vector<double> value;
    std::vector<uint64_t> stamp;
  };
  ValueMemo& MemoOf(const ConfigTable& table);

  MetricKind kind_;
  DemandWindow demand_;
  uint64_t generation_ = 1;      // bumped by every arrival fed to the window
  std::deque<ValueMemo> memos_;  // few models: linear lookup; deque: stable references
  size_t last_memo_ = 0;         // index in memos_ of the last one used (copy-safe)
  std::vector<std::unique_ptr<BlockedPlacementsTable>> blocked_;  // few models: linear lookup
};

}  // namespace migsched

#endif  // MIGSCHED_SCHED_METRICS_H_
