#include "k8s/api/credentials.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace migsched::k8s {

namespace {

StatusOr<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

}  // namespace

StatusOr<std::string> KubeCredentials::CurrentToken() const {
  if (token_file.empty()) return token;
  auto text = ReadWhole(token_file);
  if (!text.ok()) {
    return Status(StatusCode::kUnauthenticated, "token file: " + text.status().message());
  }
  return Trim(*text);
}

std::map<std::string, std::string> KubernetesEnv() {
  std::map<std::string, std::string> env;
  for (const char* k : {"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"}) {
    if (const char* v = std::getenv(k)) env[k] = v;
  }
  return env;
}

StatusOr<KubeCredentials> InClusterCredentials(const std::map<std::string, std::string>& env,
                                               const std::string& dir) {
  auto host = env.find("KUBERNETES_SERVICE_HOST");
  auto port = env.find("KUBERNETES_SERVICE_PORT");
  if (host == env.end() || port == env.end() || host->second.empty() || port->second.empty()) {
    return NotFoundError(
        "not running in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set "
        "(give a kubeconfig instead)");
  }
  namespace fs = std::filesystem;
  const std::string token = (fs::path(dir) / "token").string();
  const std::string ca = (fs::path(dir) / "ca.crt").string();
  for (const std::string& f : {token, ca}) {
    if (!fs::exists(f)) return NotFoundError("no service account file " + f);
  }
  KubeCredentials c;
  // An IPv6 address goes in brackets (client-go's net.JoinHostPort).
  const std::string h =
      host->second.find(':') != std::string::npos ? "[" + host->second + "]" : host->second;
  c.server = "https://" + h + ":" + port->second;
  c.token_file = token;
  c.ca_file = ca;
  auto ns = ReadWhole((fs::path(dir) / "namespace").string());
  c.ns = ns.ok() && !Trim(*ns).empty() ? Trim(*ns) : "default";
  return c;
}

StatusOr<std::string> Base64Decode(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  bool padding = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    if (c == '=') {
      padding = true;
      continue;
    }
    const int v = value(c);
    if (v < 0 || padding) return InvalidArgumentError("not base64: unexpected character");
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xff));
    }
  }
  if (bits >= 6) return InvalidArgumentError("not base64: truncated");
  return out;
}

namespace {

// The entry named `name` of the kubeconfig list `key` (clusters, contexts, users).
StatusOr<YAML::Node> Named(const YAML::Node& root, const std::string& key, const std::string& name,
                           const std::string& where) {
  const YAML::Node list = root[key];
  if (list && list.IsSequence()) {
    for (const auto& e : list) {
      if (e["name"] && e["name"].as<std::string>() == name) {
        const std::string inner = key.substr(0, key.size() - 1);  // cluster, context, user
        if (!e[inner] || !e[inner].IsMap()) {
          return InvalidArgumentError(where + ": " + key + " '" + name + "' has no " + inner);
        }
        return e[inner];
      }
    }
  }
  return InvalidArgumentError(where + ": no entry '" + name + "' in " + key);
}

std::string Str(const YAML::Node& n, const std::string& key) {
  return n[key] && n[key].IsScalar() ? n[key].as<std::string>() : "";
}

}  // namespace

StatusOr<KubeCredentials> KubeconfigCredentials(const std::string& path,
                                                const std::string& context) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return NotFoundError("cannot read kubeconfig " + path);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(path + ": " + e.what());
  }
  if (!root.IsMap()) return InvalidArgumentError(path + ": a kubeconfig must be a YAML mapping");
  try {
    const std::string ctx_name = context.empty() ? Str(root, "current-context") : context;
    if (ctx_name.empty()) return InvalidArgumentError(path + ": no current-context");
    auto ctx = Named(root, "contexts", ctx_name, path);
    if (!ctx.ok()) return ctx.status();
    auto cluster = Named(root, "clusters", Str(*ctx, "cluster"), path);
    if (!cluster.ok()) return cluster.status();
    auto user = Named(root, "users", Str(*ctx, "user"), path);
    if (!user.ok()) return user.status();

    const std::filesystem::path base = std::filesystem::path(path).parent_path();
    auto resolve = [&](const std::string& p) {
      return p.empty() || std::filesystem::path(p).is_absolute() ? p : (base / p).string();
    };
    auto decode = [&](const YAML::Node& n, const std::string& key, std::string* out) -> Status {
      const std::string text = Str(n, key);
      if (text.empty()) return Status::Ok();
      auto d = Base64Decode(text);
      if (!d.ok()) return InvalidArgumentError(path + ": " + key + ": " + d.status().message());
      *out = *d;
      return Status::Ok();
    };

    KubeCredentials c;
    c.server = Str(*cluster, "server");
    if (c.server.empty()) {
      return InvalidArgumentError(path + ": cluster '" + Str(*ctx, "cluster") + "' has no server");
    }
    c.ca_file = resolve(Str(*cluster, "certificate-authority"));
    if (Status st = decode(*cluster, "certificate-authority-data", &c.ca_pem); !st.ok()) return st;
    c.insecure_skip_tls_verify = Str(*cluster, "insecure-skip-tls-verify") == "true";

    for (const char* unsupported : {"exec", "auth-provider", "username", "password"}) {
      if ((*user)[unsupported]) {
        return InvalidArgumentError(path + ": user '" + Str(*ctx, "user") +
                                    "' authenticates with '" + unsupported +
                                    "', which migsched does not support; use a token, a token "
                                    "file or a client certificate");
      }
    }
    c.token = Str(*user, "token");
    c.token_file = resolve(Str(*user, "tokenFile"));
    c.client_cert_file = resolve(Str(*user, "client-certificate"));
    c.client_key_file = resolve(Str(*user, "client-key"));
    if (Status st = decode(*user, "client-certificate-data", &c.client_cert_pem); !st.ok()) {
      return st;
    }
    if (Status st = decode(*user, "client-key-data", &c.client_key_pem); !st.ok()) return st;
    c.ns = Str(*ctx, "namespace");
    if (c.ns.empty()) c.ns = "default";
    return c;
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(path + ": " + e.what());
  }
}

}  // namespace migsched::k8s
