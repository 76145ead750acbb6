// FragCost table build time per model and the O(1) lookup.
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"
#include "core/config_table.h"

namespace migsched::bench {
namespace {

const char* kModels[] = {"A30-24GB",      "A100-40GB",  "A100-80GB",   "H100-80GB",
                         "H100-NVL-94GB", "H200-141GB", "RTX-PRO-6000"};

void BM_TableBuild(benchmark::State& state) {
  const GpuModel* m = Model(kModels[state.range(0)]);
  for (auto _ : state) {
    auto t = ConfigTable::Build(*m);
    benchmark::DoNotOptimize(t);
  }
  state.SetLabel(m->name() + ", " + std::to_string(ConfigTable::Build(*m)->num_configs()) +
                 " configurations");
}
BENCHMARK(BM_TableBuild)->DenseRange(0, 6)->Unit(benchmark::kMillisecond);

void BM_FragCostLookup(benchmark::State& state) {
  const GpuModel* m = Model("A100-40GB");
  auto t = ConfigTable::Build(*m);
  Rng rng(1);
  std::vector<ConfigId> ids(4096);
  for (auto& id : ids) id = static_cast<ConfigId>(rng.UniformInt(0, t->num_configs() - 1));
  size_t i = 0;
  for (auto _ : state) {
    const ConfigId c = ids[i++ & 4095];
    const ConfigId next = t->Add(c, static_cast<int>(i % t->num_slots()));
    benchmark::DoNotOptimize(t->FragCost(c) + (next == kInvalidConfig ? 0 : t->FragCost(next)));
  }
  state.SetLabel("FragCost(c) + FragCost(Add(c, slot)), A100 40GB");
}
BENCHMARK(BM_FragCostLookup);

}  // namespace
}  // namespace migsched::bench

BENCHMARK_MAIN();
