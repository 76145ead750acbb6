#include "k8s/testing/test_pki.h"

#include <cstdlib>
#include <fstream>

namespace migsched::k8s {

namespace {

bool Run(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

std::string NewKey(const std::string& path) {
  return "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " + path;
}

}  // namespace

bool MakeSelfSignedCert(const std::string& dir, const std::string& name, const std::string& san) {
  const std::string base = dir + "/" + name;
  return Run(NewKey(base + ".key") + " -x509 -days 1 -subj /CN=" + name +
             (san.empty() ? "" : " -addext subjectAltName=" + san) + " -out " + base + ".crt");
}

bool MakeSignedCert(const std::string& dir, const std::string& ca, const std::string& name,
                    const std::string& san) {
  const std::string base = dir + "/" + name;
  if (!Run(NewKey(base + ".key") + " -subj /CN=" + name + " -out " + base + ".csr")) return false;
  std::string ext;
  if (!san.empty()) {
    std::ofstream(base + ".ext") << "subjectAltName=" << san << "\n";
    ext = " -extfile " + base + ".ext";
  }
  return Run("openssl x509 -req -days 1 -in " + base + ".csr -CA " + dir + "/" + ca +
             ".crt -CAkey " + dir + "/" + ca + ".key -CAcreateserial -out " + base + ".crt" + ext);
}

}  // namespace migsched::k8s
