#include "k8s/testing/recording_api_server.h"

#include <httplib.h>

#include <chrono>
#include <regex>

namespace migsched::k8s {

using nlohmann::json;

namespace {

std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return json{{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
              {"status", "Failure"}, {"message", message}, {"reason", reason},
              {"code", code}}
      .dump();
}

std::pair<int, std::string> Fail(int code, const std::string& reason, const std::string& message) {
  return {code, StatusBody(code, reason, message)};
}

// JSON merge patch (RFC 7386).
void MergePatch(json& target, const json& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = json::object();
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    if (it.value().is_null()) {
      target.erase(it.key());
    } else {
      MergePatch(target[it.key()], it.value());
    }
  }
}

std::string QueryValue(const std::string& query, const std::string& key) {
  for (size_t pos = 0; pos < query.size();) {
    size_t amp = query.find('&', pos);
    if (amp == std::string::npos) amp = query.size();
    const std::string kv = query.substr(pos, amp - pos);
    if (kv.rfind(key + "=", 0) == 0) {
      return httplib::detail::decode_url(kv.substr(key.size() + 1), true);
    }
    pos = amp + 1;
  }
  return "";
}

}  // namespace

RecordingApiServer::RecordingApiServer(std::string token) : token_(std::move(token)) {}

RecordingApiServer::~RecordingApiServer() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

StatusOr<std::string> RecordingApiServer::Start(const std::string& cert_file,
                                                const std::string& key_file) {
  if (cert_file.empty()) {
    server_ = std::make_unique<httplib::Server>();
  } else {
    server_ = std::make_unique<httplib::SSLServer>(cert_file.c_str(), key_file.c_str());
  }
  if (!server_->is_valid()) return UnavailableError("cannot set up the test API server");
  auto handler = [this](const httplib::Request& req, httplib::Response& res) {
    Request r;
    r.method = req.method;
    r.path = req.path;
    std::string query;
    for (const auto& [k, v] : req.params) {
      query += (query.empty() ? "" : "&") + k + "=" + httplib::detail::encode_query_param(v);
    }
    r.query = query;
    r.content_type = req.get_header_value("Content-Type");
    r.authorization = req.get_header_value("Authorization");
    r.body = req.body;
    const auto [status, body] = Handle(r);
    res.status = status;
    res.set_content(body, "application/json");
  };
  const std::string any = R"(/.*)";
  server_->Get(any, handler);
  server_->Post(any, handler);
  server_->Patch(any, handler);
  server_->Put(any, handler);
  server_->Delete(any, handler);
  const int port = server_->bind_to_any_port("127.0.0.1");
  if (port <= 0) return UnavailableError("cannot bind the test API server");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // httplib's stop() does nothing before listen has begun: wait for it (bounded).
  for (int i = 0; i < 5000 && !server_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const std::string url =
      std::string(cert_file.empty() ? "http" : "https") + "://127.0.0.1:" + std::to_string(port);
  {
    std::lock_guard lock(mu_);
    url_ = url;
  }
  return url;
}

std::unique_ptr<KubeClient> RecordingApiServer::NewClient(std::chrono::milliseconds timeout) {
  KubeCredentials c;
  std::lock_guard lock(mu_);
  c.server = url_;
  c.token = token_;
  return std::make_unique<KubeClient>(c, timeout);
}

std::unique_ptr<KubeClient> RecordingApiServer::StartWithClient() {
  auto url = Start();
  if (!url.ok()) return nullptr;
  KubeCredentials c;
  c.server = *url;
  {
    std::lock_guard lock(mu_);
    c.token = token_;
  }
  return std::make_unique<KubeClient>(c);
}

void RecordingApiServer::AddPod(const json& pod) {
  std::lock_guard lock(mu_);
  const json& m = pod.at("metadata");
  pods_[m.value("namespace", std::string("default")) + "/" + m.at("name").get<std::string>()] = pod;
}

std::optional<json> RecordingApiServer::Pod(const std::string& ns, const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = pods_.find(ns + "/" + name);
  if (it == pods_.end()) return std::nullopt;
  return it->second;
}

std::optional<json> RecordingApiServer::Lease(const std::string& ns,
                                              const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = leases_.find(ns + "/" + name);
  if (it == leases_.end()) return std::nullopt;
  return it->second;
}

std::vector<RecordingApiServer::Request> RecordingApiServer::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

void RecordingApiServer::set_block_evictions(bool block) {
  std::lock_guard lock(mu_);
  block_evictions_ = block;
}

void RecordingApiServer::FailNext(const std::string& suffix, int status, const std::string& message,
                                  int n, const std::string& method) {
  std::lock_guard lock(mu_);
  failures_.push_back({suffix, status, message, n, false, method});
}

void RecordingApiServer::FailNextAfterApplying(const std::string& suffix, int status,
                                               const std::string& message) {
  std::lock_guard lock(mu_);
  failures_.push_back({suffix, status, message, 1, true, ""});
}

void RecordingApiServer::DelayNext(const std::string& suffix, std::chrono::milliseconds delay) {
  std::lock_guard lock(mu_);
  delays_.emplace_back(suffix, delay);
}

void RecordingApiServer::set_token(const std::string& token) {
  std::lock_guard lock(mu_);
  token_ = token;
}

std::pair<int, std::string> RecordingApiServer::Handle(const Request& r) {
  std::chrono::milliseconds wait{0};
  {
    std::lock_guard lock(mu_);
    for (auto it = delays_.begin(); it != delays_.end(); ++it) {
      if (r.path.size() >= it->first.size() &&
          r.path.compare(r.path.size() - it->first.size(), it->first.size(), it->first) == 0) {
        wait = it->second;
        delays_.erase(it);
        break;
      }
    }
  }
  if (wait.count() > 0) std::this_thread::sleep_for(wait);  // not holding mu_
  std::lock_guard lock(mu_);
  requests_.push_back(r);
  if (!token_.empty() && r.authorization != "Bearer " + token_) {
    return Fail(401, "Unauthorized", "Unauthorized");
  }
  for (auto& f : failures_) {
    if (f.left > 0 && (f.method.empty() || f.method == r.method) &&
        r.path.size() >= f.suffix.size() &&
        r.path.compare(r.path.size() - f.suffix.size(), f.suffix.size(), f.suffix) == 0) {
      --f.left;
      if (f.after_applying) (void)Apply(r);
      return Fail(f.status, "Injected", f.message);
    }
  }
  return Apply(r);
}

std::pair<int, std::string> RecordingApiServer::Apply(const Request& r) {
  if (r.method == "GET" && r.path == "/api/v1/pods") {
    // fieldSelector spec.nodeName=X or metadata.namespace=X; labelSelector k=v.
    const std::string fields = QueryValue(r.query, "fieldSelector");
    const std::string labels = QueryValue(r.query, "labelSelector");
    json items = json::array();
    for (const auto& [key, pod] : pods_) {
      const json meta = pod.value("metadata", json::object());
      const json spec = pod.value("spec", json::object());
      bool match = true;
      if (fields.rfind("spec.nodeName=", 0) == 0) {
        match = spec.value("nodeName", std::string()) == fields.substr(14);
      } else if (fields.rfind("metadata.namespace=", 0) == 0) {
        match = meta.value("namespace", std::string("default")) == fields.substr(19);
      } else if (!fields.empty()) {
        return Fail(400, "BadRequest", "field selector not supported here: " + fields);
      }
      if (match && !labels.empty()) {
        const size_t eq = labels.find('=');
        const json l = meta.value("labels", json::object());
        match = eq != std::string::npos &&
                l.value(labels.substr(0, eq), std::string()) == labels.substr(eq + 1);
      }
      if (match) items.push_back(pod);
    }
    return {200, json{{"kind", "PodList"},
                      {"apiVersion", "v1"},
                      {"metadata", {{"resourceVersion", "1"}}},
                      {"items", items}}
                     .dump()};
  }
  static const std::regex kLease(
      R"(/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases(?:/([^/]+))?)");
  std::smatch lm;
  if (std::regex_match(r.path, lm, kLease)) return HandleLease(r, lm[1], lm[2]);
  static const std::regex kPod(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)(/binding|/eviction)?)");
  std::smatch m;
  if (!std::regex_match(r.path, m, kPod)) {
    return Fail(404, "NotFound", "the server could not find the requested resource");
  }
  const std::string ns = m[1], name = m[2], sub = m[3];
  auto it = pods_.find(ns + "/" + name);
  if (it == pods_.end()) return Fail(404, "NotFound", "pods \"" + name + "\" not found");
  json& pod = it->second;
  const std::string uid = pod["metadata"].value("uid", std::string());

  if (sub.empty() && r.method == "GET") return {200, pod.dump()};
  json body = json::parse(r.body, nullptr, false);
  if (body.is_discarded()) return Fail(400, "BadRequest", "the request body is not JSON");

  if (sub.empty() && r.method == "PATCH") {
    if (r.content_type != "application/merge-patch+json") {
      return Fail(415, "UnsupportedMediaType",
                  "the body of the request was in an unknown format - accepted media types "
                  "include: application/json-patch+json, application/merge-patch+json, "
                  "application/apply-patch+yaml");
    }
    if (body.contains("metadata") && body["metadata"].contains("uid") &&
        body["metadata"]["uid"] != uid) {
      return Fail(409, "Conflict",
                  "Operation cannot be fulfilled on pods \"" + name +
                      "\": Precondition failed: UID in precondition: " +
                      body["metadata"]["uid"].get<std::string>() + ", UID in object meta: " + uid);
    }
    json patch = body;
    if (patch.contains("metadata")) patch["metadata"].erase("uid");
    MergePatch(pod, patch);
    return {200, pod.dump()};
  }
  if (sub == "/binding" && r.method == "POST") {
    if (body.value("apiVersion", "") != "v1" || body.value("kind", "") != "Binding") {
      return Fail(400, "BadRequest", "not a v1 Binding");
    }
    const json meta = body.value("metadata", json::object());
    if (meta.value("name", "") != name) {
      return Fail(400, "BadRequest", "Binding metadata.name must be the pod's name");
    }
    if (meta.contains("uid") && meta["uid"] != uid) {
      return Fail(409, "Conflict", "Precondition failed: UID in precondition does not match");
    }
    const json target = body.value("target", json::object());
    if (target.value("kind", "") != "Node" || target.value("name", "").empty()) {
      return Fail(400, "BadRequest", "Binding target must be a Node with a name");
    }
    const std::string bound = pod["spec"].value("nodeName", std::string());
    if (!bound.empty()) {
      return Fail(409, "Conflict",
                  "Operation cannot be fulfilled on pods/binding \"" + name + "\": pod " + name +
                      " is already assigned to node \"" + bound + "\"");
    }
    pod["spec"]["nodeName"] = target["name"];
    return {201,
            json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Success"}, {"code", 201}}
                .dump()};
  }
  if (sub == "/eviction" && r.method == "POST") {
    if (body.value("apiVersion", "") != "policy/v1" || body.value("kind", "") != "Eviction") {
      return Fail(400, "BadRequest", "not a policy/v1 Eviction");
    }
    if (body.value("metadata", json::object()).value("name", "") != name) {
      return Fail(400, "BadRequest", "Eviction metadata.name must be the pod's name");
    }
    if (block_evictions_) {
      return Fail(429, "TooManyRequests",
                  "Cannot evict pod as it would violate the pod's disruption budget.");
    }
    pods_.erase(it);
    return {201,
            json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Success"}, {"code", 201}}
                .dump()};
  }
  return Fail(405, "MethodNotAllowed", r.method + " is not allowed on " + r.path);
}

std::pair<int, std::string> RecordingApiServer::HandleLease(const Request& r, const std::string& ns,
                                                            const std::string& name) {
  // mu_ is held by Handle.
  if (r.method == "GET" && !name.empty()) {
    auto it = leases_.find(ns + "/" + name);
    if (it == leases_.end()) {
      return Fail(404, "NotFound", "leases.coordination.k8s.io \"" + name + "\" not found");
    }
    return {200, it->second.dump()};
  }
  if (r.method != "POST" && r.method != "PUT") {
    return Fail(405, "MethodNotAllowed", r.method + " is not allowed on " + r.path);
  }
  json body = json::parse(r.body, nullptr, false);
  if (!body.is_object()) return Fail(400, "BadRequest", "the request body is not JSON");
  if (body.value("apiVersion", "") != "coordination.k8s.io/v1" ||
      body.value("kind", "") != "Lease") {
    return Fail(400, "BadRequest", "not a coordination.k8s.io/v1 Lease");
  }
  json& meta = body["metadata"];
  const std::string body_name = meta.is_object() ? meta.value("name", "") : "";
  if (body_name.empty() || (!name.empty() && body_name != name)) {
    return Fail(400, "BadRequest", "the Lease's metadata.name must be the name in the path");
  }
  const std::string key = ns + "/" + body_name;
  auto it = leases_.find(key);
  if (r.method == "POST") {
    if (!name.empty()) return Fail(405, "MethodNotAllowed", "POST is not allowed on " + r.path);
    if (it != leases_.end()) {
      return Fail(409, "AlreadyExists",
                  "leases.coordination.k8s.io \"" + body_name + "\" already exists");
    }
  } else {
    if (name.empty()) return Fail(405, "MethodNotAllowed", "PUT is not allowed on " + r.path);
    if (it == leases_.end()) {
      return Fail(404, "NotFound", "leases.coordination.k8s.io \"" + name + "\" not found");
    }
    if (meta.value("resourceVersion", "") != it->second["metadata"].value("resourceVersion", "")) {
      return Fail(409, "Conflict",
                  "Operation cannot be fulfilled on leases.coordination.k8s.io \"" + name +
                      "\": the object has been modified; please apply your changes to the "
                      "latest version and try again");
    }
  }
  meta["namespace"] = ns;
  meta["resourceVersion"] = std::to_string(++resource_version_);
  leases_[key] = body;
  return {r.method == "POST" ? 201 : 200, body.dump()};
}

}  // namespace migsched::k8s
