// Randomized runs of the simulator on small random clusters and workloads,
// every policy, with the simulator's self-check on (SimOptions::self_check).
// Then the stress harness's end checks (sim/stress.h CheckStressResult) and
// what they do not cover: makespan, utilisation, the timeline. The seed is
// printed on failure (SCOPED_TRACE). The generated cases that combine every
// job attribute, GPU model and scheduler option are sim/stress_test.cc; these
// fixed worlds pin what their seeds exercise (moves, --max-wait rejections,
// idle expirations).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/rng.h"
#include "sched/options.h"
#include "sched/policy.h"
#include "sim/simulator.h"
#include "sim/stress.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::Model;

struct World {
  std::vector<const GpuModel*> gpus;
  std::vector<WorkloadJob> jobs;
};

World RandomWorld(uint64_t seed, int num_jobs) {
  Rng rng(seed);
  const std::vector<std::string> models = {"A100-40GB", "A100-80GB", "H100-80GB", "A30-24GB"};
  World w;
  const int n_gpus = static_cast<int>(rng.UniformInt(2, 4));
  // Mostly one model, sometimes a mix.
  const std::string first = models[rng.UniformInt(0, models.size() - 1)];
  for (int i = 0; i < n_gpus; ++i) {
    const bool mix = rng.Uniform01() < 0.3;
    w.gpus.push_back(&Model(mix ? models[rng.UniformInt(0, models.size() - 1)] : first));
  }
  std::vector<std::string> names = {"9g.99gb"};  // offered by no model: rejected
  for (const GpuModel* m : w.gpus) {
    for (const Profile& p : m->profiles()) names.push_back(p.name);
  }
  double t = 0;
  for (int i = 0; i < num_jobs; ++i) {
    WorkloadJob j;
    j.name = "j" + std::to_string(i);
    if (rng.Uniform01() < 0.8) t += rng.Exponential(20);  // else: same time as the previous
    j.arrival_s = t;
    if (rng.Uniform01() < 0.15) {
      j.gpu_fraction = 0.05 + 0.95 * rng.Uniform01();
      j.fraction_rule = rng.Uniform01() < 0.5 ? FractionRule::kCompute : FractionRule::kMemory;
    } else {
      j.profile = names[rng.UniformInt(0, names.size() - 1)];
    }
    j.count = rng.Uniform01() < 0.1 ? static_cast<int>(rng.UniformInt(2, 5)) : 1;
    j.duration_s = 1 + rng.Uniform01() * 300;
    const int kind = static_cast<int>(rng.UniformInt(0, 2));  // §8 reference jobs
    j.pcie_gbps = kind == 0 ? 0 : kind == 1 ? 5.7 : 17.65;
    j.alpha = kind == 0 ? 1 : kind == 1 ? 1.25 : 1.07;
    w.jobs.push_back(j);
  }
  // §6 flags from a stream of their own (the draws above stay as they were).
  Rng flags(seed ^ 0x6d696772617465ULL);
  for (WorkloadJob& j : w.jobs) {
    j.migratable = static_cast<Migratable>(flags.UniformInt(0, 2));
    j.latency_sensitive = flags.Uniform01() < 0.2;
  }
  return w;
}

void CheckResult(const World& w, const SimResult& r, const std::string& policy) {
  const Metrics& m = r.metrics;
  const int64_t n = static_cast<int64_t>(w.jobs.size());
  // The stress harness's end checks (accounting, every accepted job ended, its instances, its
  // moves), then what they do not cover.
  StressCase c;
  c.gpus = w.gpus;
  c.jobs = w.jobs;
  c.policy = policy;
  const Status balanced = CheckStressResult(c, r);
  EXPECT_TRUE(balanced.ok()) << balanced.ToString();
  if (policy.starts_with("static")) {  // static, static-all-balanced
    EXPECT_EQ(m.reconfigurations, 0);
  }
  ASSERT_EQ(static_cast<int64_t>(r.jobs.size()), n);
  const double first = w.jobs.front().arrival_s;
  double max_duration = 0;
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const JobRecord& rec = r.jobs[i];
    const WorkloadJob& job = w.jobs[i];
    SCOPED_TRACE("job " + std::to_string(i) + " " + job.RequestString());
    if (rec.outcome == JobOutcome::kRejected) continue;
    max_duration = std::max(max_duration, job.duration_s);
    EXPECT_GE(rec.end_s - rec.start_s, job.duration_s * (1 - 1e-12));  // rate <= 1
    EXPECT_GE(rec.jct_s, job.duration_s * (1 - 1e-12));
    EXPECT_LE(rec.end_s, first + m.makespan_s + 1e-9);
  }
  if (m.jobs_completed > 0) {
    EXPECT_GE(m.makespan_s, max_duration);
  }
  EXPECT_GE(m.utilization, 0);
  EXPECT_LE(m.utilization, 1 + 1e-12);
  EXPECT_GE(m.frag_mean, 0);
  EXPECT_LE(m.frag_mean, m.frag_peak + 1e-12);
  EXPECT_LE(m.frag_peak, 1);
  EXPECT_GE(m.stranded_share_mean, 0);
  EXPECT_LE(m.stranded_share_mean, 1 + 1e-12);
  // The timeline integrates to the same utilisation (independent sum).
  double area = 0;
  for (size_t i = 0; i + 1 < r.timeline.size(); ++i) {
    EXPECT_LT(r.timeline[i].time_s, r.timeline[i + 1].time_s);
    const double until = std::min(r.timeline[i + 1].time_s, first + m.makespan_s);
    if (until > r.timeline[i].time_s)
      area += r.timeline[i].utilization * (until - r.timeline[i].time_s);
  }
  if (m.makespan_s > 0) {
    EXPECT_NEAR(area / m.makespan_s, m.utilization, 1e-9);
  }
}

TEST(SimulatorRandomTest, InvariantsHoldForEveryPolicy) {
  static ManualClock clock;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const World w = RandomWorld(seed, 150);
    for (const std::string& policy : PolicyNames()) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " policy " + policy);
      SimOptions o;
      o.clock = &clock;
      o.self_check = true;
      auto r = RunSimulation(w.gpus, w.jobs, policy, SchedulerOptions{}, o);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      CheckResult(w, *r, policy);
      // Without contention every job runs exactly its duration.
      o.contention = false;
      o.self_check = false;
      auto plain = RunSimulation(w.gpus, w.jobs, policy, SchedulerOptions{}, o);
      ASSERT_TRUE(plain.ok()) << plain.status().ToString();
      // A moved job also pauses switch_s per move; a restart job loses work too.
      const double pause = SchedulerOptions{}.migration.switch_s;
      for (const JobRecord& rec : plain->jobs) {
        if (rec.outcome != JobOutcome::kCompleted) continue;
        const double expected = w.jobs[rec.id].duration_s + pause * rec.migrations;
        if (w.jobs[rec.id].migratable == Migratable::kRestart) {
          EXPECT_GE(rec.end_s - rec.start_s, expected - 1e-9) << rec.name;
        } else {
          EXPECT_NEAR(rec.end_s - rec.start_s, expected, 1e-9) << rec.name;
        }
      }
    }
  }
}

// `full` with every queue option and migration knob drawn at random: the
// self-check (invariants after every event time, both ends of a move held by
// its job) and the accounting of moves and rejections.
TEST(SimulatorRandomTest, FullPolicyWithQueueOptionsAndMigrations) {
  static ManualClock clock;
  int64_t moves = 0, rejected_waiting = 0, expired = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const World w = RandomWorld(seed, 120);
    Rng rng(seed * 7919);
    SchedulerOptions so;
    so.threshold = 0.2 + 0.4 * rng.Uniform01();
    so.max_skip_seconds = rng.Uniform01() < 0.5 ? -1 : 60 * rng.Uniform01();
    so.max_wait_s = rng.Uniform01() < 0.5 ? -1 : 100 + 400 * rng.Uniform01();
    so.idle_ttl_s = rng.Uniform01() < 0.5 ? -1 : 50 * rng.Uniform01();
    so.migration.defrag_interval_s = std::vector<double>{0, 30, 300}[rng.UniformInt(0, 2)];
    so.migration.cooldown_s = std::vector<double>{0, 120}[rng.UniformInt(0, 1)];
    so.migration.max_moves_per_pass = static_cast<int>(rng.UniformInt(0, 8));
    so.migration.switch_s = rng.Uniform01();
    so.migration.checkpoint_interval_s = 10 + 100 * rng.Uniform01();
    so.migration.enabled = true;  // full's own default (these options are raw)
    SimOptions o;
    o.clock = &clock;
    o.self_check = true;
    o.reconfig_ms = rng.Uniform01() < 0.5 ? 0 : 23;
    auto r = RunSimulation(w.gpus, w.jobs, "full", so, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    CheckResult(w, *r, "full");
    const Metrics& m = r->metrics;
    EXPECT_EQ(m.migrations, m.migrations_intra + m.migrations_inter);
    EXPECT_NEAR(m.migration_pause_s, so.migration.switch_s * m.migrations, 1e-9);
    EXPECT_GE(m.migration_work_lost_s, 0);
    int64_t per_job = 0;
    for (const JobRecord& rec : r->jobs) {
      per_job += rec.migrations;
      const WorkloadJob& job = w.jobs[rec.id];
      if (rec.migrations > 0) {
        EXPECT_NE(job.migratable, Migratable::kNone) << rec.name;
      }
      if (rec.reason == "waited longer than --max-wait") {
        ++rejected_waiting;
        EXPECT_GE(so.max_wait_s, 0);
      }
    }
    EXPECT_EQ(per_job, m.migrations);
    EXPECT_EQ(m.reconfigurations_saved_by_retention % 2, 0);
    if (so.idle_ttl_s < 0) {
      EXPECT_EQ(m.idle_expirations, 0);
    }
    moves += m.migrations;
    expired += m.idle_expirations;
  }
  // The fixed seeds exercise what is checked.
  EXPECT_GT(moves, 0);
  EXPECT_GT(rejected_waiting, 0);
  EXPECT_GT(expired, 0);
}

TEST(SimulatorRandomTest, SameInputsGiveIdenticalResults) {
  const uint64_t seed = 42;
  SCOPED_TRACE("seed 42");
  const World w = RandomWorld(seed, 200);
  for (const char* policy : {"frag-aware", "first-fit", "full"}) {
    SimOptions o;  // the real wall clock: only decision_us_* may differ
    auto a = RunSimulation(w.gpus, w.jobs, policy, SchedulerOptions{}, o);
    auto b = RunSimulation(w.gpus, w.jobs, policy, SchedulerOptions{}, o);
    ASSERT_TRUE(a.ok() && b.ok());
    for (Metrics* m : {&a->metrics, &b->metrics}) m->decision_us_mean = m->decision_us_p99 = 0;
    EXPECT_EQ(a->metrics, b->metrics);
    EXPECT_EQ(MetricsToJson(a->metrics), MetricsToJson(b->metrics));
    EXPECT_EQ(a->jobs, b->jobs);
    EXPECT_EQ(a->timeline, b->timeline);
    EXPECT_GT(a->metrics.jobs_completed, 0);
  }
}

TEST(SimulatorRandomTest, FillModeInvariants) {
  static ManualClock clock;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const World w = RandomWorld(seed, 40);
    for (const std::string& policy : PolicyNames()) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " policy " + policy);
      SimOptions o;
      o.clock = &clock;
      o.mode = SimMode::kFill;
      auto r = RunSimulation(w.gpus, w.jobs, policy, SchedulerOptions{}, o);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      const Metrics& m = r->metrics;
      EXPECT_EQ(m.fill_placed + m.rejected, m.jobs_total);
      EXPECT_LE(m.fill_allocation, 1 + 1e-12);
      ASSERT_EQ(r->fill_curve.size(), 26u);  // 5%..130%
      for (size_t i = 0; i < r->fill_curve.size(); ++i) {
        const FillPoint& p = r->fill_curve[i];
        EXPECT_GE(p.requested_share + 1e-12, p.target_share);
        EXPECT_LE(p.allocation, p.requested_share + 1e-12);  // nothing placed that was not asked
        if (i > 0) {
          EXPECT_GE(p.allocation, r->fill_curve[i - 1].allocation);  // no departures
        }
      }
    }
  }
}

}  // namespace
}  // namespace migsched
