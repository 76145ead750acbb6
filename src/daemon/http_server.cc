#include "daemon/http_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <thread>
#include <vector>

#include "core/text.h"
#include "daemon/json_text.h"
#include "nodeapi/guarded_server.h"
#include "nodeapi/node_client.h"
#include "nodeapi/request_json.h"
#include "nodeapi/token.h"

namespace migsched {
namespace {

using ojson = nlohmann::ordered_json;

constexpr const char* kJson = "application/json";
constexpr double kUnauthorizedLogEveryS = 10;

void SendJson(httplib::Response& res, int status, const ojson& j) {
  res.status = status;
  res.set_content(JsonText(j) + "\n", kJson);
}

void SendError(httplib::Response& res, const Status& st) {
  res.status = HttpStatusFor(st.code());
  res.set_content(ErrorBody(st) + "\n", kJson);
}

// The Idempotency-Key header ("" when none): at most 256 bytes (docs/api.md "Retrying").
StatusOr<std::string> IdempotencyKey(const httplib::Request& req) {
  // Two keys: the first was used silently (regression: duplicate_idempotency_key).
  if (req.get_header_value_count("Idempotency-Key") > 1) {
    return InvalidArgumentError("more than one Idempotency-Key header; give one");
  }
  std::string key = req.get_header_value("Idempotency-Key");
  if (key.size() > 256) {
    return InvalidArgumentError(
        fmt::format("Idempotency-Key is {} bytes long; at most 256 are allowed", key.size()));
  }
  return key;
}

// A positive decimal integer (a job or allocation id).
StatusOr<DaemonJobId> ParseId(const std::string& s, std::string_view what = "job id") {
  DaemonJobId id = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || id <= 0) {
    return InvalidArgumentError(fmt::format("{} '{}' is not a positive integer", what, s));
  }
  return id;
}

// Reads up to `max` bytes of `path` from `offset`; empty if none (or no file yet).
std::string ReadChunk(const std::filesystem::path& path, size_t offset, size_t max) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(static_cast<std::streamoff>(offset));
  if (!in) return {};
  std::string buf(max, '\0');
  in.read(buf.data(), static_cast<std::streamsize>(max));
  buf.resize(static_cast<size_t>(in.gcount()));
  return buf;
}

// The query of GET /v1/jobs and /v1/allocations.
StatusOr<JobQuery> ParseQuery(const httplib::Request& req) {
  JobQuery q;
  if (req.has_param("state")) {
    ASSIGN_OR_RETURN(q.state, ParseJobState(req.get_param_value("state")));
  }
  if (req.has_param("kind")) {
    ASSIGN_OR_RETURN(q.kind, ParseJobKind(req.get_param_value("kind")));
  }
  q.owner_prefix = req.get_param_value("owner_prefix");
  if (req.has_param("after")) {
    const std::string a = req.get_param_value("after");
    if (a != "0") {
      ASSIGN_OR_RETURN(q.after, ParseId(a, "parameter 'after'"));
    }
  }
  if (req.has_param("limit")) {
    const std::string l = req.get_param_value("limit");
    int v = 0;
    auto [p, ec] = std::from_chars(l.data(), l.data() + l.size(), v);
    if (l.empty() || ec != std::errc() || p != l.data() + l.size() || v < 1 || v > 1000) {
      return InvalidArgumentError(
          fmt::format("parameter 'limit' must be an integer from 1 to 1000, got '{}'", l));
    }
    q.limit = v;
  }
  return q;
}

// The query parameters of an endpoint, as it reads them.
using QueryParams = std::vector<std::string>;

// What GET /v1/jobs and /v1/allocations read (ParseQuery).
const QueryParams kJobQueryParams = {"after", "kind", "limit", "owner_prefix", "state"};

// How many times each query parameter of `req` is given, by decoded name: the request target's
// query read as httplib reads its params (split at '&', the name before any '=', trimmed and
// decoded, an empty one skipped), but counting every repeat, where httplib keeps a pair given
// twice with the same text (?limit=5&limit=5) once.
std::map<std::string, size_t> QueryParamCounts(const httplib::Request& req) {
  std::map<std::string, size_t> counts;
  const size_t q = req.target.find('?');
  if (q == std::string::npos) return counts;
  const std::string query = req.target.substr(q + 1);
  httplib::detail::split(query.data(), query.data() + query.size(), '&',
                         [&](const char* b, const char* e) {
                           std::string name;
                           httplib::detail::split(b, e, '=', [&](const char* b2, const char* e2) {
                             if (name.empty()) name.assign(b2, e2);
                           });
                           if (!name.empty()) ++counts[httplib::detail::decode_url(name, true)];
                         });
  return counts;
}

// A POST that takes no body (`what`, e.g. "POST /v1/scheduler/pause"): none, or an empty JSON
// object (what `curl -d '{}'` sends); anything else is refused, as an unknown query parameter is
// (regression: body_of_a_bodiless_post_ignored: `{"x": 1}` was answered 200 and dropped).
Status CheckNoBody(const std::string& body, std::string_view what) {
  if (body.find_first_not_of(" \t\r\n") == std::string::npos) return Status();
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded() && j.is_object() && j.empty()) return Status();
  return InvalidArgumentError(fmt::format("{} takes no body (send none, or {{}})", what));
}

// OK, or kInvalidArgument naming the first parameter of `req` (in name order) that is not in
// `known`, and the known ones: an unknown parameter is refused, not ignored (a misspelt
// ?limt=5 would be served as if no limit were given); or naming the first known one given more
// than once (?limit=5&limit=6, ?owner=a&owner=b: only the first would be read, silently; the
// same value twice is refused alike). `known` is sorted.
Status CheckQueryParams(const httplib::Request& req, const QueryParams& known) {
  for (const auto& [name, n] : QueryParamCounts(req)) {
    if (std::find(known.begin(), known.end(), name) != known.end()) {
      if (n == 1) continue;
      return InvalidArgumentError(
          fmt::format("query parameter '{}' is given {} for {} {}; keep one", name,
                      n == 2 ? "twice" : fmt::format("{} times", n), req.method, req.path));
    }
    std::string names;
    for (const std::string& k : known) names += (names.empty() ? "" : ", ") + k;
    return InvalidArgumentError(
        known.empty() ? fmt::format("unknown query parameter '{}': {} {} takes none", name,
                                    req.method, req.path)
                      : fmt::format("unknown query parameter '{}' for {} {} (known: {})", name,
                                    req.method, req.path, names));
  }
  return Status::Ok();
}

// The Location of a resource a POST made: `collection` ("/v1/jobs") and its key as one path
// segment, percent-encoded as NodeClient sends one (nodeapi/node_client.h UrlEncode: all but
// letters, digits, - _ . ~ and :). A reservation's owner key may hold any character but control
// ones ("a/b c" is /v1/reservations/a%2Fb%20c, which GET /v1/reservations/{owner} reads back as
// "a/b c"); a job's or allocation's id is decimal digits, which encoding leaves alone.
std::string LocationOf(std::string_view collection, const std::string& key) {
  return fmt::format("{}/{}", collection, UrlEncode(key));
}

// The routes, for 405 answers: a pattern and the methods it takes.
struct Route {
  std::regex pattern;
  std::string allow;  // e.g. "GET, DELETE"
};

}  // namespace

bool IsLoopbackHost(const std::string& host) {
  std::string h = host;
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (h == "localhost" || h == "::1") return true;
  in_addr a4{};
  if (inet_pton(AF_INET, h.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  return false;
}

// The daemon's server: a GuardedServer (nodeapi/guarded_server.h) with the daemon's error bodies.
class ApiServer : public GuardedServer {
 public:
  explicit ApiServer(const HttpServerOptions& o)
      : GuardedServer(static_cast<const ListenerLimits&>(o),
                      [](const httplib::Request*, std::string_view code, std::string_view message) {
                        return ErrorBody(code, message);
                      }) {}
};

class HttpServer::Impl {
 public:
  Impl(NodeApi* api, HttpServerOptions options)
      : api_(api), opt_(std::move(options)), server_(opt_) {
    server_.set_head_handler([this](const httplib::Request& req, httplib::Response& res) {
      return Authorize(req, res);
    });
    server_.set_error_handler(httplib::Server::HandlerWithResponse(
        [this](const httplib::Request& req, httplib::Response& res) { return OnError(req, res); }));
    server_.set_exception_handler(
        [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
          std::string what = "unknown exception";
          try {
            if (ep) std::rethrow_exception(ep);
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          spdlog::error("internal error serving {} {}: {}", OneLine(req.method), OneLine(req.path),
                        what);
          SendError(res, InternalError("internal error: " + what));
        });
    server_.set_logger([](const httplib::Request& req, const httplib::Response& res) {
      spdlog::debug("{} {} from {}:{} -> {}", OneLine(req.method), OneLine(req.path),
                    req.remote_addr, req.remote_port, res.status);
    });
    Routes();
  }

  Status Bind(const std::string& listen) {
    if (opt_.token.empty()) return InvalidArgumentError("the API token must not be empty");
    const size_t colon = listen.rfind(':');
    int port = -1;
    if (colon != std::string::npos && colon > 0) {
      const std::string p = listen.substr(colon + 1);
      auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
      if (p.empty() || ec != std::errc() || ptr != p.data() + p.size()) port = -1;
    }
    if (port < 0 || port > 65535) {
      return InvalidArgumentError(fmt::format("listen address '{}' is not HOST:PORT", listen));
    }
    std::string host = listen.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);  // [::1]:7070
    }
    auto bound = server_.BindHostPort(host, port);
    if (!bound.ok()) {
      return UnavailableError(fmt::format(
          "cannot listen on {} (address in use, or not an address of this host)", listen));
    }
    port_ = *bound;
    bound_ = true;
    return Status();
  }

  Status Serve() {
    if (!bound_) return FailedPreconditionError("HttpServer::Serve before a successful Bind");
    if (stopping_) return Status();
    if (!server_.listen_after_bind() && !stopping_) {
      return UnavailableError("the HTTP server stopped accepting connections");
    }
    return Status();
  }

  void Stop() {
    stopping_ = true;
    server_.stop();
  }

  int port() const { return port_; }

 private:
  httplib::Server::HandlerResponse Authorize(const httplib::Request& req, httplib::Response& res) {
    if (req.path == "/healthz") return httplib::Server::HandlerResponse::Unhandled;
    // Two Authorization headers: the first was used, so a good one after a bad one was refused
    // and a bad one after a good one let in (regression: duplicate_authorization_header).
    if (req.get_header_value_count("Authorization") > 1) {
      CloseAfterAnswer(res);
      SendError(res, InvalidArgumentError(
                         "malformed HTTP request: more than one Authorization header; give one"));
      return httplib::Server::HandlerResponse::Handled;
    }
    const std::string auth = req.get_header_value("Authorization");
    // The scheme is case-insensitive (RFC 7235 section 2.1; regression: bearer_scheme_case).
    bool bearer = auth.size() > 7 && auth[6] == ' ';
    for (size_t i = 0; bearer && i < 6; ++i) {
      bearer = std::tolower(static_cast<unsigned char>(auth[i])) == "bearer"[i];
    }
    if (bearer && TokensEqual(std::string_view(auth).substr(7), opt_.token)) {
      if (!server_.Authenticate()) {
        // Evicted while its request was read (a flood of newer unauthenticated connections): its
        // socket is shut down and no answer can reach the client, so nothing is carried out; the
        // client sees the connection drop and may send it again.
        CloseAfterAnswer(res);
        SendError(res, UnavailableError("connection evicted before its request was read"));
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    }
    const std::string why = auth.empty() ? "no Authorization header"
                            : bearer     ? "wrong bearer token"
                                         : "an Authorization header that is not 'Bearer <token>'";
    LogRefusal(fmt::format("{} {} from {}:{}: {}", OneLine(req.method), OneLine(req.path),
                           req.remote_addr, req.remote_port, why));
    res.status = 401;
    res.set_header("WWW-Authenticate", "Bearer realm=\"migsched\"");
    res.set_content(
        ErrorBody("UNAUTHENTICATED",
                  auth.empty() ? "missing bearer token (Authorization: Bearer <token>)"
                  : bearer     ? "wrong bearer token"
                               : "the Authorization header is not a bearer token (Authorization: "
                                 "Bearer <token>)") +
            "\n",
        kJson);
    return httplib::Server::HandlerResponse::Handled;
  }

  // One warning per kUnauthorizedLogEveryS with the count of the others (a
  // client hammering the API without a token cannot flood the log).
  void LogRefusal(const std::string& what) {
    std::lock_guard<std::mutex> lock(refusal_mu_);
    const int64_t now = opt_.clock->NowNanos();
    if (refusals_logged_ &&
        static_cast<double>(now - last_refusal_log_) / 1e9 < kUnauthorizedLogEveryS) {
      ++refusals_suppressed_;
      return;
    }
    if (refusals_suppressed_ > 0) {
      spdlog::warn("refused {}; and {} more request(s) without a valid token in the last {} s",
                   what, refusals_suppressed_, kUnauthorizedLogEveryS);
    } else {
      spdlog::warn("refused {}", what);
    }
    refusals_suppressed_ = 0;
    refusals_logged_ = true;
    last_refusal_log_ = now;
  }

  // Gives every error without a body (httplib's own 404/413/400...) the JSON error form.
  httplib::Server::HandlerResponse OnError(const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    // httplib could not read the request (its head, its length, its body): what follows on the
    // connection is not a request boundary either, so the connection ends here.
    if (res.status == 400 || res.status == 411 || res.status == 413 || res.status == 414 ||
        res.status == 431) {
      CloseAfterAnswer(res);
    }
    std::string code = "INVALID_ARGUMENT";
    std::string message;
    switch (res.status) {
      case 404:
        code = "NOT_FOUND";
        message = fmt::format("no such endpoint: {} {}", req.method, req.path);
        break;
      case 413:
        code = "RESOURCE_EXHAUSTED";
        message = BodyTooLarge();
        break;
      case 400:
        message = "malformed HTTP request";
        break;
      case 414:
        code = "RESOURCE_EXHAUSTED";
        message = RequestLineTooLong();
        break;
      default:
        code = res.status >= 500 ? "INTERNAL" : "INVALID_ARGUMENT";
        message = fmt::format("HTTP status {}", res.status);
    }
    res.set_content(ErrorBody(code, message) + "\n", kJson);
    return httplib::Server::HandlerResponse::Handled;
  }

  // The connection ends after this answer.
  static void CloseAfterAnswer(httplib::Response& res) { GuardedServer::CloseAfterAnswer(res); }

  // httplib answers 414 to a request line (method, URI and HTTP version, with its CRLF) over
  // CPPHTTPLIB_REQUEST_URI_MAX_LENGTH bytes (8192 unless httplib was built with another limit).
  static std::string RequestLineTooLong() {
    return fmt::format(
        "request URI too long: the request line (method, URI and HTTP version) may be at most {} "
        "bytes",
        CPPHTTPLIB_REQUEST_URI_MAX_LENGTH);
  }

  std::string BodyTooLarge() const {
    return fmt::format("request body larger than max_body_bytes ({} bytes)", opt_.max_body_bytes);
  }

  // A POST whose body is read under the limits (GuardedServer::PostBody: its size, as sent and
  // as decoded, its framing and coding), then its query parameters checked.
  using BodyHandler =
      std::function<void(const httplib::Request&, httplib::Response&, const std::string&)>;
  // `params`: the query parameters it takes (any other is refused, CheckQueryParams).
  void PostWithBody(const std::string& pattern, std::string allow, QueryParams params,
                    BodyHandler handler) {
    routes_.push_back({std::regex(pattern), std::move(allow)});
    server_.PostBody(pattern, [handler, params](const httplib::Request& req, httplib::Response& res,
                                                const std::string& body) {
      if (Status st = CheckQueryParams(req, params); !st.ok()) return SendError(res, st);
      handler(req, res, body);
    });
  }

  // `params`: as PostWithBody's.
  void Get(const std::string& pattern, std::string allow, QueryParams params,
           httplib::Server::Handler h) {
    routes_.push_back({std::regex(pattern), std::move(allow)});
    server_.Get(pattern, Checked(std::move(params), std::move(h)));
  }
  void Delete(const std::string& pattern, std::string allow, QueryParams params,
              httplib::Server::Handler h) {
    routes_.push_back({std::regex(pattern), std::move(allow)});
    server_.Delete(pattern, Checked(std::move(params), std::move(h)));
  }
  // `h`, called once the request's query parameters are among `params`.
  static httplib::Server::Handler Checked(QueryParams params, httplib::Server::Handler h) {
    return [params = std::move(params), h = std::move(h)](const httplib::Request& req,
                                                          httplib::Response& res) {
      if (Status st = CheckQueryParams(req, params); !st.ok()) return SendError(res, st);
      h(req, res);
    };
  }

  // 405 with Allow for a known path, 404 otherwise.
  void NoSuchMethod(const httplib::Request& req, httplib::Response& res) {
    for (const Route& r : routes_) {
      if (std::regex_match(req.path, r.pattern)) {
        res.set_header("Allow", r.allow);
        res.status = 405;
        res.set_content(ErrorBody("INVALID_ARGUMENT",
                                  fmt::format("method {} is not allowed on {} (allowed: {})",
                                              req.method, req.path, r.allow)) +
                            "\n",
                        kJson);
        return;
      }
    }
    res.status = 404;
    res.set_content(
        ErrorBody("NOT_FOUND", fmt::format("no such endpoint: {} {}", req.method, req.path)) + "\n",
        kJson);
  }

  void Routes() {
    server_.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
      Status h = api_->Health();
      SendJson(res, 200,
               h.ok() ? ojson{{"status", "ok"}}
                      : ojson{{"status", "degraded"}, {"reason", h.message()}});
    });
    // ---- jobs ----
    PostWithBody("/v1/jobs", "GET, POST", {},
                 [this](const httplib::Request& req, httplib::Response& res, const std::string& b) {
                   auto request = ParseJobRequest(b);
                   if (!request.ok()) return SendError(res, request.status());
                   auto key = IdempotencyKey(req);
                   if (!key.ok()) return SendError(res, key.status());
                   auto result = api_->Submit(*request, *key);
                   if (!result.ok()) return SendError(res, result.status());
                   res.set_header("Location",
                                  LocationOf("/v1/jobs", std::to_string(result->record.id)));
                   if (result->replayed) res.set_header("Idempotent-Replayed", "true");
                   SendJson(res, result->replayed ? 200 : 201, JobRecordToJson(result->record));
                 });
    Get("/v1/jobs", "GET, POST", kJobQueryParams,
        [this](const httplib::Request& req, httplib::Response& res) {
          auto q = ParseQuery(req);
          if (!q.ok()) return SendError(res, q.status());
          SendJson(res, 200, JobPageToJson(api_->ListJobs(*q)));
        });
    Get(R"(/v1/jobs/([^/]+))", "GET, DELETE", {},
        [this](const httplib::Request& req, httplib::Response& res) {
          auto id = ParseId(req.matches[1]);
          if (!id.ok()) return SendError(res, id.status());
          auto record = api_->GetJob(*id);
          if (!record.ok()) return SendError(res, record.status());
          SendJson(res, 200, JobRecordToJson(*record));
        });
    Delete(R"(/v1/jobs/([^/]+))", "GET, DELETE", {},
           [this](const httplib::Request& req, httplib::Response& res) {
             auto id = ParseId(req.matches[1]);
             if (!id.ok()) return SendError(res, id.status());
             auto record = api_->Cancel(*id);
             if (!record.ok()) return SendError(res, record.status());
             SendJson(res, 200, JobRecordToJson(*record));
           });
    Get(R"(/v1/jobs/([^/]+)/log)", "GET", {"follow"},
        [this](const httplib::Request& req, httplib::Response& res) { Log(req, res); });
    PostWithBody("/v1/plan", "POST", {},
                 [this](const httplib::Request&, httplib::Response& res, const std::string& b) {
                   auto request = ParseJobRequest(b);
                   if (!request.ok()) return SendError(res, request.status());
                   auto plan = api_->PreviewPlan(*request);
                   if (!plan.ok()) return SendError(res, plan.status());
                   SendJson(res, 200, PlanPreviewToJson(*plan));
                 });
    // ---- the node ----
    Get("/v1/node", "GET", {}, [this](const httplib::Request&, httplib::Response& res) {
      SendJson(res, 200, NodeViewToJson(api_->Node()));
    });
    Get("/v1/gpus", "GET", {}, [this](const httplib::Request&, httplib::Response& res) {
      ojson gpus = ojson::array();
      for (const GpuView& g : api_->Gpus()) gpus.push_back(GpuViewToJson(g));
      SendJson(res, 200, ojson{{"gpus", std::move(gpus)}});
    });
    for (const char* verb : {"pause", "resume"}) {
      const bool pause = std::string_view(verb) == "pause";
      PostWithBody(
          fmt::format("/v1/scheduler/{}", verb), "POST", {},
          [this, pause](const httplib::Request&, httplib::Response& res, const std::string& b) {
            if (Status st = CheckNoBody(
                    b, pause ? "POST /v1/scheduler/pause" : "POST /v1/scheduler/resume");
                !st.ok()) {
              return SendError(res, st);
            }
            if (Status st = pause ? api_->Pause() : api_->Resume(); !st.ok()) {
              return SendError(res, st);
            }
            spdlog::info("scheduler {} through the API", pause ? "paused" : "resumed");
            SendJson(res, 200, ojson{{"paused", api_->paused()}});
          });
    }
    PostWithBody(R"(/v1/gpus/([^/]+)/(drain|undrain))", "POST", {},
                 [this](const httplib::Request& req, httplib::Response& res, const std::string& b) {
                   const std::string s = req.matches[1];
                   const bool drain = req.matches[2] == "drain";
                   if (Status st = CheckNoBody(
                           b, fmt::format("POST /v1/gpus/{}/{}", s, drain ? "drain" : "undrain"));
                       !st.ok()) {
                     return SendError(res, st);
                   }
                   int gpu = -1;
                   auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), gpu);
                   if (ec != std::errc() || p != s.data() + s.size() || gpu < 0) {
                     return SendError(res, InvalidArgumentError(fmt::format(
                                               "GPU index '{}' is not a non-negative integer", s)));
                   }
                   const NvmlIndex index = NvmlIndex::Of(gpu);
                   if (Status st = drain ? api_->Drain(index) : api_->Undrain(index); !st.ok()) {
                     return SendError(res, st);
                   }
                   spdlog::info("GPU {} {} through the API", gpu, drain ? "drained" : "undrained");
                   SendJson(res, 200, ojson{{"gpu", gpu}, {"draining", drain}});
                 });
    // ---- reservations ----
    PostWithBody("/v1/reservations", "GET, POST", {},
                 [this](const httplib::Request&, httplib::Response& res, const std::string& b) {
                   auto request = ParseReservationRequest(b);
                   if (!request.ok()) return SendError(res, request.status());
                   auto r = api_->Reserve(*request);
                   if (!r.ok()) return SendError(res, r.status());
                   res.set_header("Location",
                                  LocationOf("/v1/reservations", r->reservation.record.owner));
                   SendJson(res, r->created ? 201 : 200, ReservationViewToJson(r->reservation));
                 });
    Get("/v1/reservations", "GET, POST", {"prefix"},
        [this](const httplib::Request& req, httplib::Response& res) {
          ojson all = ojson::array();
          for (const ReservationView& r : api_->ListReservations(req.get_param_value("prefix"))) {
            all.push_back(ReservationViewToJson(r));
          }
          SendJson(res, 200, ojson{{"reservations", std::move(all)}});
        });
    Get(R"(/v1/reservations/(.+))", "GET, DELETE", {},
        [this](const httplib::Request& req, httplib::Response& res) {
          auto r = api_->GetReservation(req.matches[1]);
          if (!r.ok()) return SendError(res, r.status());
          SendJson(res, 200, ReservationViewToJson(*r));
        });
    Delete(R"(/v1/reservations/(.+))", "GET, DELETE", {},
           [this](const httplib::Request& req, httplib::Response& res) {
             if (Status st = api_->ReleaseReservation(req.matches[1]); !st.ok()) {
               return SendError(res, st);
             }
             res.status = 204;
           });
    // ---- allocations ----
    PostWithBody("/v1/allocations", "GET, POST, DELETE", {},
                 [this](const httplib::Request& req, httplib::Response& res, const std::string& b) {
                   auto request = ParseAllocationRequest(b);
                   if (!request.ok()) return SendError(res, request.status());
                   auto key = IdempotencyKey(req);
                   if (!key.ok()) return SendError(res, key.status());
                   auto result = api_->Allocate(*request, *key);
                   if (!result.ok()) return SendError(res, result.status());
                   res.set_header("Location",
                                  LocationOf("/v1/allocations", std::to_string(result->record.id)));
                   if (result->replayed) res.set_header("Idempotent-Replayed", "true");
                   SendJson(res, result->replayed ? 200 : 201, JobRecordToJson(result->record));
                 });
    Get("/v1/allocations", "GET, POST, DELETE", kJobQueryParams,
        [this](const httplib::Request& req, httplib::Response& res) {
          auto q = ParseQuery(req);
          if (!q.ok()) return SendError(res, q.status());
          // It lists allocations only (regression: trial_allocations_kind_job_ignored: kind=job
          // answered the allocations as if it had not been given).
          if (q->kind && *q->kind != JobKind::kAllocation) {
            return SendError(
                res, InvalidArgumentError("GET /v1/allocations lists allocations only (kind "
                                          "allocation); GET /v1/jobs?kind=job lists the jobs"));
          }
          q->kind = JobKind::kAllocation;
          SendJson(res, 200, JobPageToJson(api_->ListJobs(*q), "allocations"));
        });
    Delete("/v1/allocations", "GET, POST, DELETE", {"owner"},
           [this](const httplib::Request& req, httplib::Response& res) {
             const std::string owner = req.get_param_value("owner");
             if (owner.empty()) {
               return SendError(
                   res, InvalidArgumentError("DELETE /v1/allocations needs ?owner=<owner key>"));
             }
             auto released = api_->ReleaseAllocationsOf(owner);
             if (!released.ok()) return SendError(res, released.status());
             ojson all = ojson::array();
             for (const DaemonJobRecord& r : *released) all.push_back(JobRecordToJson(r));
             SendJson(res, 200, ojson{{"released", std::move(all)}});
           });
    Get(R"(/v1/allocations/([^/]+))", "GET, DELETE", {},
        [this](const httplib::Request& req, httplib::Response& res) {
          auto id = ParseId(req.matches[1], "allocation id");
          if (!id.ok()) return SendError(res, id.status());
          auto r = api_->GetJob(*id);
          if (!r.ok() || r->kind != JobKind::kAllocation) {
            return SendError(res, NotFoundError(fmt::format("no allocation {}", *id)));
          }
          SendJson(res, 200, JobRecordToJson(*r));
        });
    Delete(R"(/v1/allocations/([^/]+))", "GET, DELETE", {},
           [this](const httplib::Request& req, httplib::Response& res) {
             auto id = ParseId(req.matches[1], "allocation id");
             if (!id.ok()) return SendError(res, id.status());
             auto r = api_->ReleaseAllocation(*id);
             if (!r.ok()) return SendError(res, r.status());
             SendJson(res, 200, JobRecordToJson(*r));
           });
    Get("/metrics", "GET", {}, [this](const httplib::Request&, httplib::Response& res) {
      res.status = 200;
      res.set_content(RenderPrometheus(api_->Metrics()),
                      "text/plain; version=0.0.4; charset=utf-8");
    });
    // Methods a route does not take: 405 (or 404 for a path that is no route).
    auto none = [this](const httplib::Request& req, httplib::Response& res) {
      NoSuchMethod(req, res);
    };
    server_.Get(".*", none);
    server_.Post(".*", none);
    server_.Delete(".*", none);
    server_.Put(".*", none);
    server_.Patch(".*", none);
    server_.Options(".*", none);
  }

  void Log(const httplib::Request& req, httplib::Response& res) {
    const std::string follow = req.get_param_value("follow");
    // Checked as strictly as every other parameter (regression: follow_yes_read_as_no: "yes" and
    // "abc" answered the log so far without a word).
    if (req.has_param("follow") && follow != "0" && follow != "1" && follow != "false" &&
        follow != "true") {
      return SendError(res, InvalidArgumentError(fmt::format(
                                "query parameter 'follow' must be 1, true, 0 or false, got '{}'",
                                OneLine(follow))));
    }
    auto id = ParseId(req.matches[1]);
    if (!id.ok()) return SendError(res, id.status());
    auto record = api_->GetJob(*id);
    if (!record.ok()) return SendError(res, record.status());
    const std::filesystem::path path = api_->LogPath(*id);
    res.status = 200;
    // An allocation runs no process and has no output: following it waited until its release
    // (a trial's curl timed out); it answers at once, empty, as the log so far.
    if (record->kind == JobKind::kAllocation) {
      res.set_content("", "text/plain; charset=utf-8");
      return;
    }
    if (follow != "1" && follow != "true") {
      std::error_code ec;
      const uintmax_t size = std::filesystem::file_size(path, ec);
      if (ec || size == 0) {
        res.set_content("", "text/plain; charset=utf-8");
        return;
      }
      res.set_content_provider(static_cast<size_t>(size), "text/plain; charset=utf-8",
                               [path](size_t offset, size_t length, httplib::DataSink& sink) {
                                 const std::string chunk =
                                     ReadChunk(path, offset, std::min<size_t>(length, 1 << 16));
                                 if (chunk.empty()) return false;  // the file shrank: end it
                                 return sink.write(chunk.data(), chunk.size());
                               });
      return;
    }
    const DaemonJobId job = *id;
    const int poll_ms = opt_.follow_poll_ms > 0 ? opt_.follow_poll_ms : 100;
    res.set_chunked_content_provider(
        "text/plain; charset=utf-8",
        [this, path, job, poll_ms](size_t offset, httplib::DataSink& sink) {
          if (stopping_ || !sink.is_writable()) return false;
          // Was the job terminal before this read? Then what is read now is all there is.
          auto r = api_->GetJob(job);
          const bool terminal = !r.ok() || IsTerminal(r->state);
          const std::string chunk = ReadChunk(path, offset, 1 << 16);
          if (!chunk.empty()) return sink.write(chunk.data(), chunk.size());
          if (terminal) {
            sink.done();
            return true;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
          return true;
        });
  }

  NodeApi* api_;
  const HttpServerOptions opt_;
  ApiServer server_;
  std::vector<Route> routes_;
  std::atomic<bool> stopping_{false};
  bool bound_ = false;
  int port_ = 0;
  std::mutex refusal_mu_;
  bool refusals_logged_ = false;
  int64_t last_refusal_log_ = 0;  // Clock::NowNanos of the last warning
  int64_t refusals_suppressed_ = 0;
};

HttpServer::HttpServer(NodeApi* api, HttpServerOptions options)
    : impl_(std::make_unique<Impl>(api, std::move(options))) {}
HttpServer::~HttpServer() { impl_->Stop(); }
Status HttpServer::Bind(const std::string& listen) { return impl_->Bind(listen); }
int HttpServer::port() const { return impl_->port(); }
Status HttpServer::Serve() { return impl_->Serve(); }
void HttpServer::Stop() { impl_->Stop(); }

}  // namespace migsched
