// Randomized model-based test: the Scheduler with the frag-aware policy
// against a naive reference written from §3-§4 of docs/algorithms.md, using
// the brute-force FragCost of tests/testing/brute_force.h instead of the
// ConfigTable. Random arrivals and releases on random small clusters; after
// every step the §1 invariants are checked. The seed is printed on failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/rng.h"
#include "sched/candidates.h"
#include "sched/migration_planner.h"
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
// The metric of the busy instances `set` of GPU `gpu` (§2).
using RefMetric = std::function<double(int gpu, const std::vector<BruteInstance>& set)>;

std::optional<RefChoice> ReferenceChoice(const Cluster& cluster, const std::string& profile_name,
                                         double threshold, const RefMetric& metric) {
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
      c.delta = metric(g, after) - metric(g, busy);
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

// 1 to 3 GPUs, each a random model of `names`.
std::vector<const GpuModel*> RandomModels(Rng& rng, const std::vector<std::string>& names) {
  const int n = static_cast<int>(rng.UniformInt(1, 3));
  std::vector<const GpuModel*> models;
  for (int i = 0; i < n; ++i) {
    models.push_back(&testing::Model(names[rng.UniformInt(0, names.size() - 1)]));
  }
  return models;
}

// `steps` random steps on `s` (over `cluster`): a release of a running job
// (35%) or an arrival requesting a base profile of a random model of the
// cluster, which must be placed where ReferenceChoice (with `metric`) places
// it, or not at all when it finds nothing (then asked twice: a retry with
// nothing changed gives the same answer). `on_arrival(job)` runs before each
// arrival is placed. The §1 invariants are checked after every step.
void DriveAgainstReference(Rng& rng, Cluster& cluster, Scheduler& s, double threshold, int steps,
                           const RefMetric& metric,
                           const std::function<void(const Job&)>& on_arrival) {
  std::vector<JobId> running;
  JobId next = 0;
  for (int step = 0; step < steps; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    if (!running.empty() && rng.Uniform01() < 0.35) {
      const size_t i = rng.UniformInt(0, running.size() - 1);
      ASSERT_TRUE(s.Release(running[i]).ok());
      running.erase(running.begin() + i);
    } else {
      const GpuModel& m = cluster.gpu(rng.UniformInt(0, cluster.size() - 1)).model();
      const std::string profile =
          m.profile(m.base_profiles()[rng.UniformInt(0, m.base_profiles().size() - 1)]).name;
      Job job;
      job.profile = profile;
      on_arrival(job);
      const std::optional<RefChoice> expected =
          ReferenceChoice(cluster, profile, threshold, metric);
      for (int attempt = 0; attempt < (expected ? 1 : 2); ++attempt) {
        auto d = s.TryPlace(next, job);
        ASSERT_TRUE(d.ok()) << d.status().ToString();
        ASSERT_EQ(d->has_value(), expected.has_value()) << profile;
        if (expected) {
          EXPECT_EQ((*d)->instances[0].gpu, expected->gpu) << profile;
          EXPECT_EQ((*d)->instances[0].start, expected->start) << profile;
          running.push_back(next);
        }
      }
      ++next;
    }
    for (int g = 0; g < cluster.size(); ++g) {
      Status st = cluster.gpu(g).CheckInvariants();
      ASSERT_TRUE(st.ok()) << st.ToString();
    }
  }
}

TEST(SchedulerRandomTest, FragAwareMatchesNaiveReference) {
  const uint64_t seed = testing::TestSeed(20261129);
  SCOPED_TRACE("seed " + std::to_string(seed) +
               " (rerun with MIGSCHED_SEED=" + std::to_string(seed) + ")");
  Rng rng(seed);
  for (int round = 0; round < 10; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::vector<const GpuModel*> models =
        RandomModels(rng, {"A100-40GB", "H100-80GB", "A30-24GB", "RTX-PRO-6000"});
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
    DriveAgainstReference(
        rng, cluster, s, o.threshold, 120,
        [&](int g, const std::vector<BruteInstance>& set) { return brute[g].FragCost(set); },
        [](const Job&) {});
    if (HasFatalFailure()) return;
  }
}

// The same with --metric demand-weighted (§2) and a short window, so that the
// shares change with almost every arrival: F(g) = sum over base profiles m
// of p_m * (free_cs(g) - cs_m * feasible_m(g)), p_m the share of the last W
// arrivals (that the model can host) requesting m, uniform while none. The
// reference counts the window itself and takes feasible_m from the brute
// force; the scheduler must choose what it chooses after every arrival.
TEST(SchedulerRandomTest, DemandWeightedMatchesNaiveReference) {
  const uint64_t seed = testing::TestSeed(20261130);
  SCOPED_TRACE("seed " + std::to_string(seed) +
               " (rerun with MIGSCHED_SEED=" + std::to_string(seed) + ")");
  Rng rng(seed);
  constexpr int kWindow = 4;
  for (int round = 0; round < 10; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::vector<const GpuModel*> models =
        RandomModels(rng, {"A100-40GB", "H100-80GB", "A30-24GB"});
    ConfigTableCache tables;
    Cluster cluster(models, &tables);
    SchedulerOptions o;
    o.threshold = std::vector<double>{0.3, 0.4, 0.5}[rng.UniformInt(0, 2)];
    o.metric = "demand-weighted";
    o.demand_window = kWindow;
    auto policy = MakePolicy("frag-aware", o);
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    ManualClock clock;
    Scheduler s(&cluster, std::move(*policy), o, &clock);
    std::deque<std::string> window;  // the last kWindow requested profiles
    const RefMetric demand_weighted = [&](int g, const std::vector<BruteInstance>& set) {
      const GpuModel& m = cluster.gpu(g).model();
      const std::vector<int>& bases = m.base_profiles();
      std::vector<double> count(bases.size(), 0);
      double total = 0;
      for (const std::string& name : window) {
        const int p = m.FindProfile(name);
        if (p < 0) continue;
        for (size_t t = 0; t < bases.size(); ++t) count[t] += bases[t] == m.BaseOf(p) ? 1 : 0;
        ++total;
      }
      int free_cs = m.compute_slices();
      for (const BruteInstance& in : set) free_cs -= in.cs;
      double f = 0;
      for (size_t t = 0; t < bases.size(); ++t) {
        const double share = total > 0 ? count[t] / total : 1.0 / bases.size();
        const int cs = m.profile(bases[t]).compute_slices;
        f += share * (free_cs - cs * testing::BruteFeasible(m, set, bases[t]));
      }
      return f;
    };
    DriveAgainstReference(rng, cluster, s, o.threshold, 100, demand_weighted, [&](const Job& job) {
      s.ObserveArrival(job);
      window.push_back(job.profile);
      if (window.size() > kWindow) window.pop_front();
    });
    if (HasFatalFailure()) return;
  }
}

// ---- §6: the `full` policy's migrations against the rules, by replay ----

// Every instance with a migration role has its other end (same job, opposite
// role, pointing back), and the scheduler's bookkeeping matches the cluster.
void CheckMoves(const Cluster& c, const Scheduler& s) {
  for (int g = 0; g < c.size(); ++g) {
    Status st = c.gpu(g).CheckInvariants();
    ASSERT_TRUE(st.ok()) << st.ToString();
    for (const Instance& in : c.gpu(g).instances()) {
      if (in.migration == MigrationRole::kNone) continue;
      ASSERT_GE(in.peer_gpu, 0);
      ASSERT_LT(in.peer_gpu, c.size());
      const GpuState& peer_gpu = c.gpu(in.peer_gpu);
      const int k = peer_gpu.IndexAt(in.peer_start);
      ASSERT_GE(k, 0) << c.gpu(g).DebugString();
      const Instance& peer = peer_gpu.instances()[k];
      EXPECT_EQ(peer.job, in.job);
      EXPECT_NE(peer.migration, in.migration);
      EXPECT_NE(peer.migration, MigrationRole::kNone);
      EXPECT_EQ(peer.peer_gpu, g);
      EXPECT_EQ(peer.peer_start, in.start);
      const MigrationMove* mv = s.MigrationOf(in.job);
      ASSERT_NE(mv, nullptr) << "job " << in.job;
      const InstanceRef me{g, in.profile, in.start};
      EXPECT_EQ(in.migration == MigrationRole::kSource ? mv->from : mv->to, me);
    }
  }
}

// Settled busy instances (busy, not a migration source) of a GPU for the brute-force FragCost.
std::vector<BruteInstance> Settled(const GpuState& g, int skip_start = -1) {
  std::vector<BruteInstance> out;
  for (const Instance& in : g.instances()) {
    if (in.busy() && in.migration != MigrationRole::kSource && in.start != skip_start) {
      out.push_back(MakeBruteInstance(g.model(), in.profile, in.start));
    }
  }
  return out;
}
std::vector<BruteInstance> Occupied(const GpuState& g) {
  std::vector<BruteInstance> out;
  for (const Instance& in : g.instances()) {
    if (in.busy()) out.push_back(MakeBruteInstance(g.model(), in.profile, in.start));
  }
  return out;
}
int Cs(const std::vector<BruteInstance>& v) {
  int n = 0;
  for (const BruteInstance& b : v) n += b.cs;
  return n;
}

// Places each instance on a random candidate (fragmenting states on purpose,
// for the planner to work on); its runs turn migration on, as `full`'s defaults do.
class RandomMigratingPolicy : public PlacementPolicy {
 public:
  explicit RandomMigratingPolicy(uint64_t seed) : rng_(seed) {}
  std::string_view name() const override { return "random+migration"; }
  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    std::vector<Candidate> cands;
    for (int g = 0; g < cluster.size(); ++g) {
      const int p = req.ProfileOn(cluster.gpu(g).model());
      if (p >= 0) AppendCandidates(cluster, g, p, /*allow_create=*/true, &cands);
    }
    if (cands.empty()) return std::nullopt;
    return cands[rng_.UniformInt(0, cands.size() - 1)];
  }

 private:
  Rng rng_;
};

TEST(SchedulerRandomTest, FullPolicyMovesFollowTheRules) {
  const uint64_t seed = testing::TestSeed(20261201);
  SCOPED_TRACE("seed " + std::to_string(seed) +
               " (rerun with MIGSCHED_SEED=" + std::to_string(seed) + ")");
  Rng rng(seed);
  const std::vector<std::string> model_names = {"A100-40GB", "H100-80GB", "A30-24GB"};
  int64_t intra_checked = 0, pulls_checked = 0, finished = 0, evacuation_moves = 0;
  for (int round = 0; round < 40; ++round) {
    const int n = static_cast<int>(rng.UniformInt(1, 4));
    std::vector<const GpuModel*> models;
    for (int i = 0; i < n; ++i)
      models.push_back(&testing::Model(model_names[rng.UniformInt(0, model_names.size() - 1)]));
    ConfigTableCache tables;
    Cluster cluster(models, &tables);
    SchedulerOptions o;
    o.threshold = std::vector<double>{0.2, 0.3, 0.4, 0.5}[rng.UniformInt(0, 3)];
    o.migration.max_moves_per_pass = static_cast<int>(rng.UniformInt(0, 8));
    o.migration.cooldown_s = rng.Uniform01() < 0.5 ? 0 : 120;
    // The rules of every move, also those of passes begun with nothing waiting (§13).
    o.migration.passes = DefragPasses::kAlways;
    o.migration.enabled = true;  // the §6 planner and evacuation (full's default)
    o.max_skip_seconds = std::vector<double>{-1, 0, 50}[rng.UniformInt(0, 2)];
    // §13: reservations (easy or conservative, with or without slack) and evacuation (off,
    // head, queue; at the job's turn or after the scan).
    o.reservation = rng.Uniform01() < 0.5 ? ReservationMode::kEasy : ReservationMode::kConservative;
    o.reservation_depth = static_cast<int>(rng.UniformInt(1, 3));
    o.evacuation = static_cast<EvacuationScope>(rng.UniformInt(0, 2));
    o.evacuation_after_backfill = rng.Uniform01() < 0.5;
    o.reservation_slack = std::vector<double>{0, 0.5, 4}[rng.UniformInt(0, 2)];
    // `full` itself, or random placements that leave more to defragment.
    std::unique_ptr<PlacementPolicy> policy;
    if (rng.Uniform01() < 0.5) {
      auto full = MakePolicy("full", o);
      ASSERT_TRUE(full.ok());
      policy = std::move(*full);
    } else {
      policy = std::make_unique<RandomMigratingPolicy>(rng.Next());
    }
    ManualClock clock;
    Scheduler s(&cluster, std::move(policy), o, &clock);
    ASSERT_TRUE(s.Setup().ok());
    std::vector<BruteFragCost> brute;
    for (const GpuModel* m : models) brute.emplace_back(*m);
    std::map<JobId, Job> jobs;
    std::set<JobId> running;
    std::map<JobId, double> last_move;
    std::set<JobId> evacuated;  // begun by a scan, not yet returned by a pass
    JobId next = 0;
    double now = 0;
    for (int step = 0; step < 150; ++step) {
      SCOPED_TRACE("round " + std::to_string(round) + " step " + std::to_string(step));
      now += rng.Exponential(20);
      s.SetNow(now);
      const double u = rng.Uniform01();
      if (u < 0.35 && !running.empty()) {
        auto it = running.begin();
        std::advance(it, rng.UniformInt(0, running.size() - 1));
        ASSERT_TRUE(s.Release(*it).ok());
        running.erase(it);
      } else if (u < 0.5) {
        std::vector<JobId> moving;
        for (JobId id : running) {
          if (s.MigrationOf(id) != nullptr) moving.push_back(id);
        }
        if (!moving.empty()) {
          auto end = s.FinishMigration(moving[rng.UniformInt(0, moving.size() - 1)]);
          ASSERT_TRUE(end.ok()) << end.status().ToString();
          ++finished;
        }
      } else if (u < 0.75) {
        // At most a few waiting jobs, so that the cluster also gets emptier.
        for (JobId q : s.QueuedJobs()) {
          if (s.queue_size() > 3) s.RemoveFromQueue(q);
        }
        const GpuModel& m = *models[rng.UniformInt(0, models.size() - 1)];
        Job job;
        job.profile =
            m.profile(m.base_profiles()[rng.UniformInt(0, m.base_profiles().size() - 1)]).name;
        job.time_limit_s = 1;
        job.migratable = static_cast<Migratable>(rng.UniformInt(0, 2));
        job.latency_sensitive = rng.Uniform01() < 0.2;
        jobs[next] = job;
        s.Enqueue(next++, job);
        std::set<JobId> moving_before;
        for (JobId id : running) {
          if (s.MigrationOf(id) != nullptr) moving_before.insert(id);
        }
        std::map<int, JobId> held_before;  // §13: GPU -> the waiting job holding it
        for (const Reservation& h : s.evacuation_holds()) held_before[h.gpu] = h.job;
        auto d = s.ScheduleQueue();
        ASSERT_TRUE(d.ok()) << d.status().ToString();
        const std::vector<JobId> queued = s.QueuedJobs();
        for (const Decision& x : *d) {
          running.insert(x.job);
          // No job starts on a GPU another still-waiting job holds.
          for (const InstanceRef& r : x.instances) {
            auto h = held_before.find(r.gpu);
            if (h != held_before.end() && h->second != x.job) {
              EXPECT_EQ(std::count(queued.begin(), queued.end(), h->second), 0)
                  << "job " << x.job << " started on GPU " << r.gpu << " held for job "
                  << h->second;
            }
          }
        }
        // §13 moves begun by the scan: the rules of moves, the cool-down counted from now.
        for (JobId id : running) {
          const MigrationMove* mv = s.MigrationOf(id);
          if (mv == nullptr || moving_before.count(id)) continue;
          const Job& moved_job = jobs.at(id);
          EXPECT_NE(moved_job.migratable, Migratable::kNone);
          if (moved_job.latency_sensitive) {
            EXPECT_FALSE(mv->inter());
          }
          if (last_move.count(id)) {
            EXPECT_GE(now - last_move[id], o.migration.cooldown_s);
          }
          last_move[id] = now;
          evacuated.insert(id);
        }
        // Holds: one per GPU, each for a waiting job.
        std::set<int> hold_gpus;
        for (const Reservation& h : s.evacuation_holds()) {
          EXPECT_TRUE(hold_gpus.insert(h.gpu).second);
          EXPECT_EQ(std::count(queued.begin(), queued.end(), h.job), 1);
        }
      } else {
        const MigrationTrigger trigger =
            static_cast<MigrationTrigger>(rng.UniformInt(0, 2));  // completion, tick, fragmented
        std::set<int> reserved;
        for (const Reservation& r : s.reservations()) reserved.insert(r.gpu);
        Cluster before = cluster;
        auto starts = s.RunMigrationPass(trigger, [](JobId) { return true; });
        ASSERT_TRUE(starts.ok()) << starts.status().ToString();
        std::set<JobId> moved;
        std::map<int, int> intra_per_gpu;
        for (const MigrationStart& st : *starts) {
          const MigrationMove& mv = st.move;
          const Job& job = jobs.at(mv.job);
          SCOPED_TRACE("move of job " + std::to_string(mv.job) + " " +
                       DescribePlan(st.plan, before));
          // The rules of every move.
          EXPECT_NE(job.migratable, Migratable::kNone);
          if (job.latency_sensitive) {
            EXPECT_FALSE(mv.inter());
          }
          if (st.for_job != kNoJob) {
            // §13: begun (and applied) by an earlier scan for a job then waiting; its cool-down
            // was checked there (below).
            const GpuState& src = before.gpu(mv.from.gpu);
            const int k = src.IndexAt(mv.from.start);
            ASSERT_GE(k, 0);
            EXPECT_EQ(src.instances()[k].job, mv.job);
            EXPECT_EQ(src.instances()[k].migration, MigrationRole::kSource);
            EXPECT_EQ(jobs.count(st.for_job), 1u);
            EXPECT_TRUE(evacuated.erase(mv.job)) << "job " << mv.job;
            ++evacuation_moves;
            continue;
          }
          EXPECT_EQ(reserved.count(mv.to.gpu), 0u);
          EXPECT_TRUE(moved.insert(mv.job).second);  // at most once per pass
          if (last_move.count(mv.job)) {
            EXPECT_GE(now - last_move[mv.job], o.migration.cooldown_s);
          }
          const GpuState& from = before.gpu(mv.from.gpu);
          const GpuState& to = before.gpu(mv.to.gpu);
          const int k = from.IndexAt(mv.from.start);
          ASSERT_GE(k, 0);
          EXPECT_EQ(from.instances()[k].job, mv.job);
          EXPECT_EQ(from.instances()[k].migration, MigrationRole::kNone);
          const bool general =
              trigger != MigrationTrigger::kFragmented && !reserved.count(mv.from.gpu);
          if (general && !mv.inter()) {
            // Intra: a busy GPU, the largest settled-FragCost decrease over
            // every single move of a movable instance to a free placement
            // (brute force, independent of the ConfigTable).
            const int g = mv.from.gpu;
            EXPECT_LE(++intra_per_gpu[g], o.migration.max_moves_per_pass);
            const std::vector<BruteInstance> settled = Settled(from);
            EXPECT_GE(static_cast<double>(Cs(settled)) / from.model().compute_slices(),
                      o.threshold);
            const std::vector<BruteInstance> occupied = Occupied(from);
            const double now_cost = brute[g].FragCost(settled);
            double best = -1, chosen = -2;
            for (const Instance& in : from.instances()) {
              const Job* spec = jobs.count(in.job) ? &jobs.at(in.job) : nullptr;
              if (!in.busy() || in.migration != MigrationRole::kNone || spec == nullptr ||
                  spec->migratable == Migratable::kNone ||
                  (moved.count(in.job) && in.job != mv.job)) {
                continue;
              }
              if (last_move.count(in.job) && now - last_move[in.job] < o.migration.cooldown_s)
                continue;
              for (const Placement& pl : from.model().profile(in.profile).placements) {
                std::vector<BruteInstance> occ = occupied;
                occ.push_back(MakeBruteInstance(from.model(), in.profile, pl.start));
                if (pl.start == in.start || !testing::BruteValid(from.model(), occ)) continue;
                std::vector<BruteInstance> after = Settled(from, in.start);
                after.push_back(MakeBruteInstance(from.model(), in.profile, pl.start));
                const double dec = now_cost - brute[g].FragCost(after);
                best = std::max(best, dec);
                if (in.start == mv.from.start && pl.start == mv.to.start) chosen = dec;
              }
            }
            EXPECT_GT(chosen, 1e-9);
            EXPECT_NEAR(chosen, best, 1e-9);
            ++intra_checked;
          } else if (general) {
            // Pull: lazy target, busier source, the source's FragCost falls,
            // the sum does not rise.
            const std::vector<BruteInstance> sh = Settled(from), sg = Settled(to);
            const int mh = from.model().compute_slices(), mg = to.model().compute_slices();
            EXPECT_LT(static_cast<double>(Cs(sg)) / mg, o.threshold);
            EXPECT_GE(static_cast<double>(Cs(sh)) / mh, o.threshold);
            EXPECT_GT(Cs(sh) * mg, Cs(sg) * mh);
            std::vector<BruteInstance> sh_after = Settled(from, mv.from.start);
            std::vector<BruteInstance> sg_after = sg;
            sg_after.push_back(MakeBruteInstance(to.model(), mv.to.profile, mv.to.start));
            const double before_sum =
                brute[mv.from.gpu].FragCost(sh) + brute[mv.to.gpu].FragCost(sg);
            EXPECT_LT(brute[mv.from.gpu].FragCost(sh_after),
                      brute[mv.from.gpu].FragCost(sh) - 1e-9);
            EXPECT_LE(brute[mv.from.gpu].FragCost(sh_after) + brute[mv.to.gpu].FragCost(sg_after),
                      before_sum + 1e-9);
            ++pulls_checked;
          }
          Status applied = ApplyPlan(st.plan, &before);
          ASSERT_TRUE(applied.ok()) << applied.ToString();
          last_move[mv.job] = now;
        }
        // The replay ends where the scheduler is.
        for (int g = 0; g < cluster.size(); ++g) {
          EXPECT_EQ(before.gpu(g).DebugString(), cluster.gpu(g).DebugString());
        }
      }
      CheckMoves(cluster, s);
      for (JobId id : running) {
        for (const InstanceRef& r : *s.InstancesOf(id)) {
          const GpuState& g = cluster.gpu(r.gpu);
          const int k = g.IndexAt(r.start);
          ASSERT_GE(k, 0);
          EXPECT_EQ(g.instances()[k].job, id);
        }
      }
    }
  }
  // The default seed exercises every check (another seed may not).
  if (std::getenv("MIGSCHED_SEED") == nullptr) {
    EXPECT_GT(intra_checked, 0);
    EXPECT_GT(pulls_checked, 0);
    EXPECT_GT(finished, 0);
    EXPECT_GT(evacuation_moves, 0);
  }
}

}  // namespace
}  // namespace migsched
