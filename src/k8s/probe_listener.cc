#include "k8s/probe_listener.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace migsched::k8s {

std::string K8sErrorBody(const httplib::Request* req, std::string_view code,
                         std::string_view message) {
  (void)code;
  const std::string text = req == nullptr
                               ? std::string(message)
                               : fmt::format("{} {}: {}", req->method, req->path, message);
  return nlohmann::json{{"error", text}}.dump(-1, ' ', false,
                                              nlohmann::json::error_handler_t::replace);
}

ListenerLimits ProbeListenerLimits(std::string name) {
  ListenerLimits l;
  l.max_body_bytes = kProbeMaxBodyBytes;
  l.max_connections = 256;
  l.max_connections_per_peer = 64;
  l.max_unauthenticated_connections = 255;
  l.chunked_bodies = false;
  l.name = std::move(name);
  return l;
}

void AnswerErrorsAsJson(GuardedServer& s, std::string serves) {
  const size_t max_body = s.limits().max_body_bytes;
  const std::string name = s.limits().name;
  s.set_error_handler([serves, max_body, name](const httplib::Request& req,
                                               httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404 || res.status == 405) {
      res.status = 404;
      res.set_content(K8sErrorBody(nullptr, "NOT_FOUND",
                                   fmt::format("no {} {} ({})", req.method, req.path, serves)),
                      "application/json");
    } else if (res.status == 413) {
      // httplib's own refusal of a Content-Length over the bound (regression:
      // probe_413_without_body: the probe port answered a large body 413 with an empty body).
      GuardedServer::CloseAfterAnswer(res);
      res.set_content(
          K8sErrorBody(&req, "RESOURCE_EXHAUSTED",
                       fmt::format("request body larger than {} bytes ({})", max_body, name)),
          "application/json");
    } else if (res.status >= 400) {
      GuardedServer::CloseAfterAnswer(res);
      res.set_content(K8sErrorBody(&req, "INVALID_ARGUMENT",
                                   fmt::format("HTTP status {} (malformed request?)", res.status)),
                      "application/json");
    }
  });
}

std::unique_ptr<GuardedServer> NewProbeListener(std::string name) {
  return std::make_unique<GuardedServer>(ProbeListenerLimits(std::move(name)), K8sErrorBody);
}

StatusOr<int> BindListen(GuardedServer& s, const std::string& listen, const std::string& what) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return InvalidArgumentError(fmt::format("{}: '{}' is not host:port", what, listen));
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  int port = -1;
  try {
    port = std::stoi(listen.substr(colon + 1));
  } catch (const std::exception&) {
    port = -1;
  }
  if (port < 0 || port > 65535) {
    return InvalidArgumentError(fmt::format("{}: '{}' is not host:port", what, listen));
  }
  auto bound = s.BindHostPort(host, port);
  if (!bound.ok()) return UnavailableError(what + ": cannot listen on " + listen);
  return bound;
}

}  // namespace migsched::k8s
