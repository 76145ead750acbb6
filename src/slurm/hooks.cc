#include "slurm/hooks.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <limits>
#include <string_view>
#include <thread>

#include "core/text.h"
#include "nodeapi/node_view.h"
#include "slurm/admin_comment.h"
#include "slurm/hostlist.h"
#include "slurm/job_request.h"

namespace migsched::slurm {
namespace {

std::optional<int64_t> PositiveFromEnv(const Env& env, const char* name, bool zero_ok = false) {
  const std::string s = env(name);
  int64_t id = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || id < (zero_ok ? 0 : 1)) {
    return std::nullopt;
  }
  return id;
}

std::optional<int64_t> JobIdFromEnv(const Env& env) { return PositiveFromEnv(env, "SLURM_JOB_ID"); }

// Why a hook has no job id: SLURM_JOB_ID unset, or set to what is no job id (regression:
// trial_prolog_said_unset_for_a_bad_id: SLURM_JOB_ID=abc was reported "not set").
std::string NoJobIdReason(const Env& env, std::string_view hook, std::string_view slurm_name) {
  const std::string s = env("SLURM_JOB_ID");
  if (s.empty()) {
    return fmt::format("migsched slurm {}: SLURM_JOB_ID is not set: run it as Slurm's {}\n", hook,
                       slurm_name);
  }
  return fmt::format(
      "migsched slurm {}: SLURM_JOB_ID '{}' is not a job id (a whole number from 1 to {}): run "
      "it as Slurm's {}\n",
      hook, OneLine(s), std::numeric_limits<int64_t>::max(), slurm_name);
}

// The job's MIG request per node from its record (the controller's rule, MigProfilesOf), or
// empty for a job without MIG GRES.
StatusOr<std::vector<ProfileCount>> MigRequest(const ScontrolRecord& rec,
                                               const std::string& gres_name) {
  const std::string tres = rec.Value("TresPerNode").value_or("");
  ASSIGN_OR_RETURN(std::vector<GresCount> gres, ParseGresList(tres));
  return MigProfilesOf(gres, gres_name);
}

// Whether the job can never leave its GPUs (§4 step 2), by the controller's rule (ToJobRequest):
// its marker (`comment`: --comment, which Slurm gives PrologSlurmctld as SLURM_JOB_COMMENT) and
// whether Slurm may requeue it.
bool AnchorsOf(const ScontrolRecord& rec, std::string_view comment) {
  const Marker m = ParseMarker(comment);
  return Anchors(MigratableOf(m, rec.Value("Requeue").value_or("0") == "1"), m.latency_sensitive);
}

std::string AdminCommentOf(const ScontrolRecord& rec) {
  return rec.Rest("AdminComment").value_or("");
}

}  // namespace

std::string JobSpecFromEnv(const Env& env) {
  const auto id = JobIdFromEnv(env);
  if (!id) return "";
  const auto array = PositiveFromEnv(env, "SLURM_ARRAY_JOB_ID");
  const auto task = PositiveFromEnv(env, "SLURM_ARRAY_TASK_ID", /*zero_ok=*/true);
  if (array && task) return fmt::format("{}_{}", *array, *task);
  return std::to_string(*id);
}

void RealSleep(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

int RunProlog(const ControllerConfig& config, SlurmClient* slurm, NodeDaemons* nodes,
              const Env& env, std::ostream& err, const Sleep& sleep) {
  const auto id = JobIdFromEnv(env);
  if (!id) {
    err << NoJobIdReason(env, "prolog", "PrologSlurmctld");
    return 2;
  }
  const std::string spec = JobSpecFromEnv(env);  // a task of an array as ARRAYID_TASKID
  auto rec = slurm->Job(spec);
  if (!rec.ok()) {
    err << fmt::format("migsched slurm prolog: job {}: {}\n", *id, rec.status().message());
    return 1;
  }
  if (rec->Value("Partition").value_or("") != config.partition) return 0;
  auto request = MigRequest(*rec, config.gres_name);
  if (!request.ok()) {
    err << fmt::format("migsched slurm prolog: job {}: {}\n", *id, request.status().message());
    return 1;
  }
  if (request->empty()) return 0;
  const std::string key = JobKey(*id);
  const bool anchors = AnchorsOf(*rec, env("SLURM_JOB_COMMENT"));
  const int restarts = std::atoi(rec->Value("Restarts").value_or("0").c_str());
  auto hosts = ExpandHostlist(rec->Value("NodeList").value_or(""));

  Binding binding;
  std::vector<std::pair<std::string, int64_t>> made;  // (node, allocation id)
  std::string failure;
  if (!hosts.ok()) {
    failure = "NodeList: " + hosts.status().message();
  } else {
    for (const std::string& node : *hosts) {
      const bool known = std::any_of(config.nodes.begin(), config.nodes.end(),
                                     [&](const NodeEndpoint& n) { return n.name == node; });
      if (!known) {
        failure = fmt::format("node {} has no node daemon in {}", node, config.origin);
        break;
      }
      // One allocation per instance, each bound to one room (a room holds one
      // placement; the daemon binds a request from a single reservation).
      int index = 0;
      for (const ProfileCount& part : *request) {
        for (int c = 0; c < part.count && failure.empty(); ++c, ++index) {
          BindRequest ar;
          ar.owner = key;
          ar.idempotency_key = fmt::format("{}:{}:{}:{}", key, restarts, node, index);
          ar.instances = {{part.profile, 1}};
          ar.anchors = anchors;
          auto bind = [&]() -> StatusOr<DaemonJobRecord> {
            ar.reservation_prefix = std::string(kRoomPrefix);
            StatusOr<DaemonJobRecord> a = nodes->Allocate(node, ar);
            if (!a.ok() && a.status().code() == StatusCode::kFailedPrecondition) {
              // No room of the profile held there (the controller was not
              // running): any free placement, the daemon's choice.
              const std::string first = a.status().message();
              ar.reservation_prefix.clear();
              a = nodes->Allocate(node, ar);
              if (!a.ok()) {
                a = Status(a.status().code(),
                           fmt::format("{}; and without a room: {}", first, a.status().message()));
              }
            }
            return a;
          };
          StatusOr<DaemonJobRecord> a = bind();
          constexpr double kRetryEveryS = 0.25;
          for (double waited = 0; !a.ok() && a.status().code() == StatusCode::kFailedPrecondition &&
                                  waited + kRetryEveryS <= config.bind_wait_s;
               waited += kRetryEveryS) {
            sleep(kRetryEveryS);
            a = bind();
          }
          if (!a.ok()) {
            failure = fmt::format("{}: {}", node, a.status().message());
            break;
          }
          made.push_back({node, a->id});
          for (const JobInstance& in : a->instances) {
            binding[node].push_back({in.mig_uuid, in.placement()});
          }
        }
      }
      if (!failure.empty()) break;
    }
  }
  if (failure.empty()) {
    std::string text = FormatBound(binding);
    // A malformed marker is said here too: the job runs, and is never moved.
    if (const Marker m = ParseMarker(env("SLURM_JOB_COMMENT")); !m.error.empty()) {
      text += " ; --comment: " + m.error;
    }
    Status st = slurm->SetAdminComment(spec, Truncate(text));
    if (st.ok()) {
      err << fmt::format("migsched slurm prolog: job {}: {}\n", *id, FormatBound(binding));
      return 0;
    }
    failure = "cannot record the binding: " + st.message();
  }
  // All or nothing: release what was made.
  for (const auto& [node, alloc] : made) {
    if (Status st = nodes->Release(node, alloc); !st.ok()) {
      err << fmt::format("migsched slurm prolog: job {}: releasing allocation {} on {}: {}\n", *id,
                         alloc, node, st.message());
    }
  }
  const int attempt = ParseBindAttempt(AdminCommentOf(*rec)) + 1;
  const std::string text = FormatBindFailure(attempt, config.max_bind_failures, failure);
  err << fmt::format("migsched slurm prolog: job {}: {}\n", *id, text);
  if (attempt >= config.max_bind_failures) {
    Status st = slurm->SetAdminComment(
        spec, FormatHeld(fmt::format("{} binds failed; the last: {}", attempt, failure)));
    if (st.ok()) st = slurm->Hold(spec);
    if (!st.ok()) err << fmt::format("migsched slurm prolog: job {}: {}\n", *id, st.message());
  } else if (Status st = slurm->SetAdminComment(spec, text); !st.ok()) {
    err << fmt::format("migsched slurm prolog: job {}: {}\n", *id, st.message());
  }
  return 1;
}

int RunTaskProlog(const std::string& gres_name, SlurmClient* slurm, const Env& env,
                  std::ostream& out, std::ostream& err) {
  const auto id = JobIdFromEnv(env);
  const std::string node = env("SLURMD_NODENAME");
  if (!id || node.empty()) {
    err << "migsched slurm task-prolog: SLURM_JOB_ID or SLURMD_NODENAME is not set: run it as "
           "Slurm's TaskProlog\n";
    return 2;
  }
  auto rec = slurm->Job(JobSpecFromEnv(env));
  if (!rec.ok()) {
    err << fmt::format("migsched slurm task-prolog: job {}: {}\n", *id, rec.status().message());
    return 1;
  }
  auto request = MigRequest(*rec, gres_name);
  if (!request.ok() || request->empty()) return 0;  // not a MIG job
  auto bound = ParseBound(AdminCommentOf(*rec));
  if (!bound.ok() || !bound->has_value() || !(*bound)->count(node)) {
    err << fmt::format(
        "migsched slurm task-prolog: job {} asks for MIG instances but none is bound on {} "
        "(AdminComment: {})\n",
        *id, node, AdminCommentOf(*rec));
    return 1;
  }
  std::vector<std::string> uuids, profiles, placements;
  for (const BoundInstance& b : (**bound).at(node)) {
    uuids.push_back(b.mig_uuid);
    profiles.push_back(b.placement.profile);
    placements.push_back(
        fmt::format("{}:{}@{}", b.placement.gpu, b.placement.profile, b.placement.start));
  }
  out << fmt::format("export CUDA_VISIBLE_DEVICES={}\n", fmt::join(uuids, ","));
  out << fmt::format("export MIGSCHED_NODE={}\n", node);
  out << fmt::format("export MIGSCHED_MIG_UUIDS={}\n", fmt::join(uuids, ","));
  out << fmt::format("export MIGSCHED_PROFILES={}\n", fmt::join(profiles, ","));
  out << fmt::format("export MIGSCHED_PLACEMENTS={}\n", fmt::join(placements, ","));
  return 0;
}

int RunEpilog(const ControllerConfig& config, SlurmClient* slurm, NodeDaemons* nodes,
              const Env& env, std::ostream& err) {
  const auto id = JobIdFromEnv(env);
  if (!id) {
    err << NoJobIdReason(env, "epilog", "EpilogSlurmctld");
    return 2;
  }
  (void)slurm;
  const std::string key = JobKey(*id);
  // The job's nodes (SLURM_JOB_NODELIST), or every node daemon when not known.
  std::vector<NodeEndpoint> targets;
  auto hosts = ExpandHostlist(env("SLURM_JOB_NODELIST"));
  for (const NodeEndpoint& n : config.nodes) {
    if (!hosts.ok() || std::find(hosts->begin(), hosts->end(), n.name) != hosts->end()) {
      targets.push_back(n);
    }
  }
  int failures = 0;
  for (const NodeEndpoint& n : targets) {
    auto state = nodes->State(n.name);
    if (!state.ok()) {
      err << fmt::format("migsched slurm epilog: job {}: node {}: {}\n", *id, n.name,
                         state.status().message());
      ++failures;
      continue;
    }
    for (const AllocationOnNode& a : AllocationsOn(*state)) {
      if (a.owner != key) continue;
      if (Status st = nodes->Release(n.name, a.id); !st.ok()) {
        err << fmt::format("migsched slurm epilog: job {}: releasing allocation {} on {}: {}\n",
                           *id, a.id, n.name, st.message());
        ++failures;
      }
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace migsched::slurm
