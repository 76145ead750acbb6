// How migsched reaches the Kubernetes API server: the address, the CA that
// signs its certificate, and who we are (a bearer token, re-read from its file
// before every request because projected service-account tokens rotate, or a
// client certificate). From inside a pod (the service account) or from a
// kubeconfig file, as client-go finds them.
//
// Thread-safety: pure functions over files and the environment.
#ifndef MIGSCHED_K8S_API_CREDENTIALS_H_
#define MIGSCHED_K8S_API_CREDENTIALS_H_

#include <map>
#include <string>

#include "core/status.h"

namespace migsched::k8s {

struct KubeCredentials {
  std::string server;  // "https://10.96.0.1:443"; "http://..." only for tests
  // The CA: PEM text (kubeconfig certificate-authority-data, decoded) or a file.
  std::string ca_pem;
  std::string ca_file;
  bool insecure_skip_tls_verify = false;
  std::string token;       // bearer token, or:
  std::string token_file;  // a file holding it, read before each request
  // A client certificate and key: PEM text or files.
  std::string client_cert_pem, client_key_pem;
  std::string client_cert_file, client_key_file;
  std::string ns;  // the service account's or the context's namespace ("default" if none)

  // The bearer token to send now ("" for none). kUnauthenticated when the
  // token file cannot be read.
  StatusOr<std::string> CurrentToken() const;
};

// Where a pod finds its service account.
inline constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

// In-cluster credentials: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT,
// <dir>/token, <dir>/ca.crt, <dir>/namespace. `env` stands for the process
// environment (tests pass their own). kNotFound, saying what is missing, when
// not in a pod.
StatusOr<KubeCredentials> InClusterCredentials(const std::map<std::string, std::string>& env,
                                               const std::string& dir = kServiceAccountDir);
// The process environment's KUBERNETES_SERVICE_HOST / _PORT.
std::map<std::string, std::string> KubernetesEnv();

// Credentials of a kubeconfig file: `context` or else its current-context;
// cluster server, certificate-authority(-data), insecure-skip-tls-verify; user
// token, tokenFile, client-certificate(-data), client-key(-data); relative
// paths are relative to the file. kInvalidArgument naming the file and the key
// for malformed YAML, a missing context/cluster/user, bad base64, or a user
// that authenticates another way (exec, auth-provider, username/password),
// which migsched does not run.
StatusOr<KubeCredentials> KubeconfigCredentials(const std::string& path,
                                                const std::string& context = "");

// Standard base64 (RFC 4648, padding optional, whitespace ignored).
StatusOr<std::string> Base64Decode(const std::string& text);

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_API_CREDENTIALS_H_
