// The grouped fast path (policies look only at Cluster::representatives(),
// one GPU per distinct state) against the naive O(GPUs) scan (grouping off):
// on random clusters and workloads every policy must choose exactly the same
// placements, and the §6 migration planner must begin exactly the same moves.
// Seed printed; MIGSCHED_SEED=N reruns one.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/rng.h"
#include "sched/candidates.h"
#include "sched/scheduler.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

TEST(GroupingTest, FastPathChoosesWhatTheNaiveScanChooses) {
  const uint64_t seed = testing::TestSeed(99);
  const std::vector<std::string> names = {"A100-40GB", "H100-80GB", "H200-141GB", "A30-24GB"};
  for (const std::string& policy : PolicyNames()) {
    SCOPED_TRACE("policy " + policy + ", seed " + std::to_string(seed));
    Rng rng(Rng::DeriveSeed(seed, std::hash<std::string>{}(policy)));
    std::vector<const GpuModel*> models;
    const int n = static_cast<int>(rng.UniformInt(8, 40));
    for (int i = 0; i < n; ++i) models.push_back(&testing::Model(names[rng.UniformInt(0, 3)]));
    ConfigTableCache tables;
    Cluster fast(models, &tables), naive(models, &tables);
    naive.set_grouping(false);
    SchedulerOptions o;
    auto pf = MakePolicy(policy, o);
    auto pn = MakePolicy(policy, o);
    ASSERT_TRUE(pf.ok() && pn.ok());
    ManualClock clock;
    Scheduler sf(&fast, std::move(*pf), o, &clock), sn(&naive, std::move(*pn), o, &clock);
    ASSERT_TRUE(sf.Setup().ok());
    ASSERT_TRUE(sn.Setup().ok());
    std::vector<JobId> running;
    for (JobId id = 0; id < 600; ++id) {
      if (!running.empty() && rng.Uniform01() < 0.45) {
        const size_t i = rng.UniformInt(0, running.size() - 1);
        ASSERT_TRUE(sf.Release(running[i]).ok());
        ASSERT_TRUE(sn.Release(running[i]).ok());
        running.erase(running.begin() + i);
        continue;
      }
      Job job;
      static const double kFractions[] = {0.1, 0.25, 0.3, 0.5, 0.55, 1.0};
      job.gpu_fraction = kFractions[rng.UniformInt(0, 5)];
      job.count = rng.Uniform01() < 0.1 ? 2 : 1;
      auto df = sf.TryPlace(id, job);
      auto dn = sn.TryPlace(id, job);
      ASSERT_TRUE(df.ok() && dn.ok());
      ASSERT_EQ(df->has_value(), dn->has_value()) << "job " << id;
      if (df->has_value()) {
        ASSERT_EQ((*df)->instances, (*dn)->instances) << "job " << id;
        running.push_back(id);
      }
    }
  }
}

// The `full` policy on a random cluster with many GPUs of the same state
// (few models), driven through the queue (reservations after 5 s, §5) with
// completions, periodic ticks, kFragmented passes and switch-overs: the
// grouped planner (Cluster::representatives, state streams for the pulls)
// must begin the same moves, in the same order, as the naive O(GPUs) scan,
// and both clusters must stay identical GPU by GPU. The run must exercise
// intra-GPU moves, inter-GPU moves and kFragmented moves, so that the
// comparison cannot pass vacuously (runs are added, seed after seed, until it
// did).
// The allocation-free count the candidate scan uses must equal the list the
// plans use, on random GPU states with idle and busy instances (every
// profile, every placement).
TEST(GroupingTest, IdleDestroyCountMatchesTheList) {
  const uint64_t seed = testing::TestSeed(11);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::printf("IdleDestroyCountMatchesTheList seed %llu\n", static_cast<unsigned long long>(seed));
  Rng rng(seed);
  int compared = 0, nonzero = 0;
  for (const char* name : {"A100-40GB", "H100-80GB", "A30-24GB"}) {
    const GpuModel& m = testing::Model(name);
    ConfigTableCache tables;
    for (int trial = 0; trial < 200; ++trial) {
      Cluster c({&m}, &tables);
      JobId job = 0;
      for (int k = 0; k < 8; ++k) {
        const Slot& slot = m.slots()[rng.UniformInt(0, m.slots().size() - 1)];
        Plan plan;
        plan.steps.push_back({StepKind::kCreate, 0, slot.profile, slot.start, kNoJob});
        if (rng.Uniform01() < 0.4)
          plan.steps.push_back({StepKind::kStart, 0, slot.profile, slot.start, job++});
        Cluster before = c;
        if (!ApplyPlan(plan, &c).ok()) c = before;  // an invalid configuration: skipped
      }
      const GpuState& g = c.gpu(0);
      for (int p = 0; p < static_cast<int>(m.profiles().size()); ++p) {
        for (const Placement& pl : m.profile(p).placements) {
          const int n = static_cast<int>(IdleInstancesToDestroy(g, p, pl.start).size());
          ASSERT_EQ(CountIdleInstancesToDestroy(g, p, pl.start), n)
              << m.profile(p).name << "@" << pl.start << " on " << g.DebugString();
          ++compared;
          nonzero += n > 0;
        }
      }
    }
  }
  EXPECT_GT(nonzero, compared / 10);  // the cases with something to destroy are exercised
}

std::string DebugJob(const Scheduler& s, JobId id) {
  std::string out = "\njob " + std::to_string(id) + ":";
  if (auto* in = s.InstancesOf(id)) {
    for (const InstanceRef& r : *in)
      out += " " + std::to_string(r.gpu) + "@" + std::to_string(r.start);
  }
  if (auto* mv = s.MigrationOf(id)) {
    out += " moving " + std::to_string(mv->from.gpu) + "@" + std::to_string(mv->from.start) + "->" +
           std::to_string(mv->to.gpu) + "@" + std::to_string(mv->to.start);
  }
  for (int g = 0; g < s.cluster().size(); ++g) {
    out += "\n  GPU " + std::to_string(g) + ": " + s.cluster().gpu(g).DebugString();
  }
  return out;
}

TEST(GroupingTest, MigrationPassesMatchTheNaiveScan) {
  const uint64_t base_seed = testing::TestSeed(7);
  std::map<std::string, int> seen;  // kinds of moves over all seeds
  auto covered = [&] {
    return seen["completion intra"] + seen["tick intra"] > 0 &&
           seen["completion inter"] + seen["tick inter"] > 0 &&
           seen["fragmented intra"] + seen["fragmented inter"] > 0;
  };
  // At least 6 runs, more (at most 48) until every kind of move was seen.
  for (uint64_t run = 0; run < 48 && (run < 6 || !covered()); ++run) {
    const uint64_t seed = base_seed + run;
    SCOPED_TRACE("seed " + std::to_string(seed) + " (MIGSCHED_SEED=" + std::to_string(seed) + ")");
    std::printf("MigrationPassesMatchTheNaiveScan seed %llu\n",
                static_cast<unsigned long long>(seed));
    Rng rng(seed);
    const std::vector<std::string> names = {"A100-40GB", "H100-80GB", "A30-24GB"};
    std::vector<const GpuModel*> models;
    const int n = static_cast<int>(rng.UniformInt(24, 72));
    const int kinds = static_cast<int>(rng.UniformInt(1, 3));
    for (int i = 0; i < n; ++i)
      models.push_back(&testing::Model(names[rng.UniformInt(0, kinds - 1)]));
    ConfigTableCache tables;
    Cluster fast(models, &tables), naive(models, &tables);
    naive.set_grouping(false);
    SchedulerOptions o;
    o.max_skip_seconds = 5;
    o.migration.enabled = true;  // full's own default (these options are raw)
    o.migration.cooldown_s = rng.Uniform01() < 0.5 ? 0 : 30;
    o.migration.max_moves_per_pass = static_cast<int>(rng.UniformInt(1, 3));
    // Anchored together (§4 step 2): the anchored flag is part of the state groups.
    o.anchored_together = run % 2 == 1;
    auto pf = MakePolicy("full", o);
    auto pn = MakePolicy("full", o);
    ASSERT_TRUE(pf.ok() && pn.ok());
    ManualClock clock;
    Scheduler sf(&fast, std::move(*pf), o, &clock), sn(&naive, std::move(*pn), o, &clock);
    ASSERT_TRUE(sf.Setup().ok() && sn.Setup().ok());
    std::vector<JobId> running;
    double now = 0;
    auto same_state = [&] {
      for (int g = 0; g < n; ++g) {
        ASSERT_EQ(fast.gpu(g).DebugString(), naive.gpu(g).DebugString()) << "GPU " << g;
        ASSERT_EQ(fast.anchored(g), naive.anchored(g)) << "GPU " << g;
      }
      if (!o.anchored_together) {
        ASSERT_EQ(fast.num_anchored(), 0);
      }
    };
    auto pass = [&](MigrationTrigger trigger) {
      auto can_move = [](JobId) { return true; };
      auto mf = sf.RunMigrationPass(trigger, can_move);
      auto mn = sn.RunMigrationPass(trigger, can_move);
      ASSERT_TRUE(mf.ok()) << mf.status().ToString();
      ASSERT_TRUE(mn.ok()) << mn.status().ToString();
      ASSERT_EQ(mf->size(), mn->size()) << MigrationTriggerName(trigger) << " at " << now;
      for (size_t i = 0; i < mf->size(); ++i) {
        ASSERT_EQ((*mf)[i].move, (*mn)[i].move) << MigrationTriggerName(trigger) << " move " << i;
        ASSERT_EQ((*mf)[i].plan.steps.size(), (*mn)[i].plan.steps.size());
        ++seen[std::string(MigrationTriggerName(trigger)) +
               ((*mf)[i].move.inter() ? " inter" : " intra")];
      }
    };
    auto schedule = [&] {
      auto df = sf.ScheduleQueue();
      auto dn = sn.ScheduleQueue();
      ASSERT_TRUE(df.ok() && dn.ok());
      ASSERT_EQ(df->size(), dn->size()) << "at " << now;
      for (size_t i = 0; i < df->size(); ++i) {
        ASSERT_EQ((*df)[i].job, (*dn)[i].job);
        ASSERT_EQ((*df)[i].instances, (*dn)[i].instances) << "job " << (*df)[i].job;
        running.push_back((*df)[i].job);
        const double end = now + rng.UniformInt(10, 200);
        sf.SetExpectedEnd((*df)[i].job, end);
        sn.SetExpectedEnd((*df)[i].job, end);
      }
      if (sf.has_fragmented_requests() || sn.has_fragmented_requests()) {
        ASSERT_EQ(sf.has_fragmented_requests(), sn.has_fragmented_requests());
        pass(MigrationTrigger::kFragmented);
      }
    };
    static const std::array<double, 7> kFractions = {0.1, 0.15, 0.25, 0.3, 0.45, 0.5, 1.0};
    for (JobId id = 0; id < 500; ++id) {
      now += rng.Uniform01() * 3;
      sf.SetNow(now);
      sn.SetNow(now);
      const double r = rng.Uniform01();
      if (r < 0.3 && !running.empty()) {
        const size_t i = rng.UniformInt(0, running.size() - 1);
        auto rf = sf.Release(running[i]);
        auto rn = sn.Release(running[i]);
        ASSERT_TRUE(rf.ok() && rn.ok())
            << "fast: " << rf.status().ToString() << "\nnaive: " << rn.status().ToString()
            << DebugJob(sf, running[i]);
        running.erase(running.begin() + i);
        // Every other run leaves completions to the kFragmented passes.
        if (run % 2 == 0) {
          ASSERT_NO_FATAL_FAILURE(pass(MigrationTrigger::kCompletion));
        }
        ASSERT_NO_FATAL_FAILURE(schedule());
      } else if (r < (run % 2 == 0 ? 0.4 : 0.32)) {
        ASSERT_NO_FATAL_FAILURE(pass(MigrationTrigger::kTick));
      } else if (r < 0.5) {
        // Switch-over of a random move in flight.
        for (JobId j : running) {
          if (sf.MigrationOf(j) == nullptr) continue;
          ASSERT_TRUE(sf.FinishMigration(j).ok());
          ASSERT_TRUE(sn.FinishMigration(j).ok());
          break;
        }
      } else {
        Job job;
        job.gpu_fraction = kFractions[rng.UniformInt(0, kFractions.size() - 1)];
        job.count = rng.Uniform01() < 0.15 ? 2 : 1;
        const double m = rng.Uniform01();
        job.migratable = m < 0.15 ? Migratable::kNone : Migratable::kCheckpoint;
        job.latency_sensitive = rng.Uniform01() < 0.2;
        sf.Enqueue(id, job);
        sn.Enqueue(id, job);
        ASSERT_NO_FATAL_FAILURE(schedule());
      }
      ASSERT_NO_FATAL_FAILURE(same_state());
    }
  }
  for (const auto& [kind, count] : seen) std::printf("  %s moves: %d\n", kind.c_str(), count);
  EXPECT_GT(seen["completion intra"] + seen["tick intra"], 0);
  EXPECT_GT(seen["completion inter"] + seen["tick inter"], 0);
  EXPECT_GT(seen["fragmented intra"] + seen["fragmented inter"], 0);
}

}  // namespace
}  // namespace migsched
