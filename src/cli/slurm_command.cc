// `migsched slurm ...`: the Slurm integration (docs/slurm.md).
//   config       the slurm.conf / gres.conf lines of a MIG cluster (slurm/gres_config.h)
//   controller   the cluster controller beside slurmctld (slurm/controller.h)
//   status       the controller's view: nodes, layouts, rooms, waiting jobs
//   (slurm/controller_status.h) prolog       PrologSlurmctld; task-prolog: TaskProlog; epilog:
//   EpilogSlurmctld (slurm/hooks.h)
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/hangup.h"
#include "cli/sim_flags.h"
#include "cluster/http_node_daemons.h"
#include "core/cluster.h"
#include "slurm/controller.h"
#include "slurm/gres_config.h"
#include "slurm/hooks.h"
#include "slurm/hostlist.h"

namespace migsched::cli {
namespace {

struct ConfigFlags {
  std::vector<std::string> nodes;
  std::vector<std::string> gpus;
  slurm::GresConfigOptions options;
  std::string only;
  std::string write_hooks;
  std::string migsched_binary;
  std::string controller_config = "/etc/migsched/slurm.yaml";
  std::string slurm_conf;
};

std::string SelfPath() {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("migsched") : p.string();
}

Status WriteHooks(const std::string& dir, const std::string& binary, const std::string& config,
                  const std::string& gres_name, const std::string& slurm_conf, std::ostream& err) {
  for (const std::string& s : {binary, config, slurm_conf}) {
    if (s.find('\'') != std::string::npos) {
      return InvalidArgumentError(fmt::format("path {} contains a single quote", s));
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InvalidArgumentError(fmt::format("--write-hooks {}: {}", dir, ec.message()));
  for (const auto& [name, content] : slurm::HookScripts(binary, config, gres_name, slurm_conf)) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    std::ofstream f(path, std::ios::trunc);
    f << content;
    f.close();
    if (!f) return InvalidArgumentError(fmt::format("cannot write {}", path));
    if (chmod(path.c_str(), 0755) != 0) {
      return InvalidArgumentError(fmt::format("chmod 0755 {}: {}", path, std::strerror(errno)));
    }
    err << fmt::format("migsched: wrote {}\n", path);
  }
  return Status::Ok();
}

int RunConfig(const ConfigFlags& f, const std::string& command_line, Context& ctx) {
  auto fail = [&](const Status& s) {
    *ctx.err << "migsched slurm config: " << s.message() << "\n";
    return 1;
  };
  if (f.gpus.size() != 1 && f.gpus.size() != f.nodes.size()) {
    return fail(InvalidArgumentError(fmt::format(
        "give --gpus once (for every --nodes) or once per --nodes ({} --nodes, {} --gpus)",
        f.nodes.size(), f.gpus.size())));
  }
  auto catalog = ctx.catalog();
  if (!catalog.ok()) return fail(catalog.status());
  std::vector<slurm::NodeGroup> groups;
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    slurm::NodeGroup g;
    auto hosts = slurm::ExpandHostlist(f.nodes[i]);
    if (!hosts.ok()) return fail(hosts.status().WithPrefix("--nodes " + f.nodes[i]));
    g.nodes = std::move(*hosts);
    g.gpus_spec = f.gpus.size() == 1 ? f.gpus[0] : f.gpus[i];
    auto gpus = ParseClusterSpec(g.gpus_spec, **catalog);
    if (!gpus.ok()) return fail(gpus.status().WithPrefix("--gpus " + g.gpus_spec));
    g.gpus = std::move(*gpus);
    groups.push_back(std::move(g));
  }
  slurm::GresConfigOptions o = f.options;
  o.command_line = command_line;
  ConfigTableCache tables;
  auto conf = slurm::SlurmConfLines(groups, o, &tables);
  if (!conf.ok()) return fail(conf.status());
  auto gres = slurm::GresConfLines(groups, o, &tables);
  if (!gres.ok()) return fail(gres.status());
  if (f.only.empty() || f.only == "slurm.conf") {
    if (f.only.empty()) *ctx.out << "# ---- slurm.conf ----\n";
    *ctx.out << *conf;
  }
  if (f.only.empty() || f.only == "gres.conf") {
    if (f.only.empty()) *ctx.out << "# ---- gres.conf ----\n";
    *ctx.out << *gres;
  }
  if (!f.write_hooks.empty()) {
    const std::string binary = f.migsched_binary.empty() ? SelfPath() : f.migsched_binary;
    if (Status s = WriteHooks(f.write_hooks, binary, f.controller_config, o.gres_name, f.slurm_conf,
                              *ctx.err);
        !s.ok()) {
      return fail(s);
    }
    auto lua = slurm::JobSubmitLua(groups, o, &tables);
    if (!lua.ok()) return fail(lua.status());
    const std::string path = (std::filesystem::path(f.write_hooks) / "job_submit.lua").string();
    std::ofstream out(path, std::ios::trunc);
    out << *lua;
    out.close();
    if (!out) return fail(InvalidArgumentError(fmt::format("cannot write {}", path)));
    *ctx.err << fmt::format("migsched: wrote {} (copy it beside slurm.conf)\n", path);
  }
  return 0;
}

void RegisterConfig(CLI::App* slurm, Context& ctx, int* exit_code) {
  auto f = std::make_shared<ConfigFlags>();
  CLI::App* cmd = slurm->add_subcommand(
      "config",
      "Print the slurm.conf and gres.conf lines of a MIG cluster: per node the most instances of "
      "each profile its GPUs hold at once, as count-only GRES (docs/slurm.md)");
  cmd->add_option("--nodes", f->nodes,
                  "Node names as a Slurm hostlist, e.g. n[1-3]; repeat with --gpus for nodes "
                  "with other GPUs")
      ->required();
  cmd->add_option("--gpus", f->gpus,
                  "GPUs of each of those nodes: COUNTxMODEL[,COUNTxMODEL...], e.g. 2xA100-40GB "
                  "(models: migsched profiles); once for all --nodes or once per --nodes")
      ->required();
  cmd->add_option("--gres-name", f->options.gres_name, "GRES name (GresTypes)")
      ->capture_default_str();
  cmd->add_option("--partition", f->options.partition, "The MIG partition (the gate)")
      ->capture_default_str();
  cmd->add_option("--placeholders", f->options.placeholders,
                  "State=FUTURE placeholder nodes that let Slurm queue MIG jobs while migsched "
                  "publishes 0; a job may span at most this many nodes (default: one per node)")
      ->check(WholeNumber(0, 100000));
  cmd->add_option("--placeholder-prefix", f->options.placeholder_prefix,
                  "Name prefix of the placeholders")
      ->capture_default_str();
  cmd->add_option("--node-attrs", f->options.node_attrs,
                  "Appended to every NodeName line, e.g. \"CPUs=64 RealMemory=512000\"");
  cmd->add_option("--hooks-dir", f->options.hooks_dir,
                  "Where PrologSlurmctld, EpilogSlurmctld and TaskProlog scripts live")
      ->capture_default_str();
  cmd->add_option("--skip-profiles", f->options.skip_profiles,
                  "Profiles to leave out (e.g. one of two whose Slurm GRES type ids collide)")
      ->delimiter(',');
  cmd->add_option("--only", f->only, "Print only slurm.conf or only gres.conf lines")
      ->check(CLI::IsMember({"slurm.conf", "gres.conf"}));
  cmd->add_option("--write-hooks", f->write_hooks,
                  "Also write the three hook scripts into DIR (mode 0755)");
  cmd->add_option("--controller-config", f->controller_config,
                  "The controller's config file, named in the hook scripts")
      ->capture_default_str();
  cmd->add_option("--migsched", f->migsched_binary,
                  "The migsched binary the hook scripts run (default: this one)");
  cmd->add_option("--slurm-conf", f->slurm_conf,
                  "A slurm.conf outside Slurm's default path: the hook scripts export it as "
                  "SLURM_CONF (slurmctld runs its hooks without it)");
  cmd->callback([f, &ctx, exit_code, cmd] {
    std::string line = "migsched slurm config";
    for (size_t i = 0; i < f->nodes.size(); ++i) line += " --nodes " + f->nodes[i];
    for (const std::string& g : f->gpus) line += " --gpus " + g;
    (void)cmd;
    *exit_code = RunConfig(*f, line, ctx);
  });
}

// ---- controller and hooks ----

std::atomic<int> g_stop{0};
void OnSignal(int sig) { g_stop = sig; }

std::string DefaultConfigPath() {
  const char* env = std::getenv("MIGSCHED_SLURM_CONFIG");
  return env != nullptr && *env != '\0' ? env : "/etc/migsched/slurm.yaml";
}

std::string Getenv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  return v == nullptr ? "" : v;
}

// Logs to stderr, and to `file` when given.
Status SetUpLogging(const std::string& file, const std::string& level) {
  std::vector<spdlog::sink_ptr> sinks = {std::make_shared<spdlog::sinks::stderr_color_sink_mt>()};
  if (!file.empty()) {
    try {
      sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(file));
    } catch (const spdlog::spdlog_ex& e) {
      return InvalidArgumentError(fmt::format("controller.log_file {}: {}", file, e.what()));
    }
  }
  auto logger = std::make_shared<spdlog::logger>("migsched", sinks.begin(), sinks.end());
  const spdlog::level::level_enum l = spdlog::level::from_str(level);
  if (l == spdlog::level::off && level != "off") {
    return InvalidArgumentError(fmt::format(
        "log level '{}': expected trace, debug, info, warn, error, critical or off", level));
  }
  logger->set_level(l);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return Status::Ok();
}

struct ControllerFlags {
  std::string config = DefaultConfigPath();
  bool once = false;
};

int RunController(const ControllerFlags& f, Context& ctx) {
  auto fail = [&](const Status& s) {
    *ctx.err << "migsched slurm controller: " << s.message() << "\n";
    return 1;
  };
  auto config = slurm::LoadControllerConfig(f.config);
  if (!config.ok()) return fail(config.status());
  if (Status st = SetUpLogging(config->log_file, config->log_level); !st.ok()) return fail(st);
  auto catalog = ctx.catalog();
  if (!catalog.ok()) return fail(catalog.status());
  const HttpNodeDaemonsConfig endpoints = slurm::NodeDaemonsOf(*config);
  // A token read again at every call is not refused at start (a node may get its file later),
  // but a file missing now is said now, before any tick's error about Slurm can hide it.
  for (const NodeDaemonEndpoint& ep : endpoints.nodes) {
    if (auto token = NodeDaemonToken(ep, endpoints.origin); !token.ok()) {
      spdlog::warn("{}: the node is not usable until its token can be read",
                   token.status().message());
    }
  }
  auto nodes = NewHttpNodeDaemons(endpoints);
  if (!nodes.ok()) return fail(nodes.status());
  std::unique_ptr<slurm::CommandRunner> runner = slurm::NewSubprocessRunner(config->bin_dir);
  slurm::SlurmClient client(runner.get(), config->command_timeout_s);
  auto controller = slurm::SlurmController::Create(*config, &client, nodes->get(), *catalog);
  if (!controller.ok()) return fail(controller.status());
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  KeepRunningOnHangup();
  spdlog::info("controller for partition {} of {} nodes, policy {}, tick {} ms", config->partition,
               config->nodes.size(), config->policy, config->tick_ms);
  // GET /healthz, /metrics, /v1/status. Not being able to listen costs the
  // status, never the controller: logged, and it runs on without.
  slurm::StatusServer status_server([c = controller->get()] { return c->Snapshot(); });
  if (!config->listen.empty()) {
    const size_t colon = config->listen.rfind(':');
    auto port = status_server.Start(config->listen.substr(0, colon),
                                    std::stoi(config->listen.substr(colon + 1)));
    if (port.ok()) {
      spdlog::info("status on http://{}:{} (/healthz, /metrics, /v1/status)",
                   config->listen.substr(0, colon), *port);
    } else {
      spdlog::error("controller.listen: {}; running without /healthz, /metrics, /v1/status",
                    port.status().message());
    }
  }
  std::string last_error;
  while (g_stop == 0) {
    const auto t0 = std::chrono::steady_clock::now();
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    auto rep = (*controller)->Tick(now);
    if (!rep.ok()) {
      // Slurm unreachable or a command failed: nothing changed; say it once.
      if (rep.status().message() != last_error) spdlog::error("tick: {}", rep.status().message());
      last_error = rep.status().message();
      (*controller)->RecordTickError(now, last_error);
    } else {
      last_error.clear();
    }
    if (f.once) return rep.ok() ? 0 : 1;
    const auto next = t0 + std::chrono::milliseconds(config->tick_ms);
    while (g_stop == 0 && std::chrono::steady_clock::now() < next) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    LogHangups();
  }
  spdlog::info("stopping (signal {})", g_stop.load());
  (*controller)
      ->SayStopped(
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
              .count());
  return 0;
}

void RegisterController(CLI::App* slurm, Context& ctx, int* exit_code) {
  auto f = std::make_shared<ControllerFlags>();
  CLI::App* cmd = slurm->add_subcommand(
      "controller",
      "Run the cluster controller beside slurmctld: plan every MIG placement of the partition, "
      "reserve rooms on the node daemons, publish GRES counts, keep the gate (docs/slurm.md)");
  cmd->add_option("--config", f->config,
                  "Controller config (YAML); default $MIGSCHED_SLURM_CONFIG or "
                  "/etc/migsched/slurm.yaml")
      ->capture_default_str();
  cmd->add_flag("--once", f->once, "Run one tick and exit (1 if it failed)");
  cmd->callback([f, &ctx, exit_code] { *exit_code = RunController(*f, ctx); });
}

struct StatusFlags {
  std::string config = DefaultConfigPath();
  std::string url;
  bool json = false;
};

// `migsched slurm status`: the controller's /v1/status as a table or JSON.
// 0 when the controller answers and is healthy; 1 otherwise (it says why).
int RunStatus(const StatusFlags& f, Context& ctx) {
  std::string url = f.url;
  if (url.empty()) {
    auto config = slurm::LoadControllerConfig(f.config);
    if (!config.ok()) {
      *ctx.err << "migsched slurm status: " << config.status().message() << "\n";
      return 1;
    }
    if (config->listen.empty()) {
      *ctx.err << "migsched slurm status: " << f.config
               << " sets no controller.listen: the controller serves no status (docs/slurm.md)\n";
      return 1;
    }
    std::string host = config->listen.substr(0, config->listen.rfind(':'));
    if (host == "0.0.0.0" || host == "::" || host == "[::]") host = "127.0.0.1";
    url = "http://" + host + config->listen.substr(config->listen.rfind(':'));
  }
  // The URL names the controller, not a page of it: a trailing "/" or "/v1/status" (what a browser
  // shows) is dropped, where httplib took it for a host it could not reach.
  for (const std::string_view tail : {"/v1/status", "/"}) {
    if (url.size() > tail.size() && url.ends_with(tail)) url.resize(url.size() - tail.size());
  }
  httplib::Client client(url);
  client.set_connection_timeout(5);
  client.set_read_timeout(10);
  auto res = client.Get("/v1/status");
  if (!res) {
    *ctx.err << fmt::format(
        "migsched slurm status: the controller is not running or not reachable at {} ({}); "
        "waiting MIG jobs do not start until it runs\n",
        url, httplib::to_string(res.error()));
    return 1;
  }
  if (res->status != 200) {
    *ctx.err << fmt::format("migsched slurm status: {}/v1/status answered {}: {}\n", url,
                            res->status, res->body);
    return 1;
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(res->body);
  } catch (const nlohmann::json::exception& e) {
    *ctx.err << "migsched slurm status: " << url << "/v1/status: not JSON: " << e.what() << "\n";
    return 1;
  }
  if (f.json) {
    *ctx.out << doc.dump(2) << "\n";
  } else {
    auto table = slurm::FormatStatusTable(doc);
    if (!table.ok()) {
      *ctx.err << "migsched slurm status: " << table.status().message() << "\n";
      return 1;
    }
    *ctx.out << *table;
  }
  const bool healthy = doc.contains("controller") && doc["controller"].value("healthy", false);
  return healthy ? 0 : 1;
}

void RegisterStatus(CLI::App* slurm, Context& ctx, int* exit_code) {
  auto f = std::make_shared<StatusFlags>();
  CLI::App* cmd = slurm->add_subcommand(
      "status",
      "The controller's view: health, nodes with their GPUs' layouts, rooms, waiting jobs and "
      "why they wait (GET /v1/status of controller.listen; docs/slurm.md)");
  cmd->add_option("--config", f->config,
                  "Controller config (YAML), for controller.listen; default "
                  "$MIGSCHED_SLURM_CONFIG or /etc/migsched/slurm.yaml")
      ->capture_default_str();
  cmd->add_option("--url", f->url, "The controller's status URL, e.g. http://127.0.0.1:7071");
  cmd->add_flag("--json", f->json, "The status document as JSON");
  cmd->callback([f, &ctx, exit_code] { *exit_code = RunStatus(*f, ctx); });
}

// Appends `text`'s lines to `path` (if set), each with the time: the hooks
// run as separate processes, so each line is one append (O_APPEND).
void AppendToLog(const std::string& path, const std::string& text) {
  if (path.empty() || text.empty()) return;
  std::ofstream f(path, std::ios::app);
  const std::string stamp =
      fmt::format("[{:%Y-%m-%d %H:%M:%S}] [hook] ", fmt::localtime(std::time(nullptr)));
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const std::string one = stamp + line + "\n";
    f.write(one.data(), static_cast<std::streamsize>(one.size()));
    f.flush();
  }
}

void RegisterHooks(CLI::App* slurm, Context& ctx, int* exit_code) {
  auto config_path = std::make_shared<std::string>(DefaultConfigPath());
  auto with_config = [&ctx, config_path](const char* name, auto run) -> std::function<int()> {
    return [&ctx, config_path, name, run]() {
      auto config = slurm::LoadControllerConfig(*config_path);
      if (!config.ok()) {
        *ctx.err << "migsched slurm " << name << ": " << config.status().message() << "\n";
        return 1;
      }
      auto nodes = NewHttpNodeDaemons(slurm::NodeDaemonsOf(*config));
      if (!nodes.ok()) {
        *ctx.err << "migsched slurm " << name << ": " << nodes.status().message() << "\n";
        return 1;
      }
      std::unique_ptr<slurm::CommandRunner> runner = slurm::NewSubprocessRunner(config->bin_dir);
      slurm::SlurmClient client(runner.get(), config->command_timeout_s);
      // Slurm throws a hook's output away: its messages also go to the
      // controller's log file, where an administrator looks.
      std::ostringstream said;
      const int rc = run(*config, &client, nodes->get(), said);
      *ctx.err << said.str();
      AppendToLog(config->log_file, said.str());
      return rc;
    };
  };
  CLI::App* prolog = slurm->add_subcommand(
      "prolog", "PrologSlurmctld: create the job's MIG instances on its nodes (docs/slurm.md)");
  prolog->add_option("--config", *config_path, "Controller config (YAML)")->capture_default_str();
  auto run_prolog = with_config(
      "prolog", [](const slurm::ControllerConfig& c, slurm::SlurmClient* s, NodeDaemons* n,
                   std::ostream& err) { return slurm::RunProlog(c, s, n, Getenv, err); });
  prolog->callback([run_prolog, exit_code] { *exit_code = run_prolog(); });
  CLI::App* epilog = slurm->add_subcommand(
      "epilog", "EpilogSlurmctld: release the job's MIG instances (docs/slurm.md)");
  epilog->add_option("--config", *config_path, "Controller config (YAML)")->capture_default_str();
  auto run_epilog = with_config(
      "epilog", [](const slurm::ControllerConfig& c, slurm::SlurmClient* s, NodeDaemons* n,
                   std::ostream& err) { return slurm::RunEpilog(c, s, n, Getenv, err); });
  epilog->callback([run_epilog, exit_code] { *exit_code = run_epilog(); });

  auto gres = std::make_shared<std::string>("mig");
  CLI::App* task = slurm->add_subcommand(
      "task-prolog",
      "TaskProlog: print export CUDA_VISIBLE_DEVICES=MIG-... for the job's instances on this node");
  task->add_option("--gres-name", *gres, "The GRES name of the MIG profiles")
      ->capture_default_str();
  task->callback([gres, &ctx, exit_code] {
    std::unique_ptr<slurm::CommandRunner> runner = slurm::NewSubprocessRunner();
    slurm::SlurmClient client(runner.get(), 30);
    *exit_code = slurm::RunTaskProlog(*gres, &client, Getenv, *ctx.out, *ctx.err);
  });
}

}  // namespace

void RegisterSlurmCommand(CLI::App& app, Context& ctx, int* exit_code) {
  CLI::App* slurm =
      app.add_subcommand("slurm",
                         "Slurm integration: config lines, the cluster controller and its hooks "
                         "(docs/slurm.md)");
  slurm->require_subcommand(1);
  RegisterConfig(slurm, ctx, exit_code);
  RegisterController(slurm, ctx, exit_code);
  RegisterStatus(slurm, ctx, exit_code);
  RegisterHooks(slurm, ctx, exit_code);
}

}  // namespace migsched::cli
