// Client subcommands that call a running daemon's HTTP API (docs/api.md)
// through NodeClient (nodeapi/node_client.h):
//   migsched submit --profile P | --gpu-fraction F [--count N] [--migratable M]
//                   [--latency-sensitive] [--env K=V]... [--cwd D] [--name S]
//                   [--priority N] [--user U] [--time-limit T] [--idempotency-key K]
//                   -- COMMAND [ARGS...]                      prints the job id
//   migsched jobs [--json] [--state S[,S...]] [--kind K] [--user U]
//                                                             a table like squeue (every page)
//   migsched cancel ID
//   migsched gpus [--json]                                    a slot map per GPU
//   migsched logs ID [-f]
//   migsched drain|undrain GPU, pause, resume
//   migsched node | reservations [--prefix P] | allocations [--owner-prefix P]   JSON
// Common flags: --server URL (default $MIGSCHED_SERVER, else
// http://127.0.0.1:7070) and --token-file PATH (default $MIGSCHED_TOKEN_FILE,
// else /var/lib/migsched/token: the token file of `serve` with the default
// config's state_dir). Errors from the server (or no server) are printed as
// "error: <message>" with exit code 1.
#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/jobs_table.h"
#include "cli/sim_flags.h"
#include "daemon/time_limit.h"
#include "nodeapi/node_client.h"
#include "nodeapi/request_json.h"

namespace migsched::cli {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

struct ClientFlags {
  std::string server;
  std::string token_file;
};

void AddClientFlags(CLI::App* cmd, ClientFlags* f) {
  cmd->add_option("--server", f->server,
                  "Daemon URL (default: $MIGSCHED_SERVER, else http://127.0.0.1:7070)");
  cmd->add_option("--token-file", f->token_file,
                  "API token file (default: $MIGSCHED_TOKEN_FILE, else /var/lib/migsched/token)");
}

StatusOr<NodeClient> Connect(const ClientFlags& f) {
  return NodeClient::WithTokenFile(DefaultServer(f.server), DefaultTokenFile(f.token_file));
}

// Prints "error: <message>" and returns 1.
int Fail(Context& ctx, const Status& st) {
  *ctx.err << "error: " << st.message() << "\n";
  return 1;
}

// The same for a flag's value that cannot be read (bad usage, docs/api.md): returns 2.
int BadUsage(Context& ctx, const Status& st) {
  Fail(ctx, st);
  return 2;
}

// A Connect error: a --server (or $MIGSCHED_SERVER) that is no daemon address is bad usage (2);
// anything else, such as a token file that cannot be read, an error (1). Regression
// (client_bad_usage_exit_1): `--server 127.0.0.1:7070` exited 1.
int ConnectFailure(Context& ctx, const ClientFlags& f, const Status& st) {
  return CheckDaemonUrl(DefaultServer(f.server)).ok() ? Fail(ctx, st) : BadUsage(ctx, st);
}

std::string Str(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// One GPU as a slot map: a cell per placement unit, a letter per instance
// (upper case busy, lower case idle), '.' free; then a legend. ANCHORED, and "cannot leave" on an
// instance: its holder can never leave the GPU (algorithms.md §4 step 2).
void PrintGpu(const json& g, std::ostream& out) {
  const int units = g.value("placement_units", 0);
  out << fmt::format("GPU {}  {}  {}  util {:.0f}%  FragCost {:.3f}  {}{}{}\n",
                     g.value("index", -1), Str(g, "model"), Str(g, "uuid"),
                     100 * g.value("utilisation", 0.0), g.value("frag_cost", 0.0), Str(g, "load"),
                     g.value("draining", false) ? "  DRAINING" : "",
                     g.value("anchored", false) ? "  ANCHORED" : "");
  std::vector<char> cells(static_cast<size_t>(std::max(units, 0)), '.');
  std::vector<std::string> legend;
  const json instances = g.value("instances", json::array());
  for (size_t k = 0; k < instances.size(); ++k) {
    const json& i = instances[k];
    const bool busy = i.value("busy", false);
    const char letter = static_cast<char>((busy ? 'A' : 'a') + static_cast<int>(k % 26));
    const int start = i.value("start", 0);
    const int size = i.value("size", 0);
    for (int u = start; u < start + size; ++u) {
      if (u >= 0 && u < units) cells[static_cast<size_t>(u)] = letter;
    }
    const std::string holder = Str(i, "holder");
    const std::string owner = Str(i, "owner");
    const int64_t job = i.contains("job") && i["job"].is_number() ? i["job"].get<int64_t>() : 0;
    std::string who = "idle";
    if (busy && holder == "reservation") {
      who = "reserved, " + owner;
    } else if (busy && holder == "placeholder") {
      who = "being destroyed";
    } else if (busy && holder == "allocation") {
      who = fmt::format("busy, alloc {} ({})", job, owner);
    } else if (busy) {
      who = fmt::format("busy, job {}", job);
    }
    if (busy && i.value("anchors", false)) who += ", cannot leave";
    legend.push_back(fmt::format("    {} {:<10} @{}+{}  {:<16} {}", letter, Str(i, "profile"),
                                 start, size, who, Str(i, "mig_uuid")));
  }
  std::string header = "  unit ";
  std::string row = "  slot ";
  for (int u = 0; u < units; ++u) {
    header += fmt::format("|{:^3}", u);
    row += fmt::format("|{:^3}", cells[static_cast<size_t>(u)]);
  }
  out << header << "|\n" << row << "|\n";
  for (const std::string& l : legend) out << l << "\n";
  if (legend.empty()) out << "    (no instances)\n";
}

struct SubmitOptions {
  ClientFlags client;
  std::string profile;
  double gpu_fraction = 0;
  int count = 1;
  std::string migratable = "none";
  bool latency_sensitive = false;
  std::vector<std::string> env;
  std::string cwd;
  std::string name;
  int priority = 0;
  std::string user;
  std::string idempotency_key;
  std::string time_limit;
  bool json = false;
  std::vector<std::string> command;
};

int Submit(const SubmitOptions& o, Context& ctx) {
  JobRequest r;
  r.profile = o.profile;
  r.gpu_fraction = o.profile.empty() ? o.gpu_fraction : 0;
  r.count = o.count;
  r.command = o.command;
  for (const std::string& kv : o.env) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return BadUsage(ctx, InvalidArgumentError(fmt::format("--env '{}' is not NAME=VALUE", kv)));
    }
    r.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  // As sbatch --chdir: a relative directory is relative to where the command runs.
  r.cwd = o.cwd.empty() || o.cwd[0] == '/' ? o.cwd : std::filesystem::absolute(o.cwd).string();
  auto m = ParseMigratable(o.migratable);
  if (!m.ok()) return BadUsage(ctx, m.status());
  r.migratable = *m;
  r.latency_sensitive = o.latency_sensitive;
  r.priority = o.priority;
  r.name = o.name;
  r.user = o.user;
  if (!o.time_limit.empty()) {
    auto t = ParseSlurmTime(o.time_limit);
    if (!t.ok()) return BadUsage(ctx, t.status());
    r.time_limit_s = *t;
  }
  // The same validation as the server's, before any network traffic.
  if (Status st = ValidateJobRequest(r); !st.ok()) return Fail(ctx, st);
  auto api = Connect(o.client);
  if (!api.ok()) return ConnectFailure(ctx, o.client, api.status());
  auto job = api->Submit(r, o.idempotency_key);
  if (!job.ok()) return Fail(ctx, job.status());
  if (o.json) {
    *ctx.out << JobRecordToJson(*job).dump(2) << "\n";
  } else {
    *ctx.out << job->id << "\n";
  }
  if (job->state == JobState::kRejected) {
    *ctx.err << fmt::format("error: job {} was rejected: {}\n", job->id, job->reason);
    return 1;
  }
  return 0;
}

}  // namespace

void RegisterClientCommands(CLI::App& app, Context& ctx, int* exit_code) {
  {
    auto o = std::make_shared<SubmitOptions>();
    CLI::App* cmd = app.add_subcommand(
        "submit", "Submit a job to the daemon: migsched submit --profile 2g.10gb -- CMD ARGS...");
    AddClientFlags(cmd, &o->client);
    auto* p = cmd->add_option("--profile", o->profile, "MIG profile, e.g. 2g.10gb");
    auto* f = cmd->add_option("--gpu-fraction", o->gpu_fraction,
                              "Share of a GPU in (0, 1]; the smallest fitting profile is used");
    p->excludes(f);
    cmd->add_option("--count", o->count,
                    fmt::format("Instances wanted together (1..{})", kMaxJobCount))
        ->check(WholeNumber(1, kMaxJobCount))
        ->capture_default_str();
    cmd->add_option("--migratable", o->migratable,
                    "none | restart (stopped, restarted with MIGSCHED_RESTARTED=1) | checkpoint")
        ->check(CLI::IsMember({"none", "restart", "checkpoint"}))
        ->capture_default_str();
    cmd->add_flag("--latency-sensitive", o->latency_sensitive,
                  "Never moved to another GPU; may still move within its GPU (§6)");
    // One value per --env, so that `--env A=1 -- cmd` leaves `--` to end the options.
    cmd->add_option("--env", o->env, "NAME=VALUE added to the job's environment; repeatable")
        ->allow_extra_args(false);
    cmd->add_option("--cwd", o->cwd,
                    "Working directory (default: the job's own directory; a relative one is "
                    "taken from where this command runs)");
    cmd->add_option("--name", o->name, "A label");
    cmd->add_option("--priority", o->priority,
                    "Recorded with the job; the queue is tried in the scheduler's queue-order "
                    "(§5: by response ratio for full, arrival order for the other policies)");
    cmd->add_option("--user", o->user,
                    "Run as this user (the daemon's job_user or one of its job_users)");
    cmd->add_option("--time-limit,--time,-t", o->time_limit,
                    "Time limit, as Slurm's --time: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or "
                    "D-HH:MM:SS. The scheduler's expected end of the job; the daemon stops it "
                    "then (SIGTERM, SIGKILL after kill_grace_s) and it ends `timeout`");
    cmd->add_option("--idempotency-key", o->idempotency_key,
                    "A key of yours: submitting again with it returns the first job, never a "
                    "second one");
    cmd->add_flag("--json", o->json, "Print the whole job record instead of the id");
    cmd->add_option("command", o->command, "The command and its arguments, after --")->required();
    cmd->callback([o, f, &ctx, exit_code] {
      if (o->profile.empty() && f->count() == 0) {
        *ctx.err << "error: give --profile or --gpu-fraction\n";
        *exit_code = 2;
        return;
      }
      if (f->count() > 0 && !(o->gpu_fraction > 0 && o->gpu_fraction <= 1)) {
        *ctx.err << fmt::format("error: --gpu-fraction must be in (0, 1], got {}\n",
                                o->gpu_fraction);
        *exit_code = 2;
        return;
      }
      *exit_code = Submit(*o, ctx);
    });
  }
  {
    struct JobsOptions {
      ClientFlags client;
      bool json = false;
      std::vector<std::string> states;
      std::string kind;
      std::string user;
    };
    auto o = std::make_shared<JobsOptions>();
    CLI::App* cmd = app.add_subcommand(
        "jobs", "List the daemon's jobs (and allocations) like squeue: state, time, limit, reason");
    AddClientFlags(cmd, &o->client);
    cmd->add_flag("--json", o->json, "Print the API's JSON ({\"jobs\": [...]}, every page)");
    cmd->add_option("--state,-t", o->states,
                    "Only jobs in these states, comma-separated (queued, running, timeout, ...)")
        ->delimiter(',');
    cmd->add_option("--kind", o->kind, "Only this kind (job, allocation)");
    cmd->add_option("--user,-u", o->user, "Only jobs that asked to run as this user");
    cmd->callback([o, &ctx, exit_code] {
      JobQuery q;
      std::set<JobState> states;
      for (const std::string& name : o->states) {
        auto s = ParseJobState(name);
        if (!s.ok()) return void(*exit_code = BadUsage(ctx, s.status()));
        states.insert(*s);
      }
      if (states.size() == 1) q.state = *states.begin();  // else filtered here
      if (!o->kind.empty()) {
        auto k = ParseJobKind(o->kind);
        if (!k.ok()) return void(*exit_code = BadUsage(ctx, k.status()));
        q.kind = *k;
      }
      auto api = Connect(o->client);
      if (!api.ok()) return void(*exit_code = ConnectFailure(ctx, o->client, api.status()));
      auto all = api->ListAllJobs(q);
      if (!all.ok()) return void(*exit_code = Fail(ctx, all.status()));
      JobPage page;
      for (DaemonJobRecord& r : *all) {
        if (!states.empty() && !states.count(r.state)) continue;
        if (!o->user.empty() && (r.kind != JobKind::kJob || r.request.user != o->user)) continue;
        page.jobs.push_back(std::move(r));
      }
      if (o->json) {
        *ctx.out << JobPageToJson(page).dump(2) << "\n";
      } else {
        const double now =
            std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                .count();
        *ctx.out << FormatJobsTable(page.jobs, now);
      }
      *exit_code = 0;
    });
  }
  {
    struct CancelOptions {
      ClientFlags client;
      int64_t id = 0;
    };
    auto o = std::make_shared<CancelOptions>();
    CLI::App* cmd = app.add_subcommand("cancel", "Cancel a job (SIGTERM, then SIGKILL)");
    AddClientFlags(cmd, &o->client);
    cmd->add_option("id", o->id, "Job id")->required()->check(WholeNumber(1, INT64_MAX));
    cmd->callback([o, &ctx, exit_code] {
      auto api = Connect(o->client);
      if (!api.ok()) return void(*exit_code = ConnectFailure(ctx, o->client, api.status()));
      auto r = api->Cancel(o->id);
      if (!r.ok()) return void(*exit_code = Fail(ctx, r.status()));
      const std::string state(JobStateName(r->state));
      const bool ended = IsTerminal(r->state);
      // A running job gets SIGTERM now and SIGKILL after the grace period.
      *ctx.out << fmt::format("job {}: {}\n", o->id,
                              ended ? state : "cancelling (was " + state + ")");
      *exit_code = 0;
    });
  }
  // drain / undrain GPU, pause / resume: one POST each (docs/api.md).
  for (const auto& [name, help] : std::vector<std::pair<std::string, std::string>>{
           {"drain", "Stop new placements on a GPU (its jobs run to their end)"},
           {"undrain", "Let a drained GPU take new placements again"}}) {
    struct GpuOptions {
      ClientFlags client;
      int gpu = 0;
    };
    auto o = std::make_shared<GpuOptions>();
    CLI::App* cmd = app.add_subcommand(name, help);
    AddClientFlags(cmd, &o->client);
    cmd->add_option("gpu", o->gpu, "GPU index (as in `migsched gpus`)")
        ->required()
        ->check(WholeNumber(0, INT32_MAX));
    const std::string verb = name;
    cmd->callback([o, verb, &ctx, exit_code] {
      auto api = Connect(o->client);
      if (!api.ok()) return void(*exit_code = ConnectFailure(ctx, o->client, api.status()));
      const NvmlIndex gpu = NvmlIndex::Of(o->gpu);
      Status st = verb == "drain" ? api->Drain(gpu) : api->Undrain(gpu);
      if (!st.ok()) return void(*exit_code = Fail(ctx, st));
      *ctx.out << fmt::format("GPU {}: {}\n", o->gpu,
                              verb == "drain" ? "draining" : "not draining");
      *exit_code = 0;
    });
  }
  for (const auto& [name, help] : std::vector<std::pair<std::string, std::string>>{
           {"pause", "Pause the queue scan (running jobs go on)"},
           {"resume", "Resume the queue scan"}}) {
    auto o = std::make_shared<ClientFlags>();
    CLI::App* cmd = app.add_subcommand(name, help);
    AddClientFlags(cmd, o.get());
    const bool pause = name == "pause";
    cmd->callback([o, pause, &ctx, exit_code] {
      auto api = Connect(*o);
      if (!api.ok()) return void(*exit_code = ConnectFailure(ctx, *o, api.status()));
      auto r = pause ? api->Pause() : api->Resume();
      if (!r.ok()) return void(*exit_code = Fail(ctx, r.status()));
      *ctx.out << (*r ? "scheduler paused\n" : "scheduler running\n");
      *exit_code = 0;
    });
  }
  {
    struct GpusOptions {
      ClientFlags client;
      bool json = false;
    };
    auto o = std::make_shared<GpusOptions>();
    CLI::App* cmd = app.add_subcommand(
        "gpus", "Show the daemon's GPUs: a slot map per GPU (instances, busy/idle, FragCost)");
    AddClientFlags(cmd, &o->client);
    cmd->add_flag("--json", o->json, "Print the API's JSON ({\"gpus\": [...]})");
    cmd->callback([o, &ctx, exit_code] {
      auto api = Connect(o->client);
      if (!api.ok()) return void(*exit_code = ConnectFailure(ctx, o->client, api.status()));
      auto r = api->Gpus();
      if (!r.ok()) return void(*exit_code = Fail(ctx, r.status()));
      ojson gpus = ojson::array();
      for (const GpuView& g : *r) gpus.push_back(GpuViewToJson(g));
      if (o->json) {
        *ctx.out << ojson{{"gpus", gpus}}.dump(2) << "\n";
      } else {
        for (const json& g : json::parse(gpus.dump())) PrintGpu(g, *ctx.out);
      }
      *exit_code = 0;
    });
  }
  {
    struct LogsOptions {
      ClientFlags client;
      int64_t id = 0;
      bool follow = false;
    };
    auto o = std::make_shared<LogsOptions>();
    CLI::App* cmd = app.add_subcommand("logs", "Print a job's stdout and stderr");
    AddClientFlags(cmd, &o->client);
    cmd->add_option("id", o->id, "Job id")->required()->check(WholeNumber(1, INT64_MAX));
    cmd->add_flag("-f,--follow", o->follow, "Keep printing until the job ends");
    cmd->callback([o, &ctx, exit_code] {
      auto api = Connect(o->client);
      if (!api.ok()) return void(*exit_code = ConnectFailure(ctx, o->client, api.status()));
      if (Status st = api->StreamLog(o->id, o->follow, *ctx.out); !st.ok()) {
        return void(*exit_code = Fail(ctx, st));
      }
      *exit_code = 0;
    });
  }
  // node, reservations, allocations: the cluster controllers' view, as JSON.
  {
    auto o = std::make_shared<ClientFlags>();
    CLI::App* cmd = app.add_subcommand(
        "node", "Print the node's state as cluster controllers see it (GET /v1/node, JSON)");
    AddClientFlags(cmd, o.get());
    cmd->callback([o, &ctx, exit_code] {
      auto api = Connect(*o);
      if (!api.ok()) return void(*exit_code = ConnectFailure(ctx, *o, api.status()));
      auto n = api->Node();
      if (!n.ok()) return void(*exit_code = Fail(ctx, n.status()));
      *ctx.out << NodeViewToJson(*n).dump(2) << "\n";
      *exit_code = 0;
    });
  }
  {
    struct ListOptions {
      ClientFlags client;
      std::string prefix;
    };
    auto o = std::make_shared<ListOptions>();
    CLI::App* cmd = app.add_subcommand("reservations",
                                       "List the placements held for cluster controllers (JSON)");
    AddClientFlags(cmd, &o->client);
    cmd->add_option("--prefix", o->prefix, "Only owner keys starting with this");
    cmd->callback([o, &ctx, exit_code] {
      auto api = Connect(o->client);
      if (!api.ok()) return void(*exit_code = ConnectFailure(ctx, o->client, api.status()));
      auto r = api->ListReservations(o->prefix);
      if (!r.ok()) return void(*exit_code = Fail(ctx, r.status()));
      ojson all = ojson::array();
      for (const ReservationView& v : *r) all.push_back(ReservationViewToJson(v));
      *ctx.out << ojson{{"reservations", all}}.dump(2) << "\n";
      *exit_code = 0;
    });
  }
  {
    struct ListOptions {
      ClientFlags client;
      std::string prefix;
    };
    auto o = std::make_shared<ListOptions>();
    CLI::App* cmd = app.add_subcommand(
        "allocations", "List the allocations (instances held for Slurm jobs, pods; JSON)");
    AddClientFlags(cmd, &o->client);
    cmd->add_option("--owner-prefix", o->prefix, "Only owner keys starting with this");
    cmd->callback([o, &ctx, exit_code] {
      auto api = Connect(o->client);
      if (!api.ok()) return void(*exit_code = ConnectFailure(ctx, o->client, api.status()));
      auto r = api->ListAllocations(o->prefix);
      if (!r.ok()) return void(*exit_code = Fail(ctx, r.status()));
      JobPage page;
      page.jobs = std::move(*r);
      *ctx.out << JobPageToJson(page, "allocations").dump(2) << "\n";
      *exit_code = 0;
    });
  }
}

}  // namespace migsched::cli
