// The scheduler extender's cost per kube-scheduler call (docs/performance.md
// "Kubernetes extender"): ClusterEngine::Filter and ::Prioritize of a one-
// instance pod over every node of synthetic clusters of 10 .. 500 nodes x 8
// A100 40GB. Each GPU holds busy allocations by a fixed pattern (GPU g of
// node n: a 3g.20gb at 0 when (n + g) is even, else a 1g.5gb at 6 and a
// 2g.10gb at 0), so every node has room and filter places the pod on each.
// The node states come from memory (a NodeDaemons double; the HTTP calls to
// the daemons are not timed), the view is built once (refresh_s is long):
// what is timed is the placement work of one call.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "cluster/testing/fake_node_daemons.h"
#include "k8s/engine/cluster_engine.h"

namespace migsched::bench {
namespace {

constexpr int kGpusPerNode = 8;

struct Fixture {
  testing::FakeNodeDaemons daemons;
  std::unique_ptr<k8s::StaticNodeDirectory> directory;
  std::unique_ptr<k8s::ClusterEngine> engine;
  std::vector<std::string> names;
  k8s::PodInfo pod;
};

std::unique_ptr<Fixture> MakeFixture(int num_nodes, const std::string& profile) {
  auto f = std::make_unique<Fixture>();
  std::vector<k8s::StaticNode> nodes;
  for (int n = 0; n < num_nodes; ++n) {
    NodeView st;
    st.name = "n" + std::to_string(n + 1);
    st.generation = 1;
    for (int g = 0; g < kGpusPerNode; ++g) {
      GpuView& gv = st.gpus.emplace_back();
      gv.index = NvmlIndex::Of(g);
      gv.uuid = "GPU-" + std::to_string(n) + "-" + std::to_string(g);
      gv.model = "A100 40GB";
      auto add = [&](const char* p, int start, int size) {
        InstanceView& in = gv.instances.emplace_back();
        in.profile = p;
        in.start = start;
        in.size = size;
        in.mig_uuid = "MIG-x";
        in.busy = true;
        in.holder = HolderKind::kAllocation;
        in.job = n * kGpusPerNode + g + 1;
        in.owner = "k8s:" + std::to_string(n) + "-" + std::to_string(g);
      };
      if ((n + g) % 2 == 0) {
        add("3g.20gb", 0, 4);
      } else {
        add("1g.5gb", 6, 1);
        add("2g.10gb", 0, 2);
      }
    }
    f->names.push_back(st.name);
    nodes.push_back({st.name, "http://" + st.name});
    f->daemons.states[st.name] = std::move(st);
  }
  f->directory = std::make_unique<k8s::StaticNodeDirectory>(nodes);
  k8s::EngineOptions o;
  o.refresh_s = 1e9;
  o.state_threads = 1;  // the double is not thread-safe
  auto e = k8s::ClusterEngine::Create(&f->daemons, f->directory.get(), &BundledCatalog(), o);
  if (!e.ok()) return nullptr;
  f->engine = std::move(*e);
  f->pod.name = "p";
  f->pod.ns = "ml";
  f->pod.uid = "u1";
  f->pod.containers = {{"c", {{profile, 1}}}};
  return f;
}

void BM_Filter(benchmark::State& state) {
  auto f = MakeFixture(static_cast<int>(state.range(0)), "1g.5gb");
  if (!f) {
    state.SkipWithError("engine");
    return;
  }
  int fits = 0;
  for (auto _ : state) {
    auto v = f->engine->Filter(f->pod, f->names);
    fits =
        static_cast<int>(std::count_if(v.begin(), v.end(), [](const auto& x) { return x.fits; }));
    benchmark::DoNotOptimize(v);
  }
  state.counters["gpus"] = static_cast<double>(state.range(0) * kGpusPerNode);
  state.counters["fits"] = fits;
}

void BM_Prioritize(benchmark::State& state) {
  auto f = MakeFixture(static_cast<int>(state.range(0)), "1g.5gb");
  if (!f) {
    state.SkipWithError("engine");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(f->engine->Prioritize(f->pod, f->names));
  state.counters["gpus"] = static_cast<double>(state.range(0) * kGpusPerNode);
}

BENCHMARK(BM_Filter)->Arg(10)->Arg(100)->Arg(500)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Prioritize)->Arg(10)->Arg(100)->Arg(500)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace migsched::bench

BENCHMARK_MAIN();
