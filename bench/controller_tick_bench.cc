// The cluster controller's cost per tick (docs/performance.md "Cluster
// controller"): synthetic node states of 1 .. 1,000 nodes x 8 A100 40GB,
// filled to about 70% of their compute slices with allocations of running
// engine jobs (random profiles, first-fit on each GPU) plus idle instances,
// and a queue of waiting jobs (5 per 10 nodes, at least 4: 80% one instance,
// 10% two instances on one node, 10% one 7g.40gb on each of two nodes).
// One iteration is one tick of the engine-neutral core: ClusterView::Build
// from the node states, then PlanCluster with the default policy (`full`
// with its defaults) and requeue migration on (every running job movable).
// Counters: build_ms and plan_ms (means per tick), gpus, waiting, placed.
#include <benchmark/benchmark.h>

#include <chrono>

#include "bench/bench_util.h"
#include "cluster/cluster_view.h"
#include "cluster/planner.h"
#include "core/plan.h"
#include "sched/full_policy.h"

namespace migsched::bench {
namespace {

constexpr int kGpusPerNode = 8;

struct Synthetic {
  std::vector<NodeInput> nodes;
  std::vector<EngineRunningJob> running;
  std::vector<ClusterJob> waiting;
};

Synthetic MakeSynthetic(int num_nodes, uint64_t seed) {
  Synthetic s;
  Rng rng(seed);
  const GpuModel* a100 = Model("A100-40GB");
  const std::vector<std::string> profiles = {"1g.5gb",  "1g.10gb", "2g.10gb",
                                             "3g.20gb", "4g.20gb", "7g.40gb"};
  const std::vector<double> weights = {0.35, 0.15, 0.2, 0.15, 0.1, 0.05};
  ConfigTableCache tables;
  int owner = 0;
  for (int n = 0; n < num_nodes; ++n) {
    NodeView st;
    st.name = "n" + std::to_string(n + 1);
    st.generation = 1;
    Cluster one(std::vector<const GpuModel*>(kGpusPerNode, a100), &tables);
    for (int g = 0; g < kGpusPerNode; ++g) {
      GpuView& gv = st.gpus.emplace_back();
      gv.index = NvmlIndex::Of(g);
      gv.uuid = "GPU-" + std::to_string(n) + "-" + std::to_string(g);
      gv.model = "A100 40GB";
      // First-fit random instances until about 70% of the slices are busy.
      for (int tries = 0; tries < 12 && one.gpu(g).busy_compute_slices() < 5; ++tries) {
        const std::string& name = profiles[rng.Choice(weights)];
        const int p = a100->FindProfile(name);
        for (int slot : a100->SlotsOfProfile(p)) {
          const int start = a100->slots()[slot].start;
          const bool idle = rng.Uniform01() < 0.1;
          Plan plan{{{StepKind::kCreate, g, p, start}}};
          if (!idle) plan.steps.push_back({StepKind::kStart, g, p, start, owner + 1});
          if (!ApplyPlan(plan, &one).ok()) continue;
          InstanceView in;
          in.profile = name;
          in.start = start;
          in.size = a100->profile(p).size();
          in.busy = !idle;
          in.holder = idle ? HolderKind::kIdle : HolderKind::kAllocation;
          if (!idle) {
            in.owner = "slurm:" + std::to_string(++owner);
            EngineRunningJob r;
            r.job.key = in.owner;
            r.job.per_node = {{name, 1}};
            r.job.migratable = Migratable::kRestart;
            r.may_move = true;
            s.running.push_back(r);
          }
          gv.instances.push_back(in);
          break;
        }
      }
    }
    s.nodes.push_back({st.name, std::move(st), ""});
  }
  const int waiting = std::max(4, num_nodes / 2);
  for (int w = 0; w < waiting; ++w) {
    ClusterJob j;
    j.key = "slurm:w" + std::to_string(w);
    const double u = rng.Uniform01();
    if (u < 0.8) {
      j.per_node = {{profiles[rng.Choice(weights)], 1}};
    } else if (u < 0.9) {
      j.per_node = {{profiles[rng.Choice(weights)], 2}};
    } else {
      j.num_nodes = 2;
      j.per_node = {{"7g.40gb", 1}};
    }
    s.waiting.push_back(j);
  }
  return s;
}

void BM_ControllerTick(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const Synthetic s = MakeSynthetic(nodes, 42);
  PlannerOptions options;
  options.policy = "full";
  options.scheduler = OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{});
  double build_ms = 0;
  double plan_ms = 0;
  size_t placed = 0;
  int64_t ticks = 0;
  ConfigTableCache tables;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    auto view = ClusterView::Build(s.nodes, BundledCatalog(), &tables);
    const auto t1 = std::chrono::steady_clock::now();
    PlannerInput in;
    in.view = view.get();
    in.waiting = s.waiting;
    in.running = s.running;
    auto plan = PlanCluster(in, options);
    const auto t2 = std::chrono::steady_clock::now();
    if (!plan.ok()) {
      state.SkipWithError(plan.status().ToString().c_str());
      return;
    }
    placed = 0;
    for (const JobPlan& j : plan->jobs) placed += j.outcome == Outcome::kPlaced ? 1 : 0;
    build_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
    plan_ms += std::chrono::duration<double, std::milli>(t2 - t1).count();
    ++ticks;
  }
  state.counters["gpus"] = nodes * kGpusPerNode;
  state.counters["waiting"] = static_cast<double>(s.waiting.size());
  state.counters["placed"] = static_cast<double>(placed);
  state.counters["build_ms"] = build_ms / static_cast<double>(ticks);
  state.counters["plan_ms"] = plan_ms / static_cast<double>(ticks);
}

BENCHMARK(BM_ControllerTick)
    ->Arg(1)
    ->Arg(10)
    ->Arg(100)
    ->Arg(1000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace migsched::bench

BENCHMARK_MAIN();
