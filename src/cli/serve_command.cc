// `migsched serve --config FILE.yaml`: the daemon (docs/api.md).
// `migsched serve --print-default-config` prints a commented example config.
//
// Start-up: config → state dir (created 0700 if missing, refused when group
// or others may access it) → token (config
// `token`, or `token_file`, default <state_dir>/token, created 0600) →
// backend (fake: the cluster spec of `gpus`, instances persisted in
// <state_dir>/fake-backend.json so that they survive a crash like real ones;
// nvml: `nvml_library` loaded with dlopen) → Daemon (discovery, recovery) →
// HTTP server. Prints "migsched: listening on http://HOST:PORT" on stdout
// (the real port when `listen` asks for port 0) once the API accepts
// connections. SIGTERM or SIGINT: stop accepting, then Daemon::Stop
// (on_shutdown: leave | drain), exit 0. SIGHUP: logged, runs on (cli/hangup.h). Logs go to
// stderr (spdlog).
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <memory>
#include <ostream>
#include <thread>

#include "cli/commands.h"
#include "cli/hangup.h"
#include "cli/sim_flags.h"
#include "core/clock.h"
#include "core/cluster.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/fake_backend.h"
#include "daemon/http_server.h"
#include "daemon/nvml_backend.h"
#include "daemon/state_dir.h"
#include "nodeapi/token.h"

namespace migsched::cli {
namespace {

struct ServeOptions {
  std::string config;
  bool print_default = false;
  std::string policy = std::string(kDefaultPolicy);  // --print-default-config for this policy
  std::string log_level = "info";
  bool fresh_store = false;
};

// Self-pipe: the signal handler writes one byte, a watcher thread stops the server.
int g_signal_pipe[2] = {-1, -1};
std::atomic<int> g_signal{0};

extern "C" void OnStopSignal(int sig) {
  g_signal = sig;
  const int saved = errno;
  const char b = 1;
  [[maybe_unused]] const ssize_t n = ::write(g_signal_pipe[1], &b, 1);
  errno = saved;
}
extern "C" void OnSigpipe(int) {}

// Handlers (not SIG_IGN): caught signals are reset to the default at execve,
// so the jobs the daemon starts see the usual SIGTERM/SIGINT/SIGPIPE behaviour.
Status InstallSignalHandlers() {
  if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    return UnavailableError(fmt::format("pipe2: {}", std::strerror(errno)));
  }
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  struct sigaction sp {};
  sp.sa_handler = OnSigpipe;
  sigemptyset(&sp.sa_mask);
  ::sigaction(SIGPIPE, &sp, nullptr);
  KeepRunningOnHangup();
  return Status();
}

StatusOr<std::string> ResolveToken(const DaemonConfig& c) {
  if (!c.token.empty()) return c.token;
  const std::string path =
      c.token_file.empty() ? (std::filesystem::path(c.state_dir) / "token").string() : c.token_file;
  auto t = LoadOrCreateTokenFile(path);
  if (t.ok()) spdlog::info("API token in {}", path);
  return t;
}

StatusOr<std::unique_ptr<MigBackend>> MakeBackend(const DaemonConfig& c, const Catalog& catalog) {
  if (c.backend == "fake") {
    auto models = ParseClusterSpec(c.fake_gpus, catalog);
    if (!models.ok()) {
      return models.status().WithPrefix(c.Where("gpus") + ": config key gpus (fake backend)");
    }
    const std::string state = (std::filesystem::path(c.state_dir) / "fake-backend.json").string();
    ASSIGN_OR_RETURN(std::unique_ptr<FakeBackend> b, FakeBackend::Open(*models, c.fake, state));
    return std::unique_ptr<MigBackend>(std::move(b));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<NvmlBackend> b, NvmlBackend::Open(c.nvml_library));
  return std::unique_ptr<MigBackend>(std::move(b));
}

int Serve(const ServeOptions& o, Context& ctx) {
  auto fail = [&ctx](const Status& st) {
    *ctx.err << "error: " << st.message() << "\n";
    return 1;
  };
  auto level = spdlog::level::from_str(o.log_level);
  if (level == spdlog::level::off && o.log_level != "off") {
    return fail(InvalidArgumentError(fmt::format(
        "--log-level must be trace, debug, info, warn, error or off, got '{}'", o.log_level)));
  }
  auto logger = spdlog::get("migsched");
  if (!logger) logger = spdlog::stderr_color_mt("migsched");
  spdlog::set_default_logger(logger);
  spdlog::set_level(level);

  auto config = LoadDaemonConfig(o.config);
  if (!config.ok()) return fail(config.status());
  for (const std::string& note :
       InertConfigNotes(config->scheduler, config->explicit_options, config->policy)) {
    spdlog::warn("{}: {}", o.config, note);
  }
  config->fresh_store = o.fresh_store;
  // A start refused before the daemon serves leaves no state dir behind that this start made
  // (its token, its store): the operator fixes the config and starts again from nothing.
  std::error_code exists_ec;
  const bool new_state_dir = !config->state_dir.empty() &&
                             !std::filesystem::exists(config->state_dir, exists_ec) && !exists_ec;
  // The work_dir too (the daemon claims it at start, StateDir::ClaimWorkDir), when this start
  // made it: empty then, but for the claim.
  const bool new_work_dir = !config->state_dir.empty() &&
                            !std::filesystem::exists(config->WorkDir(), exists_ec) && !exists_ec;
  auto refuse = [&](const Status& st) {
    std::error_code ec;
    if (new_state_dir) std::filesystem::remove_all(config->state_dir, ec);
    if (new_work_dir) std::filesystem::remove_all(config->WorkDir(), ec);
    return fail(st);
  };
  // The state dir is checked (created 0700 or refused when others may read
  // it) before anything is written into it, the token file included.
  if (Status st = StateDir::Open(config->state_dir).status(); !st.ok()) return refuse(st);
  auto token = ResolveToken(*config);
  if (!token.ok()) return refuse(token.status());
  auto catalog = ctx.catalog();
  if (!catalog.ok()) return refuse(catalog.status());
  auto backend = MakeBackend(*config, **catalog);
  if (!backend.ok()) return refuse(backend.status());
  auto daemon = Daemon::Create(*config, std::move(*backend), *catalog);
  if (!daemon.ok()) return refuse(daemon.status());

  HttpServerOptions so;
  so.token = *token;
  so.max_body_bytes = config->max_body_bytes;
  so.max_connections = config->max_connections;
  so.idle_timeout_s = config->idle_timeout_s;
  so.request_timeout_s = config->request_timeout_s;
  so.header_timeout_s = config->header_timeout_s;
  so.body_timeout_s = config->body_timeout_s;
  so.max_connections_per_peer = config->max_connections_per_peer;
  so.max_unauthenticated_connections = config->max_unauthenticated_connections;
  so.clock = SteadyClock();
  auto server_owner = std::make_unique<HttpServer>(daemon->get(), so);
  HttpServer& server = *server_owner;
  // Refused after the daemon was made: the server, then the daemon (its store, its lock) go
  // before the state dir does.
  auto refuse_made = [&](const Status& st) {
    server_owner.reset();
    daemon->reset();  // stops it (Daemon::~Daemon), as a refusal always did
    return refuse(st);
  };
  if (Status st = server.Bind(config->listen); !st.ok()) return refuse_made(st);
  if (Status st = InstallSignalHandlers(); !st.ok()) return refuse_made(st);

  (*daemon)->StartWorker();
  const std::string host = config->listen.substr(0, config->listen.rfind(':'));
  if (!IsLoopbackHost(host)) {
    spdlog::warn(
        "listening on {} (not loopback): the API is plain HTTP, so the bearer token and every "
        "request cross the network in clear; put a TLS proxy in front, or listen on 127.0.0.1",
        config->listen);
  }
  *ctx.out << fmt::format("migsched: listening on http://{}:{}\n", host, server.port());
  ctx.out->flush();
  spdlog::info("serving the API on {}:{} (backend {}, state {})", host, server.port(),
               config->backend, config->state_dir);

  std::atomic<bool> done{false};
  std::thread watcher([&server, &done] {
    while (!done) {
      LogHangups();
      pollfd p{g_signal_pipe[0], POLLIN, 0};
      if (::poll(&p, 1, 200) > 0) {
        char buf[16];
        while (::read(g_signal_pipe[0], buf, sizeof buf) > 0) {
        }
        spdlog::info("signal {}: stopping (no new requests)", g_signal.load());
        server.Stop();
        return;
      }
    }
  });
  const Status served = server.Serve();
  done = true;
  watcher.join();
  server.Stop();
  spdlog::info("stopping the daemon (on_shutdown: {})", config->on_shutdown);
  (*daemon)->Stop();
  daemon->reset();
  ::close(g_signal_pipe[0]);
  ::close(g_signal_pipe[1]);
  if (!served.ok()) return fail(served);
  spdlog::info("stopped");
  return 0;
}

}  // namespace

void RegisterServeCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto opts = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Run the daemon: place and run real jobs on this node's MIG instances (HTTP API, "
      "docs/api.md)");
  CLI::Option* config =
      cmd->add_option("--config", opts->config, "YAML config file (see --print-default-config)");
  CLI::Option* print_default =
      cmd->add_flag("--print-default-config", opts->print_default,
                    "Print a commented example config and exit (the scheduler section with the "
                    "defaults of --policy)");
  cmd->add_option("--policy", opts->policy,
                  "With --print-default-config: the policy whose options to print (its registry "
                  "defaults, as `migsched simulate --policy` runs it)")
      ->capture_default_str()
      // Otherwise ignored (a daemon's policy is its config's): refused, as ignored flags are.
      ->needs(print_default);
  print_default->excludes(config);
  cmd->add_flag("--fresh-store", opts->fresh_store,
                "Start a new job store in a state dir whose store is missing, empty, damaged or "
                "of another generation (refused otherwise); the old store files are kept aside, "
                "job ids continue above the old ones (docs/daemon.md: durability)");
  cmd->add_option("--log-level", opts->log_level, "trace, debug, info, warn, error or off")
      ->capture_default_str();
  cmd->callback([opts, &ctx, exit_code] {
    if (opts->print_default) {
      StatusOr<std::string> text = DefaultDaemonConfigYaml(opts->policy);
      if (!text.ok()) {
        *ctx.err << "error: --policy: " << text.status().message() << "\n";
        *exit_code = 2;
        return;
      }
      *ctx.out << *text;
      *exit_code = 0;
      return;
    }
    if (opts->config.empty()) {
      *ctx.err << "error: serve needs --config FILE.yaml (or --print-default-config)\n";
      *exit_code = 2;
      return;
    }
    *exit_code = Serve(*opts, ctx);
  });
}

}  // namespace migsched::cli
