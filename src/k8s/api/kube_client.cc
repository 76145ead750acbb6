#include "k8s/api/kube_client.h"

#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cctype>
#include <memory>

namespace migsched::k8s {

using nlohmann::json;

std::string ApiMessage(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) {
    return j["message"].get<std::string>();
  }
  std::string s = body.substr(0, 200);
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s.empty() ? "(empty body)" : s;
}

std::string QueryEscape(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

namespace {

// X509 objects from PEM text, freed on scope exit.
struct PemObjects {
  X509_STORE* store = nullptr;  // handed over to httplib (it frees it)
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
  ~PemObjects() {
    if (store != nullptr) X509_STORE_free(store);
    if (cert != nullptr) X509_free(cert);
    if (key != nullptr) EVP_PKEY_free(key);
  }
};

StatusOr<X509_STORE*> StoreFromPem(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), pem.size()), BIO_free);
  X509_STORE* store = X509_STORE_new();
  int n = 0;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store, cert);
    X509_free(cert);
    ++n;
  }
  if (n == 0) {
    X509_STORE_free(store);
    return InvalidArgumentError("the CA data holds no PEM certificate");
  }
  return store;
}

struct SplitUrl {
  std::string scheme, host;
  int port = 0;
};

StatusOr<SplitUrl> Split(const std::string& server) {
  SplitUrl u;
  const size_t sep = server.find("://");
  if (sep == std::string::npos)
    return InvalidArgumentError("server '" + server + "' has no scheme");
  u.scheme = server.substr(0, sep);
  std::string rest = server.substr(sep + 3);
  if (const size_t slash = rest.find('/'); slash != std::string::npos) rest = rest.substr(0, slash);
  size_t colon = rest.rfind(':');
  if (!rest.empty() && rest[0] == '[') {  // [v6]:port
    const size_t close = rest.find(']');
    if (close == std::string::npos)
      return InvalidArgumentError("server '" + server + "': bad IPv6");
    u.host = rest.substr(1, close - 1);
    colon = rest.find(':', close);
  } else {
    u.host = rest.substr(0, colon);
  }
  if (colon != std::string::npos) {
    try {
      u.port = std::stoi(rest.substr(colon + 1));
    } catch (...) {
      return InvalidArgumentError("server '" + server + "': bad port");
    }
  } else {
    u.port = u.scheme == "https" ? 443 : 80;
  }
  if (u.scheme != "https" && u.scheme != "http") {
    return InvalidArgumentError("server '" + server + "': scheme must be https or http");
  }
  return u;
}

StatusCode CodeOf(int http) {
  switch (http) {
    case 400:
    case 422:
      return StatusCode::kInvalidArgument;
    case 401:
    case 403:
      return StatusCode::kUnauthenticated;
    case 404:
      return StatusCode::kNotFound;
    case 409:
      return StatusCode::kAlreadyExists;
    case 429:
      return StatusCode::kResourceExhausted;
    default:
      return StatusCode::kUnavailable;
  }
}

}  // namespace

KubeClient::KubeClient(KubeCredentials credentials, std::chrono::milliseconds timeout)
    : credentials_(std::move(credentials)), timeout_(timeout) {}

StatusOr<KubeClient::Response> KubeClient::Send(const std::string& method, const std::string& path,
                                                const std::string& body,
                                                const std::string& content_type) {
  auto url = Split(credentials_.server);
  if (!url.ok()) return url.status();
  auto token = credentials_.CurrentToken();
  if (!token.ok()) return token.status();

  std::unique_ptr<httplib::ClientImpl> client;
  if (url->scheme == "https") {
    PemObjects pem;
    std::unique_ptr<httplib::SSLClient> ssl;
    if (!credentials_.client_cert_pem.empty()) {
      std::unique_ptr<BIO, decltype(&BIO_free)> cb(
          BIO_new_mem_buf(credentials_.client_cert_pem.data(), credentials_.client_cert_pem.size()),
          BIO_free);
      std::unique_ptr<BIO, decltype(&BIO_free)> kb(
          BIO_new_mem_buf(credentials_.client_key_pem.data(), credentials_.client_key_pem.size()),
          BIO_free);
      pem.cert = PEM_read_bio_X509(cb.get(), nullptr, nullptr, nullptr);
      pem.key = PEM_read_bio_PrivateKey(kb.get(), nullptr, nullptr, nullptr);
      if (pem.cert == nullptr || pem.key == nullptr) {
        return InvalidArgumentError("the client certificate or key data is not PEM");
      }
      ssl = std::make_unique<httplib::SSLClient>(url->host, url->port, pem.cert, pem.key);
    } else if (!credentials_.client_cert_file.empty()) {
      ssl = std::make_unique<httplib::SSLClient>(
          url->host, url->port, credentials_.client_cert_file, credentials_.client_key_file);
    } else {
      ssl = std::make_unique<httplib::SSLClient>(url->host, url->port);
    }
    if (!ssl->is_valid())
      return InvalidArgumentError("cannot set up TLS to " + credentials_.server);
    if (credentials_.insecure_skip_tls_verify) {
      ssl->enable_server_certificate_verification(false);
    } else if (!credentials_.ca_pem.empty()) {
      auto store = StoreFromPem(credentials_.ca_pem);
      if (!store.ok()) return store.status();
      ssl->set_ca_cert_store(*store);  // httplib owns it now
    } else if (!credentials_.ca_file.empty()) {
      ssl->set_ca_cert_path(credentials_.ca_file.c_str());
    }
    client = std::move(ssl);
  } else {
    client = std::make_unique<httplib::ClientImpl>(url->host, url->port);
  }
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(timeout_);
  const auto usecs = std::chrono::duration_cast<std::chrono::microseconds>(timeout_ - secs);
  client->set_connection_timeout(secs.count(), usecs.count());
  client->set_read_timeout(secs.count(), usecs.count());
  client->set_write_timeout(secs.count(), usecs.count());

  httplib::Request req;
  req.method = method;
  req.path = path;
  req.headers.emplace("Accept", "application/json");
  req.headers.emplace("User-Agent", "migsched/0.1.0");
  if (!token->empty()) req.headers.emplace("Authorization", "Bearer " + *token);
  if (!content_type.empty()) req.headers.emplace("Content-Type", content_type);
  req.body = body;
  httplib::Result result = client->send(req);
  if (!result) {
    std::string why = httplib::to_string(result.error());
    if (url->scheme == "https" && result.error() == httplib::Error::SSLServerVerification) {
      why += " (the API server's certificate is not signed by the configured CA)";
    }
    // Sent, and no answer (httplib's "Read", "Write"): the API server may have stored it, or
    // may yet (a trial's Binding landed 15 s after the extender had given up on it and released
    // the pod's reservation). Said in words, and marked for the callers that must not assume
    // it failed.
    if (result.error() == httplib::Error::Read || result.error() == httplib::Error::Write) {
      return UnavailableError(method + " " + credentials_.server + path +
                              ": no answer after the request was sent (" + why +
                              "): whether the API server carried it out is unknown")
          .WithReason(StatusReason::kOutcomeUnknown);
    }
    return UnavailableError(method + " " + credentials_.server + path + ": " + why);
  }
  Response r;
  r.status = result->status;
  r.body = result->body;
  r.retry_after = result->get_header_value("Retry-After");
  return r;
}

Status KubeClient::ErrorOf(const std::string& method, const std::string& path,
                           const Response& r) const {
  return Status(CodeOf(r.status), method + " " + path + ": HTTP " + std::to_string(r.status) +
                                      ": " + ApiMessage(r.body));
}

namespace {
std::string PodPath(const std::string& ns, const std::string& name) {
  return "/api/v1/namespaces/" + QueryEscape(ns) + "/pods/" + QueryEscape(name);
}
}  // namespace

StatusOr<json> KubeClient::GetPod(const std::string& ns, const std::string& name) {
  const std::string path = PodPath(ns, name);
  auto r = Send("GET", path);
  if (!r.ok()) return r.status();
  if (r->status != 200) return ErrorOf("GET", path, *r);
  json j = json::parse(r->body, nullptr, false);
  if (!j.is_object()) return UnavailableError("GET " + path + ": the answer is not a JSON object");
  return j;
}

StatusOr<std::vector<json>> KubeClient::ListPods(const std::string& field_selector,
                                                 const std::string& label_selector) {
  std::vector<json> pods;
  std::string cont;
  for (int page = 0; page < 10000; ++page) {
    std::string path = "/api/v1/pods?limit=500";
    if (!field_selector.empty()) path += "&fieldSelector=" + QueryEscape(field_selector);
    if (!label_selector.empty()) path += "&labelSelector=" + QueryEscape(label_selector);
    if (!cont.empty()) path += "&continue=" + QueryEscape(cont);
    auto r = Send("GET", path);
    if (!r.ok()) return r.status();
    if (r->status != 200) return ErrorOf("GET", path, *r);
    json j = json::parse(r->body, nullptr, false);
    if (!j.is_object() || !j.contains("items") || !j["items"].is_array()) {
      return UnavailableError("GET " + path + ": not a PodList");
    }
    for (auto& item : j["items"]) pods.push_back(std::move(item));
    cont = j.contains("metadata") && j["metadata"].is_object()
               ? j["metadata"].value("continue", std::string())
               : "";
    if (cont.empty()) return pods;
  }
  return UnavailableError("GET /api/v1/pods: more than 10000 pages");
}

Status KubeClient::PatchPodAnnotations(
    const std::string& ns, const std::string& name, const std::string& uid,
    const std::map<std::string, std::optional<std::string>>& annotations) {
  return PatchPodMetadata(ns, name, uid, annotations, {});
}

Status KubeClient::PatchPodMetadata(
    const std::string& ns, const std::string& name, const std::string& uid,
    const std::map<std::string, std::optional<std::string>>& annotations,
    const std::map<std::string, std::optional<std::string>>& labels) {
  json patch;
  json& meta = patch["metadata"];
  if (!uid.empty()) meta["uid"] = uid;  // a precondition of the merge patch
  auto fill = [&](const char* field, const std::map<std::string, std::optional<std::string>>& m) {
    if (m.empty()) return;
    meta[field] = json::object();
    for (const auto& [k, v] : m) meta[field][k] = v ? json(*v) : json(nullptr);
  };
  fill("annotations", annotations);
  fill("labels", labels);
  const std::string path = PodPath(ns, name);
  auto r = Send("PATCH", path, patch.dump(), "application/merge-patch+json");
  if (!r.ok()) return r.status();
  if (r->status != 200) return ErrorOf("PATCH", path, *r);
  return Status::Ok();
}

Status KubeClient::PostBinding(const std::string& ns, const std::string& name,
                               const std::string& uid, const std::string& node) {
  json binding = {{"apiVersion", "v1"},
                  {"kind", "Binding"},
                  {"metadata", {{"name", name}, {"namespace", ns}}},
                  {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  if (!uid.empty()) binding["metadata"]["uid"] = uid;
  const std::string path = PodPath(ns, name) + "/binding";
  auto r = Send("POST", path, binding.dump(), "application/json");
  if (!r.ok()) return r.status();
  if (r->status != 201 && r->status != 200) return ErrorOf("POST", path, *r);
  return Status::Ok();
}

StatusOr<KubeClient::Eviction> KubeClient::Evict(const std::string& ns, const std::string& name,
                                                 const std::string& uid, std::string* message,
                                                 double* retry_after_s) {
  json eviction = {{"apiVersion", "policy/v1"},
                   {"kind", "Eviction"},
                   {"metadata", {{"name", name}, {"namespace", ns}}}};
  if (!uid.empty()) eviction["deleteOptions"] = {{"preconditions", {{"uid", uid}}}};
  const std::string path = PodPath(ns, name) + "/eviction";
  auto r = Send("POST", path, eviction.dump(), "application/json");
  if (!r.ok()) return r.status();
  if (message != nullptr) *message = ApiMessage(r->body);
  if (retry_after_s != nullptr) {
    *retry_after_s = -1;
    try {
      if (!r->retry_after.empty()) *retry_after_s = std::stod(r->retry_after);
    } catch (...) {
      // An HTTP date or garbage: treated as absent.
    }
  }
  switch (r->status) {
    case 200:
    case 201:
      return Eviction::kEvicted;
    case 429:
      return Eviction::kBlockedByBudget;
    case 404:
      return Eviction::kGone;
    default:
      return ErrorOf("POST", path, *r);
  }
}

}  // namespace migsched::k8s
