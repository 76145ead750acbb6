// GuardedServer: the cpp-httplib server of every HTTP listener of ours (the node daemon's API,
// the Kubernetes extender's verbs, the extender's and the node agent's probe listeners), with
// what keeps one of them available whatever its clients send:
//
//   * Connections: each is served by a thread of its own from a ConnectionPool (connection_pool.h)
//     that grows up to max_connections threads (more connections wait to be served); an idle
//     keep-alive connection is closed after idle_timeout_s; a request's head must arrive within
//     header_timeout_s in all (a TLS handshake included) and its body within body_timeout_s in all
//     (and every read within request_timeout_s), else the connection is closed: a client that
//     sends a byte a second holds its thread for header_timeout_s, not forever; TCP_NODELAY; listen
//     backlog 1024 (RaiseBacklog).
//   * ConnectionGate (connection_gate.h): at most max_connections_per_peer connections per remote
//     address and max_unauthenticated_connections not yet authenticated in all; beyond, the oldest
//     unauthenticated one is closed, or, when a peer's are all authenticated, its new connection
//     gets 503 and is closed. What authenticates a connection is the owner's: a request with the
//     daemon's token (Authenticate), a TLS handshake that verified the client's certificate
//     (ConnectionIo::authenticated). A listener without authentication (a probe port) has every
//     connection unauthenticated: a flood of slow ones evicts its own oldest, and the head
//     deadline ends each.
//   * Bodies: a POST route registered with PostBody gets its body read with max_body_bytes
//     applied to the body as it arrives and, with a Content-Encoding (gzip, deflate, br), to the
//     body as decoded (regression: gzip_body_past_max_body_bytes: 1 MB of gzip that inflates to
//     1 GiB was read whole by the extender); a longer one is answered 413 and the connection
//     closed. Every other route takes no body but a short identity one (at most max_body_bytes
//     with a Content-Length): a chunked one is answered 411 and an encoded one 415 before any of
//     it is read (cpp-httplib reads such bodies whole, decoded, whatever their size).
//
// Error bodies are the owner's: its ErrorBodyFn gives the JSON of every answer made here.
//
// Thread-safety: configure before listening; Stop (httplib's stop) from any thread. The static
// helpers act on the connection served by the calling thread (a handler's).
#ifndef MIGSCHED_NODEAPI_GUARDED_SERVER_H_
#define MIGSCHED_NODEAPI_GUARDED_SERVER_H_

#include <httplib.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "nodeapi/connection_gate.h"
#include "nodeapi/listener_limits.h"

namespace migsched {

using SteadyTime = std::chrono::steady_clock::time_point;
// Now plus `seconds`.
SteadyTime SteadyAfter(double seconds);
// Waits until socket `fd` is ready for poll(2) `events` (POLLIN, POLLOUT), never past `deadline`.
// Whether it is.
bool WaitForSocket(int fd, short events, SteadyTime deadline);

// The bytes of one connection: its socket, or TLS over it (k8s/extender). Every wait ends at
// `deadline`.
class ConnectionIo {
 public:
  virtual ~ConnectionIo() = default;
  // Up to `n` bytes: the count, 0 when the peer closed, -1 on an error or at the deadline.
  virtual ssize_t Read(char* buf, size_t n, SteadyTime deadline) = 0;
  // Some of `n` bytes written: the count, -1 on an error or at the deadline.
  virtual ssize_t Write(const char* buf, size_t n, SteadyTime deadline) = 0;
  // Bytes already taken off the socket wait to be read (a decrypted TLS record).
  virtual bool Pending() const { return false; }
  // The connection proved who its client is when it was opened (a verified client certificate).
  virtual bool authenticated() const { return false; }
};

// A JSON error body ("{...}" without a newline) for an HTTP answer of `code` (a StatusCode name,
// e.g. "RESOURCE_EXHAUSTED") and `message`; `req` is null when no request was read.
using ErrorBodyFn = std::function<std::string(const httplib::Request* req, std::string_view code,
                                              std::string_view message)>;

class GuardedServer : public httplib::Server {
 public:
  GuardedServer(ListenerLimits limits, ErrorBodyFn error_body);

  const ListenerLimits& limits() const { return limits_; }
  ConnectionGate& gate() { return gate_; }
  // Binds `host`:`port` (0: a free one), with the backlog raised. The port, or kUnavailable.
  StatusOr<int> BindHostPort(const std::string& host, int port);
  // Stop() was called (httplib closes the listening socket at once).
  bool stopping() const { return svr_sock_ == INVALID_SOCKET; }

  // Runs after the guard on every request head (Server::set_pre_routing_handler is the guard's).
  void set_head_handler(HandlerWithResponse h) { head_handler_ = std::move(h); }

  // POST `pattern`, its body read under the limits (the daemon's checks of framing, length,
  // coding, content type), then `handler` called with it; a refused body never reaches it.
  using BodyHandler =
      std::function<void(const httplib::Request&, httplib::Response&, const std::string& body)>;
  void PostBody(const std::string& pattern, BodyHandler handler);

  // The request being served on this thread carried valid credentials: the connection counts as
  // authenticated (ConnectionGate::Authenticated). False when it was evicted meanwhile (its
  // socket is shut down): the caller must not carry the request out.
  bool Authenticate();
  // The connection being served on this thread ends after this answer.
  static void CloseAfterAnswer(httplib::Response& res);
  // The connection being served on this thread is authenticated (tests, metrics).
  static bool ServingAuthenticated();

 protected:
  // The connection's bytes: the socket itself (plain HTTP) unless overridden (TLS, whose
  // handshake must end by `deadline`); null closes the connection at once.
  virtual std::unique_ptr<ConnectionIo> OpenConnection(int fd, SteadyTime deadline);
  // Whether a refused connection may be answered 503 in plain HTTP (not over TLS).
  virtual bool plain_http() const { return true; }

 private:
  bool process_and_close_socket(socket_t sock) override;
  bool WaitIdle(int sock);
  HandlerResponse Guard(const httplib::Request& req, httplib::Response& res);
  void SendError(const httplib::Request& req, httplib::Response& res, int status,
                 std::string_view code, const std::string& message);

  const ListenerLimits limits_;
  const ErrorBodyFn error_body_;
  ConnectionGate gate_;
  HandlerWithResponse head_handler_;
  std::vector<std::regex> body_routes_;  // PostBody's patterns
};

}  // namespace migsched

#endif  // MIGSCHED_NODEAPI_GUARDED_SERVER_H_
