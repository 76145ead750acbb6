#include "nodeapi/http_guard.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace migsched {

void RefuseUnboundedBodies(httplib::Server& s, size_t max_body_bytes, std::string listener) {
  s.set_pre_routing_handler(
      [max_body_bytes, listener](const httplib::Request& req, httplib::Response& res) {
        if (!req.has_header("Transfer-Encoding"))
          return httplib::Server::HandlerResponse::Unhandled;
        res.status = 411;
        res.set_header("Connection", "close");
        res.set_content(
            nlohmann::json{{"error", fmt::format("{} {}: {}", req.method, req.path,
                                                 ChunkedBodyRefusal(max_body_bytes, listener))}}
                .dump(),
            "application/json");
        return httplib::Server::HandlerResponse::Handled;
      });
}

std::string ChunkedBodyRefusal(size_t max_body_bytes, const std::string& listener) {
  return fmt::format(
      "a chunked body is not accepted; send it with a Content-Length (at most {} bytes) ({})",
      max_body_bytes, listener);
}

}  // namespace migsched
