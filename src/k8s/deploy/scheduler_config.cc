#include "k8s/deploy/scheduler_config.h"

#include <algorithm>

#include "k8s/device_plugin/device_plugin.h"

namespace migsched::k8s {

std::vector<std::string> MigResourceNames(const std::vector<const GpuModel*>& models) {
  std::vector<std::string> names;
  for (const GpuModel* m : models) {
    for (int p : m->base_profiles()) {
      const std::string name = kMigResourcePrefix + m->profile(p).name;
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  return names;
}

std::string KubeSchedulerConfigYaml(const std::vector<std::string>& resources,
                                    const SchedulerConfigOptions& o) {
  std::string y =
      "apiVersion: kubescheduler.config.k8s.io/v1\n"
      "kind: KubeSchedulerConfiguration\n";
  if (!o.kubeconfig.empty()) y += "clientConnection:\n  kubeconfig: " + o.kubeconfig + "\n";
  if (o.second_profile) {
    y += "leaderElection:\n"
         "  leaderElect: true\n"
         "  resourceNamespace: " +
         o.lease_namespace +
         "\n"
         "  resourceName: " +
         o.scheduler_name +
         "-scheduler\n"
         "profiles:\n"
         "- schedulerName: " +
         o.scheduler_name + "\n";
  }
  y += "extenders:\n"
       "- urlPrefix: " +
       o.url +
       "\n"
       "  filterVerb: filter\n"
       "  prioritizeVerb: prioritize\n"
       "  bindVerb: bind\n"
       "  weight: " +
       std::to_string(o.weight) +
       "\n"
       "  nodeCacheCapable: true\n"
       "  # Not ignorable: without the extender a MIG pod must wait, not land on a\n"
       "  # node where no instance was reserved for it.\n"
       "  ignorable: false\n"
       "  httpTimeout: " +
       o.http_timeout + "\n";
  if (!o.tls_dir.empty()) {
    y += "  # Mutual TLS: the extender serves only callers with a certificate of its CA.\n"
         "  tlsConfig:\n"
         "    certFile: " +
         o.tls_dir + "/tls.crt\n    keyFile: " + o.tls_dir + "/tls.key\n    caFile: " + o.tls_dir +
         "/ca.crt\n";
  }
  y += "  # kube-scheduler sends only pods that ask for one of these; it leaves\n"
       "  # their counting to the extender (the instances of a GPU share slices,\n"
       "  # which per-resource counts cannot express).\n"
       "  managedResources:\n";
  for (const auto& r : resources) y += "  - {name: " + r + ", ignoredByScheduler: true}\n";
  return y;
}

}  // namespace migsched::k8s
