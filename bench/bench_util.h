// Shared set-up for the benchmarks: the bundled catalog and clusters filled to
// a target utilisation.
#ifndef MIGSCHED_BENCH_BENCH_UTIL_H_
#define MIGSCHED_BENCH_BENCH_UTIL_H_

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "build_paths.h"
#include "core/catalog.h"
#include "core/clock.h"
#include "core/cluster.h"
#include "core/rng.h"
#include "io/catalog_loader.h"
#include "sched/scheduler.h"

namespace migsched::bench {

inline const Catalog& BundledCatalog() {
  static const Catalog* c = [] {
    auto* cat = new Catalog();
    Status st = LoadCatalogPath(std::string(MIGSCHED_SOURCE_DATA_DIR) + "/gpus", cat);
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      std::abort();
    }
    return cat;
  }();
  return *c;
}

inline const GpuModel* Model(const char* name) { return *BundledCatalog().Find(name); }

// A mixed cluster: GPUs cycle A100 40GB, H100 80GB, H200 141GB.
inline std::vector<const GpuModel*> MixedGpus(int n) {
  const GpuModel* models[] = {Model("A100-40GB"), Model("H100-80GB"), Model("H200-141GB")};
  std::vector<const GpuModel*> out;
  for (int i = 0; i < n; ++i) out.push_back(models[i % 3]);
  return out;
}

// A random job over the base profiles of the A100-class 7-slice models, as a
// GPU fraction so that it resolves on every model (1/7 .. 7/7 of a GPU).
inline Job RandomJob(Rng& rng) {
  static const double kFractions[] = {1.0 / 7, 2.0 / 7, 3.0 / 7, 4.0 / 7, 1.0};
  static const std::vector<double> kWeights = {0.4, 0.25, 0.15, 0.1, 0.1};
  Job j;
  j.gpu_fraction = kFractions[rng.Choice(kWeights)];
  j.time_limit_s = 1;  // what the scheduler knows of a run: its limit
  return j;
}

// Fills `scheduler`'s cluster with random jobs (ids from `first_id` on) until
// its utilisation reaches `target` (or placements keep failing). Returns the
// next free job id.
inline JobId FillTo(Scheduler& scheduler, double target, Rng& rng, JobId first_id = 0) {
  JobId id = first_id;
  int failures = 0;
  while (scheduler.cluster().Utilization() < target && failures < 200) {
    auto d = scheduler.TryPlace(id, RandomJob(rng));
    if (!d.ok()) std::abort();
    if (d->has_value()) {
      ++id;
      failures = 0;
    } else {
      ++failures;
    }
  }
  return id;
}

}  // namespace migsched::bench

#endif  // MIGSCHED_BENCH_BENCH_UTIL_H_
