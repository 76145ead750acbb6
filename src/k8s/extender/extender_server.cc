#include "k8s/extender/extender_server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <httplib.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "k8s/extender/wire.h"
#include "k8s/probe_listener.h"
#include "nodeapi/guarded_server.h"

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

// TLS over a connection's socket (non-blocking, every wait bounded by the connection's deadline).
class TlsIo : public ConnectionIo {
 public:
  TlsIo(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}
  ~TlsIo() override {
    if (handshaken_) SSL_shutdown(ssl_);  // one close_notify, not waited for
    SSL_free(ssl_);
  }
  // The handshake, done by `deadline`; whether it succeeded (a client certificate of the CA).
  bool Handshake(SteadyTime deadline) {
    for (;;) {
      const int r = SSL_accept(ssl_);
      if (r == 1) break;
      if (!Wait(r, deadline)) return false;
    }
    handshaken_ = true;
    X509* peer = SSL_get1_peer_certificate(ssl_);
    const bool verified = peer != nullptr && SSL_get_verify_result(ssl_) == X509_V_OK;
    X509_free(peer);
    verified_ = verified;
    return verified;
  }
  ssize_t Read(char* buf, size_t n, SteadyTime deadline) override {
    for (;;) {
      const int r = SSL_read(ssl_, buf, static_cast<int>(std::min<size_t>(n, 1 << 30)));
      if (r > 0) return r;
      if (SSL_get_error(ssl_, r) == SSL_ERROR_ZERO_RETURN) return 0;
      if (!Wait(r, deadline)) return -1;
    }
  }
  ssize_t Write(const char* buf, size_t n, SteadyTime deadline) override {
    for (;;) {
      const int r = SSL_write(ssl_, buf, static_cast<int>(std::min<size_t>(n, 1 << 30)));
      if (r > 0) return r;
      if (!Wait(r, deadline)) return -1;
    }
  }
  bool Pending() const override { return SSL_pending(ssl_) > 0; }
  bool authenticated() const override { return verified_; }

 private:
  // After an SSL call returned `r` <= 0: waits for what it needs; false on an error or at the
  // deadline.
  bool Wait(int r, SteadyTime deadline) {
    switch (SSL_get_error(ssl_, r)) {
      case SSL_ERROR_WANT_READ:
        return WaitForSocket(fd_, POLLIN, deadline);
      case SSL_ERROR_WANT_WRITE:
        return WaitForSocket(fd_, POLLOUT, deadline);
      default:
        ERR_clear_error();
        return false;
    }
  }

  int fd_;
  SSL* ssl_;
  bool handshaken_ = false;
  bool verified_ = false;
};

// The extender's HTTPS server: requires a client certificate signed by the CA (mutual TLS, TLS 1.2
// or later); the handshake is part of the head's deadline.
class TlsServer : public GuardedServer {
 public:
  TlsServer(ListenerLimits limits, SSL_CTX* ctx)
      : GuardedServer(std::move(limits), K8sErrorBody), ctx_(ctx) {}
  ~TlsServer() override { SSL_CTX_free(ctx_); }

 protected:
  std::unique_ptr<ConnectionIo> OpenConnection(int fd, SteadyTime deadline) override {
    const int flags = ::fcntl(fd, F_GETFL, 0);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) return nullptr;
    SSL* ssl = SSL_new(ctx_);
    if (ssl == nullptr) return nullptr;
    auto io = std::make_unique<TlsIo>(fd, ssl);  // owns ssl
    if (SSL_set_fd(ssl, fd) != 1 || !io->Handshake(deadline)) return nullptr;
    return io;
  }
  bool plain_http() const override { return false; }

 private:
  SSL_CTX* const ctx_;
};

// The mutual-TLS server, or why the files cannot be used.
StatusOr<std::unique_ptr<GuardedServer>> MutualTlsServer(const ExtenderServerOptions& o,
                                                         ListenerLimits limits) {
  if (o.cert_file.empty() || o.key_file.empty() || o.client_ca_file.empty()) {
    return InvalidArgumentError(
        "tls: cert_file, key_file and client_ca_file are all needed (the extender accepts only "
        "callers with a client certificate signed by client_ca_file)");
  }
  for (const std::string* f : {&o.cert_file, &o.key_file, &o.client_ca_file}) {
    if (!std::ifstream(*f)) return InvalidArgumentError("tls: cannot read " + *f);
  }
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return InvalidArgumentError("tls: cannot set up the TLS context");
  auto failed = [&](const std::string& what) -> Status {
    const std::string error = "tls: " + what + ": " + OpenSslError();
    SSL_CTX_free(ctx);
    return InvalidArgumentError(error);
  };
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) return failed("TLS 1.2");
  if (SSL_CTX_use_certificate_chain_file(ctx, o.cert_file.c_str()) != 1) {
    return failed("cert_file " + o.cert_file + " is not a PEM certificate");
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, o.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return failed("key_file " + o.key_file + " is not the PEM private key of cert_file " +
                  o.cert_file);
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return failed("key_file " + o.key_file + " does not match cert_file " + o.cert_file);
  }
  if (SSL_CTX_load_verify_locations(ctx, o.client_ca_file.c_str(), nullptr) != 1) {
    return failed("client_ca_file " + o.client_ca_file + " is not a PEM certificate");
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  return std::unique_ptr<GuardedServer>(std::make_unique<TlsServer>(std::move(limits), ctx));
}

ListenerLimits MainLimits(const ExtenderServerOptions& o) {
  ListenerLimits l;
  l.max_body_bytes = o.max_body_bytes;
  l.header_timeout_s = o.header_timeout_s;
  l.body_timeout_s = o.body_timeout_s;
  l.idle_timeout_s = o.idle_timeout_s;
  l.request_timeout_s = std::max(1.0, std::min(10.0, o.body_timeout_s));
  l.max_connections = o.max_connections;
  l.max_connections_per_peer = o.max_connections_per_peer;
  l.max_unauthenticated_connections = std::max(1, o.max_connections / 4);
  // kube-scheduler sends no chunked bodies (regression: chunked_body_past_max_body_bytes).
  l.chunked_bodies = false;
  l.name = "the extender's max_body_bytes";
  return l;
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
    ASSIGN_OR_RETURN(server_, MutualTlsServer(options_, MainLimits(options_)));
  } else {
    server_ = std::make_unique<GuardedServer>(MainLimits(options_), K8sErrorBody);
  }
  GuardedServer& s = *server_;
  // Each verb's body is read under max_body_bytes, as sent and as decoded (regression:
  // gzip_body_past_max_body_bytes: 1 MB of gzip that inflates to 1 GiB was read whole).
  auto verb = [this](Extender::Answer (Extender::*method)(std::string_view)) {
    return
        [this, method](const httplib::Request&, httplib::Response& res, const std::string& body) {
          const Extender::Answer a = (extender_->*method)(body);
          res.status = a.http_status;
          res.set_content(a.body, "application/json");
        };
  };
  s.PostBody("/filter", verb(&Extender::Filter));
  s.PostBody("/prioritize", verb(&Extender::Prioritize));
  s.PostBody("/bind",
             [this, bind_verb = verb(&Extender::Bind)](
                 const httplib::Request& req, httplib::Response& res, const std::string& body) {
               const std::string why = bind_gate_ ? bind_gate_() : "";
               if (!why.empty()) {
                 res.set_content(BindingResultJson("migsched: " + why).dump(), "application/json");
                 return;
               }
               bind_verb(req, res, body);
             });
  AddProbeRoutes(s);
  // Unknown paths and methods: a JSON 404; a body over the bound: a JSON 413.
  AnswerErrorsAsJson(
      s, "the extender serves POST /filter, /prioritize, /bind; GET /healthz, /readyz, /metrics");
  auto bound = Listen(s, host, port, &thread_);
  if (!bound.ok()) server_.reset();
  return bound;
}

StatusOr<int> ExtenderServer::StartProbes(const std::string& host, int port) {
  if (probes_) {
    probes_->stop();
    if (probes_thread_.joinable()) probes_thread_.join();
  }
  ListenerLimits limits = ProbeListenerLimits("the extender's probe listener");
  limits.header_timeout_s = options_.header_timeout_s;
  limits.idle_timeout_s = options_.idle_timeout_s;
  probes_ = std::make_unique<GuardedServer>(std::move(limits), K8sErrorBody);
  GuardedServer& s = *probes_;
  AddProbeRoutes(s);
  AnswerErrorsAsJson(s, "the probe listener serves GET /healthz, /readyz, /metrics");
  auto bound = Listen(s, host, port, &probes_thread_);
  if (!bound.ok()) probes_.reset();
  return bound;
}

void ExtenderServer::AddProbeRoutes(GuardedServer& s) {
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

StatusOr<int> ExtenderServer::Listen(GuardedServer& s, const std::string& host, int port,
                                     std::thread* thread) {
  auto bound_or = s.BindHostPort(host, port);
  if (!bound_or.ok()) {
    return UnavailableError("cannot listen on " + host + ":" + std::to_string(port));
  }
  const int bound = *bound_or;
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
