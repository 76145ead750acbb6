#include "slurm/controller_status.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <sstream>

#include "nodeapi/http_guard.h"

namespace migsched::slurm {

using nlohmann::json;

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string ControllerStatus::Unhealthy(double now_s) const {
  const double limit = std::max(10.0, 5 * tick_interval_s);
  if (last_tick_s == 0) {
    if (now_s - started_s <= limit) return "";  // starting
    return last_error.empty() ? "no tick has completed yet"
                              : "no tick has completed yet; the last: " + last_error;
  }
  if (now_s - last_tick_s <= limit) return "";
  return fmt::format("no tick has completed for {:.0f} s{}", now_s - last_tick_s,
                     last_error.empty() ? "" : "; the last: " + last_error);
}

json ToJson(const ControllerStatus& s, double now_s) {
  json nodes = json::array();
  for (const StatusNode& n : s.nodes) {
    json gpus = json::array();
    for (const StatusGpu& g : n.gpus) {
      json in = json::array();
      for (const StatusInstance& i : g.instances) {
        in.push_back(
            {{"profile", i.profile}, {"start", i.start}, {"holder", i.holder}, {"owner", i.owner}});
      }
      gpus.push_back({{"index", g.index}, {"model", g.model}, {"instances", in}});
    }
    nodes.push_back({{"name", n.name},
                     {"usable", n.usable},
                     {"error", n.error},
                     {"slurm_state", n.slurm_state},
                     {"gres", n.gres},
                     {"gpus", gpus}});
  }
  json rooms = json::array();
  for (const StatusRoom& r : s.rooms) {
    rooms.push_back({{"node", r.node},
                     {"gpu", r.gpu},
                     {"profile", r.profile},
                     {"start", r.start},
                     {"for", r.for_job}});
  }
  json waiting = json::array();
  for (const StatusWaiting& w : s.waiting) {
    waiting.push_back({{"job", w.job}, {"request", w.request}, {"reason", w.reason}});
  }
  json lost = json::array();
  for (const StatusLost& l : s.lost) {
    lost.push_back({{"job", l.job}, {"node", l.node}, {"since", l.since_s}});
  }
  const std::string why = s.Unhealthy(now_s);
  const StatusCounters& c = s.counters;
  return {{"controller",
           {{"healthy", why.empty()},
            {"problem", why},
            {"partition", s.partition},
            {"policy", s.policy},
            {"gate_open", s.gate_open},
            {"started", s.started_s},
            {"last_tick", s.last_tick_s},
            {"last_error", s.last_error},
            {"now", now_s},
            {"counters",
             {{"ticks", c.ticks},
              {"tick_errors", c.tick_errors},
              {"gate_cycles", c.gate_cycles},
              {"rooms_created", c.rooms_created},
              {"rooms_released", c.rooms_released},
              {"publishes", c.publishes},
              {"reclaimed", c.reclaimed},
              {"requeued", c.requeued},
              {"held", c.held}}}}},
          {"nodes", nodes},
          {"rooms", rooms},
          {"waiting", waiting},
          {"lost_allocations", lost}};
}

StatusOr<std::string> FormatStatusTable(const json& doc) {
  try {
    std::ostringstream o;
    const json& c = doc.at("controller");
    const double now = c.at("now").get<double>();
    const double last = c.at("last_tick").get<double>();
    o << fmt::format("controller: {}; partition {} {}; policy {}; last tick {}\n",
                     c.at("healthy").get<bool>()
                         ? "healthy"
                         : "UNHEALTHY: " + c.at("problem").get<std::string>(),
                     c.at("partition").get<std::string>(),
                     c.at("gate_open").get<bool>() ? "UP (open)" : "DOWN (gate closed)",
                     c.at("policy").get<std::string>(),
                     last == 0 ? std::string("none yet") : fmt::format("{:.1f} s ago", now - last));
    if (!c.at("last_error").get<std::string>().empty()) {
      o << "last error: " << c.at("last_error").get<std::string>() << "\n";
    }
    o << "\n" << fmt::format("{:<16} {:<7} {:<16} {}\n", "NODE", "USABLE", "SLURM", "MIG COUNTS");
    for (const json& n : doc.at("nodes")) {
      // The counts Slurm can start jobs with: the profiles' non-zero ones.
      std::vector<std::string> counts;
      std::stringstream ss(n.at("gres").get<std::string>());
      std::string part;
      while (std::getline(ss, part, ',')) {
        if (part.find("migsched-pad") != std::string::npos) continue;
        if (part.size() >= 2 && part.substr(part.size() - 2) == ":0") continue;
        counts.push_back(part);
      }
      const bool usable = n.at("usable").get<bool>();
      o << fmt::format("{:<16} {:<7} {:<16} {}\n", n.at("name").get<std::string>(),
                       usable ? "yes" : "no", n.at("slurm_state").get<std::string>(),
                       counts.empty() ? "-" : fmt::format("{}", fmt::join(counts, ",")));
      if (!usable) o << "  not usable: " << n.at("error").get<std::string>() << "\n";
      for (const json& g : n.at("gpus")) {
        std::vector<std::string> layout;
        for (const json& i : g.at("instances")) {
          const std::string owner = i.at("owner").get<std::string>();
          layout.push_back(fmt::format("{}@{} {}", i.at("profile").get<std::string>(),
                                       i.at("start").get<int>(),
                                       owner.empty() ? i.at("holder").get<std::string>() : owner));
        }
        o << fmt::format("  GPU {} {}: {}\n", g.at("index").get<int>(),
                         g.at("model").get<std::string>(),
                         layout.empty() ? "empty" : fmt::format("{}", fmt::join(layout, ", ")));
      }
    }
    o << fmt::format("\nROOMS ({})\n", doc.at("rooms").size());
    for (const json& r : doc.at("rooms")) {
      o << fmt::format("  {} GPU {} {}@{} for {}\n", r.at("node").get<std::string>(),
                       r.at("gpu").get<int>(), r.at("profile").get<std::string>(),
                       r.at("start").get<int>(), r.at("for").get<std::string>());
    }
    o << fmt::format("\nWAITING JOBS ({})\n", doc.at("waiting").size());
    if (!doc.at("waiting").empty()) {
      o << fmt::format("  {:<10} {:<24} {}\n", "JOB", "REQUEST", "REASON");
    }
    for (const json& w : doc.at("waiting")) {
      o << fmt::format("  {:<10} {:<24} {}\n", w.at("job").get<int64_t>(),
                       w.at("request").get<std::string>(), w.at("reason").get<std::string>());
    }
    if (!doc.at("lost_allocations").empty()) {
      o << fmt::format("\nRUNNING IN SLURM, ALLOCATION GONE ({})\n",
                       doc.at("lost_allocations").size());
      for (const json& l : doc.at("lost_allocations")) {
        o << fmt::format("  job {} on {} since {:.0f} s\n", l.at("job").get<int64_t>(),
                         l.at("node").get<std::string>(), now - l.at("since").get<double>());
      }
    }
    return o.str();
  } catch (const json::exception& e) {
    return InvalidArgumentError(std::string("not a controller status document: ") + e.what());
  }
}

namespace {

void Family(std::ostringstream& o, const std::string& name, const std::string& type,
            const std::string& help) {
  o << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
}

std::string Label(const std::string& v) {
  std::string out;
  for (char ch : v) {
    if (ch == '\\' || ch == '"') out += '\\';
    if (ch == '\n') {
      out += "\\n";
      continue;
    }
    out += ch;
  }
  return out;
}

}  // namespace

std::string MetricsText(const ControllerStatus& s, double now_s) {
  std::ostringstream o;
  const StatusCounters& c = s.counters;
  auto counter = [&](const std::string& name, const std::string& help, uint64_t v) {
    Family(o, name, "counter", help);
    o << name << " " << v << "\n";
  };
  auto gauge = [&](const std::string& name, const std::string& help, double v) {
    Family(o, name, "gauge", help);
    o << name << " " << fmt::format("{}", v) << "\n";
  };
  gauge("migsched_slurm_healthy", "1 while ticks complete (GET /healthz answers 200).",
        s.Unhealthy(now_s).empty() ? 1 : 0);
  gauge("migsched_slurm_last_tick_timestamp_seconds",
        "Unix time of the last tick that completed (0: none yet).", s.last_tick_s);
  counter("migsched_slurm_ticks_total", "Ticks that completed.", c.ticks);
  counter("migsched_slurm_tick_errors_total",
          "Ticks that failed (Slurm could not be read or a command failed).", c.tick_errors);
  gauge("migsched_slurm_gate_open", "1 while the MIG partition is UP (the gate is open).",
        s.gate_open ? 1 : 0);
  counter("migsched_slurm_gate_cycles_total", "Times the gate was closed to publish again.",
          c.gate_cycles);
  Family(o, "migsched_slurm_nodes", "gauge", "Configured nodes by whether their daemon is usable.");
  int usable = 0;
  for (const StatusNode& n : s.nodes) usable += n.usable ? 1 : 0;
  o << "migsched_slurm_nodes{usable=\"true\"} " << usable << "\n";
  o << "migsched_slurm_nodes{usable=\"false\"} " << s.nodes.size() - usable << "\n";
  Family(o, "migsched_slurm_node_usable", "gauge", "1 while the node's daemon is usable.");
  for (const StatusNode& n : s.nodes) {
    o << "migsched_slurm_node_usable{node=\"" << Label(n.name) << "\"} " << (n.usable ? 1 : 0)
      << "\n";
  }
  gauge("migsched_slurm_waiting_jobs", "MIG jobs waiting for migsched (eligible in Slurm).",
        static_cast<double>(s.waiting.size()));
  gauge("migsched_slurm_rooms", "Rooms held (placements reserved for waiting or started jobs).",
        static_cast<double>(s.rooms.size()));
  gauge("migsched_slurm_lost_allocations",
        "Jobs Slurm shows running whose allocation on a node is gone.",
        static_cast<double>(s.lost.size()));
  counter("migsched_slurm_rooms_created_total", "Rooms reserved.", c.rooms_created);
  counter("migsched_slurm_rooms_released_total", "Rooms no job needed, released.",
          c.rooms_released);
  counter("migsched_slurm_publishes_total", "GRES count updates (scontrol update NodeName=).",
          c.publishes);
  counter("migsched_slurm_reclaimed_allocations_total",
          "Allocations released because their Slurm job no longer held the node.", c.reclaimed);
  counter("migsched_slurm_requeues_total", "Jobs requeued to open room (migration).", c.requeued);
  counter("migsched_slurm_holds_total", "Jobs held because they can never run.", c.held);
  return o.str();
}

StatusServer::StatusServer(std::function<ControllerStatus()> snapshot)
    : snapshot_(std::move(snapshot)) {}

StatusServer::~StatusServer() { Stop(); }

StatusOr<int> StatusServer::Start(const std::string& host, int port) {
  Stop();
  server_ = std::make_unique<httplib::Server>();
  httplib::Server& s = *server_;
  s.new_task_queue = [] { return new httplib::ThreadPool(4); };
  s.set_payload_max_length(4096);
  RefuseUnboundedBodies(s, 4096, "the controller's status listener");
  s.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    const std::string why = snapshot_().Unhealthy(UnixNow());
    res.status = why.empty() ? 200 : 503;
    res.set_content(why.empty() ? json{{"status", "ok"}}.dump()
                                : json{{"status", "unhealthy"}, {"reason", why}}.dump(),
                    "application/json");
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(MetricsText(snapshot_(), UnixNow()), "text/plain; version=0.0.4");
  });
  s.Get("/v1/status", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(ToJson(snapshot_(), UnixNow()).dump(), "application/json");
  });
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404 || res.status == 405) {
      res.status = 404;
      res.set_content(json{{"error", "no " + req.method + " " + req.path +
                                         " (the controller serves GET /healthz, /metrics, "
                                         "/v1/status)"}}
                          .dump(),
                      "application/json");
    }
  });
  int bound = port;
  if (port == 0) {
    bound = s.bind_to_any_port(host);
  } else if (!s.bind_to_port(host, port)) {
    bound = -1;
  }
  if (bound <= 0) {
    server_.reset();
    return UnavailableError(fmt::format("cannot listen on {}:{}", host, port));
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  for (int i = 0; i < 5000 && !server_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return bound;
}

void StatusServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
}

}  // namespace migsched::slurm
