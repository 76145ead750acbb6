// Decision cost of a queue scan with joint placement of waiting jobs (§12)
// against one job at a time: mixed clusters (A100 40GB, H100 80GB, H200
// 141GB) of 64 and 10,000 GPUs filled to 30%, 70% and 95% utilisation, under
// lb+frag. Each iteration enqueues 8 random jobs that arrive together and
// runs one ScheduleQueue (timed); the jobs it started are then released and
// the others taken off the queue, so the state stays at the target.
// Counters: decision_p99_us / decision_mean_us over every job's attempt in
// the scans (Scheduler::decision_us(): a job's joint search is part of its
// decision), scan_p99_us (a whole scan), started (jobs per scan), searches and
// joint_starts per scan (JointPlacer::Stats), groups = distinct GPU states,
// util = the utilisation reached.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "bench/bench_util.h"
#include "sched/policy.h"

namespace migsched::bench {
namespace {

double P99(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, v.size() * 99 / 100)];
}

// A mixed cluster of `gpus` filled to `util` under lb+frag, joint placement
// on or off, and the figures of its scans.
struct QueueRun {
  QueueRun(int gpus, double util, bool joint) : cluster(MixedGpus(gpus), &tables), rng(42) {
    SchedulerOptions options;
    options.joint_placement = joint;
    auto p = MakePolicy("lb+frag", options);
    scheduler = std::make_unique<Scheduler>(&cluster, std::move(*p), options, SteadyClock());
    next_id = FillTo(*scheduler, util, rng);
    decisions_before = scheduler->decision_us().size();
  }
  // One timed scan (the caller pauses the benchmark's clock around the rest);
  // releases what it started and empties the queue afterwards.
  void Scan(benchmark::State& state) {
    state.ResumeTiming();
    const auto t0 = std::chrono::steady_clock::now();
    auto d = scheduler->ScheduleQueue();
    const auto t1 = std::chrono::steady_clock::now();
    state.PauseTiming();
    if (!d.ok()) std::abort();
    scan_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    started += static_cast<int64_t>(d->size());
    for (const Decision& x : *d) {
      if (!scheduler->Release(x.job).ok()) std::abort();
    }
    for (JobId q : scheduler->QueuedJobs()) scheduler->RemoveFromQueue(q);
    ++scans;
  }
  void Report(benchmark::State& state) const {
    const std::vector<double>& all = scheduler->decision_us();
    const std::vector<double> mine(all.begin() + static_cast<std::ptrdiff_t>(decisions_before),
                                   all.end());
    double sum = 0;
    for (double u : mine) sum += u;
    state.counters["decision_mean_us"] = mine.empty() ? 0 : sum / mine.size();
    state.counters["decision_p99_us"] = P99(mine);
    state.counters["scan_p99_us"] = P99(scan_us);
    state.counters["started"] = static_cast<double>(started) / scans;
    const JointPlacer::Stats* js = scheduler->joint_stats();
    state.counters["searches"] = js ? static_cast<double>(js->searches) / scans : 0;
    state.counters["joint_starts"] = js ? static_cast<double>(js->placed) / scans : 0;
    state.counters["groups"] = cluster.num_groups();
    state.counters["util"] = cluster.Utilization();
  }

  ConfigTableCache tables;
  Cluster cluster;
  Rng rng;
  std::unique_ptr<Scheduler> scheduler;
  JobId next_id = 0;
  size_t decisions_before = 0;
  std::vector<double> scan_us;
  int64_t scans = 0, started = 0;
};

void BM_QueueScan(benchmark::State& state) {
  constexpr int kBatch = 8;
  QueueRun run(static_cast<int>(state.range(0)), state.range(1) / 100.0, state.range(2) != 0);
  for (auto _ : state) {
    state.PauseTiming();
    for (int i = 0; i < kBatch; ++i) run.scheduler->Enqueue(run.next_id++, RandomJob(run.rng));
    run.Scan(state);
    state.ResumeTiming();
  }
  run.Report(state);
}

// The case joint placement is for, at every scan: the jobs of one GPU end
// (a GPU picked at random is emptied; lb+frag keeps its instances idle), then
// 1g.5gb, 1g.5gb, 2g.10gb, 3g.20gb arrive together (as fractions 1/7, 1/7,
// 2/7, 3/7: the same profiles on every model). Afterwards the four are
// released and the cluster refilled to the target.
void BM_QueueScanFreedGpu(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const double util = state.range(1) / 100.0;
  QueueRun run(gpus, util, state.range(2) != 0);
  for (auto _ : state) {
    state.PauseTiming();
    const int g = static_cast<int>(run.rng.UniformInt(0, gpus - 1));
    std::vector<JobId> on_g;
    for (const Instance& in : run.cluster.gpu(g).instances()) {
      if (in.busy()) on_g.push_back(in.job);
    }
    for (JobId j : on_g) {
      if (!run.scheduler->Release(j).ok()) std::abort();
    }
    for (double f : {1.0 / 7, 1.0 / 7, 2.0 / 7, 3.0 / 7}) {
      Job j;
      j.gpu_fraction = f;
      j.time_limit_s = 1;
      run.scheduler->Enqueue(run.next_id++, j);
    }
    run.Scan(state);
    run.next_id = FillTo(*run.scheduler, util, run.rng, run.next_id);
    state.ResumeTiming();
  }
  run.Report(state);
}

// 2,000 scans (16,000 decisions) per row: the p99 is the 160th slowest decision.
BENCHMARK(BM_QueueScan)
    ->ArgsProduct({{64, 10000}, {30, 70, 95}, {0, 1}})
    ->ArgNames({"gpus", "util%", "joint"})
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(2000);
BENCHMARK(BM_QueueScanFreedGpu)
    ->ArgsProduct({{64, 1000, 10000, 100000}, {70, 95}, {0, 1}})
    ->ArgNames({"gpus", "util%", "joint"})
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(2000);

}  // namespace
}  // namespace migsched::bench

BENCHMARK_MAIN();
