#include "k8s/extender/extender_server.h"

#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>

namespace migsched::k8s {

using nlohmann::json;

ExtenderServer::ExtenderServer(Extender* extender, std::function<std::string()> ready)
    : extender_(extender), ready_(std::move(ready)) {}

ExtenderServer::~ExtenderServer() { Stop(); }

StatusOr<int> ExtenderServer::Start(const std::string& host, int port) {
  Stop();
  server_ = std::make_unique<httplib::Server>();
  httplib::Server& s = *server_;
  s.set_payload_max_length(kMaxBodyBytes);
  // A bind may wait for the kubelet of its node (bind_wait_s): enough threads
  // that waiting binds never hold up kube-scheduler's filter calls.
  s.new_task_queue = [] { return new httplib::ThreadPool(kServerThreads); };
  auto verb = [this](Extender::Answer (Extender::*method)(std::string_view)) {
    return [this, method](const httplib::Request& req, httplib::Response& res) {
      const Extender::Answer a = (extender_->*method)(req.body);
      res.status = a.http_status;
      res.set_content(a.body, "application/json");
    };
  };
  s.Post("/filter", verb(&Extender::Filter));
  s.Post("/prioritize", verb(&Extender::Prioritize));
  s.Post("/bind", verb(&Extender::Bind));
  s.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  s.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    const std::string why = ready_ ? ready_() : "";
    res.status = why.empty() ? 200 : 503;
    res.set_content(json{{"ready", why.empty()}, {"reason", why}}.dump(), "application/json");
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    const Extender::Counters c = extender_->counters();
    std::ostringstream out;
    out << "# HELP migsched_extender_requests_total Extender calls by verb.\n"
        << "# TYPE migsched_extender_requests_total counter\n"
        << "migsched_extender_requests_total{verb=\"filter\"} " << c.filter << "\n"
        << "migsched_extender_requests_total{verb=\"prioritize\"} " << c.prioritize << "\n"
        << "migsched_extender_requests_total{verb=\"bind\"} " << c.bind << "\n"
        << "# HELP migsched_extender_bind_errors_total Binds answered with an Error.\n"
        << "# TYPE migsched_extender_bind_errors_total counter\n"
        << "migsched_extender_bind_errors_total " << c.bind_errors << "\n"
        << "# HELP migsched_extender_bad_requests_total Bodies that could not be read.\n"
        << "# TYPE migsched_extender_bad_requests_total counter\n"
        << "migsched_extender_bad_requests_total " << c.bad_requests << "\n";
    res.set_content(out.str(), "text/plain; version=0.0.4");
  });
  // Unknown paths and methods: a JSON 404 (an error handler also covers 405s).
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404 || res.status == 405) {
      res.status = 404;
      res.set_content(json{{"error", "no " + req.method + " " + req.path +
                                         " (the extender serves POST /filter, /prioritize, "
                                         "/bind; GET /healthz, /readyz, /metrics)"}}
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
    return UnavailableError("cannot listen on " + host + ":" + std::to_string(port));
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // httplib's stop() does nothing before listen has begun: wait for it (bounded).
  for (int i = 0; i < 5000 && !server_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return bound;
}

void ExtenderServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
}

}  // namespace migsched::k8s
