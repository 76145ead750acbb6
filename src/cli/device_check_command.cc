// `migsched device-check [--write] [--gpu N]... [--nvml-library PATH]`: the hardware check
// of docs/mig-hardware.md "Checking a machine" (daemon/device_check.h), through the same
// NVML backend `migsched serve` uses. Read-only unless --write; never changes the MIG mode
// and never resets a GPU. scripts/device-check.sh wraps it.
//
// Exit status: 0 the catalog matches the driver and every write passed; 1 catalog
// differences only; 2 a write failed, a GPU was not left as found, or NVML could not be read
// (including a library that cannot be loaded).
#include "cli/device_check_command.h"

#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "daemon/device_check.h"
#include "daemon/nvml_backend.h"

namespace migsched::cli {
namespace {

struct DeviceCheckCliOptions {
  bool write = false;
  std::vector<std::string> gpus;
  std::string library = "libnvidia-ml.so.1";
};

int RunDeviceCheckCommand(const DeviceCheckCliOptions& o, Context& ctx) {
  StatusOr<const Catalog*> catalog = ctx.catalog();
  if (!catalog.ok()) {
    *ctx.err << "migsched device-check: " << catalog.status().message() << "\n";
    return kDeviceCheckFailed;
  }
  StatusOr<std::unique_ptr<NvmlBackend>> backend = NvmlBackend::Open(o.library);
  if (!backend.ok()) {
    *ctx.out << "device-check format=1 mode=" << (o.write ? "write" : "read-only") << "\n";
    *ctx.out << "error what=open-nvml message=" << nlohmann::json(backend.status().message()).dump()
             << "\n";
    *ctx.out << "summary gpus=0 differences=0 writes=0 write_failures=0 result=failed\n";
    *ctx.err << "migsched device-check: " << backend.status().message() << "\n";
    return kDeviceCheckFailed;
  }
  DeviceCheckOptions options;
  options.write = o.write;
  options.gpus = o.gpus;
  options.library = o.library;
  StatusOr<std::string> version = (*backend)->DriverVersion();
  options.driver_version = version.ok() ? *version : "";
  return RunDeviceCheck(backend->get(), **catalog, options, *ctx.out);
}

}  // namespace

void RegisterDeviceCheckCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto opt = std::make_shared<DeviceCheckCliOptions>();
  CLI::App* sub = app.add_subcommand(
      "device-check",
      "Check this machine's NVIDIA GPUs through migsched's NVML backend: driver, model, MIG "
      "mode, and the catalog compared with every profile and placement NVML reports; with "
      "--write, one create and destroy of each profile at each placement, timed, on GPUs "
      "with MIG enabled and no instance (the GPU is left as found). Never changes the MIG "
      "mode, never resets a GPU. Output format: docs/mig-hardware.md");
  sub->add_flag("--write", opt->write,
                "Create and destroy instances where allowed (MIG enabled, no change pending, "
                "no GPU instance on the GPU); without it nothing is changed");
  sub->add_option("--gpu", opt->gpus, "Only these NVML indices (repeatable; default: all)");
  sub->add_option("--nvml-library", opt->library,
                  "The NVML library to load (default libnvidia-ml.so.1; the tests give the fake "
                  "one)");
  sub->callback([opt, &ctx, exit_code] { *exit_code = RunDeviceCheckCommand(*opt, ctx); });
}

}  // namespace migsched::cli
