// Throwaway certificates for TLS tests, made with the openssl command (in
// scripts/setup.sh's packages): a CA and certificates it signs, as PEM files
// in a folder. Keys are P-256 (fast to make); certificates last one day.
//
// Thread-safety: pure functions over the files they write.
#ifndef MIGSCHED_K8S_TESTING_TEST_PKI_H_
#define MIGSCHED_K8S_TESTING_TEST_PKI_H_

#include <string>

namespace migsched::k8s {

// A self-signed CA certificate: DIR/NAME.crt and DIR/NAME.key.
// `san`: the subjectAltName, e.g. "IP:127.0.0.1" ("" for none). False when
// openssl failed (not installed).
bool MakeSelfSignedCert(const std::string& dir, const std::string& name,
                        const std::string& san = "");

// DIR/NAME.crt and DIR/NAME.key signed by the CA DIR/CA.crt + DIR/CA.key;
// `san` as above (a server certificate needs it, a client certificate not).
bool MakeSignedCert(const std::string& dir, const std::string& ca, const std::string& name,
                    const std::string& san = "");

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_TESTING_TEST_PKI_H_
