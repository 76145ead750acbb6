#include "nodeapi/node_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <utility>

#include "io/scheduler_options_json.h"
#include "nodeapi/request_json.h"
#include "nodeapi/token.h"

namespace migsched {
namespace {

using json = nlohmann::json;

constexpr const char* kDefaultServer = "http://127.0.0.1:7070";
constexpr const char* kDefaultTokenFile = "/var/lib/migsched/token";

StatusCode CodeForHttp(int status) {
  switch (status) {
    case 400:
    case 405:
    case 431:  // request header fields too large (the daemon's INVALID_ARGUMENT)
      return StatusCode::kInvalidArgument;
    case 401:
      return StatusCode::kUnauthenticated;
    case 404:
      return StatusCode::kNotFound;
    case 409:
      return StatusCode::kFailedPrecondition;
    case 413:
    case 414:  // request line too long (the daemon's RESOURCE_EXHAUSTED)
    case 429:
      return StatusCode::kResourceExhausted;
    case 503:
      return StatusCode::kUnavailable;
    default:
      return StatusCode::kInternal;
  }
}

StatusOr<json> Decode(int status, const std::string& body) {
  json j = body.empty() ? json::object() : json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (status >= 200 && status < 300) {
    if (j.is_discarded()) return InternalError("the daemon answered with invalid JSON");
    return j;
  }
  std::string message = fmt::format("HTTP {}", status);
  if (j.is_object() && j.contains("error") && j["error"].is_object() &&
      j["error"].contains("message") && j["error"]["message"].is_string()) {
    message = j["error"]["message"].get<std::string>();
  }
  return Status(CodeForHttp(status), message);
}

// Runs `f` (which reads `j` with nlohmann's throwing accessors) and turns a
// throw into kInternal naming `what`.
template <typename T, typename F>
StatusOr<T> Read(std::string_view what, F f) {
  try {
    return f();
  } catch (const std::exception& e) {
    return InternalError(
        fmt::format("the daemon answered a {} this client cannot read: {}", what, e.what()));
  }
}

double TimeOf(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0;
}

std::string StrOr(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// An instance's holder: null or absent when idle, else a HolderKindName; a
// word this client does not know throws (Read reports it).
HolderKind HolderFromJson(const json& i) {
  const std::string word = StrOr(i, "holder");
  if (word.empty()) return HolderKind::kIdle;
  StatusOr<HolderKind> k = ParseHolderKind(word);
  if (!k.ok()) throw std::runtime_error(k.status().message());
  return *k;
}

JobInstance InstanceFromJson(const json& i) {
  JobInstance in;
  in.gpu = i.at("gpu").get<NvmlIndex>();
  in.profile = i.at("profile").get<std::string>();
  in.start = i.at("start").get<int>();
  in.size = i.at("size").get<int>();
  in.mig_uuid = StrOr(i, "mig_uuid");
  return in;
}

}  // namespace

std::string DefaultServer(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("MIGSCHED_SERVER");
  return env != nullptr && *env != '\0' ? env : kDefaultServer;
}

Status CheckDaemonUrl(std::string_view url) {
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError(fmt::format(
        "'{}' is not a daemon address: {}; expected http://HOST:PORT, e.g. http://127.0.0.1:7070",
        url, why));
  };
  std::string_view rest;
  if (url.starts_with("http://")) {
    rest = url.substr(7);
  } else if (url.starts_with("https://")) {
    rest = url.substr(8);
  } else {
    return bad("it does not start with http:// or https://");
  }
  if (rest.ends_with('/')) rest.remove_suffix(1);
  // The host: [an IPv6 address], or up to the port's colon.
  size_t host_end;
  if (rest.starts_with('[')) {
    host_end = rest.find(']');
    if (host_end == std::string_view::npos || host_end == 1) return bad("an unclosed or empty [");
    ++host_end;
  } else {
    host_end = rest.find_first_of(":/?#@");
    if (host_end == std::string_view::npos) host_end = rest.size();
    if (host_end == 0) return bad("it names no host");
  }
  std::string_view after = rest.substr(host_end);
  if (after.starts_with(':')) {
    const size_t port_end = after.find_first_of("/?#", 1);
    const std::string_view port =
        after.substr(1, port_end == std::string_view::npos ? std::string_view::npos : port_end - 1);
    int value = 0;
    const bool digits = !port.empty() && port.size() <= 5 &&
                        port.find_first_not_of("0123456789") == std::string_view::npos;
    if (digits) value = std::stoi(std::string(port));
    if (!digits || value < 1 || value > 65535) {
      return bad(fmt::format("port '{}' is not a number from 1 to 65535", port));
    }
    after = port_end == std::string_view::npos ? std::string_view() : after.substr(port_end);
  }
  if (!after.empty()) {
    if (after.starts_with('@')) return bad("user information (before '@') is not taken");
    return bad(
        fmt::format("it has a path or query ('{}'): the client adds the API's paths", after));
  }
  return Status::Ok();
}

std::string DefaultTokenFile(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("MIGSCHED_TOKEN_FILE");
  return env != nullptr && *env != '\0' ? env : kDefaultTokenFile;
}

std::string UrlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == ':') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::string QueryString(const JobQuery& q) {
  std::vector<std::string> parts;
  if (q.state) parts.push_back("state=" + std::string(JobStateName(*q.state)));
  if (q.kind) parts.push_back("kind=" + std::string(JobKindName(*q.kind)));
  if (!q.owner_prefix.empty()) parts.push_back("owner_prefix=" + UrlEncode(q.owner_prefix));
  if (q.after > 0) parts.push_back(fmt::format("after={}", q.after));
  parts.push_back(fmt::format("limit={}", q.limit));
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "?" : "&") + p;
  return out;
}

StatusOr<DaemonJobRecord> JobRecordFromJson(const json& j) {
  return Read<DaemonJobRecord>("job record", [&] {
    DaemonJobRecord r;
    r.id = j.at("id").get<int64_t>();
    StatusOr<JobKind> kind = ParseJobKind(j.value("kind", "job"));
    if (!kind.ok()) throw std::runtime_error(kind.status().message());
    r.kind = *kind;
    StatusOr<JobState> state = ParseJobState(j.at("state").get<std::string>());
    if (!state.ok()) throw std::runtime_error(state.status().message());
    r.state = *state;
    const json& req = j.at("request");
    if (r.kind == JobKind::kAllocation) {
      r.allocation.owner = req.at("owner").get<std::string>();
      for (const json& s : req.at("instances")) {
        r.allocation.instances.push_back(
            s.contains("gpu") ? RequestedInstance::At({s.at("gpu").get<NvmlIndex>(),
                                                       s.at("profile").get<std::string>(),
                                                       s.at("start").get<int>()})
                              : RequestedInstance::Anywhere(s.at("profile").get<std::string>()));
      }
      r.allocation.reservation = StrOr(req, "reservation");
      r.allocation.reservation_prefix = StrOr(req, "reservation_prefix");
      r.allocation.name = StrOr(req, "name");
      r.allocation.anchors = req.value("anchors", false);  // absent from daemons before it
    } else {
      // A record's name may predate kMaxJobNameBytes: it is read as stored, not refused.
      json checked = req;
      checked.erase("name");
      StatusOr<JobRequest> parsed = JobRequestFromJson(checked);
      if (!parsed.ok()) throw std::runtime_error(parsed.status().message());
      r.request = *parsed;
      r.request.name = StrOr(req, "name");
    }
    r.submitted_at = TimeOf(j, "submitted_at");
    r.started_at = TimeOf(j, "started_at");
    r.ended_at = TimeOf(j, "ended_at");
    for (const json& i : j.at("instances")) r.instances.push_back(InstanceFromJson(i));
    r.pid = j.contains("pid") && j["pid"].is_number() ? j["pid"].get<int64_t>() : 0;
    if (j.contains("exit_code") && j["exit_code"].is_number())
      r.exit_code = j["exit_code"].get<int>();
    r.reason = StrOr(j, "reason");
    r.restarts = j.value("restarts", 0);
    r.migrations = j.value("migrations", 0);
    r.attempt = j.value("run", 0);
    r.cancel_requested = j.value("cancel_requested", false);
    r.bound_reservation = StrOr(j, "bound_reservation");
    r.idempotency_key = StrOr(j, "idempotency_key");
    return r;
  });
}

StatusOr<ReservationView> ReservationViewFromJson(const json& j) {
  return Read<ReservationView>("reservation", [&] {
    ReservationView v;
    v.record.owner = j.at("owner").get<std::string>();
    v.record.created_at = j.at("created_at").get<double>();
    v.record.expires_at = j.at("expires_at").get<double>();
    v.record.anchors = j.value("anchors", false);
    for (const json& p : j.at("placements")) {
      JobInstance in = InstanceFromJson(p);
      v.record.placements.push_back(in.placement());
      v.gpu_uuids.push_back(StrOr(p, "gpu_uuid"));
      v.instances.push_back(std::move(in));
    }
    return v;
  });
}

StatusOr<GpuView> GpuViewFromJson(const json& j) {
  return Read<GpuView>("GPU", [&] {
    GpuView g;
    g.index = j.at("index").get<NvmlIndex>();
    g.uuid = StrOr(j, "uuid");
    g.model = StrOr(j, "model");
    g.placement_units = j.at("placement_units").get<int>();
    g.utilisation = j.value("utilisation", 0.0);
    g.frag_cost = j.value("frag_cost", 0.0);
    g.lazy = StrOr(j, "load") == "lazy";
    g.draining = j.value("draining", false);
    g.anchored = j.value("anchored", false);  // absent from daemons before it: false
    g.unreachable = StrOr(j, "unreachable");
    if (j.contains("pcie") && j["pcie"].is_object()) {
      g.pcie =
          PcieThroughput{static_cast<int64_t>(j["pcie"].value("tx_bytes_per_second", 0.0) / 1024),
                         static_cast<int64_t>(j["pcie"].value("rx_bytes_per_second", 0.0) / 1024)};
    }
    for (const json& i : j.at("instances")) {
      InstanceView v;
      v.profile = i.at("profile").get<std::string>();
      v.start = i.at("start").get<int>();
      v.size = i.at("size").get<int>();
      v.mig_uuid = StrOr(i, "mig_uuid");
      v.busy = i.at("busy").get<bool>();
      v.holder = HolderFromJson(i);
      v.job = i.contains("job") && i["job"].is_number() ? i["job"].get<int64_t>() : 0;
      v.owner = StrOr(i, "owner");
      v.expires_at = TimeOf(i, "expires_at");
      v.anchors = i.value("anchors", false);
      g.instances.push_back(std::move(v));
    }
    return g;
  });
}

StatusOr<NodeView> NodeViewFromJson(const json& j) {
  NodeView n;
  StatusOr<bool> head = Read<bool>("node", [&] {
    n.name = StrOr(j, "name");
    n.boot_id = j.at("boot_id").get<std::string>();
    n.generation = j.at("generation").get<uint64_t>();
    n.time = TimeOf(j, "time");
    const json& s = j.at("scheduler");
    n.policy = s.at("policy").get<std::string>();
    n.options = SchedulerOptionsFromJson(s.at("options"));
    n.paused = s.value("paused", false);
    n.queue_length = s.value("queue_length", 0);
    const json& store = j.at("store");
    if (!store.value("ok", true)) n.store = UnavailableError(StrOr(store, "error"));
    return true;
  });
  if (!head.ok()) return head.status();
  for (const json& g : j.value("gpus", json::array())) {
    ASSIGN_OR_RETURN(GpuView v, GpuViewFromJson(g));
    n.gpus.push_back(std::move(v));
  }
  for (const json& r : j.value("reservations", json::array())) {
    ASSIGN_OR_RETURN(ReservationView v, ReservationViewFromJson(r));
    n.reservations.push_back(std::move(v));
  }
  return n;
}

namespace {
// httplib takes "http://HOST:PORT" and nothing after it: a trailing "/" (CheckDaemonUrl takes
// one) would be read as part of the port.
NodeClientOptions WithoutTrailingSlash(NodeClientOptions o) {
  while (o.server.ends_with('/') && !o.server.ends_with("://")) o.server.pop_back();
  return o;
}
}  // namespace

NodeClient::NodeClient(NodeClientOptions options)
    : options_(WithoutTrailingSlash(std::move(options))),
      http_(std::make_unique<httplib::Client>(options_.server)) {
  http_->set_bearer_token_auth(options_.token.c_str());
  http_->set_keep_alive(true);
  http_->set_tcp_nodelay(true);
  auto secs = [](double s) {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::duration<double>(s));
  };
  http_->set_connection_timeout(secs(options_.connect_timeout_s));
  http_->set_read_timeout(secs(options_.read_timeout_s));
  http_->set_write_timeout(secs(options_.read_timeout_s));
}

NodeClient::~NodeClient() = default;
NodeClient::NodeClient(NodeClient&&) noexcept = default;
NodeClient& NodeClient::operator=(NodeClient&&) noexcept = default;

StatusOr<NodeClient> NodeClient::WithTokenFile(std::string server, const std::string& token_file) {
  RETURN_IF_ERROR(CheckDaemonUrl(server));
  ASSIGN_OR_RETURN(std::string token, ReadTokenFile(token_file));
  NodeClientOptions o;
  o.server = std::move(server);
  o.token = std::move(token);
  return NodeClient(std::move(o));
}

Status NodeClient::Unreachable(int e, double elapsed_s) const {
  // httplib names its errors in one word ("Connection", "Read"): say what it means.
  const auto error = static_cast<httplib::Error>(e);
  // A read or write that ended at the read timeout, or a connect at the connect timeout, timed
  // out: httplib reports it as the connection's failure, which read "the connection was closed
  // (did the daemon stop?)" for a daemon that was stopped (SIGSTOP) or hung.
  const double limit = error == httplib::Error::Read || error == httplib::Error::Write
                           ? options_.read_timeout_s
                           : options_.connect_timeout_s;
  const bool timed_out = error == httplib::Error::ConnectionTimeout ||
                         (elapsed_s >= 0 && elapsed_s >= 0.95 * limit &&
                          (error == httplib::Error::Read || error == httplib::Error::Write ||
                           error == httplib::Error::Connection));
  std::string what;
  if (timed_out) {
    what =
        fmt::format("timed out: no answer within {} s (is the daemon hung or overloaded?)", limit);
  } else {
    switch (error) {
      case httplib::Error::Connection:
      case httplib::Error::ConnectionTimeout:
        what = "connection refused or timed out (is `migsched serve` running there?)";
        break;
      case httplib::Error::Read:
        what = "the connection was closed while reading the answer (did the daemon stop?)";
        break;
      case httplib::Error::Write:
        what = "the connection was closed while sending the request (did the daemon stop?)";
        break;
      default:
        what = httplib::to_string(error) + " error";
    }
  }
  return UnavailableError(fmt::format("cannot reach the daemon at {}: {}", options_.server, what));
}

StatusOr<json> NodeClient::Call(const std::string& method, const std::string& path,
                                const std::string& body, const std::string& key) {
  httplib::Headers headers;
  if (!key.empty()) headers.emplace("Idempotency-Key", key);
  const auto start = std::chrono::steady_clock::now();
  httplib::Result r = method == "GET" ? http_->Get(path.c_str(), headers)
                      : method == "DELETE"
                          ? http_->Delete(path.c_str(), headers)
                          : http_->Post(path.c_str(), headers, body, "application/json");
  if (!r) {
    return Unreachable(
        static_cast<int>(r.error()),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return Decode(r->status, r->body);
}

// ---- jobs ----

StatusOr<DaemonJobRecord> NodeClient::Submit(const JobRequest& request, const std::string& key) {
  // The same validation as the server's, before any network traffic.
  RETURN_IF_ERROR(ValidateJobRequest(request));
  ASSIGN_OR_RETURN(json j, Call("POST", "/v1/jobs", JobRequestToJson(request).dump(), key));
  return JobRecordFromJson(j);
}

StatusOr<DaemonJobRecord> NodeClient::GetJob(DaemonJobId id) {
  ASSIGN_OR_RETURN(json j, Call("GET", fmt::format("/v1/jobs/{}", id)));
  return JobRecordFromJson(j);
}

StatusOr<JobPage> NodeClient::ListJobs(const JobQuery& query) {
  const bool allocations = query.kind == JobKind::kAllocation;
  ASSIGN_OR_RETURN(json j, Call("GET", std::string(allocations ? "/v1/allocations" : "/v1/jobs") +
                                           QueryString(query)));
  JobPage page;
  for (const json& r : j.value(allocations ? "allocations" : "jobs", json::array())) {
    ASSIGN_OR_RETURN(DaemonJobRecord rec, JobRecordFromJson(r));
    page.jobs.push_back(std::move(rec));
  }
  page.next = j.contains("next") && j["next"].is_number() ? j["next"].get<int64_t>() : 0;
  return page;
}

StatusOr<std::vector<DaemonJobRecord>> NodeClient::ListAllJobs(JobQuery query) {
  std::vector<DaemonJobRecord> out;
  query.limit = 1000;
  while (true) {
    ASSIGN_OR_RETURN(JobPage page, ListJobs(query));
    out.insert(out.end(), page.jobs.begin(), page.jobs.end());
    if (page.next == 0) return out;
    query.after = page.next;
  }
}

StatusOr<DaemonJobRecord> NodeClient::Cancel(DaemonJobId id) {
  ASSIGN_OR_RETURN(json j, Call("DELETE", fmt::format("/v1/jobs/{}", id)));
  return JobRecordFromJson(j);
}

StatusOr<PlanPreview> NodeClient::PreviewPlan(const JobRequest& request) {
  ASSIGN_OR_RETURN(json j, Call("POST", "/v1/plan", JobRequestToJson(request).dump()));
  return Read<PlanPreview>("plan", [&] {
    PlanPreview p;
    p.fits_now = j.at("fits_now").get<bool>();
    for (const json& i : j.at("instances")) p.instances.push_back(InstanceFromJson(i));
    p.steps = j.at("steps").get<std::vector<std::string>>();
    p.reason = StrOr(j, "reason");
    return p;
  });
}

Status NodeClient::StreamLog(DaemonJobId id, bool follow, std::ostream& out) {
  const std::string path = fmt::format("/v1/jobs/{}/log{}", id, follow ? "?follow=1" : "");
  if (follow) http_->set_read_timeout(std::chrono::hours(24 * 365));
  int status = 0;
  std::string error_body;
  httplib::Result r = http_->Get(
      path.c_str(),
      [&status](const httplib::Response& res) {
        status = res.status;
        return true;
      },
      [&](const char* data, size_t n) {
        if (status >= 200 && status < 300) {
          out.write(data, static_cast<std::streamsize>(n));
          out.flush();
        } else {
          error_body.append(data, n);
        }
        return true;
      });
  if (!r) return Unreachable(static_cast<int>(r.error()));
  if (status < 200 || status >= 300) return Decode(status, error_body).status();
  return Status();
}

// ---- the node ----

StatusOr<NodeView> NodeClient::Node() {
  ASSIGN_OR_RETURN(json j, Call("GET", "/v1/node"));
  return NodeViewFromJson(j);
}

StatusOr<std::vector<GpuView>> NodeClient::Gpus() {
  ASSIGN_OR_RETURN(json j, Call("GET", "/v1/gpus"));
  std::vector<GpuView> out;
  for (const json& g : j.value("gpus", json::array())) {
    ASSIGN_OR_RETURN(GpuView v, GpuViewFromJson(g));
    out.push_back(std::move(v));
  }
  return out;
}

Status NodeClient::Drain(NvmlIndex gpu) {
  return Call("POST", fmt::format("/v1/gpus/{}/drain", gpu)).status();
}

Status NodeClient::Undrain(NvmlIndex gpu) {
  return Call("POST", fmt::format("/v1/gpus/{}/undrain", gpu)).status();
}

StatusOr<bool> NodeClient::Pause() {
  ASSIGN_OR_RETURN(json j, Call("POST", "/v1/scheduler/pause"));
  return j.value("paused", true);
}

StatusOr<bool> NodeClient::Resume() {
  ASSIGN_OR_RETURN(json j, Call("POST", "/v1/scheduler/resume"));
  return j.value("paused", false);
}

StatusOr<std::string> NodeClient::Metrics() {
  httplib::Result r = http_->Get("/metrics");
  if (!r) return Unreachable(static_cast<int>(r.error()));
  if (r->status != 200) return Decode(r->status, r->body).status();
  return r->body;
}

// ---- reservations ----

StatusOr<ReserveResult> NodeClient::Reserve(const ReservationRequest& request) {
  json body;
  body["owner"] = request.owner;
  body["placements"] = json::array();
  for (const PlacementRef& p : request.placements) {
    body["placements"].push_back({{"gpu", p.gpu}, {"profile", p.profile}, {"start", p.start}});
  }
  if (request.ttl_s > 0) body["ttl_s"] = request.ttl_s;
  if (request.anchors) body["anchors"] = true;
  const auto start = std::chrono::steady_clock::now();
  httplib::Result r = http_->Post("/v1/reservations", body.dump(), "application/json");
  if (!r) {
    return Unreachable(
        static_cast<int>(r.error()),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  ASSIGN_OR_RETURN(json j, Decode(r->status, r->body));
  ASSIGN_OR_RETURN(ReservationView v, ReservationViewFromJson(j));
  return ReserveResult{std::move(v), r->status == 201};
}

StatusOr<std::vector<ReservationView>> NodeClient::ListReservations(const std::string& prefix) {
  ASSIGN_OR_RETURN(json j, Call("GET", "/v1/reservations" +
                                           (prefix.empty() ? "" : "?prefix=" + UrlEncode(prefix))));
  std::vector<ReservationView> out;
  for (const json& r : j.value("reservations", json::array())) {
    ASSIGN_OR_RETURN(ReservationView v, ReservationViewFromJson(r));
    out.push_back(std::move(v));
  }
  return out;
}

StatusOr<ReservationView> NodeClient::GetReservation(const std::string& owner) {
  ASSIGN_OR_RETURN(json j, Call("GET", "/v1/reservations/" + UrlEncode(owner)));
  return ReservationViewFromJson(j);
}

Status NodeClient::ReleaseReservation(const std::string& owner) {
  return Call("DELETE", "/v1/reservations/" + UrlEncode(owner)).status();
}

// ---- allocations ----

StatusOr<DaemonJobRecord> NodeClient::Allocate(const AllocationRequest& request,
                                               const std::string& key) {
  ASSIGN_OR_RETURN(json j,
                   Call("POST", "/v1/allocations", AllocationRequestToJson(request).dump(), key));
  return JobRecordFromJson(j);
}

StatusOr<DaemonJobRecord> NodeClient::GetAllocation(DaemonJobId id) {
  ASSIGN_OR_RETURN(json j, Call("GET", fmt::format("/v1/allocations/{}", id)));
  return JobRecordFromJson(j);
}

StatusOr<std::vector<DaemonJobRecord>> NodeClient::ListAllocations(const std::string& owner_prefix,
                                                                   std::optional<JobState> state) {
  JobQuery q;
  q.kind = JobKind::kAllocation;
  q.owner_prefix = owner_prefix;
  q.state = state;
  return ListAllJobs(q);
}

StatusOr<DaemonJobRecord> NodeClient::ReleaseAllocation(DaemonJobId id) {
  ASSIGN_OR_RETURN(json j, Call("DELETE", fmt::format("/v1/allocations/{}", id)));
  return JobRecordFromJson(j);
}

StatusOr<std::vector<DaemonJobRecord>> NodeClient::ReleaseAllocationsOf(const std::string& owner) {
  ASSIGN_OR_RETURN(json j, Call("DELETE", "/v1/allocations?owner=" + UrlEncode(owner)));
  std::vector<DaemonJobRecord> out;
  for (const json& r : j.value("released", json::array())) {
    ASSIGN_OR_RETURN(DaemonJobRecord rec, JobRecordFromJson(r));
    out.push_back(std::move(rec));
  }
  return out;
}

}  // namespace migsched
