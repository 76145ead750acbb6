// `migsched k8s ...`: the Kubernetes integration (docs/kubernetes.md).
//
//   migsched k8s scheduler-config [--default-profile] [--url URL] [--gpu NAME]...
//       prints the KubeSchedulerConfiguration that calls the extender
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "k8s/deploy/scheduler_config.h"

namespace migsched::cli {
namespace {

struct SchedulerConfigFlags {
  k8s::SchedulerConfigOptions options;
  bool default_profile = false;
  std::vector<std::string> gpus;
};

int RunSchedulerConfig(const SchedulerConfigFlags& f, Context& ctx) {
  StatusOr<const Catalog*> catalog = ctx.catalog();
  if (!catalog.ok()) {
    *ctx.err << "error: " << catalog.status().message() << "\n";
    return 1;
  }
  std::vector<const GpuModel*> models;
  if (f.gpus.empty()) models = (*catalog)->models();
  for (const auto& name : f.gpus) {
    StatusOr<const GpuModel*> m = (*catalog)->Find(name);
    if (!m.ok()) {
      *ctx.err << "error: " << m.status().message() << "\n";
      return 1;
    }
    models.push_back(*m);
  }
  k8s::SchedulerConfigOptions o = f.options;
  o.second_profile = !f.default_profile;
  *ctx.out << k8s::KubeSchedulerConfigYaml(k8s::MigResourceNames(models), o);
  return 0;
}

}  // namespace

void RegisterK8sCommand(CLI::App& app, Context& ctx, int* exit_code) {
  CLI::App* k8s = app.add_subcommand(
      "k8s",
      "Kubernetes: the scheduler extender, the node agent (kubelet device plugin) and "
      "their configuration (docs/kubernetes.md)");
  k8s->require_subcommand(1);

  auto sc = std::make_shared<SchedulerConfigFlags>();
  CLI::App* cfg = k8s->add_subcommand(
      "scheduler-config",
      "Print the KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) that calls the "
      "extender for every MIG resource of the catalog");
  cfg->add_flag("--default-profile", sc->default_profile,
                "The extender on the default profile of the cluster's kube-scheduler instead of "
                "a second profile chosen with spec.schedulerName");
  cfg->add_option("--scheduler-name", sc->options.scheduler_name,
                  "Name of the second profile (pods set spec.schedulerName to it)")
      ->capture_default_str();
  cfg->add_option("--url", sc->options.url, "The extender's URL prefix")->capture_default_str();
  cfg->add_option("--kubeconfig", sc->options.kubeconfig,
                  "clientConnection.kubeconfig (e.g. /etc/kubernetes/scheduler.conf)");
  cfg->add_option("--weight", sc->options.weight, "Weight of the extender's scores")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cfg->add_option("--gpu", sc->gpus,
                  "Only the profiles of this GPU model (repeatable; default: every model of the "
                  "catalog)");
  cfg->callback([sc, &ctx, exit_code] { *exit_code = RunSchedulerConfig(*sc, ctx); });
}

}  // namespace migsched::cli
