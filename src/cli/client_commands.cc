// Client subcommands that call a running daemon's HTTP API (docs/api.md):
//   migsched submit --profile P | --gpu-fraction F [--count N] [--migratable M]
//                   [--latency-sensitive] [--env K=V]... [--cwd D] [--name S]
//                   [--priority N] -- COMMAND [ARGS...]       prints the job id
//   migsched jobs [--json] [--state S]                        a table of jobs
//   migsched cancel ID
//   migsched gpus [--json]                                    a slot map per GPU
//   migsched logs ID [-f]
// Common flags: --server URL (default http://127.0.0.1:7070) and --token-file
// PATH (default $MIGSCHED_TOKEN_FILE, else /var/lib/migsched/token: the token
// file of `serve` with the default config's state_dir). Errors from the server
// (or no server) are printed as "error: <message>" with exit code 1.
#include <fmt/format.h>
#include <httplib.h>

#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "daemon/request_json.h"
#include "daemon/token.h"

namespace migsched::cli {
namespace {

using json = nlohmann::json;

constexpr const char* kDefaultServer = "http://127.0.0.1:7070";
constexpr const char* kDefaultTokenFile = "/var/lib/migsched/token";

struct ClientFlags {
  std::string server = kDefaultServer;
  std::string token_file;
};

void AddClientFlags(CLI::App* cmd, ClientFlags* f) {
  cmd->add_option("--server", f->server, "Daemon URL")->capture_default_str();
  cmd->add_option("--token-file", f->token_file,
                  "API token file (default: $MIGSCHED_TOKEN_FILE, else /var/lib/migsched/token)");
}

std::string TokenPath(const ClientFlags& f) {
  if (!f.token_file.empty()) return f.token_file;
  const char* env = std::getenv("MIGSCHED_TOKEN_FILE");
  return env != nullptr && *env != '\0' ? env : kDefaultTokenFile;
}

// One API call; the parsed JSON body on 2xx, else the server's error message.
class Api {
 public:
  static StatusOr<Api> Connect(const ClientFlags& f) {
    ASSIGN_OR_RETURN(std::string token, ReadTokenFile(TokenPath(f)));
    return Api(f.server, token);
  }

  StatusOr<json> Call(const std::string& method, const std::string& path,
                      const std::string& body = "") {
    httplib::Result r = method == "GET"      ? cli_->Get(path.c_str())
                        : method == "DELETE" ? cli_->Delete(path.c_str())
                                             : cli_->Post(path.c_str(), body, "application/json");
    if (!r) return Unreachable(r.error());
    return Decode(r->status, r->body);
  }

  // GET `path` streaming the body to `out` (chunked follow streams included).
  Status Stream(const std::string& path, std::ostream& out) {
    int status = 0;
    std::string error_body;
    httplib::Result r = cli_->Get(
        path.c_str(),
        [&status](const httplib::Response& res) {
          status = res.status;
          return true;
        },
        [&](const char* data, size_t n) {
          if (status >= 200 && status < 300) {
            out.write(data, static_cast<std::streamsize>(n));
            out.flush();
          } else {
            error_body.append(data, n);
          }
          return true;
        });
    if (!r) return Unreachable(r.error());
    if (status < 200 || status >= 300) return Decode(status, error_body).status();
    return Status();
  }

  void LongReads() { cli_->set_read_timeout(std::chrono::hours(24 * 365)); }

 private:
  Api(const std::string& server, const std::string& token)
      : server_(server), cli_(std::make_unique<httplib::Client>(server)) {
    cli_->set_bearer_token_auth(token.c_str());
    cli_->set_connection_timeout(5);
    cli_->set_read_timeout(60);
  }

  // httplib names its errors in one word ("Connection", "Read"): say what it means.
  Status Unreachable(httplib::Error e) const {
    std::string what;
    switch (e) {
      case httplib::Error::Connection:
        what = "connection refused or timed out (is `migsched serve` running there?)";
        break;
      case httplib::Error::Read:
        what = "the connection was closed while reading the answer (did the daemon stop?)";
        break;
      case httplib::Error::Write:
        what = "the connection was closed while sending the request (did the daemon stop?)";
        break;
      default:
        what = httplib::to_string(e) + " error";
    }
    return UnavailableError(fmt::format("cannot reach the daemon at {}: {}", server_, what));
  }

  static StatusOr<json> Decode(int status, const std::string& body) {
    json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (status >= 200 && status < 300) {
      if (j.is_discarded()) return InternalError("the daemon answered with invalid JSON");
      return j;
    }
    std::string message = fmt::format("HTTP {}", status);
    if (j.is_object() && j.contains("error") && j["error"].is_object() &&
        j["error"].contains("message") && j["error"]["message"].is_string()) {
      message = j["error"]["message"].get<std::string>();
    }
    return Status(status == 404   ? StatusCode::kNotFound
                  : status == 401 ? StatusCode::kUnauthenticated
                                  : StatusCode::kInvalidArgument,
                  message);
  }

  std::string server_;
  std::unique_ptr<httplib::Client> cli_;
};

// Prints "error: <message>" and returns 1.
int Fail(Context& ctx, const Status& st) {
  *ctx.err << "error: " << st.message() << "\n";
  return 1;
}

std::string Str(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// "2g.10gb", "2x2g.10gb", "fraction 0.5".
std::string RequestLabel(const json& req) {
  std::string what = req.contains("profile")
                         ? Str(req, "profile")
                         : fmt::format("fraction {}", req.value("gpu_fraction", 0.0));
  const int count = req.value("count", 1);
  return count > 1 ? fmt::format("{}x{}", count, what) : what;
}

// "0:4+2" (GPU:start+size) per instance, comma-separated; "-" if none.
std::string Placements(const json& instances) {
  std::string out;
  for (const json& i : instances) {
    out += fmt::format("{}{}:{}+{}", out.empty() ? "" : ",", i.value("gpu", -1),
                       i.value("start", 0), i.value("size", 0));
  }
  return out.empty() ? "-" : out;
}

std::string Truncate(std::string s, size_t n) {
  if (s.size() > n) s = s.substr(0, n - 3) + "...";
  return s;
}

void PrintJobs(const json& jobs, std::ostream& out) {
  out << fmt::format("{:<6} {:<10} {:<14} {:<14} {:<5} {}\n", "ID", "STATE", "REQUEST",
                     "GPU:PLACEMENT", "EXIT", "COMMAND / REASON");
  for (const json& j : jobs) {
    const json& req = j.contains("request") ? j["request"] : json::object();
    std::string cmd;
    if (req.contains("command") && req["command"].is_array()) {
      for (const json& a : req["command"]) cmd += (cmd.empty() ? "" : " ") + a.get<std::string>();
    }
    const std::string reason = Str(j, "reason");
    if (!reason.empty()) cmd += " (" + reason + ")";
    const std::string exit =
        j.contains("exit_code") && j["exit_code"].is_number() ? j["exit_code"].dump() : "-";
    out << fmt::format("{:<6} {:<10} {:<14} {:<14} {:<5} {}\n", j.value("id", 0), Str(j, "state"),
                       Truncate(RequestLabel(req), 14),
                       Placements(j.value("instances", json::array())), exit, Truncate(cmd, 60));
  }
}

// One GPU as a slot map: a cell per placement unit, a letter per instance
// (upper case busy, lower case idle), '.' free; then a legend.
void PrintGpu(const json& g, std::ostream& out) {
  const int units = g.value("placement_units", 0);
  out << fmt::format("GPU {}  {}  {}  util {:.0f}%  FragCost {:.3f}  {}{}\n", g.value("index", -1),
                     Str(g, "model"), Str(g, "uuid"), 100 * g.value("utilisation", 0.0),
                     g.value("frag_cost", 0.0), Str(g, "load"),
                     g.value("draining", false) ? "  DRAINING" : "");
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
    std::string who = busy && i.contains("job") && i["job"].is_number()
                          ? fmt::format("busy, job {}", i["job"].get<int64_t>())
                          : "idle";
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
  bool json = false;
  std::vector<std::string> command;
};

int Submit(const SubmitOptions& o, Context& ctx) {
  json body;
  if (!o.profile.empty()) body["profile"] = o.profile;
  if (o.gpu_fraction != 0) body["gpu_fraction"] = o.gpu_fraction;
  body["count"] = o.count;
  body["command"] = o.command;
  body["env"] = json::object();
  for (const std::string& kv : o.env) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Fail(ctx, InvalidArgumentError(fmt::format("--env '{}' is not NAME=VALUE", kv)));
    }
    body["env"][kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (!o.cwd.empty()) body["cwd"] = o.cwd;
  body["migratable"] = o.migratable;
  body["latency_sensitive"] = o.latency_sensitive;
  body["priority"] = o.priority;
  if (!o.name.empty()) body["name"] = o.name;
  // The same validation as the server's, before any network traffic.
  const std::string text = body.dump(-1, ' ', false, json::error_handler_t::replace);
  if (auto r = ParseJobRequest(text); !r.ok()) return Fail(ctx, r.status());
  auto api = Api::Connect(o.client);
  if (!api.ok()) return Fail(ctx, api.status());
  auto job = api->Call("POST", "/v1/jobs", text);
  if (!job.ok()) return Fail(ctx, job.status());
  if (o.json) {
    *ctx.out << job->dump(2) << "\n";
  } else {
    *ctx.out << job->value("id", 0) << "\n";
  }
  if (Str(*job, "state") == "rejected") {
    *ctx.err << fmt::format("error: job {} was rejected: {}\n", job->value("id", 0),
                            Str(*job, "reason"));
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
    cmd->add_option("--count", o->count, "Instances wanted together (1..64)")
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
    cmd->add_option("--cwd", o->cwd, "Working directory (default: the job's own directory)");
    cmd->add_option("--name", o->name, "A label");
    cmd->add_option("--priority", o->priority, "Recorded with the job (order is FIFO, §5)");
    cmd->add_flag("--json", o->json, "Print the whole job record instead of the id");
    cmd->add_option("command", o->command, "The command and its arguments, after --")->required();
    cmd->callback([o, &ctx, exit_code] {
      if (o->profile.empty() && o->gpu_fraction == 0) {
        *ctx.err << "error: give --profile or --gpu-fraction\n";
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
      std::string state;
    };
    auto o = std::make_shared<JobsOptions>();
    CLI::App* cmd = app.add_subcommand("jobs", "List the daemon's jobs");
    AddClientFlags(cmd, &o->client);
    cmd->add_flag("--json", o->json, "Print the API's JSON ({\"jobs\": [...]})");
    cmd->add_option("--state", o->state, "Only jobs in this state (queued, running, ...)");
    cmd->callback([o, &ctx, exit_code] {
      auto api = Api::Connect(o->client);
      if (!api.ok()) return void(*exit_code = Fail(ctx, api.status()));
      auto r = api->Call("GET", o->state.empty() ? "/v1/jobs" : "/v1/jobs?state=" + o->state);
      if (!r.ok()) return void(*exit_code = Fail(ctx, r.status()));
      if (o->json) {
        *ctx.out << r->dump(2) << "\n";
      } else {
        PrintJobs(r->value("jobs", json::array()), *ctx.out);
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
    cmd->add_option("id", o->id, "Job id")->required();
    cmd->callback([o, &ctx, exit_code] {
      auto api = Api::Connect(o->client);
      if (!api.ok()) return void(*exit_code = Fail(ctx, api.status()));
      auto r = api->Call("DELETE", fmt::format("/v1/jobs/{}", o->id));
      if (!r.ok()) return void(*exit_code = Fail(ctx, r.status()));
      const std::string state = Str(*r, "state");
      const bool ended =
          state == "cancelled" || state == "succeeded" || state == "failed" || state == "rejected";
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
        ->check(CLI::NonNegativeNumber);
    const std::string verb = name;
    cmd->callback([o, verb, &ctx, exit_code] {
      auto api = Api::Connect(o->client);
      if (!api.ok()) return void(*exit_code = Fail(ctx, api.status()));
      auto r = api->Call("POST", fmt::format("/v1/gpus/{}/{}", o->gpu, verb));
      if (!r.ok()) return void(*exit_code = Fail(ctx, r.status()));
      *ctx.out << fmt::format("GPU {}: {}\n", o->gpu,
                              r->value("draining", false) ? "draining" : "not draining");
      *exit_code = 0;
    });
  }
  for (const auto& [name, help] : std::vector<std::pair<std::string, std::string>>{
           {"pause", "Pause the queue scan (running jobs go on)"},
           {"resume", "Resume the queue scan"}}) {
    auto o = std::make_shared<ClientFlags>();
    CLI::App* cmd = app.add_subcommand(name, help);
    AddClientFlags(cmd, o.get());
    const std::string path = "/v1/scheduler/" + name;
    cmd->callback([o, path, &ctx, exit_code] {
      auto api = Api::Connect(*o);
      if (!api.ok()) return void(*exit_code = Fail(ctx, api.status()));
      auto r = api->Call("POST", path);
      if (!r.ok()) return void(*exit_code = Fail(ctx, r.status()));
      *ctx.out << (r->value("paused", false) ? "scheduler paused\n" : "scheduler running\n");
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
      auto api = Api::Connect(o->client);
      if (!api.ok()) return void(*exit_code = Fail(ctx, api.status()));
      auto r = api->Call("GET", "/v1/gpus");
      if (!r.ok()) return void(*exit_code = Fail(ctx, r.status()));
      if (o->json) {
        *ctx.out << r->dump(2) << "\n";
      } else {
        for (const json& g : r->value("gpus", json::array())) PrintGpu(g, *ctx.out);
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
    cmd->add_option("id", o->id, "Job id")->required();
    cmd->add_flag("-f,--follow", o->follow, "Keep printing until the job ends");
    cmd->callback([o, &ctx, exit_code] {
      auto api = Api::Connect(o->client);
      if (!api.ok()) return void(*exit_code = Fail(ctx, api.status()));
      if (o->follow) api->LongReads();
      const std::string path =
          fmt::format("/v1/jobs/{}/log{}", o->id, o->follow ? "?follow=1" : "");
      if (Status st = api->Stream(path, *ctx.out); !st.ok()) {
        return void(*exit_code = Fail(ctx, st));
      }
      *exit_code = 0;
    });
  }
}

}  // namespace migsched::cli
