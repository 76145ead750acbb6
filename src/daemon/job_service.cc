#include "daemon/job_service.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pwd.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <future>
#include <limits>
#include <memory>
#include <set>
#include <utility>

#include "core/cluster.h"
#include "core/plan.h"
#include "daemon/commit_wait.h"
#include "daemon/json_text.h"
#include "daemon/time_limit.h"
#include "nodeapi/request_json.h"
#include "sched/explain.h"
#include "sched/policy.h"

namespace migsched {
namespace {

// The first wait before a launch that failed for the daemon's own trouble is tried again (s).
constexpr double kLaunchRetryFirstS = 5;

bool SameRequest(const JobRequest& a, const JobRequest& b) {
  return a.profile == b.profile && a.gpu_fraction == b.gpu_fraction && a.count == b.count &&
         a.command == b.command && a.env == b.env && a.cwd == b.cwd &&
         a.migratable == b.migratable && a.latency_sensitive == b.latency_sensitive &&
         a.priority == b.priority && a.name == b.name && a.user == b.user &&
         a.time_limit_s == b.time_limit_s;
}

}  // namespace

namespace {

// Refuses root unless the operator accepts it (allow_root_jobs).
Status CheckNotRoot(const RunAsUser& u, const DaemonConfig& config, std::string_view key) {
  if (u.uid != 0) return Status();
  if (config.allow_root_jobs) {
    spdlog::warn(
        "{}: jobs may run as root (allow_root_jobs: true): they can read the API token, the "
        "database and every job's environment, and control the node",
        key);
    return Status();
  }
  return FailedPreconditionError(fmt::format(
      "{}: '{}' is root: jobs could read the API token, the database and every job's "
      "environment, and control the node; name another user, or set allow_root_jobs: true to "
      "accept it",
      key, u.name));
}

// The uids of the system's users (getpwent) in [first, last]: never given to jobs.
std::set<uint32_t> UsersInRange(uint32_t first, uint32_t last) {
  std::set<uint32_t> out;
  setpwent();
  while (struct passwd* pw = getpwent()) {
    if (pw->pw_uid >= first && pw->pw_uid <= last) out.insert(pw->pw_uid);
  }
  endpwent();
  return out;
}

}  // namespace

namespace {
StatusOr<JobUsers> ResolveJobUsersOf(const DaemonConfig& config, std::string* key);
}  // namespace

StatusOr<JobUsers> ResolveJobUsers(const DaemonConfig& config) {
  // The key being checked when an error comes: its file and line go in front (a trial's
  // `job_user: root` was refused without them).
  std::string key = "job_user";
  StatusOr<JobUsers> users = ResolveJobUsersOf(config, &key);
  if (!users.ok()) return users.status().WithPrefix(config.Where(key));
  return users;
}

namespace {
StatusOr<JobUsers> ResolveJobUsersOf(const DaemonConfig& config, std::string* key) {
  JobUsers users;
  if (!config.job_user.empty()) {
    StatusOr<RunAsUser> u = LookUpUser(config.job_user);
    if (!u.ok()) return FailedPreconditionError("job_user: " + u.status().message());
    RETURN_IF_ERROR(CheckNotRoot(*u, config, "job_user"));
    users.default_user = *u;
  } else if (::geteuid() == 0 && !config.job_uids.empty()) {
    *key = "job_uids";
    ASSIGN_OR_RETURN(auto range, ParseUidRange(config.job_uids));
    users.system_uids = UsersInRange(range.first, range.second);
    if (users.system_uids.size() == range.second - range.first + 1) {
      return FailedPreconditionError(fmt::format(
          "job_uids {}: every uid of the range belongs to a user of the system; choose another "
          "range",
          config.job_uids));
    }
    users.dynamic_first = range.first;
    users.dynamic_count = range.second - range.first + 1;
    users.default_user.name = "(a uid of its own from job_uids)";
    users.default_user.uid = range.first;
    users.default_user.gid = range.first;
  } else if (::geteuid() == 0) {
    StatusOr<RunAsUser> u = LookUpUser("nobody");
    if (!u.ok()) {
      return FailedPreconditionError(
          "the daemon runs as root and no job_user is configured, and there is no user 'nobody' "
          "to run jobs as; set job_user");
    }
    users.default_user = *u;
  } else {
    users.default_user = DaemonUser();
  }
  if (users.dynamic_count == 0 && users.default_user.uid == ::geteuid() &&
      users.default_user.uid != 0) {
    spdlog::warn(
        "jobs run as the daemon's own user ({}): they can read the state dir (the API token, "
        "other jobs' logs and environments); set job_user to another user",
        users.default_user.name);
  }
  if (users.dynamic_count == 0) users.allowed[users.default_user.name] = users.default_user;
  *key = "job_users";
  for (const std::string& name : config.job_users) {
    StatusOr<RunAsUser> u = LookUpUser(name);
    if (!u.ok()) return FailedPreconditionError("job_users: " + u.status().message());
    RETURN_IF_ERROR(CheckNotRoot(*u, config, "job_users"));
    users.allowed[u->name] = *u;
  }
  *key = "work_dir";
  RETURN_IF_ERROR(CheckReachable(config.WorkDir(), users.default_user));
  for (const auto& [name, u] : users.allowed) {
    RETURN_IF_ERROR(CheckReachable(config.WorkDir(), u));
  }
  return users;
}
}  // namespace

JobService::JobService(NodeModel* model, InstanceSync* sync, ProcessRunner* runner, JobUsers users,
                       const DaemonConfig* config, DaemonCounters* counters, Clock* clock,
                       int64_t t0_ns, StateMutex* state_mu, ServiceHost* host)
    : model_(model),
      sync_(sync),
      runner_(runner),
      users_(std::move(users)),
      config_(config),
      counters_(counters),
      clock_(clock),
      t0_ns_(t0_ns),
      state_mu_(state_mu),
      host_(host),
      moves_(model, sync, config, counters, clock, this) {}

// ---------------------------------------------------------------- validation

std::optional<RunAsUser> JobService::DynamicUserFor(DaemonJobId id,
                                                    const std::set<uint32_t>& with_processes) {
  std::set<uint32_t> taken = users_.system_uids;  // never a system user's uid
  for (auto it = dynamic_uids_.begin(); it != dynamic_uids_.end();) {
    const DaemonJobRecord* other = jobs_.Current(it->first);
    if (other == nullptr || IsTerminal(other->state)) {
      it = dynamic_uids_.erase(it);
      continue;
    }
    if (it->first != id) taken.insert(it->second);
    ++it;
  }
  uint32_t uid = 0;
  if (auto mine = dynamic_uids_.find(id); mine != dynamic_uids_.end()) {
    uid = mine->second;  // a later run of the same job keeps its uid
  } else {
    // Nor a uid some process still has (a leftover of an ended job, another daemon's job).
    taken.insert(with_processes.begin(), with_processes.end());
    const uint32_t count = users_.dynamic_count;
    const uint32_t start = static_cast<uint32_t>((id - 1) % count);
    bool found = false;
    for (uint32_t k = 0; k < count && !found; ++k) {
      const uint32_t candidate = users_.dynamic_first + (start + k) % count;
      if (taken.count(candidate) == 0) {
        uid = candidate;
        found = true;
      }
    }
    // Every uid is held: the job waits for one (regression: uids_shared_when_the_range_ran_out:
    // the next jobs shared a uid, or were given a system user's).
    if (!found) return std::nullopt;
    dynamic_uids_[id] = uid;
  }
  RunAsUser u;
  u.name = fmt::format("migsched-job-{}", id);
  u.uid = uid;
  u.gid = uid;
  u.home = runner_->WorkDir(id).string();
  u.shell = "/bin/sh";
  return u;
}

StatusOr<RunAsUser> JobService::UserFor(const JobRequest& r) const {
  if (r.user.empty()) return users_.default_user;
  auto it = users_.allowed.find(r.user);
  if (it == users_.allowed.end()) {
    std::string allowed;
    for (const auto& [name, u] : users_.allowed) allowed += (allowed.empty() ? "" : ", ") + name;
    if (allowed.empty()) {
      return InvalidArgumentError(fmt::format(
          "user '{}' is not allowed to run jobs here (no user may be named: jobs run under uids "
          "of their own; the config's job_users lists the users a request may name)",
          r.user));
    }
    return InvalidArgumentError(fmt::format(
        "user '{}' is not allowed to run jobs here (allowed: {}; the config's job_user and "
        "job_users)",
        r.user, allowed));
  }
  return it->second;
}

Status JobService::ValidateRequest(const JobRequest& r, const Job& job) const {
  RETURN_IF_ERROR(ValidateJobRequest(r));
  RETURN_IF_ERROR(UserFor(r).status());
  return model_->CheckOffered(job);
}

void JobService::Enqueue(DaemonJobId id, const Job& job, double waited_s) {
  Scheduler& s = model_->scheduler();
  s.SetNow(std::max(s.now(), NowS()));
  const double enqueued = s.now() - std::max(0.0, waited_s);
  enqueued_s_[id] = enqueued;
  s.Enqueue(static_cast<JobId>(id), job, enqueued);
}

// ---------------------------------------------------------------- the API

StatusOr<SubmitResult> JobService::Submit(const JobRequest& typed, const std::string& key) {
  const JobRequest request = WithCanonicalProfile(typed);
  // The scheduler core's view of the request: derived here, once, and kept with the record
  // (JobTable::JobOf) for every later use.
  const Job job = request.ToJob();
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> committed = promise->get_future();
  DaemonJobRecord r;
  {
    StateLock lock(state_mu_);
    RETURN_IF_ERROR(ValidateRequest(request, job));
    RETURN_IF_ERROR(host_->Accepting());
    if (!key.empty()) {
      keys_.Wait(state_mu_, key);
      if (DaemonJobId first = jobs_.ByKey(key); first != 0) {
        const DaemonJobRecord* v = jobs_.Visible(first);
        if (v->kind == JobKind::kJob && SameRequest(v->request, request)) {
          return SubmitResult{*v, true};
        }
        return FailedPreconditionError(
            fmt::format("idempotency key '{}' was used for another request ({} {})", key,
                        JobKindName(v->kind), first));
      }
      keys_.Begin(key);
    }
    r = NewJobRecord(NextJobId(), JobKind::kJob, Unix());
    r.request = request;
    r.idempotency_key = key;
    Status can = model_->scheduler().CheckCanEverRun(job);
    if (!can.ok()) {
      if (Status st = TransitionJob(r, JobState::kRejected, r.submitted_at); !st.ok()) {
        spdlog::error("{}", st.message());
      } else {
        r.reason = can.message();
      }
    }
    nlohmann::json detail = {{"state", std::string(JobStateName(r.state))}};
    if (!r.reason.empty()) detail["reason"] = r.reason;
    host_->Persist({StoreOp::InsertJob(r),
                    StoreOp::Event(r.id, r.submitted_at, "submitted", JsonText(detail))},
                   /*retry=*/false,
                   [this, r, job, key, promise](const Status& st) MIGSCHED_REQUIRES(kStateLock) {
                     keys_.End(key);
                     if (st.ok()) {
                       jobs_.AddStored(r, job);
                       if (r.state == JobState::kQueued) Enqueue(r.id, job);
                       if (r.state == JobState::kRejected)
                         counters_->ended.Count("job", "rejected");
                     }
                     promise->set_value(st);
                   });
  }
  Status st = committed.get();
  if (!st.ok()) {
    return UnavailableError(fmt::format(
        "the job store cannot be written ({}); the job was not accepted", st.message()));
  }
  return SubmitResult{r, false};
}

JobPage JobService::List(const JobQuery& query) const {
  StateLock lock(state_mu_);
  return jobs_.List(query);
}

StatusOr<DaemonJobRecord> JobService::Get(DaemonJobId id) const {
  StateLock lock(state_mu_);
  const DaemonJobRecord* r = jobs_.Visible(id);
  if (r == nullptr) return NotFoundError(fmt::format("no job {}", id));
  return *r;
}

StatusOr<JobKind> JobService::KindOf(DaemonJobId id) const {
  StateLock lock(state_mu_);
  const DaemonJobRecord* r = jobs_.Current(id);
  if (r == nullptr || jobs_.Visible(id) == nullptr) {
    return NotFoundError(fmt::format("no job {}", id));
  }
  return r->kind;
}

StatusOr<DaemonJobRecord> JobService::Cancel(DaemonJobId id) {
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> committed = promise->get_future();
  {
    StateLock lock(state_mu_);
    DaemonJobRecord* r = jobs_.Current(id);
    if (r == nullptr || jobs_.Visible(id) == nullptr) {
      return NotFoundError(fmt::format("no job {}", id));
    }
    if (r->kind != JobKind::kJob) {
      return FailedPreconditionError(
          fmt::format("{} {} is released by its owner, not cancelled", JobKindName(r->kind), id));
    }
    if (IsTerminal(r->state)) {
      return FailedPreconditionError(
          fmt::format("job {} is already {}", id, JobStateName(r->state)));
    }
    RETURN_IF_ERROR(host_->Accepting());
    if (r->state == JobState::kQueued &&
        model_->scheduler().RemoveFromQueue(static_cast<JobId>(id))) {
      FinishJob(*r, JobState::kCancelled, std::nullopt, "cancelled while queued");
    } else if (!r->cancel_requested) {
      // Stored before it shows, and kept across a restart (recovery sends
      // SIGTERM again, or ends the job as cancelled).
      r->cancel_requested = true;
      r->reason = "cancel requested";
      if (runs_.count(id)) StopProcess(id);
      SaveJob(*r, "cancel-requested", {});
    }
    // The cancel's record is the last write queued for the job: wait for it.
    host_->Persist({}, /*retry=*/true, [promise](const Status& st) { promise->set_value(st); });
  }
  Status st = WaitForCommit(committed, fmt::format("the cancel of job {}", id));
  if (!st.ok()) return st;
  return Get(id);
}

StatusOr<PlanPreview> JobService::PreviewPlan(const JobRequest& typed) const {
  const JobRequest request = WithCanonicalProfile(typed);
  // A preview's request never becomes a job: its Job is derived for the preview alone.
  const Job job = request.ToJob();
  StateLock lock(state_mu_);
  RETURN_IF_ERROR(ValidateRequest(request, job));
  PlanPreview out;
  const Scheduler& sched = model_->scheduler();
  Status can = sched.CheckCanEverRun(job);
  if (!can.ok()) {
    out.reason = can.message();
    return out;
  }
  // A scratch copy of the Cluster (drains and holds included) and a
  // scheduler of the same policy: nothing of the real state changes.
  Cluster scratch = model_->cluster();
  ASSIGN_OR_RETURN(std::unique_ptr<PlacementPolicy> policy,
                   MakePolicy(model_->policy_name(), model_->options()));
  Scheduler s(&scratch, std::move(policy), model_->options(), clock_);
  constexpr JobId kPreviewJob = std::numeric_limits<JobId>::max();
  StatusOr<std::optional<Decision>> d = s.TryPlace(kPreviewJob, job);
  if (!d.ok()) return d.status();
  if (!d->has_value()) {
    out.reason = fmt::format("no GPU that takes placements has room for {} now; it would wait",
                             job.RequestString());
    if (sched.queue_size() > 0) {
      out.reason += fmt::format(" behind {} queued job(s)", sched.queue_size());
    } else {
      out.reason += " until instances are freed";
    }
    return out;
  }
  const Decision& dec = **d;
  out.fits_now = true;
  if (sched.queue_size() > 0) {
    out.reason =
        fmt::format("fits now, but {} queued job(s) are scanned first", sched.queue_size());
  }
  for (const Step& st : dec.plan.steps) {
    out.steps.push_back(DescribeStep(st, scratch, /*with_holder=*/false));
  }
  for (const InstanceRef& ref : dec.instances)
    out.instances.push_back(DescribeInstance(*model_, *sync_, ref));
  return out;
}

// ---------------------------------------------------------------- records and processes

void JobService::SaveJob(DaemonJobRecord& r, std::string_view event, nlohmann::json detail,
                         std::function<void()> then) {
  const uint64_t version = jobs_.Update(r);
  std::vector<StoreOp> ops{StoreOp::UpdateJob(r)};
  if (!event.empty()) {
    detail["state"] = std::string(JobStateName(r.state));
    ops.push_back(StoreOp::Event(r.id, Unix(), std::string(event), JsonText(detail)));
  }
  host_->Persist(std::move(ops), /*retry=*/true,
                 [this, copy = r, version, then = std::move(then)](const Status& st)
                     MIGSCHED_REQUIRES(kStateLock) {
                       if (!st.ok())
                         return;  // dropped (logged by the writer): stays as it was shown
                       jobs_.Committed(copy, version);
                       if (then) then();
                     });
}

void JobService::StopProcess(DaemonJobId id) {
  auto it = runs_.find(id);
  if (it == runs_.end()) return;
  runner_->SignalGroup(it->second.pgid, SIGTERM);
  it->second.kill_at_s = NowS() + config_->kill_grace_s;
}

int64_t JobService::ProcessGroup(DaemonJobId id) const {
  auto it = runs_.find(id);
  return it == runs_.end() ? 0 : it->second.pgid;
}

int64_t JobService::ProcessId(DaemonJobId id) const {
  auto it = runs_.find(id);
  return it == runs_.end() ? 0 : it->second.pid;
}

void JobService::RequestLaunch(DaemonJobId id, LaunchRequest request) {
  launches_[id] = std::move(request);
  host_->Wake();
}

std::vector<JobInstance> JobService::InstancesOf(DaemonJobId id) {
  return DescribeInstancesOf(*model_, *sync_, id);
}

namespace {
// §5 limits weighed by what they predict: the runs the daemon learns from, live (FinishJob) and
// at a restart (Adopt): jobs with a time limit that succeeded or were stopped at their limit. A
// failed or cancelled run says how long it ran, not how long the job is (a launch failure or a
// job that exits at once would count as a run of 1 s and pull the slope toward 0).
bool IsLearnedRun(const DaemonJobRecord& r) {
  return r.kind == JobKind::kJob &&
         (r.state == JobState::kSucceeded || r.state == JobState::kTimeout) &&
         r.request.time_limit_s > 0 && r.started_at > 0 && r.ended_at >= r.started_at;
}
}  // namespace

void JobService::FinishJob(DaemonJobRecord& r, JobState state, std::optional<int> exit_code,
                           std::string reason) {
  if (Status st = TransitionJob(r, state, Unix()); !st.ok()) {
    // A job that ended already keeps its first end; what is left of its run
    // is forgotten, so that nothing polls or launches it again.
    spdlog::error("{}", st.message());
    if (IsTerminal(r.state)) {
      runs_.erase(r.id);
      launches_.erase(r.id);
      launch_retries_.erase(r.id);
    }
    return;
  }
  r.exit_code = exit_code;
  r.reason = std::move(reason);
  counters_->ended.Count(std::string(JobKindName(r.kind)), std::string(JobStateName(state)));
  if (IsLearnedRun(r)) {
    model_->scheduler().RecordEndedRun(r.request.time_limit_s, r.ended_at - r.started_at,
                                       r.request.ToJob());
  }
  runs_.erase(r.id);
  launches_.erase(r.id);
  launch_retries_.erase(r.id);
  create_failures_.erase(r.id);
  enqueued_s_.erase(r.id);
  moves_.Forget(r.id);
  ReleaseInstances(r.id);
  // What the job left running under its own uid (a `setsid` child outlives its process group)
  // ends with it: it would hold the released instance and, once the uid is given again, share
  // another job's uid. Known by the uid and the HOME the job was given (DynamicUserFor).
  if (auto uid = dynamic_uids_.find(r.id); uid != dynamic_uids_.end()) {
    const std::string dir = runner_->WorkDir(r.id).string();
    KillLeftoversOf(static_cast<uid_t>(uid->second), {"HOME=" + dir, "MIGSCHED_JOB_DIR=" + dir});
    // The working directory goes to the daemon: the uid is given to later jobs, which must not
    // read what this one left there (regression: reused_uid_read_an_ended_jobs_directory). A
    // later run of this job (a requeue) is given it back at its start.
    if (::chown(dir.c_str(), ::geteuid(), ::getegid()) != 0 && errno != ENOENT) {
      spdlog::warn("job {}: working directory {}: chown to the daemon: {}", r.id, dir,
                   std::strerror(errno));
    }
  }
  nlohmann::json detail;
  if (exit_code) detail["exit_code"] = *exit_code;
  if (!r.reason.empty()) detail["reason"] = r.reason;
  SaveJob(r, "ended", detail);
}

void JobService::ReleaseInstances(DaemonJobId job) {
  const JobId id = static_cast<JobId>(job);
  Scheduler& s = model_->scheduler();
  if (s.InstancesOf(id) == nullptr) return;
  // §5: the daemon tells the scheduler a job's run from its record (FinishJob, and Adopt at a
  // restart), so that the runs learned from are the store's, before and after a restart.
  s.ForgetRun(id);
  StatusOr<Plan> plan = s.Release(id);
  if (plan.ok()) {
    sync_->Execute(*plan, nullptr);
  } else {
    spdlog::error("job {}: {}", id, plan.status().message());
  }
  completed_ = true;
}

// ---------------------------------------------------------------- the control loop

void JobService::Adopt(const RecoveryResult& rec) {
  next_id_ = rec.next_id;
  // A queued job keeps the wait it has had since it was submitted (the records' Unix times), so
  // the queue order, the starvation guard and the oldest-wait gauge go on from where they were
  // (regression: queue_waits_restarted_at_a_restart, where every wait began again at 0).
  for (DaemonJobId id : rec.queued) {
    const Job* job = jobs_.JobOf(id);
    const DaemonJobRecord* r = jobs_.Current(id);
    if (job != nullptr) Enqueue(id, *job, r != nullptr ? Unix() - r->submitted_at : 0);
  }
  for (const auto& [id, run] : rec.runs) {
    // The command's own pid, for checkpoint_command's {pid}: without it a re-adopted job's
    // {pid} was the monitor's, a process of the daemon (regression: readopted_checkpoint_pid).
    runs_[id] = Run{run.pgid, runner_->GroupCommand(run.pgid), 0, false, std::nullopt};
    // A re-adopted job keeps its per-job uid: no other job is given it, and what the job leaves
    // under it ends with it (FinishJob).
    if (const std::optional<uid_t> uid = runner_->GroupUser(run.pgid);
        uid && users_.dynamic_count > 0 && *uid >= users_.dynamic_first &&
        *uid - users_.dynamic_first < users_.dynamic_count) {
      dynamic_uids_[id] = static_cast<uint32_t>(*uid);
    }
    if (run.cancel) StopProcess(id);
    if (const DaemonJobRecord* r = jobs_.Current(id); r != nullptr && r->started_at > 0) {
      NoteExpectedEnd(id, NowS() - std::max(0.0, Unix() - r->started_at));
    }
  }
  // §5 limits weighed by what they predict: what the runs that ended before this start said
  // about their limits (the records the store still holds, in the order they ended), so that a
  // restart orders the queue as the daemon did before it (regression:
  // limit_power_learned_again_after_a_restart).
  std::vector<const DaemonJobRecord*> ended;
  for (DaemonJobId id : jobs_.EndedBefore(std::numeric_limits<double>::infinity())) {
    const DaemonJobRecord* r = jobs_.Visible(id);
    if (r != nullptr && IsLearnedRun(*r)) ended.push_back(r);
  }
  std::sort(ended.begin(), ended.end(), [](const DaemonJobRecord* a, const DaemonJobRecord* b) {
    return a->ended_at != b->ended_at ? a->ended_at < b->ended_at : a->id < b->id;
  });
  for (const DaemonJobRecord* r : ended) {
    model_->scheduler().RecordEndedRun(r->request.time_limit_s, r->ended_at - r->started_at,
                                       r->request.ToJob());
  }
}

void JobService::NoteExpectedEnd(DaemonJobId id, double started_s) {
  const DaemonJobRecord* r = jobs_.Current(id);
  if (r == nullptr || r->kind != JobKind::kJob || r->request.time_limit_s <= 0) return;
  const double end_s = started_s + r->request.time_limit_s;
  model_->scheduler().SetExpectedEnd(static_cast<JobId>(id), end_s);
  // The same time is the run's limit (Reap stops it then).
  if (auto it = runs_.find(id); it != runs_.end()) it->second.limit_at_s = end_s;
}

void JobService::Place(const Decision& d) {
  DaemonJobRecord* r = jobs_.Current(d.job);
  if (r == nullptr) {
    spdlog::error("the scheduler placed job {}, which the daemon does not know", d.job);
    return;
  }
  if (Status st = TransitionJob(*r, JobState::kStarting, Unix()); !st.ok()) {
    spdlog::error("{}", st.message());
    return;
  }
  r->instances = InstancesOf(d.job);
  const DaemonJobId id = d.job;
  NoteExpectedEnd(id, NowS());
  sync_->Execute(d.plan,
                 [this, id](const Status& st) MIGSCHED_REQUIRES(kStateLock) { OnPlaced(id, st); });
}

void JobService::OnPlaced(DaemonJobId id, const Status& st) {
  DaemonJobRecord* r = jobs_.Current(id);
  if (r == nullptr || r->state != JobState::kStarting) return;
  if (!st.ok()) {
    PlacementFailed(*r, st);
    return;
  }
  create_failures_.erase(id);
  r->instances = InstancesOf(id);
  ++r->attempt;
  r->reason.clear();
  r->pid = 0;
  // The launch intent (this run's number) is durable before the launch: a
  // restart finds the run again by it, and never runs the job twice.
  LaunchRequest l;
  l.restarted = r->restarts > 0 || r->attempt > 1;
  nlohmann::json detail = {{"run", r->attempt}};
  for (const JobInstance& in : r->instances) detail["mig_uuids"].push_back(in.mig_uuid);
  SaveJob(*r, "placed", detail,
          [this, id, l]() MIGSCHED_REQUIRES(kStateLock) { RequestLaunch(id, l); });
}

void JobService::PlacementFailed(DaemonJobRecord& r, const Status& st) {
  const DaemonJobId id = r.id;
  std::set<NvmlIndex> gpus;
  for (const JobInstance& in : r.instances) gpus.insert(in.gpu);
  ReleaseInstances(id);
  // Not the job's failure: a plan not attempted (an earlier one on its GPU
  // failed), a destroy waiting for processes to leave, a GPU the backend lost.
  // The hardware's or driver's trouble (in use, a reset needed, a doubtful answer:
  // IsBackendTrouble) is not the job's either.
  bool blameless = st.reason() == StatusReason::kNotAttempted || IsBackendTrouble(st);
  for (NvmlIndex nvml : gpus) {
    const int g = model_->ClusterIndex(nvml);
    blameless = blameless || (g >= 0 && !model_->unreachable(g).empty());
  }
  const int failures = blameless ? create_failures_[id] : ++create_failures_[id];
  r.instances.clear();
  if (failures >= kMaxCreateFailures) {
    const std::string why =
        fmt::format("could not create its instances ({} tries): {}", failures, st.message());
    // In the log too: an operator sees a GPU that fails jobs there (it said nothing).
    spdlog::warn("job {}: failed: {}", id, why);
    FinishJob(r, JobState::kFailed, std::nullopt, why);
    return;
  }
  if (Status moved = TransitionJob(r, JobState::kQueued, Unix()); !moved.ok()) {
    spdlog::error("{}", moved.message());
    return;
  }
  r.reason = fmt::format("requeued: {}", st.message());
  auto at = enqueued_s_.find(id);
  const double enqueued = at != enqueued_s_.end() ? at->second : NowS();
  if (const Job* job = jobs_.JobOf(id); job != nullptr) {
    model_->scheduler().Requeue(static_cast<JobId>(id), *job, enqueued);
  } else {
    spdlog::error("job {}: requeued without its scheduler job (not kept by the job table)", id);
  }
  SaveJob(r, "requeued", {{"reason", r.reason}});
}

void JobService::Reap() {
  const double now = NowS();
  std::vector<DaemonJobId> ids;
  for (const auto& [id, run] : runs_) ids.push_back(id);
  for (DaemonJobId id : ids) {
    Run& run = runs_[id];
    DaemonJobRecord* r = jobs_.Current(id);
    if (r == nullptr) {
      runs_.erase(id);
      continue;
    }
    ProcessStatus ps = runner_->Poll(id, run.pgid, r->attempt);
    if (ps.kind == ProcessStatus::Kind::kRunning) {
      if (run.limit_at_s.has_value() && now >= *run.limit_at_s && !r->cancel_requested &&
          !moves_.moving(id)) {
        // Past its time limit: stopped like a cancel (stored first, kept across a restart).
        r->cancel_requested = true;
        r->reason = fmt::format("{} of {} reached", kTimeLimitReason,
                                FormatSlurmTime(r->request.time_limit_s));
        StopProcess(id);
        SaveJob(*r, "time-limit", {{"reason", r->reason}});
        continue;
      }
      if (run.kill_at_s > 0 && now >= run.kill_at_s) {
        runner_->SignalGroup(run.pgid, SIGKILL);
        run.kill_at_s = 0;
        run.killed = true;
      }
      continue;
    }
    if (ps.kind == ProcessStatus::Kind::kLost && run.killed) {
      // Ended by this daemon's SIGKILL, which took the monitor of a re-adopted process with it:
      // a stop like any other (a move relaunches it, a cancel or limit ends it with 137), not a
      // lost process (regression: readopted_job_killed_by_a_stop).
      ps.kind = ProcessStatus::Kind::kExited;
      ps.exit_code = 128 + SIGKILL;
      ps.signalled = true;
    }
    if (ps.kind == ProcessStatus::Kind::kLost) {
      FinishJob(
          *r, r->cancel_requested ? StoppedState(*r) : JobState::kFailed, std::nullopt,
          r->cancel_requested ? StoppedReason(*r, "cancelled") : "process lost (no exit status)");
      continue;
    }
    const int code = ps.exit_code;
    if (!r->cancel_requested && moves_.moving(id) && moves_.OnProcessEnded(id, code)) {
      runs_.erase(id);  // relaunched on its target once the switch-over is stored
      continue;
    }
    if (r->cancel_requested) {
      FinishJob(*r, StoppedState(*r), code, StoppedReason(*r, "cancelled"));
    } else if (code == 0) {
      FinishJob(*r, JobState::kSucceeded, 0, "");
    } else {
      FinishJob(*r, JobState::kFailed, code,
                ps.signalled ? fmt::format("killed by signal {}", code - 128)
                             : fmt::format("exited with code {}", code));
    }
  }
}

double JobService::OldestWaitS() const {
  double oldest = 0;
  const double now = NowS();
  for (JobId id : model_->scheduler().QueuedJobs()) {
    auto it = enqueued_s_.find(static_cast<DaemonJobId>(id));
    if (it != enqueued_s_.end()) oldest = std::max(oldest, now - it->second);
  }
  return oldest;
}

bool JobService::MayMove(DaemonJobId id) const {
  const bool can_checkpoint =
      !config_->checkpoint_command.empty() && !config_->restore_command.empty();
  const DaemonJobRecord* r = jobs_.Current(id);
  if (r == nullptr || r->kind != JobKind::kJob || r->state != JobState::kRunning) return false;
  if (!runs_.count(id) || r->cancel_requested || moves_.moving(id)) return false;
  if (r->request.migratable == Migratable::kCheckpoint && !can_checkpoint) return false;
  return true;
}

std::vector<JobService::PendingLaunch> JobService::TakeLaunches() {
  std::vector<PendingLaunch> out;
  std::optional<std::set<uint32_t>> with_processes;  // scanned once, when a uid is to be given
  uid_waits_.clear();
  for (auto it = launches_.begin(); it != launches_.end();) {
    const DaemonJobId id = it->first;
    DaemonJobRecord* r = jobs_.Current(id);
    if (r == nullptr || IsTerminal(r->state)) {
      launch_retries_.erase(id);
      it = launches_.erase(it);
      continue;
    }
    if (r->cancel_requested && !it->second.helper) {
      launch_retries_.erase(id);
      it = launches_.erase(it);
      FinishJob(*r, JobState::kCancelled, std::nullopt, "cancelled before it started");
      continue;
    }
    if (auto retry = launch_retries_.find(id);
        retry != launch_retries_.end() && NowS() < retry->second.at_s) {
      ++it;  // tried again after the daemon's own trouble, not yet
      continue;
    }
    const bool operator_tool = it->second.helper || !it->second.argv.empty();
    std::optional<RunAsUser> dynamic;
    if (!operator_tool && r->request.user.empty() && users_.dynamic_count > 0) {
      if (!with_processes) {
        const uint32_t last = users_.dynamic_first + (users_.dynamic_count - 1);
        with_processes = UidsWithProcesses(users_.dynamic_first, last);
      }
      dynamic = DynamicUserFor(id, *with_processes);
      if (!dynamic) {  // it keeps its instances and waits, `starting`, for a uid
        uid_waits_.insert(id);
        const std::string why = fmt::format(
            "waiting for a uid of its own: every uid of job_uids ({}) is held by a job or a "
            "process",
            users_.dynamic_count);
        if (r->reason != why) {
          spdlog::warn("job {}: {}", id, why);
          r->reason = why;
          SaveJob(*r, "waiting", {{"reason", why}});
        }
        ++it;
        continue;
      }
    }
    PendingLaunch l;
    l.id = id;
    l.request = std::move(it->second);
    it = launches_.erase(it);
    StatusOr<RunAsUser> user = UserFor(r->request);
    l.spec.job = id;
    l.spec.attempt = r->attempt;
    l.spec.argv = l.request.argv.empty() ? r->request.command : l.request.argv;
    l.spec.env = r->request.env;
    l.spec.cwd = r->request.cwd;
    for (const JobInstance& in : r->instances) l.spec.mig_uuids.push_back(in.mig_uuid);
    l.spec.restarted = l.request.restarted;
    // Checkpoint and restore commands are the operator's tools: they run as
    // the daemon's user; the job's own command as the job's user.
    l.spec.user = operator_tool ? DaemonUser() : (user.ok() ? *user : users_.default_user);
    if (dynamic) l.spec.user = *dynamic;
    if (l.request.helper) l.spec.extra_env["MIGSCHED_CHECKPOINT_DIR"] = l.request.checkpoint_dir;
    out.push_back(std::move(l));
  }
  return out;
}

void JobService::Launch(PendingLaunch& l) const {
  l.result = l.request.helper ? runner_->LaunchHelper(l.spec) : runner_->Launch(l.spec);
}

void JobService::RecordLaunch(PendingLaunch& l) {
  DaemonJobRecord* r = jobs_.Current(l.id);
  if (l.request.helper) {
    moves_.OnHelperLaunched(l.id, l.result.ok() ? StatusOr<int64_t>(l.result->pgid)
                                                : StatusOr<int64_t>(l.result.status()));
    return;
  }
  if (r == nullptr) return;
  if (!l.result.ok()) {
    const Status& st = l.result.status();
    if (IsTerminal(r->state)) return;
    if (st.code() == StatusCode::kInternal) {
      // The daemon's own trouble (its job or working directory, the run lock, fork: a full or
      // read-only state filesystem), not the job's: it keeps its instances and is launched
      // again later, and /healthz says why meanwhile (regression:
      // trial_launch_trouble_failed_accepted_jobs: every queued job ended `failed` for good).
      LaunchRetry& retry = launch_retries_[l.id];
      ++retry.failures;
      const double wait =
          std::min(kInternalErrorRetryS,
                   kLaunchRetryFirstS * std::pow(2.0, std::min(retry.failures, 16) - 1));
      retry.at_s = NowS() + wait;
      launch_trouble_ = std::string(st.message());
      launches_[l.id] = std::move(l.request);
      const std::string why = fmt::format(
          "the daemon could not launch it (tried again in {:g} s): {}", wait, st.message());
      spdlog::error("job {}: {}", l.id, why);
      if (r->reason != why) {
        r->reason = why;
        SaveJob(*r, "waiting", {{"reason", why}});
      }
      return;
    }
    const int code = ProcessRunner::ExitCodeOf(st);
    FinishJob(*r, JobState::kFailed, code >= 0 ? std::optional<int>(code) : std::nullopt,
              l.request.event == "migrated" ? "relaunch after migration failed: " + st.message()
                                            : st.message());
    return;
  }
  if (IsTerminal(r->state)) {  // ended while it was launched (cannot happen: kept for safety)
    runs_[l.id] = Run{l.result->pgid, l.result->pid, 0, false, std::nullopt};
    runner_->SignalGroup(l.result->pgid, SIGKILL);
    return;
  }
  if (Status st = TransitionJob(*r, JobState::kRunning, Unix()); !st.ok()) {
    // Not a state this launch belongs to (a bug): the job keeps its state and
    // the run it has, if any; the new process is stopped.
    spdlog::error("{}", st.message());
    runner_->SignalGroup(l.result->pgid, SIGKILL);
    return;
  }
  runs_[l.id] = Run{l.result->pgid, l.result->pid, 0, false, std::nullopt};
  launch_retries_.erase(l.id);
  if (launch_retries_.empty()) launch_trouble_.clear();
  r->pid = l.result->pgid;
  NoteExpectedEnd(l.id, NowS());  // this run's start (a relaunch after a move starts anew)
  r->reason = r->cancel_requested ? "cancel requested" : "";
  if (r->cancel_requested) StopProcess(l.id);
  nlohmann::json detail = {{"pid", r->pid}, {"run", r->attempt}};
  if (l.request.event == "migrated") {
    detail["restarted"] = l.request.restarted;
    if (!r->instances.empty()) detail["mig_uuid"] = r->instances.front().mig_uuid;
    completed_ = true;  // the source is free now: another pass may use it
  }
  SaveJob(*r, l.request.event, detail);
}

void JobService::UpdateWaitReasons(bool paused) {
  const Cluster& c = model_->cluster();
  bool any_closed = false;
  for (int g = 0; g < c.size(); ++g) any_closed = any_closed || c.drained(g);
  const Scheduler& s = model_->scheduler();
  bool any_held = false;
  if (!paused && !any_closed && waiting_reasons_.empty()) {
    for (JobId id : s.QueuedJobs()) any_held = any_held || s.HeldBackUntil(id).has_value();
    if (!any_held) return;
  }
  constexpr std::string_view kWaiting = "waiting: ";
  constexpr std::string_view kRequeued = "requeued: ";
  for (JobId id : s.QueuedJobs()) {
    DaemonJobRecord* r = jobs_.Current(id);
    const Job* queued = jobs_.JobOf(id);
    if (r == nullptr || queued == nullptr) continue;
    const Job& job = *queued;
    int open = 0;
    // GPUs with a free placement of the job's profile now, open and closed (drained or
    // unreachable), counted while some GPU is closed: a job that fits only on closed ones waits
    // because of them.
    int free_open = 0, free_closed = 0;
    std::string closed;
    for (int g = 0; !paused && g < c.size(); ++g) {  // paused: the reason is the pause's
      const int p = ResolveProfile(c.gpu(g).model(), job);
      if (p < 0) continue;
      const bool free_now = any_closed && NoPlacementReason(c.gpu(g), p).empty();
      if (c.drained(g)) {
        const std::string why = model_->unreachable(g);
        closed += fmt::format("{}GPU {} {}", closed.empty() ? "" : "; ", model_->nvml(g),
                              why.empty() ? "is drained" : "is unreachable: " + why);
        free_closed += free_now ? 1 : 0;
        continue;
      }
      open += s.policy().Capacity(c, g, p);
      free_open += free_now ? 1 : 0;
    }
    std::string reason;
    if (paused) {
      reason = fmt::format("{}the scheduler is paused (`migsched resume` ends it)", kWaiting);
    } else if (s.HeldBackUntil(id)) {
      reason = fmt::format(
          "{}the scheduler hit an internal error deciding for this job (the daemon's log says "
          "which); it is tried again within {} s",
          kWaiting, kInternalErrorRetryS);
    } else if (job.count > open) {
      reason =
          fmt::format("{}needs {} at once; the GPUs that take placements now hold at most {} ({})",
                      kWaiting, job.RequestString(), open, closed);
    } else if (!closed.empty() && free_open < std::max(1, job.count) && free_closed > 0) {
      reason = fmt::format(
          "{}no room for {} now on the GPUs that take placements; there is on the others ({})",
          kWaiting, job.RequestString(), closed);
    }
    const bool had = r->reason.starts_with(kWaiting);
    if (reason.empty() && !had) continue;
    if (had && reason == r->reason) continue;
    if (reason.empty()) {
      waiting_reasons_.erase(r->id);
      r->reason.clear();
      SaveJob(*r, "waiting", {{"reason", ""}});
    } else if (had || r->reason.empty() || r->reason.starts_with(kRequeued)) {
      // A requeue's reason (its event keeps it) gives way to why the job waits now.
      waiting_reasons_.insert(r->id);
      r->reason = reason;
      SaveJob(*r, "waiting", {{"reason", reason}});
    }
  }
  std::erase_if(waiting_reasons_, [&](DaemonJobId id) MIGSCHED_REQUIRES(kStateLock) {
    const DaemonJobRecord* r = jobs_.Current(id);
    return r == nullptr || r->state != JobState::kQueued;
  });
}

void JobService::Prune(std::vector<std::filesystem::path>* remove) {
  if (config_->retention_s < 0) return;
  const std::vector<DaemonJobId> ended = jobs_.EndedBefore(Unix() - config_->retention_s);
  if (!ended.empty()) {
    // Named up to 10 (a first prune after a long retention may take thousands).
    const size_t shown = std::min<size_t>(ended.size(), 10);
    spdlog::info(
        "pruning {} record{} that ended more than retention_s ({} s) ago, with their "
        "logs: {}{}",
        ended.size(), ended.size() == 1 ? "" : "s", config_->retention_s,
        fmt::join(ended.begin(), ended.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
        ended.size() > shown ? ", …" : "");
  }
  for (DaemonJobId id : ended) {
    jobs_.Erase(id);
    host_->Persist({StoreOp::DeleteJob(id)}, /*retry=*/true, nullptr);
    remove->push_back(runner_->JobDir(id));
    remove->push_back(runner_->WorkDir(id));
  }
}

}  // namespace migsched
