#include "k8s/extender/extender_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "k8s/extender/wire.h"
#include "nodeapi/http_guard.h"

namespace migsched::k8s {

using nlohmann::json;

namespace {

// The last OpenSSL error as text ("" if none), clearing the queue.
std::string OpenSslError() {
  std::string text;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    text = buf;
  }
  return text;
}

// An HTTPS server that requires a client certificate signed by the CA
// (mutual TLS, TLS 1.2 or later), or why the files cannot be used.
StatusOr<std::unique_ptr<httplib::Server>> MutualTlsServer(const ExtenderServerOptions& o) {
  if (o.cert_file.empty() || o.key_file.empty() || o.client_ca_file.empty()) {
    return InvalidArgumentError(
        "tls: cert_file, key_file and client_ca_file are all needed (the extender accepts only "
        "callers with a client certificate signed by client_ca_file)");
  }
  for (const std::string* f : {&o.cert_file, &o.key_file, &o.client_ca_file}) {
    if (!std::ifstream(*f)) return InvalidArgumentError("tls: cannot read " + *f);
  }
  std::string error;
  auto server = std::make_unique<httplib::SSLServer>([&](SSL_CTX& ctx) {
    auto failed = [&](const std::string& what) {
      error = "tls: " + what + ": " + OpenSslError();
      return false;
    };
    if (SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION) != 1) return failed("TLS 1.2");
    if (SSL_CTX_use_certificate_chain_file(&ctx, o.cert_file.c_str()) != 1) {
      return failed("cert_file " + o.cert_file + " is not a PEM certificate");
    }
    if (SSL_CTX_use_PrivateKey_file(&ctx, o.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      return failed("key_file " + o.key_file + " is not the PEM private key of cert_file " +
                    o.cert_file);
    }
    if (SSL_CTX_check_private_key(&ctx) != 1) {
      return failed("key_file " + o.key_file + " does not match cert_file " + o.cert_file);
    }
    if (SSL_CTX_load_verify_locations(&ctx, o.client_ca_file.c_str(), nullptr) != 1) {
      return failed("client_ca_file " + o.client_ca_file + " is not a PEM certificate");
    }
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    return true;
  });
  if (!server->is_valid()) {
    return InvalidArgumentError(error.empty() ? "tls: cannot set up the TLS context" : error);
  }
  return std::unique_ptr<httplib::Server>(std::move(server));
}

}  // namespace

ExtenderServer::ExtenderServer(Extender* extender, std::function<std::string()> ready,
                               ExtenderServerOptions options)
    : extender_(extender), ready_(std::move(ready)), options_(std::move(options)) {}

ExtenderServer::~ExtenderServer() { Stop(); }

StatusOr<int> ExtenderServer::Start(const std::string& host, int port) {
  if (server_) {
    server_->stop();
    if (thread_.joinable()) thread_.join();
    server_.reset();
  }
  if (options_.tls() || !options_.key_file.empty() || !options_.client_ca_file.empty()) {
    ASSIGN_OR_RETURN(server_, MutualTlsServer(options_));
  } else {
    server_ = std::make_unique<httplib::Server>();
  }
  httplib::Server& s = *server_;
  s.set_payload_max_length(options_.max_body_bytes);
  RefuseUnboundedBodies(s, options_.max_body_bytes, "the extender's max_body_bytes");
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
  s.Post("/bind", [this, bind_verb = verb(&Extender::Bind)](const httplib::Request& req,
                                                            httplib::Response& res) {
    const std::string why = bind_gate_ ? bind_gate_() : "";
    if (!why.empty()) {
      res.set_content(BindingResultJson("migsched: " + why).dump(), "application/json");
      return;
    }
    bind_verb(req, res);
  });
  AddProbeRoutes(s);
  // Unknown paths and methods: a JSON 404 (an error handler also covers 405s);
  // a body over the bound: a JSON 413.
  const size_t max_body = options_.max_body_bytes;
  s.set_error_handler([max_body](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404 || res.status == 405) {
      res.status = 404;
      res.set_content(json{{"error", "no " + req.method + " " + req.path +
                                         " (the extender serves POST /filter, /prioritize, "
                                         "/bind; GET /healthz, /readyz, /metrics)"}}
                          .dump(),
                      "application/json");
    } else if (res.status == 413) {
      // The HTTP library reads a form (what `curl -d` sends) whole, up to its own bound of 8192
      // bytes, whatever max_body_bytes says: such a refusal names the content type.
      const bool form =
          req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0;
      const std::string why =
          form ? fmt::format(
                     "a body sent as a form (Content-Type: "
                     "application/x-www-form-urlencoded, what curl -d sends) may be at "
                     "most {} bytes; send it as JSON (Content-Type: application/json), "
                     "up to max_body_bytes ({})",
                     CPPHTTPLIB_FORM_URL_ENCODED_PAYLOAD_MAX_LENGTH, max_body)
               : fmt::format("the body is longer than {} bytes (the extender's max_body_bytes)",
                             max_body);
      res.set_content(json{{"error", req.method + " " + req.path + ": " + why}}.dump(),
                      "application/json");
    }
  });
  auto bound = Listen(s, host, port, &thread_);
  if (!bound.ok()) server_.reset();
  return bound;
}

StatusOr<int> ExtenderServer::StartProbes(const std::string& host, int port) {
  if (probes_) {
    probes_->stop();
    if (probes_thread_.joinable()) probes_thread_.join();
  }
  probes_ = std::make_unique<httplib::Server>();
  httplib::Server& s = *probes_;
  s.set_payload_max_length(4096);
  RefuseUnboundedBodies(s, 4096, "the extender's probe listener");
  AddProbeRoutes(s);
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404 || res.status == 405) {
      res.status = 404;
      res.set_content(json{{"error", "no " + req.method + " " + req.path +
                                         " (the probe listener serves GET /healthz, /readyz, "
                                         "/metrics)"}}
                          .dump(),
                      "application/json");
    }
  });
  auto bound = Listen(s, host, port, &probes_thread_);
  if (!bound.ok()) probes_.reset();
  return bound;
}

void ExtenderServer::AddProbeRoutes(httplib::Server& s) {
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
}

StatusOr<int> ExtenderServer::Listen(httplib::Server& s, const std::string& host, int port,
                                     std::thread* thread) {
  int bound = port;
  if (port == 0) {
    bound = s.bind_to_any_port(host);
  } else if (!s.bind_to_port(host, port)) {
    bound = -1;
  }
  if (bound <= 0) {
    return UnavailableError("cannot listen on " + host + ":" + std::to_string(port));
  }
  *thread = std::thread([&s] { s.listen_after_bind(); });
  // httplib's stop() does nothing before listen has begun: wait for it (bounded).
  for (int i = 0; i < 5000 && !s.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return bound;
}

void ExtenderServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
  if (probes_) probes_->stop();
  if (probes_thread_.joinable()) probes_thread_.join();
  probes_.reset();
}

}  // namespace migsched::k8s
