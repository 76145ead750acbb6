#include "nodeapi/guarded_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>

#include "core/text.h"
#include "nodeapi/connection_pool.h"
#include "nodeapi/http_guard.h"

namespace migsched {
namespace {

constexpr int kListenBacklog = 1024;
constexpr int64_t kMaxRequestsPerConnection = 100000;

// The connection served on this thread: its gate ticket and the deadline of
// what it reads now (the request head, then the body).
struct ServedConnection {
  uint64_t ticket = 0;
  SteadyTime deadline;
  // A request that could not be read as sent (malformed, a body cut short, two lengths): the
  // connection is closed after its answer, so that no byte after it is read as a request.
  bool close = false;
  bool authenticated = false;
};
thread_local ServedConnection* t_connection = nullptr;

bool WaitUntil(int fd, short events, SteadyTime deadline) {
  return WaitForSocket(fd, events, deadline);
}

std::string AddressText(const sockaddr_storage& a, int* port) {
  char host[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&a);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    *port = ntohs(in->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    *port = ntohs(in6->sin6_port);
  }
  return host;
}

// Plain HTTP: the socket itself.
class SocketIo : public ConnectionIo {
 public:
  explicit SocketIo(int fd) : fd_(fd) {}
  ssize_t Read(char* buf, size_t n, SteadyTime deadline) override {
    if (!WaitUntil(fd_, POLLIN, deadline)) return -1;
    ssize_t r;
    do {
      r = ::recv(fd_, buf, n, 0);
    } while (r < 0 && errno == EINTR);
    return r;
  }
  ssize_t Write(const char* buf, size_t n, SteadyTime deadline) override {
    if (!WaitUntil(fd_, POLLOUT, deadline)) return -1;
    ssize_t r;
    do {
      r = ::send(fd_, buf, n, MSG_NOSIGNAL);
    } while (r < 0 && errno == EINTR);
    return r;
  }

 private:
  int fd_;
};

// httplib's Stream over a connection, as its own, but every read also ends at the connection's
// deadline: a client gets header_timeout_s for a request head and body_timeout_s for the body in
// all, not per read (a client that sends one byte a second would otherwise hold its connection
// forever).
class DeadlineStream : public httplib::Stream {
 public:
  DeadlineStream(int fd, ConnectionIo* io, double read_timeout_s, double write_timeout_s,
                 ServedConnection* conn)
      : fd_(fd), io_(io), read_s_(read_timeout_s), write_s_(write_timeout_s), conn_(conn) {}

  bool is_readable() const override {
    return pos_ < len_ || io_->Pending() || WaitUntil(fd_, POLLIN, ReadDeadline());
  }
  bool is_writable() const override { return WaitUntil(fd_, POLLOUT, SteadyAfter(write_s_)); }
  ssize_t read(char* ptr, size_t size) override {
    if (pos_ == len_) {
      const ssize_t n = io_->Read(buf_, sizeof buf_, ReadDeadline());
      if (n <= 0) return n;
      pos_ = 0;
      len_ = static_cast<size_t>(n);
    }
    const size_t k = std::min(size, len_ - pos_);
    std::memcpy(ptr, buf_ + pos_, k);
    pos_ += k;
    return static_cast<ssize_t>(k);
  }
  ssize_t write(const char* ptr, size_t size) override {
    return io_->Write(ptr, size, SteadyAfter(write_s_));
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    port = 0;
    if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) ip = AddressText(a, &port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    port = 0;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) ip = AddressText(a, &port);
  }
  socket_t socket() const override { return fd_; }
  bool buffered() const { return pos_ < len_ || io_->Pending(); }

 private:
  SteadyTime ReadDeadline() const { return std::min(SteadyAfter(read_s_), conn_->deadline); }

  int fd_;
  ConnectionIo* io_;
  double read_s_;
  double write_s_;
  ServedConnection* conn_;
  char buf_[4096];
  size_t pos_ = 0;
  size_t len_ = 0;
};

std::string Lower(std::string v) {
  for (char& ch : v) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return v;
}

// The content codings cpp-httplib decodes as it was built, comma-separated ("gzip, deflate,
// br"), and whether `coding` (lowercase) is one of them or identity.
std::string DecodedContentEncodings() {
  std::string out;
#ifdef CPPHTTPLIB_ZLIB_SUPPORT
  out += "gzip, deflate";
#endif
#ifdef CPPHTTPLIB_BROTLI_SUPPORT
  out += out.empty() ? "br" : ", br";
#endif
  return out.empty() ? "only identity" : out;
}
bool DecodedContentEncoding(const std::string& coding) {
  if (coding == "identity") return true;
#ifdef CPPHTTPLIB_ZLIB_SUPPORT
  if (coding == "gzip" || coding == "deflate") return true;
#endif
#ifdef CPPHTTPLIB_BROTLI_SUPPORT
  if (coding == "br") return true;
#endif
  return false;
}

}  // namespace

bool WaitForSocket(int fd, short events, SteadyTime deadline) {
  const double left =
      std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
  if (left <= 0) return false;
  pollfd p{fd, events, 0};
  int rc;
  do {
    rc = ::poll(&p, 1, static_cast<int>(std::ceil(left * 1000)));
  } while (rc < 0 && errno == EINTR);
  return rc > 0;
}

SteadyTime SteadyAfter(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
             std::chrono::duration<double>(seconds));
}

GuardedServer::GuardedServer(ListenerLimits limits, ErrorBodyFn error_body)
    : limits_(std::move(limits)),
      error_body_(std::move(error_body)),
      gate_(limits_.max_connections_per_peer, std::min(limits_.max_unauthenticated_connections,
                                                       std::max(1, limits_.max_connections - 1))) {
  const size_t threads = static_cast<size_t>(std::max(1, limits_.max_connections));
  new_task_queue = [threads] { return new ConnectionPool(threads); };
  set_payload_max_length(limits_.max_body_bytes);
  set_keep_alive_timeout(static_cast<time_t>(std::max(1.0, std::ceil(limits_.idle_timeout_s))));
  const double rt = std::max(0.001, limits_.request_timeout_s);
  set_read_timeout(static_cast<time_t>(rt), static_cast<time_t>((rt - std::floor(rt)) * 1e6));
  set_write_timeout(static_cast<time_t>(rt), static_cast<time_t>((rt - std::floor(rt)) * 1e6));
  set_tcp_nodelay(true);  // on the listener: accepted sockets inherit it
  // httplib's default also sets SO_REUSEPORT, which lets a second process bind the same port and
  // take half the requests: SO_REUSEADDR only.
  set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const void*>(&yes), sizeof(yes));
  });
  set_keep_alive_max_count(100000);  // httplib's default of 5 reconnects clients often
  set_pre_routing_handler(
      [this](const httplib::Request& req, httplib::Response& res) { return Guard(req, res); });
}

StatusOr<int> GuardedServer::BindHostPort(const std::string& host, int port) {
  int bound = port;
  if (port == 0) {
    bound = bind_to_any_port(host);
  } else if (!bind_to_port(host, port)) {
    bound = -1;
  }
  if (bound <= 0) {
    return UnavailableError(fmt::format(
        "cannot listen on {}:{} (address in use, or not an address of this host)", host, port));
  }
  // httplib listens with a backlog of 5: a burst of connections then waits for a 1-second SYN
  // retransmit. On a listening socket, listen(2) again sets a new backlog.
  const socket_t s = svr_sock_;
  if (s != INVALID_SOCKET) ::listen(s, kListenBacklog);
  return bound;
}

void GuardedServer::SendError(const httplib::Request& req, httplib::Response& res, int status,
                              std::string_view code, const std::string& message) {
  res.status = status;
  res.set_content(error_body_(&req, code, message) + "\n", "application/json");
}

void GuardedServer::CloseAfterAnswer(httplib::Response& res) {
  res.set_header("Connection", "close");
  if (t_connection != nullptr) t_connection->close = true;
}

bool GuardedServer::Authenticate() {
  if (t_connection == nullptr) return true;
  if (!gate_.Authenticated(t_connection->ticket)) return false;
  t_connection->authenticated = true;
  return true;
}

bool GuardedServer::ServingAuthenticated() {
  return t_connection != nullptr && t_connection->authenticated;
}

httplib::Server::HandlerResponse GuardedServer::Guard(const httplib::Request& req,
                                                      httplib::Response& res) {
  // The head has arrived: the body (if any) has body_timeout_s from now.
  if (t_connection != nullptr) t_connection->deadline = SteadyAfter(limits_.body_timeout_s);
  const bool body_route =
      req.method == "POST" &&
      std::any_of(body_routes_.begin(), body_routes_.end(),
                  [&](const std::regex& r) { return std::regex_match(req.path, r); });
  const bool chunked = req.has_header("Transfer-Encoding");
  if (chunked && (!body_route || !limits_.chunked_bodies)) {
    // cpp-httplib reads a chunked body for a route without a reader whole into memory, whatever
    // its size (regression: chunked_body_past_max_body_bytes).
    CloseAfterAnswer(res);
    SendError(req, res, 411, "INVALID_ARGUMENT",
              ChunkedBodyRefusal(limits_.max_body_bytes, limits_.name));
    return HandlerResponse::Handled;
  }
  const std::string encoding = Lower(req.get_header_value("Content-Encoding"));
  if (!body_route && !encoding.empty() && encoding != "identity") {
    // cpp-httplib decodes such a body whole into memory, whatever it inflates to (regression:
    // gzip_body_past_max_body_bytes).
    CloseAfterAnswer(res);
    SendError(req, res, 415, "INVALID_ARGUMENT",
              fmt::format("an encoded body (Content-Encoding '{}') is not accepted here: this "
                          "route takes no body",
                          OneLine(req.get_header_value("Content-Encoding"))));
    return HandlerResponse::Handled;
  }
  // A body that no reader will take off the connection (a route that takes none, or a request
  // the head handler answers first: a 401) would be parsed as the next request, a request
  // smuggled in a body (regression request_body_run_as_the_next_request): the connection closes
  // after the answer instead.
  const std::string length = req.get_header_value("Content-Length");
  const bool has_body =
      chunked || (!length.empty() && length.find_first_not_of('0') != std::string::npos);
  if (has_body && !body_route) CloseAfterAnswer(res);
  if (head_handler_) {
    const HandlerResponse r = head_handler_(req, res);
    if (r == HandlerResponse::Handled && has_body) CloseAfterAnswer(res);
    return r;
  }
  return HandlerResponse::Unhandled;
}

void GuardedServer::PostBody(const std::string& pattern, BodyHandler handler) {
  body_routes_.emplace_back(pattern);
  Post(pattern, [this, handler = std::move(handler)](const httplib::Request& req,
                                                     httplib::Response& res,
                                                     const httplib::ContentReader& reader) {
    // A request whose body cannot be read as sent is refused before anything is done, and its
    // connection closed (what follows is no request boundary).
    auto refuse = [&](int status, std::string_view code, const std::string& why) {
      CloseAfterAnswer(res);
      SendError(req, res, status, code, why);
    };
    auto malformed = [&](const std::string& why) {
      refuse(400, "INVALID_ARGUMENT", "malformed HTTP request: " + why);
    };
    const size_t max = limits_.max_body_bytes;
    // Only the chunked coding alone, which cpp-httplib reads (any case). Another coding, or
    // chunked not last, was read as a body without a length, to the connection's end, and
    // carried out (regression: transfer_coding_besides_chunked); RFC 9112 §6.1 has a server
    // answer 501 to a coding it does not know.
    if (req.get_header_value_count("Transfer-Encoding") > 1) {
      return malformed("more than one Transfer-Encoding header");
    }
    const std::string coding = req.get_header_value("Transfer-Encoding");
    if (req.has_header("Transfer-Encoding") && Lower(coding) != "chunked") {
      return refuse(
          501, "INVALID_ARGUMENT",
          fmt::format("Transfer-Encoding '{}' is not supported (chunked only)", OneLine(coding)));
    }
    const bool chunked = req.has_header("Transfer-Encoding");
    // cpp-httplib reads a multipart/form-data body only for a handler that takes its parts
    // (regression: multipart_body_was_a_500). Every body here is JSON.
    if (Lower(req.get_header_value("Content-Type")).starts_with("multipart/")) {
      return refuse(415, "INVALID_ARGUMENT",
                    fmt::format("Content-Type '{}' is not supported (a JSON body)",
                                OneLine(req.get_header_value("Content-Type"))));
    }
    if (req.get_header_value_count("Content-Length") > 1) {
      return malformed("more than one Content-Length header");
    }
    const std::string length = req.get_header_value("Content-Length");
    // Both framings: a proxy in front may read the other one (request smuggling; RFC 9112 §6.3
    // has the server close the connection after such a request).
    if (!length.empty() && chunked) {
      return malformed("both Content-Length and Transfer-Encoding headers");
    }
    // What cpp-httplib decodes as it was built (gzip and deflate with zlib, br with brotli); any
    // other coding failed as a body cut short (regression: unsupported_content_encoding).
    const std::string encoding = Lower(req.get_header_value("Content-Encoding"));
    if (!encoding.empty() && !DecodedContentEncoding(encoding)) {
      return refuse(415, "INVALID_ARGUMENT",
                    fmt::format("Content-Encoding '{}' is not supported ({} or none)",
                                OneLine(req.get_header_value("Content-Encoding")),
                                DecodedContentEncodings()));
    }
    if (length.empty() && !chunked) {
      // Without a length the body would end only when the client closes or times out.
      return malformed(
          "a POST needs a Content-Length (Content-Length: 0 when it has no body) or a chunked "
          "body");
    }
    bool too_large = false;
    if (!length.empty()) {
      size_t n = 0;
      auto [p, ec] = std::from_chars(length.data(), length.data() + length.size(), n);
      if (p != length.data() + length.size() ||
          (ec != std::errc() && ec != std::errc::result_out_of_range)) {
        return malformed(
            fmt::format("Content-Length '{}' is not a number of bytes", OneLine(length)));
      }
      too_large = ec == std::errc::result_out_of_range || n > max;
    }
    std::string body;
    bool complete = true;
    if (!too_large) {
      // The reader hands over the body as decoded (Content-Encoding): the bound applies to what
      // is kept, so a small compressed body that inflates past it stops here.
      complete = reader([&](const char* data, size_t n) {
        if (body.size() + n > max) {
          too_large = true;
          return false;
        }
        body.append(data, n);
        return true;
      });
    }
    if (too_large) {
      return refuse(
          413, "RESOURCE_EXHAUSTED",
          fmt::format("request body larger than max_body_bytes ({} bytes{})", max,
                      !encoding.empty() && encoding != "identity" ? ", once decoded" : ""));
    }
    if (!complete && !encoding.empty() && encoding != "identity") {
      // A coded body that did not decode: bad data (most often) or cut short; the bytes counted
      // are decoded ones, never comparable with the coded Content-Length (a trial read "0 bytes of
      // Content-Length 7" of a body that had arrived whole).
      return malformed(fmt::format(
          "the body is not valid {} data, or did not arrive in full (within body_timeout_s in "
          "all, request_timeout_s per read; {} bytes decoded)",
          encoding, body.size()));
    }
    if (!complete) {
      // Cut short (the body deadline, a closed connection): never carried out.
      return malformed(fmt::format(
          "the body did not arrive in full (within body_timeout_s in all, request_timeout_s per "
          "read; {} bytes{}){}",
          body.size(), length.empty() ? "" : fmt::format(" of Content-Length {}", length),
          chunked ? ", or its chunked framing is invalid" : ""));
    }
    handler(req, res, body);
  });
}

std::unique_ptr<ConnectionIo> GuardedServer::OpenConnection(int fd, SteadyTime /*deadline*/) {
  return std::make_unique<SocketIo>(fd);
}

// Overrides httplib's (a private virtual, so overridable): one connection, as long as it is kept
// alive.
bool GuardedServer::process_and_close_socket(socket_t sock) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  int port = 0;
  const std::string peer = ::getpeername(sock, reinterpret_cast<sockaddr*>(&a), &len) == 0
                               ? AddressText(a, &port)
                               : std::string("?");
  ServedConnection conn;
  conn.ticket = gate_.Admit(sock, peer);
  bool ret = false;
  if (conn.ticket == 0) {
    if (plain_http()) {
      // With a JSON error body, as every error has (regression: busy_503_without_body).
      const std::string body =
          error_body_(nullptr, "UNAVAILABLE",
                      fmt::format("too many connections from {} (max_connections_per_peer {}), "
                                  "all authenticated; close idle ones or retry later",
                                  OneLine(peer), limits_.max_connections_per_peer)) +
          "\n";
      const std::string busy = fmt::format(
          "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: "
          "application/json\r\nRetry-After: 1\r\nContent-Length: {}\r\n\r\n{}",
          body.size(), body);
      (void)::send(sock, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      // Read what already came (a close with unread data would reset the connection and could
      // lose the answer), without waiting for more.
      ::shutdown(sock, SHUT_WR);
      char sink[4096];
      while (::recv(sock, sink, sizeof sink, MSG_DONTWAIT) > 0) {
      }
    }
  } else {
    conn.deadline = SteadyAfter(limits_.header_timeout_s);
    std::unique_ptr<ConnectionIo> io = OpenConnection(sock, conn.deadline);
    if (io != nullptr) {
      if (io->authenticated() && gate_.Authenticated(conn.ticket)) conn.authenticated = true;
      t_connection = &conn;
      DeadlineStream strm(sock, io.get(), limits_.request_timeout_s, limits_.request_timeout_s,
                          &conn);
      for (int64_t n = 0; n < kMaxRequestsPerConnection; ++n) {
        // Idle between requests: at most idle_timeout_s, and not past a stop.
        if (!strm.buffered() && !WaitIdle(sock)) break;
        if (n > 0) conn.deadline = SteadyAfter(limits_.header_timeout_s);
        bool closed = false;
        ret =
            process_request(strm, n + 1 == kMaxRequestsPerConnection || !is_running() || stopping(),
                            closed, nullptr);
        if (!ret || closed || conn.close) break;
      }
      t_connection = nullptr;
      io.reset();  // a TLS connection says goodbye while its socket is open
    }
    gate_.Release(conn.ticket);
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ret;
}

// Whether a request begins within idle_timeout_s (false once the server stops, within 0.1 s).
bool GuardedServer::WaitIdle(int sock) {
  const SteadyTime end = SteadyAfter(std::max(0.001, limits_.idle_timeout_s));
  while (is_running() && !stopping()) {
    const SteadyTime now = std::chrono::steady_clock::now();
    if (now >= end) return false;
    if (WaitUntil(sock, POLLIN, std::min(end, SteadyAfter(0.1)))) return true;
  }
  return false;
}

}  // namespace migsched
