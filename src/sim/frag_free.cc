#include "sim/frag_free.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "core/cluster.h"
#include "core/config_table.h"
#include "core/numbers.h"
#include "sim/contention.h"
#include "sim/energy.h"
#include "sim/event_queue.h"
#include "sim/request_shape.h"

namespace migsched {
namespace {

class FragFreeSimulator {
 public:
  FragFreeSimulator(const Cluster& cluster, const std::vector<WorkloadJob>& jobs, double max_wait_s,
                    const SimOptions& options)
      : cluster_(cluster),
        jobs_(jobs),
        max_wait_s_(max_wait_s),
        opts_(options),
        contention_(Bandwidths(cluster), options.contention),
        energy_(cluster),
        runs_(jobs.size()) {
    for (int g = 0; g < cluster.size(); ++g) {
      const GpuModel& m = cluster.gpu(g).model();
      free_compute_.push_back(m.compute_slices());
      free_memory_.push_back(m.memory_slices());
      total_slices_ += m.compute_slices();
      const auto& models = cluster.models();
      model_of_.push_back(
          static_cast<int>(std::find(models.begin(), models.end(), &m) - models.begin()));
    }
  }

  Status Run(SimResult* result);

 private:
  enum class Phase { kPending, kQueued, kRunning, kDone, kRejected };
  struct JobRun {
    Phase phase = Phase::kPending;
    double start_s = kNaN, end_s = kNaN;
    double remaining = 0, rate = 1, last = 0;
    uint32_t generation = 0;
    std::vector<int> gpus;  // one per instance
    std::string reason;
    bool timed_out = false;  // ended at its time limit (kDone)
  };

  static std::vector<double> Bandwidths(const Cluster& c) {
    std::vector<double> out;
    for (int g = 0; g < c.size(); ++g) out.push_back(c.gpu(g).model().pcie_max_gbps());
    return out;
  }

  // The reason `job` can never run here, or "" if it can.
  std::string NeverRuns(const Job& job) const;
  void Arrive(JobId id);
  bool TryStart(JobId id);
  void Complete(JobId id);
  void ReachLimit(JobId id);
  // count x compute slices x duration in hours: what turning the job away costs (as the
  // simulator's RejectedSliceHours).
  double RejectedSliceHours(const WorkloadJob& job) const {
    return ShapeOnFirstModel(cluster_.models(), job).compute_slices * job.duration_s / 3600.0;
  }
  void UpdateRate(JobId id);
  // Whether `e` can no longer change anything: the time limit or an outdated completion of a
  // job no longer running, the --max-wait timer of a job no longer queued.
  bool Stale(const Event& e) const;
  void Scan();
  void Sample();

  const Cluster& cluster_;
  const std::vector<WorkloadJob>& jobs_;
  const double max_wait_s_;
  const SimOptions& opts_;
  ContentionModel contention_;
  EnergyMeter energy_;
  std::vector<JobRun> runs_;
  std::vector<int> free_compute_, free_memory_, model_of_;
  int total_slices_ = 0;
  int busy_slices_ = 0;
  EventQueue events_;
  std::vector<JobId> queue_;  // arrival order
  std::map<RequestKey, std::string> never_;
  JobStats stats_;
  TimeIntegrals integrals_;
  std::vector<TimelineSample>* timeline_ = nullptr;
  double now_ = 0, last_completion_ = 0;
  int64_t running_ = 0;
  int64_t completed_ = 0;
  // The arrival window's figures, taken at the last arrival's instant (as the simulator does).
  bool window_closed_ = false;
  double window_busy_area_ = 0;
  std::vector<ModelUsage> window_usage_;
  int64_t window_completed_ = 0;
  std::vector<JobId> affected_;
};

std::string FragFreeSimulator::NeverRuns(const Job& job) const {
  bool offered = false;
  int64_t capacity = 0;
  std::string model_list;
  for (const GpuModel* m : cluster_.models()) {
    model_list += (model_list.empty() ? "" : ", ") + m->name();
  }
  for (int g = 0; g < cluster_.size(); ++g) {
    const GpuModel& m = cluster_.gpu(g).model();
    const int p = ResolveProfile(m, job);
    if (p < 0) continue;
    offered = true;
    const Profile& pr = m.profile(p);
    capacity += std::min(m.compute_slices() / std::max(1, pr.compute_slices),
                         m.memory_slices() / std::max(1, pr.memory_slices));
  }
  if (!offered) {
    return job.profile.empty()
               ? fmt::format("no GPU in the cluster ({}) has a profile for gpu_fraction {}",
                             model_list, job.gpu_fraction)
               : fmt::format("no GPU in the cluster ({}) offers profile {}", model_list,
                             job.profile);
  }
  if (job.count > capacity) {
    const NamedRequest r = NameRequest(cluster_.models(), job);
    return fmt::format("gang of {} instances{} is larger than the cluster (at most {} at once)",
                       r.what, r.fraction, capacity);
  }
  return "";
}

void FragFreeSimulator::Arrive(JobId id) {
  const WorkloadJob& job = jobs_[id];
  auto it = never_.find(RequestKeyOf(job));
  if (it == never_.end()) it = never_.emplace(RequestKeyOf(job), NeverRuns(job)).first;
  JobRun& r = runs_[id];
  if (!it->second.empty()) {
    r.phase = Phase::kRejected;
    r.reason = it->second;
    stats_.AddRejected(ShapeOnFirstModel(cluster_.models(), job).key, r.reason,
                       RejectedSliceHours(job));
    return;
  }
  r.phase = Phase::kQueued;
  queue_.push_back(id);
  if (max_wait_s_ >= 0) events_.Push(now_ + max_wait_s_, EventKind::kTimer, id, 0);
}

// First fit, one instance at a time, all or nothing.
bool FragFreeSimulator::TryStart(JobId id) {
  const WorkloadJob& job = jobs_[id];
  std::vector<int> gpus;
  for (int k = 0; k < job.count; ++k) {
    bool placed = false;
    for (int g = 0; g < cluster_.size() && !placed; ++g) {
      const GpuModel& m = cluster_.gpu(g).model();
      const int p = ResolveProfile(m, job);
      if (p < 0 || !FitsFragFree(m.profile(p), free_compute_[g], free_memory_[g])) continue;
      free_compute_[g] -= m.profile(p).compute_slices;
      free_memory_[g] -= m.profile(p).memory_slices;
      gpus.push_back(g);
      placed = true;
    }
    if (!placed) {
      for (int g : gpus) {
        const GpuModel& m = cluster_.gpu(g).model();
        const Profile& pr = m.profile(ResolveProfile(m, job));
        free_compute_[g] += pr.compute_slices;
        free_memory_[g] += pr.memory_slices;
      }
      return false;
    }
  }
  JobRun& r = runs_[id];
  r.phase = Phase::kRunning;
  r.start_s = now_;
  r.remaining = job.duration_s;
  r.rate = 1;
  r.last = now_;
  r.gpus = gpus;
  ++running_;
  // Its time limit, if it has one, ends it at start + limit (as in the simulator and Slurm).
  if (job.time_limit_s > 0) events_.Push(now_ + job.time_limit_s, EventKind::kTimeLimit, id, 0);
  for (int g : gpus) {
    const GpuModel& m = cluster_.gpu(g).model();
    busy_slices_ += m.profile(ResolveProfile(m, job)).compute_slices;
  }
  affected_.clear();
  contention_.Add(id, job.pcie_gbps, job.alpha, gpus, &affected_);
  if (std::find(affected_.begin(), affected_.end(), id) == affected_.end()) UpdateRate(id);
  for (JobId a : affected_) UpdateRate(a);
  return true;
}

// A running job reaches its time limit: ended there (outcome timeout), unless its work is done
// at this very instant (its completion event is due now: it completes).
void FragFreeSimulator::ReachLimit(JobId id) {
  JobRun& r = runs_[id];
  r.remaining = std::max(0.0, r.remaining - (now_ - r.last) * r.rate);
  r.last = now_;
  if (r.remaining <= 1e-9 * jobs_[id].duration_s) return;
  r.timed_out = true;
  Complete(id);
}

void FragFreeSimulator::UpdateRate(JobId id) {
  JobRun& r = runs_[id];
  r.remaining = std::max(0.0, r.remaining - (now_ - r.last) * r.rate);
  r.last = now_;
  r.rate = contention_.Rate(id);
  ++r.generation;
  events_.Push(now_ + r.remaining / r.rate, EventKind::kCompletion, id, r.generation);
}

void FragFreeSimulator::Complete(JobId id) {
  const WorkloadJob& job = jobs_[id];
  JobRun& r = runs_[id];
  r.phase = Phase::kDone;
  r.end_s = now_;
  last_completion_ = now_;
  --running_;
  ++r.generation;  // a completion event still queued (a timed-out job) is stale
  for (int g : r.gpus) {
    const GpuModel& m = cluster_.gpu(g).model();
    const Profile& pr = m.profile(ResolveProfile(m, job));
    free_compute_[g] += pr.compute_slices;
    free_memory_[g] += pr.memory_slices;
    busy_slices_ -= pr.compute_slices;
  }
  if (r.timed_out) {
    stats_.AddTimedOut(ShapeOnFirstModel(cluster_.models(), job).key);
  } else {
    ++completed_;
    stats_.AddCompleted(ShapeOnFirstModel(cluster_.models(), job).key, job.arrival_s, r.start_s,
                        r.end_s, job.duration_s);
  }
  affected_.clear();
  contention_.Remove(id, &affected_);
  for (JobId a : affected_) UpdateRate(a);
}

// §5: arrival order, every job that fits starts; a request that failed is not
// tried again in the same scan (starting jobs only takes room away).
void FragFreeSimulator::Scan() {
  std::set<RequestKey> failed;
  std::vector<JobId> waiting;
  for (JobId id : queue_) {
    const RequestKey key = RequestKeyOf(jobs_[id]);
    if (failed.count(key) != 0 || !TryStart(id)) {
      failed.insert(key);
      waiting.push_back(id);
    }
  }
  queue_ = std::move(waiting);
}

bool FragFreeSimulator::Stale(const Event& e) const {
  if (e.job < 0) return false;
  const JobRun& r = runs_[e.job];
  switch (e.kind) {
    case EventKind::kTimer:
      return r.phase != Phase::kQueued;
    case EventKind::kCompletion:
      return r.phase != Phase::kRunning || e.generation != r.generation;
    case EventKind::kTimeLimit:
      return r.phase != Phase::kRunning;
    default:
      return false;
  }
}

void FragFreeSimulator::Sample() {
  ClusterSample s;
  s.busy_compute_slices = busy_slices_;
  integrals_.Sample(now_, s);
  std::vector<int> by_model(cluster_.models().size(), 0);
  for (int g = 0; g < cluster_.size(); ++g) {
    by_model[model_of_[g]] += cluster_.gpu(g).model().compute_slices() - free_compute_[g];
  }
  energy_.Sample(now_, by_model);
  if (timeline_ != nullptr) {
    TimelineSample t;
    t.time_s = now_;
    t.queue_length = static_cast<int64_t>(queue_.size());
    t.running_jobs = running_;
    t.utilization = static_cast<double>(busy_slices_) / total_slices_;
    timeline_->push_back(t);
  }
}

Status FragFreeSimulator::Run(SimResult* result) {
  if (opts_.record_timeline) timeline_ = &result->timeline;
  const size_t n = jobs_.size();
  size_t next = 0;
  while (true) {
    // Stale events are dropped before the next instant is chosen, so that no instant is
    // sampled at which nothing happens (regression: frag_free_timeline_after_the_last_job,
    // the time limits of jobs that had completed long before).
    while (!events_.empty() && Stale(events_.Top())) events_.Pop();
    if (next >= n && events_.empty()) break;
    now_ = next < n ? jobs_[next].arrival_s : std::numeric_limits<double>::infinity();
    if (!events_.empty()) now_ = std::min(now_, events_.Top().time_s);
    std::vector<JobId> due;  // --max-wait timers of this time
    bool again = true;
    while (again) {
      while (!events_.empty() && events_.Top().time_s <= now_) {
        const Event e = events_.Top();
        events_.Pop();
        if (e.kind == EventKind::kTimer) {
          due.push_back(e.job);
        } else if (e.kind == EventKind::kCompletion && runs_[e.job].phase == Phase::kRunning &&
                   e.generation == runs_[e.job].generation) {
          Complete(e.job);
        } else if (e.kind == EventKind::kTimeLimit && runs_[e.job].phase == Phase::kRunning) {
          ReachLimit(e.job);
        }
      }
      while (next < n && jobs_[next].arrival_s <= now_) Arrive(static_cast<JobId>(next++));
      Scan();
      again = !events_.empty() && events_.Top().time_s <= now_;
    }
    for (JobId id : due) {
      JobRun& r = runs_[id];
      if (r.phase != Phase::kQueued) continue;
      r.phase = Phase::kRejected;
      r.reason = "waited longer than --max-wait";
      queue_.erase(std::find(queue_.begin(), queue_.end(), id));
      stats_.AddRejected(ShapeOnFirstModel(cluster_.models(), jobs_[id]).key, r.reason,
                         RejectedSliceHours(jobs_[id]));
    }
    Sample();
    if (!window_closed_ && next >= n) {
      // Every interval up to now (the last arrival's instant) is closed by Sample.
      window_closed_ = true;
      window_busy_area_ = integrals_.busy_area();
      window_usage_ = energy_.usage();
      window_completed_ = completed_;
    }
  }
  if (!queue_.empty()) {
    return InternalError(fmt::format(
        "frag-free reference ended with {} job(s) queued and nothing left to happen (a bug)",
        queue_.size()));
  }
  Metrics& m = result->metrics;
  stats_.Fill(&m);
  m.jobs_total = static_cast<int64_t>(n);
  m.makespan_s =
      m.jobs_completed + m.jobs_timeout > 0 ? last_completion_ - jobs_.front().arrival_s : 0;
  integrals_.Finish(last_completion_);
  if (m.makespan_s > 0) {
    m.utilization = integrals_.busy_area() / (total_slices_ * m.makespan_s);
    m.jobs_per_day = m.jobs_completed / (m.makespan_s / 86400.0);
  }
  energy_.Finish(last_completion_);
  const EnergyEstimate energy = energy_.Estimate(m.makespan_s, m.jobs_completed);
  m.energy_kwh = energy.energy_kwh;
  m.jobs_per_kwh = energy.jobs_per_kwh;
  m.arrival_window_s = jobs_.back().arrival_s - jobs_.front().arrival_s;
  if (m.arrival_window_s > 0) {
    m.utilization_arrival_window = window_busy_area_ / (total_slices_ * m.arrival_window_s);
    m.jobs_per_day_arrival_window = window_completed_ / (m.arrival_window_s / 86400.0);
    m.energy_kwh_arrival_window =
        EstimateEnergy(window_usage_, m.arrival_window_s, window_completed_).energy_kwh;
  }
  if (opts_.record_jobs) {
    result->jobs.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const JobRun& r = runs_[i];
      const WorkloadJob& job = jobs_[i];
      JobRecord rec;
      rec.id = static_cast<JobId>(i);
      rec.name = job.name;
      rec.request = job.RequestString();
      rec.arrival_s = job.arrival_s;
      rec.placed_s = r.start_s;
      rec.start_s = r.start_s;
      rec.end_s = r.end_s;
      rec.wait_s = r.start_s - job.arrival_s;
      rec.jct_s = r.end_s - job.arrival_s;
      rec.outcome = r.phase == Phase::kRejected ? JobOutcome::kRejected
                    : r.timed_out               ? JobOutcome::kTimeout
                                                : JobOutcome::kCompleted;
      rec.time_limit_s = job.time_limit_s > 0 ? job.time_limit_s : kNaN;
      rec.reason = r.reason;
      for (int g : r.gpus) {
        const GpuModel& gm = cluster_.gpu(g).model();
        rec.instances += fmt::format("{}{}:{}", rec.instances.empty() ? "" : ";", g,
                                     gm.profile(ResolveProfile(gm, job)).name);
      }
      rec.duration_s = job.duration_s;
      result->jobs.push_back(std::move(rec));
    }
  }
  return Status();
}

}  // namespace

Status WithTheReferenceNamed(const Status& s) {
  if (s.code() != StatusCode::kNotFound) return s;
  return NotFoundError(
      fmt::format("{}; the simulator also runs {} (the fragmentation-free indicator, not a policy)",
                  s.message(), kFragFreeReference));
}

StatusOr<SimResult> RunFragFreeReference(const std::vector<const GpuModel*>& gpus,
                                         const std::vector<WorkloadJob>& jobs, double max_wait_s,
                                         const SimOptions& options) {
  if (options.mode != SimMode::kOnline) {
    return InvalidArgumentError(fmt::format(
        "{} runs in online mode only (fill mode places at arrival by itself)", kFragFreeReference));
  }
  ConfigTableCache tables;
  Cluster cluster(gpus, &tables);
  if (options.contention) {
    for (const WorkloadJob& j : jobs) {
      if (!(j.pcie_gbps > 0)) continue;
      for (const GpuModel* m : cluster.models()) {
        if (!(m->pcie_max_gbps() > 0)) {
          return FailedPreconditionError(
              fmt::format("contention is on and job '{}' is PCIe-bound, but GPU model '{}' has no "
                          "pcie_max_gbps in the catalog (turn contention off or add it)",
                          j.name, m->name()));
        }
      }
      break;
    }
  }
  SimResult result;
  result.metrics.mode = std::string(SimModeName(options.mode));
  result.metrics.policy = std::string(kFragFreeReference);
  result.metrics.cluster = cluster.Describe();
  FragFreeSimulator sim(cluster, jobs, max_wait_s, options);
  RETURN_IF_ERROR(sim.Run(&result));
  return result;
}

}  // namespace migsched
