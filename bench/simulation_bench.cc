// Simulation throughput: jobs simulated per second and peak memory,
// online mode, for N jobs on G mixed GPUs (A100 40GB, H100 80GB, H200 141GB)
// at offered load 0.8, `full` policy (frag-aware placement plus the §6
// migration planner; 80% of the jobs are checkpoint-migratable) and, for
// comparison, `frag-aware` alone. The headline case is 1,000,000 jobs on
// 10,000 GPUs; per-job records and the timeline are off (metrics are
// unaffected). Counters: jobs_per_s, peak_rss_mb (whole process so far,
// getrusage ru_maxrss: run one case per process for a per-case figure, as
// scripts/bench.sh does), decisions, decision_us_mean/p99, migrations.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>

#include "bench/bench_util.h"
#include "sim/arrivals.h"
#include "sim/simulator.h"

namespace migsched::bench {
namespace {

std::vector<WorkloadJob> Workload(int n, int gpus, uint64_t seed) {
  Rng rng(seed);
  std::vector<WorkloadJob> jobs(n);
  for (int i = 0; i < n; ++i) {
    static_cast<Job&>(jobs[i]) = RandomJob(rng);
    jobs[i].name = "j" + std::to_string(i);
    jobs[i].duration_s = 60 + rng.Exponential(1800);
    jobs[i].time_limit_s = 0;  // none: the scheduler knows nothing of when a run ends
    jobs[i].migratable = rng.Uniform01() < 0.8 ? Migratable::kCheckpoint : Migratable::kNone;
  }
  ArrivalOptions a;
  a.load = 0.8;
  a.num_gpus = gpus;
  a.seed = seed;
  a.demand = [](const Job& j) { return j.gpu_fraction; };
  if (!RegenerateArrivals(&jobs, a).ok()) std::abort();
  return jobs;
}

void BM_Simulation(benchmark::State& state) {
  const int jobs_n = static_cast<int>(state.range(0));
  const int gpus = static_cast<int>(state.range(1));
  const char* policy = state.range(2) == 0 ? "full" : "frag-aware";
  const std::vector<WorkloadJob> jobs = Workload(jobs_n, gpus, 1);
  const std::vector<const GpuModel*> cluster = MixedGpus(gpus);
  SimOptions o;
  o.record_jobs = false;
  o.record_timeline = false;
  double seconds = 0;
  double p99 = 0, mean = 0, decisions = 0, migrations = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = RunSimulation(cluster, jobs, policy, SchedulerOptions{}, o);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
    p99 = r->metrics.decision_us_p99;
    mean = r->metrics.decision_us_mean;
    decisions = static_cast<double>(r->metrics.decisions);
    migrations = static_cast<double>(r->metrics.migrations);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["jobs_per_s"] = jobs_n / seconds;
  state.counters["peak_rss_mb"] = ru.ru_maxrss / 1024.0;
  state.counters["decision_us_p99"] = p99;
  state.counters["decision_us_mean"] = mean;
  state.counters["decisions"] = decisions;
  state.counters["migrations"] = migrations;
  state.counters["sim_seconds"] = seconds;
  state.SetLabel(policy);
}
BENCHMARK(BM_Simulation)
    ->ArgNames({"jobs", "gpus", "frag_aware"})
    ->Args({10000, 100, 0})
    ->Args({100000, 1000, 0})
    ->Args({1000000, 10000, 0})
    ->Args({1000000, 10000, 1})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace migsched::bench

BENCHMARK_MAIN();
