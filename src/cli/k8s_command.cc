// `migsched k8s ...`: the Kubernetes integration (docs/kubernetes.md).
//
//   migsched k8s scheduler-config [--default-profile] [--url URL] [--gpu NAME]...
//       prints the KubeSchedulerConfiguration that calls the extender
//   migsched k8s extender --config FILE
//       the scheduler extender (filter, prioritize, bind) over every node
//       daemon, and the reclaim loop; prints "extender listening on
//       http://HOST:PORT" once it serves
//   migsched k8s node-agent --config FILE
//       the kubelet device plugin of one node over its node daemon; prints
//       "node agent of NODE: ..." once every resource is registered
// Both run until SIGTERM or SIGINT.
#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/hangup.h"
#include "cli/sim_flags.h"
#include "k8s/api/credentials.h"
#include "k8s/api/kube_client.h"
#include "k8s/api/leader_election.h"
#include "k8s/config.h"
#include "k8s/deploy/scheduler_config.h"
#include "k8s/device_plugin/device_plugin.h"
#include "k8s/engine/cluster_engine.h"
#include "k8s/engine/migrator.h"
#include "k8s/engine/node_daemons_http.h"
#include "k8s/engine/node_directory.h"
#include "k8s/engine/reclaimer.h"
#include "k8s/extender/extender.h"
#include "k8s/extender/extender_server.h"
#include "k8s/migration/evictor.h"
#include "k8s/node_agent/node_agent.h"
#include "k8s/probe_listener.h"
#include "nodeapi/guarded_server.h"
#include "nodeapi/token.h"

namespace migsched::cli {
namespace {

std::atomic<int> g_k8s_stop{0};
extern "C" void OnK8sStop(int sig) { g_k8s_stop = sig; }

// Sleeps up to `seconds`, in steps, returning early (true) once a stop signal came.
bool SleepUnlessStopped(double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (g_k8s_stop == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    LogHangups();
  }
  return g_k8s_stop != 0;
}

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The replica's name in the Lease: the config's, else $POD_NAME, else the host name.
std::string LeaseIdentity(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0') return pod;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0 && host[0] != '\0') return host;
  return "migsched-extender-" + std::to_string(::getpid());
}

// The election loop of one replica (a thread): a round every retry_s until a
// stop signal, then the lease is given up.
void RunElection(k8s::LeaderElector* elector) {
  bool was_leader = false;
  std::string last_error;
  do {
    const double now = SteadySeconds();
    auto round = elector->TryAcquireOrRenew(now);
    const std::string error = round.ok() ? "" : round.status().message();
    if (!error.empty() && error != last_error) spdlog::warn("leader election: {}", error);
    last_error = error;
    const bool leader = elector->IsLeader(now);
    if (leader != was_leader) {
      if (leader) {
        spdlog::info("leading (lease {}/{}, identity {})", elector->options().lease_namespace,
                     elector->options().lease_name, elector->options().identity);
      } else {
        spdlog::warn("{}", elector->NotLeaderReason(now));
      }
    }
    was_leader = leader;
  } while (!SleepUnlessStopped(elector->options().retry_s));
  if (Status st = elector->Release(); !st.ok()) {
    spdlog::warn("leader election: giving the lease up: {}", st.message());
  }
}

Status SetLogLevel(const std::string& level) {
  const auto l = spdlog::level::from_str(level);
  if (l == spdlog::level::off && level != "off") {
    return InvalidArgumentError("--log-level: unknown level '" + level +
                                "' (trace, debug, info, warn, error, critical, off)");
  }
  spdlog::set_level(l);
  return Status::Ok();
}

// The flags of the two long-running commands.
struct RunFlags {
  std::string config;
  std::string log_level = "info";
};

void AddRunFlags(CLI::App* cmd, RunFlags* f, const std::string& what) {
  cmd->add_option("--config", f->config, what + " config (YAML)")->required();
  cmd->add_option("--log-level", f->log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
}

// The node daemon's default reservation_max_ttl_s (docs/daemon.md).
constexpr double kDaemonDefaultMaxTtlS = 600;

// A token file that others may read is refused at start (the clients' rule, nodeapi/token.h;
// regression: world_readable_token_file_accepted). One that does not exist yet (a Secret not
// mounted yet) is left to the calls, which read it again.
Status CheckTokenFileMode(const std::string& token, const std::string& token_file) {
  if (!token.empty() || token_file.empty()) return Status::Ok();
  struct stat st {};
  if (::stat(token_file.c_str(), &st) != 0) return Status::Ok();
  if (Status mode = CheckClientTokenMode(token_file, st.st_mode); !mode.ok()) {
    return FailedPreconditionError("token_file: " + mode.message());
  }
  return Status::Ok();
}

int RunExtender(const RunFlags& f, Context& ctx) {
  auto fail = [&](const Status& st) {
    *ctx.err << "migsched k8s extender: " << st.message() << "\n";
    return 1;
  };
  if (Status st = SetLogLevel(f.log_level); !st.ok()) return fail(st);
  auto cfg = k8s::LoadExtenderConfig(f.config);
  if (!cfg.ok()) return fail(cfg.status());
  auto policy = k8s::PolicyOf(*cfg, f.config);
  if (!policy.ok()) return fail(policy.status());
  auto catalog = ctx.catalog();
  if (!catalog.ok()) return fail(catalog.status());
  auto creds = cfg->kubeconfig.empty()
                   ? k8s::InClusterCredentials(k8s::KubernetesEnv())
                   : k8s::KubeconfigCredentials(cfg->kubeconfig, cfg->kube_context);
  if (!creds.ok()) return fail(creds.status());
  k8s::KubeClient api(*creds);

  if (Status st = CheckTokenFileMode(cfg->token, cfg->token_file); !st.ok()) return fail(st);
  // Short: a daemon that does not answer costs a call at most daemon_timeout_s (regression:
  // one_hung_daemon_slows_every_filter).
  k8s::HttpNodeDaemons daemons(f.config, cfg->token, cfg->token_file, cfg->daemon_timeout_s);
  std::unique_ptr<k8s::NodeDirectory> listed;
  if (cfg->discovers()) {
    listed = std::make_unique<k8s::PodNodeDirectory>(&api, cfg->agents_namespace,
                                                     cfg->agents_label_selector, cfg->agents_port);
  } else {
    listed = std::make_unique<k8s::StaticNodeDirectory>(cfg->nodes);
  }
  k8s::UpdatingDirectory directory(listed.get(), &daemons);

  k8s::EngineOptions o;
  o.policy = policy->policy;
  o.scheduler = policy->scheduler;
  o.reservation_ttl_s = cfg->reservation_ttl_s;
  o.refresh_s = cfg->refresh_s;
  o.bind_wait_s = cfg->bind_wait_s;
  o.node_wait_s = cfg->daemon_timeout_s;
  auto engine = k8s::ClusterEngine::Create(&daemons, &directory, *catalog, o);
  if (!engine.ok()) return fail(engine.status());
  k8s::Extender extender(engine->get(), &api);
  k8s::ExtenderServerOptions so;
  so.cert_file = cfg->tls_cert_file;
  so.key_file = cfg->tls_key_file;
  so.client_ca_file = cfg->tls_client_ca_file;
  so.max_body_bytes = static_cast<size_t>(cfg->max_body_bytes);
  k8s::ExtenderServer server(
      &extender, [e = engine->get()] { return e->NotReady(); }, so);
  std::unique_ptr<k8s::LeaderElector> elector;
  if (cfg->leader_elect) {
    k8s::LeaseOptions lo;
    lo.lease_namespace = cfg->lease_namespace;
    lo.lease_name = cfg->lease_name;
    lo.identity = LeaseIdentity(cfg->lease_identity);
    lo.lease_duration_s = cfg->lease_duration_s;
    lo.renew_deadline_s = cfg->renew_deadline_s;
    lo.retry_s = cfg->retry_s;
    elector = std::make_unique<k8s::LeaderElector>(&api, lo);
    server.set_bind_gate([e = elector.get()] { return e->NotLeaderReason(SteadySeconds()); });
  }
  const size_t colon = cfg->listen.rfind(':');
  const std::string host = cfg->listen.substr(0, colon);
  auto port = server.Start(host, std::stoi(cfg->listen.substr(colon + 1)));
  if (!port.ok()) return fail(port.status());
  std::string probes;
  if (!cfg->probe_listen.empty()) {
    const size_t pc = cfg->probe_listen.rfind(':');
    const std::string phost = cfg->probe_listen.substr(0, pc);
    auto pport = server.StartProbes(phost, std::stoi(cfg->probe_listen.substr(pc + 1)));
    if (!pport.ok()) return fail(pport.status());
    probes = "; probes on http://" + phost + ":" + std::to_string(*pport);
  }
  std::signal(SIGTERM, OnK8sStop);
  std::signal(SIGINT, OnK8sStop);
  KeepRunningOnHangup();
  // The node API does not tell a daemon's reservation_max_ttl_s: a TTL over its default is said
  // at start (regression: ttl_over_daemon_max_accepted_silently: /readyz was 200 and every
  // bind failed with the daemon's "ttl_s must be at most 600").
  if (cfg->reservation_ttl_s > kDaemonDefaultMaxTtlS) {
    spdlog::warn(
        "reservation_ttl_s {} is over {} s, the node daemons' default reservation_max_ttl_s: a "
        "daemon with that default refuses every bind (\"field 'ttl_s' must be at most {}\"); "
        "lower reservation_ttl_s, or raise reservation_max_ttl_s on every node daemon",
        cfg->reservation_ttl_s, kDaemonDefaultMaxTtlS, kDaemonDefaultMaxTtlS);
  }
  spdlog::info("policy {}, {} node daemons {}", o.policy,
               cfg->discovers() ? "discovered by label" : "listed:",
               cfg->discovers() ? cfg->agents_label_selector : std::to_string(cfg->nodes.size()));
  if (!so.tls()) {
    spdlog::warn(
        "no tls: anything that reaches {} can call filter, prioritize and bind (docs/kubernetes.md "
        "\"Authentication\")",
        cfg->listen);
  }
  std::thread election;
  if (elector) election = std::thread(RunElection, elector.get());
  *ctx.out << "extender listening on " << (so.tls() ? "https" : "http") << "://" << host << ":"
           << *port << probes << std::endl;

  k8s::Reclaimer reclaimer(&api, &daemons, &directory);
  k8s::Evictor evictor(&api);
  // A pod waits migrate_after_s, and the §13 evacuation-min-wait, before room is opened for it
  // (the evictions are the extender's evacuation, docs/kubernetes.md).
  k8s::Migrator migrator(engine->get(), &api, &evictor,
                         std::max(cfg->migrate_after_s, policy->scheduler.evacuation_min_wait_s));
  std::string last_error, last_migration_error;
  while (!SleepUnlessStopped(cfg->reclaim_interval_s)) {
    // One writer: only the leader reclaims and evicts.
    if (elector && !elector->IsLeader(SteadySeconds())) continue;
    auto round = reclaimer.RunOnce();
    const std::string error = round.ok() ? "" : round.status().message();
    if (!error.empty() && error != last_error) spdlog::warn("reclaim: {}", error);
    last_error = error;
    if (round.ok()) {
      for (const auto& e : round->errors) spdlog::warn("reclaim: {}", e);
      if (!round->released.empty()) (*engine)->Invalidate();
    }
    if (!cfg->migration) continue;
    auto moves = migrator.RunOnce(SteadySeconds());
    const std::string merror = moves.ok() ? "" : moves.status().message();
    if (!merror.empty() && merror != last_migration_error) spdlog::warn("migration: {}", merror);
    last_migration_error = merror;
    if (moves.ok()) {
      for (const auto& w : moves->waiting) spdlog::debug("migration: {}", w);
    }
  }
  spdlog::info("stopping (signal {})", g_k8s_stop.load());
  server.Stop();
  if (election.joinable()) election.join();  // gives the lease up
  return 0;
}

// The node agent's probe listener (plain HTTP): /healthz while the process
// serves, /readyz 200 when `why_not_ready` is "" (else 503 with it).
class ProbeServer {
 public:
  ~ProbeServer() { Stop(); }
  // A GuardedServer (k8s/probe_listener.h): slow clients are cut at the head deadline and cannot
  // hold every thread (regression: slow_clients_starve_extender, the node agent's too).
  StatusOr<int> Start(const std::string& listen) {
    server_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"status":"ok"})", "application/json");
    });
    server_.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
      const std::string why = NotReady();
      res.status = why.empty() ? 200 : 503;
      res.set_content(nlohmann::json{{"ready", why.empty()}, {"reason", why}}.dump(),
                      "application/json");
    });
    k8s::AnswerErrorsAsJson(server_,
                            "the node agent's probe listener serves GET /healthz, /readyz");
    ASSIGN_OR_RETURN(int bound, k8s::BindListen(server_, listen, "probe_listen"));
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 5000 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return bound;
  }
  void Stop() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  void SetNotReady(std::string why) {
    std::lock_guard lock(mu_);
    why_ = std::move(why);
  }
  std::string NotReady() const {
    std::lock_guard lock(mu_);
    return why_;
  }

 private:
  GuardedServer server_{k8s::ProbeListenerLimits("the node agent's probe listener"),
                        k8s::K8sErrorBody};
  std::thread thread_;
  mutable std::mutex mu_;  // guards why_
  std::string why_ = "starting";
};

int RunNodeAgent(const RunFlags& f, Context& ctx) {
  auto fail = [&](const Status& st) {
    *ctx.err << "migsched k8s node-agent: " << st.message() << "\n";
    return 1;
  };
  if (Status st = SetLogLevel(f.log_level); !st.ok()) return fail(st);
  auto cfg = k8s::LoadNodeAgentConfig(f.config);
  if (!cfg.ok()) return fail(cfg.status());
  auto catalog = ctx.catalog();
  if (!catalog.ok()) return fail(catalog.status());
  std::string node = cfg->node_name;
  if (node.empty()) {
    if (const char* env = std::getenv("NODE_NAME"); env != nullptr) node = env;
  }
  if (node.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) == 0) node = host;
  }
  if (Status st = CheckTokenFileMode(cfg->token, cfg->token_file); !st.ok()) return fail(st);
  k8s::HttpNodeDaemons daemon(f.config, cfg->token, cfg->token_file, /*timeout_s=*/30);
  if (Status st = daemon.Update({{node, cfg->daemon_url}}); !st.ok()) return fail(st);
  k8s::NodeAgent agent(&daemon, node, *catalog, *cfg);
  std::signal(SIGTERM, OnK8sStop);
  std::signal(SIGINT, OnK8sStop);
  KeepRunningOnHangup();
  ProbeServer probes;
  if (!cfg->probe_listen.empty()) {
    auto port = probes.Start(cfg->probe_listen);
    if (!port.ok()) return fail(port.status());
    spdlog::info("probes on http://{}:{}",
                 cfg->probe_listen.substr(0, cfg->probe_listen.rfind(':')), *port);
  }
  probes.SetNotReady("waiting for the node daemon at " + cfg->daemon_url);
  // The resources come from the daemon's GPUs: wait for it (it may start after us).
  StatusOr<std::vector<k8s::MigResource>> resources = agent.Resources();
  std::string last_error;
  while (!resources.ok() && resources.status().code() == StatusCode::kUnavailable) {
    if (resources.status().message() != last_error) {
      spdlog::warn("waiting for the node daemon: {}", resources.status().message());
    }
    last_error = resources.status().message();
    if (SleepUnlessStopped(cfg->health_interval_s)) return 0;
    resources = agent.Resources();
  }
  if (!resources.ok()) return fail(resources.status());
  k8s::DevicePluginManager plugins(cfg->device_plugin_dir, *resources, &agent);
  if (Status st = plugins.Start(); !st.ok()) {
    // The manager keeps retrying (a kubelet that starts later).
    spdlog::warn("registering with the kubelet: {} (retrying)", st.message());
  }
  std::string names;
  for (const auto& r : *resources) {
    names += (names.empty() ? "" : ", ") + r.resource_name() + " " + std::to_string(r.device_count);
  }
  *ctx.out << "node agent of " << node << ": " << names << " in " << cfg->device_plugin_dir
           << std::endl;
  bool healthy = true;
  // Ready once every resource is registered with the kubelet and the daemon answers.
  auto readiness = [&] {
    const auto registered = plugins.registrations();
    for (const auto& r : *resources) {
      auto it = registered.find(r.resource_name());
      if (it == registered.end() || it->second == 0) {
        return r.resource_name() + " is not registered with the kubelet yet";
      }
    }
    return healthy ? std::string() : "the node daemon at " + cfg->daemon_url + " does not answer";
  };
  probes.SetNotReady(readiness());
  while (!SleepUnlessStopped(cfg->health_interval_s)) {
    const bool now = agent.Healthy();
    if (now != healthy) {
      spdlog::warn("the node daemon {}", now ? "answers again" : "does not answer");
      plugins.SetHealthy(now);
      healthy = now;
    }
    probes.SetNotReady(readiness());
  }
  spdlog::info("stopping (signal {})", g_k8s_stop.load());
  plugins.Stop();
  return 0;
}

struct SchedulerConfigFlags {
  k8s::SchedulerConfigOptions options;
  bool default_profile = false;
  std::vector<std::string> gpus;
};

int RunSchedulerConfig(const SchedulerConfigFlags& f, Context& ctx) {
  StatusOr<const Catalog*> catalog = ctx.catalog();
  if (!catalog.ok()) {
    *ctx.err << "error: " << catalog.status().message() << "\n";
    return 1;
  }
  std::vector<const GpuModel*> models;
  if (f.gpus.empty()) models = (*catalog)->models();
  for (const auto& name : f.gpus) {
    StatusOr<const GpuModel*> m = (*catalog)->Find(name);
    if (!m.ok()) {
      *ctx.err << "error: " << m.status().message() << "\n";
      return 1;
    }
    models.push_back(*m);
  }
  k8s::SchedulerConfigOptions o = f.options;
  o.second_profile = !f.default_profile;
  *ctx.out << k8s::KubeSchedulerConfigYaml(k8s::MigResourceNames(models), o);
  return 0;
}

}  // namespace

void RegisterK8sCommand(CLI::App& app, Context& ctx, int* exit_code) {
  CLI::App* k8s = app.add_subcommand(
      "k8s",
      "Kubernetes: the scheduler extender, the node agent (kubelet device plugin) and "
      "their configuration (docs/kubernetes.md)");
  k8s->require_subcommand(1);

  auto sc = std::make_shared<SchedulerConfigFlags>();
  CLI::App* cfg = k8s->add_subcommand(
      "scheduler-config",
      "Print the KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) that calls the "
      "extender for every MIG resource of the catalog");
  cfg->add_flag("--default-profile", sc->default_profile,
                "The extender on the default profile of the cluster's kube-scheduler instead of "
                "a second profile chosen with spec.schedulerName");
  cfg->add_option("--scheduler-name", sc->options.scheduler_name,
                  "Name of the second profile (pods set spec.schedulerName to it)")
      ->capture_default_str();
  cfg->add_option("--url", sc->options.url, "The extender's URL prefix")->capture_default_str();
  cfg->add_option("--tls-dir", sc->options.tls_dir,
                  "Folder of kube-scheduler's client certificate (tls.crt, tls.key) and the CA of "
                  "the extender's (ca.crt), for the extender's tlsConfig; \"\" for none (an "
                  "http:// --url)")
      ->capture_default_str();
  cfg->add_option("--kubeconfig", sc->options.kubeconfig,
                  "clientConnection.kubeconfig (e.g. /etc/kubernetes/scheduler.conf)");
  cfg->add_option("--weight", sc->options.weight, "Weight of the extender's scores")
      ->capture_default_str()
      ->check(WholeNumber(1, std::numeric_limits<int>::max()));
  cfg->add_option("--gpu", sc->gpus,
                  "Only the profiles of this GPU model (repeatable; default: every model of the "
                  "catalog)");
  cfg->callback([sc, &ctx, exit_code] { *exit_code = RunSchedulerConfig(*sc, ctx); });

  auto ef = std::make_shared<RunFlags>();
  CLI::App* ext = k8s->add_subcommand(
      "extender",
      "Run the scheduler extender kube-scheduler calls (POST /filter, /prioritize, /bind; GET "
      "/healthz, /readyz, /metrics): every MIG placement over the GPUs of every node daemon, "
      "reserved on the node's daemon at bind; the loop that releases the instances of pods that "
      "are gone; and migration by eviction for pods that fit nowhere. Config keys: listen, "
      "kubeconfig, kube_context, node_agents {namespace, "
      "label_selector, port} or nodes [{name, url}], token_file or token, scheduler {policy, "
      "...}, reservation_ttl_s, reclaim_interval_s, refresh_s, bind_wait_s, daemon_timeout_s, "
      "migration, "
      "migrate_after_s, tls {cert_file, key_file, client_ca_file}, probe_listen, max_body_bytes, "
      "leader_election {enabled, namespace, name, identity, lease_duration_s, renew_deadline_s, "
      "retry_s} (docs/kubernetes.md, deploy/kubernetes/base/extender.yaml)");
  AddRunFlags(ext, ef.get(), "Extender");
  ext->callback([ef, &ctx, exit_code] { *exit_code = RunExtender(*ef, ctx); });

  auto af = std::make_shared<RunFlags>();
  CLI::App* agent = k8s->add_subcommand(
      "node-agent",
      "Run the kubelet device plugin of this node (deviceplugin/v1beta1): one resource "
      "nvidia.com/mig-<profile> per profile of the node daemon's GPUs; Allocate binds the pod's "
      "reservation on the daemon and gives the container NVIDIA_VISIBLE_DEVICES = "
      "CUDA_VISIBLE_DEVICES = its MIG UUID. Config keys: node_name, daemon_url, token_file or "
      "token, device_plugin_dir, device_nodes, cdi, health_interval_s, probe_listen "
      "(docs/kubernetes.md, deploy/kubernetes/base/node-agent.yaml)");
  AddRunFlags(agent, af.get(), "Node agent");
  agent->callback([af, &ctx, exit_code] { *exit_code = RunNodeAgent(*af, ctx); });
}

}  // namespace migsched::cli
