// Randomized model-based test: the Scheduler with the frag-aware policy
// against a naive reference written from §3-§4 of docs/algorithms.md, using
// the brute-force FragCost of tests/testing/brute_force.h instead of the
// ConfigTable. Random arrivals and releases on random small clusters; after
// every step the §1 invariants are checked. The seed is printed on failure.
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/rng.h"
#include "sched/scheduler.h"
#include "testing/brute_force.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::BruteFragCost;
using ::migsched::testing::BruteInstance;
using ::migsched::testing::MakeBruteInstance;

struct RefChoice {
  int gpu;
  int start;
};

// §4 steps 1-4, literally: every (g, s) free of busy instances and valid;
// lazy GPUs first; minimum ΔFragCost (within 1e-9); then reuse, fewest idle
// instances destroyed, lower util, lower GPU index, higher start.
std::optional<RefChoice> ReferenceChoice(const Cluster& cluster, const std::string& profile_name,
                                         double threshold, std::vector<BruteFragCost>& brute) {
  struct Cand {
    int gpu, start;
    bool lazy, reuse;
    int destroys;
    double util, delta;
  };
  std::vector<Cand> cands;
  for (int g = 0; g < cluster.size(); ++g) {
    const GpuState& gs = cluster.gpu(g);
    const GpuModel& m = gs.model();
    const int profile = m.FindProfile(profile_name);
    if (profile < 0) continue;
    std::vector<BruteInstance> busy, idle;
    std::vector<int> idle_profile;
    int busy_cs = 0;
    for (const Instance& in : gs.instances()) {
      (in.busy() ? busy : idle).push_back(MakeBruteInstance(m, in.profile, in.start));
      if (in.busy()) busy_cs += m.profile(in.profile).compute_slices;
      if (!in.busy()) idle_profile.push_back(in.profile);
    }
    const double util = static_cast<double>(busy_cs) / m.compute_slices();
    for (const Placement& pl : m.profile(profile).placements) {
      BruteInstance mine = MakeBruteInstance(m, profile, pl.start);
      std::vector<BruteInstance> after = busy;
      after.push_back(mine);
      if (!testing::BruteValid(m, after)) continue;
      Cand c{g, pl.start, util < threshold, false, 0, util, 0};
      std::vector<int> kept_cs;
      for (size_t i = 0; i < idle.size(); ++i) {
        const BruteInstance& x = idle[i];
        if (x.start == mine.start && idle_profile[i] == profile) {
          c.reuse = true;
          continue;
        }
        const bool overlap = x.start < mine.start + mine.size && mine.start < x.start + x.size;
        if (overlap) {
          ++c.destroys;
        } else {
          kept_cs.push_back(x.cs);
        }
      }
      if (!c.reuse) {
        int cs = busy_cs + mine.cs;
        for (int k : kept_cs) cs += k;
        std::sort(kept_cs.rbegin(), kept_cs.rend());
        for (int k : kept_cs) {
          if (cs <= m.compute_slices()) break;
          cs -= k;
          ++c.destroys;
        }
      }
      c.delta = brute[g].FragCost(after) - brute[g].FragCost(busy);
      cands.push_back(c);
    }
  }
  if (cands.empty()) return std::nullopt;
  bool any_lazy = false;
  for (const Cand& c : cands) any_lazy |= c.lazy;
  double best = 1e9;
  for (const Cand& c : cands) {
    if (c.lazy == any_lazy) best = std::min(best, c.delta);
  }
  const Cand* pick = nullptr;
  for (const Cand& c : cands) {
    if (c.lazy != any_lazy || c.delta > best + 1e-9) continue;
    if (pick == nullptr) {
      pick = &c;
      continue;
    }
    auto key = [](const Cand& x) {
      return std::make_tuple(!x.reuse, x.destroys, x.util, x.gpu, -x.start);
    };
    if (key(c) < key(*pick)) pick = &c;
  }
  return RefChoice{pick->gpu, pick->start};
}

TEST(SchedulerRandomTest, FragAwareMatchesNaiveReference) {
  const uint64_t seed = std::getenv("MIGSCHED_SEED") ? std::strtoull(std::getenv("MIGSCHED_SEED"), nullptr, 10)
                                                     : 20261129;
  SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun with MIGSCHED_SEED=" + std::to_string(seed) + ")");
  Rng rng(seed);
  const std::vector<std::string> model_names = {"A100-40GB", "H100-80GB", "A30-24GB", "RTX-PRO-6000"};
  for (int round = 0; round < 10; ++round) {
    const int n = static_cast<int>(rng.UniformInt(1, 3));
    std::vector<const GpuModel*> models;
    for (int i = 0; i < n; ++i) {
      models.push_back(&testing::Model(model_names[rng.UniformInt(0, model_names.size() - 1)]));
    }
    ConfigTableCache tables;
    Cluster cluster(models, &tables);
    SchedulerOptions o;
    o.threshold = std::vector<double>{0.3, 0.4, 0.5}[rng.UniformInt(0, 2)];
    auto policy = MakePolicy("frag-aware", o);
    ASSERT_TRUE(policy.ok());
    ManualClock clock;
    Scheduler s(&cluster, std::move(*policy), o, &clock);
    std::vector<BruteFragCost> brute;
    for (const GpuModel* m : models) brute.emplace_back(*m);
    std::vector<JobId> running;
    JobId next = 0;
    for (int step = 0; step < 120; ++step) {
      SCOPED_TRACE("round " + std::to_string(round) + " step " + std::to_string(step));
      if (!running.empty() && rng.Uniform01() < 0.35) {
        const size_t i = rng.UniformInt(0, running.size() - 1);
        ASSERT_TRUE(s.Release(running[i]).ok());
        running.erase(running.begin() + i);
      } else {
        // A base profile of a random model of the cluster.
        const GpuModel& m = *models[rng.UniformInt(0, models.size() - 1)];
        const std::string profile = m.profile(m.base_profiles()[rng.UniformInt(0, m.base_profiles().size() - 1)]).name;
        std::optional<RefChoice> expected = ReferenceChoice(cluster, profile, o.threshold, brute);
        Job job;
        job.profile = profile;
        auto d = s.TryPlace(next, job);
        ASSERT_TRUE(d.ok()) << d.status().ToString();
        ASSERT_EQ(d->has_value(), expected.has_value()) << profile;
        if (expected) {
          EXPECT_EQ((*d)->instances[0].gpu, expected->gpu) << profile;
          EXPECT_EQ((*d)->instances[0].start, expected->start) << profile;
          running.push_back(next);
        }
        ++next;
      }
      for (int g = 0; g < cluster.size(); ++g) {
        Status st = cluster.gpu(g).CheckInvariants();
        ASSERT_TRUE(st.ok()) << st.ToString();
      }
    }
  }
}

}  // namespace
}  // namespace migsched
