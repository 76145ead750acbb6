#include "daemon/device_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "daemon/discovery.h"

namespace migsched {
namespace {

// A value as it goes on a line: bare when it has only [A-Za-z0-9._:,+/-], else a JSON string.
std::string Q(const std::string& v) {
  const bool bare = !v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("._:,+/-").find(c) != std::string_view::npos;
  });
  return bare ? v : nlohmann::json(v).dump();
}

std::string PlacementList(const std::vector<Placement>& ps) {
  std::string out;
  for (const Placement& p : ps)
    out += fmt::format("{}{}:{}", out.empty() ? "" : ",", p.start, p.size);
  return out.empty() ? "none" : out;
}

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int RunDeviceCheck(MigBackend* backend, const Catalog& catalog, const DeviceCheckOptions& options,
                   std::ostream& out) {
  out << fmt::format("device-check format=1 mode={}\n", options.write ? "write" : "read-only");
  out << fmt::format("driver version={} library={}\n",
                     Q(options.driver_version.empty() ? "unknown" : options.driver_version),
                     Q(options.library.empty() ? "unknown" : options.library));
  StatusOr<std::vector<BackendGpu>> gpus = backend->ListGpus();
  if (!gpus.ok()) {
    out << fmt::format("error what=list-gpus message={}\n", Q(gpus.status().message()));
    out << "summary gpus=0 differences=0 writes=0 write_failures=0 result=failed\n";
    return kDeviceCheckFailed;
  }
  std::set<int> wanted;
  for (const std::string& g : options.gpus) {
    try {
      wanted.insert(std::stoi(g));
    } catch (const std::exception&) {
      out << fmt::format("error what=selection message={}\n",
                         Q("GPU \"" + g + "\" is not an NVML index"));
      return kDeviceCheckFailed;
    }
  }
  int checked = 0, differences = 0, writes = 0, write_failures = 0;
  bool failed = false;
  for (const BackendGpu& gpu : *gpus) {
    if (!wanted.empty() && wanted.count(gpu.index) == 0) continue;
    ++checked;
    auto known = catalog.Find(gpu.name);
    const GpuModel* model = known.ok() ? *known : nullptr;
    out << fmt::format(
        "gpu index={} name={} uuid={} memory_mib={} mig={} pending_change={} catalog={}\n",
        gpu.index, Q(gpu.name), Q(gpu.uuid), gpu.memory_mib,
        gpu.mig_enabled ? "enabled" : "disabled", gpu.mig_pending_change ? "yes" : "no",
        Q(model != nullptr ? model->name() : "none"));
    if (!gpu.mig_enabled) {
      out << fmt::format("write gpu={} result=skipped reason={}\n", gpu.index,
                         Q("MIG mode is not enabled (migsched never changes it)"));
      continue;
    }
    StatusOr<std::vector<BackendProfile>> profiles = backend->ListProfiles(gpu.index);
    if (!profiles.ok()) {
      out << fmt::format("error gpu={} what=list-profiles message={}\n", gpu.index,
                         Q(profiles.status().message()));
      failed = true;
      continue;
    }
    std::map<size_t, const Profile*> match;
    if (model != nullptr) match = MatchCatalog(*model, *profiles);
    for (size_t i = 0; i < profiles->size(); ++i) {
      const BackendProfile& p = (*profiles)[i];
      auto m = match.find(i);
      const Profile* c = m != match.end() ? m->second : nullptr;
      out << fmt::format(
          "profile gpu={} index={:#x} id={} slices={} instances={} memory_mib={} placements={} "
          "catalog={} catalog_memory_mib={}\n",
          gpu.index, p.nvml_profile_index, p.id, p.slice_count, p.instance_count, p.memory_mib,
          PlacementList(p.placements), Q(c != nullptr ? c->name : "none"),
          c != nullptr ? std::to_string(c->memory_mib) : "none");
    }
    if (model != nullptr) {
      for (const std::string& d : Differences(*model, *profiles)) {
        out << fmt::format("diff gpu={} text={}\n", gpu.index, Q(d));
        ++differences;
      }
    } else {
      out << fmt::format("diff gpu={} text={}\n", gpu.index,
                         Q("the catalog has no model named " + gpu.name));
      ++differences;
    }
    StatusOr<std::vector<BackendInstance>> before = backend->ListInstances(gpu.index);
    if (!before.ok()) {
      out << fmt::format("error gpu={} what=list-instances message={}\n", gpu.index,
                         Q(before.status().message()));
      failed = true;
      continue;
    }
    for (const BackendInstance& in : *before) {
      out << fmt::format("instance gpu={} gi={} profile_id={} placement={}:{} mig_uuid={}\n",
                         gpu.index, in.gi_id, in.profile_id, in.placement.start, in.placement.size,
                         Q(in.mig_uuid.empty() ? "none" : in.mig_uuid));
    }
    std::string skip;
    if (!options.write) {
      skip = "read-only (no --write)";
    } else if (gpu.mig_pending_change) {
      skip = "a MIG mode change is pending";
    } else if (!before->empty()) {
      skip = fmt::format("{} GPU instance(s) exist: the GPU may be in use", before->size());
    }
    if (!skip.empty()) {
      out << fmt::format("write gpu={} result=skipped reason={}\n", gpu.index, Q(skip));
      continue;
    }
    // One instance at a time: create, destroy, both timed.
    for (size_t i = 0; i < profiles->size(); ++i) {
      const BackendProfile& p = (*profiles)[i];
      auto m = match.find(i);
      const std::string name = m != match.end() ? m->second->name : "none";
      for (const Placement& pl : p.placements) {
        ++writes;
        auto t0 = std::chrono::steady_clock::now();
        StatusOr<BackendInstance> made = backend->CreateInstance(gpu.index, p.id, pl);
        const double create_ms = MsSince(t0);
        if (!made.ok()) {
          ++write_failures;
          out << fmt::format(
              "create gpu={} id={} profile={} placement={}:{} result=failed create_ms={:.1f} "
              "message={}\n",
              gpu.index, p.id, Q(name), pl.start, pl.size, create_ms, Q(made.status().message()));
          continue;
        }
        t0 = std::chrono::steady_clock::now();
        Status gone = backend->DestroyInstance(gpu.index, made->gi_id);
        const double destroy_ms = MsSince(t0);
        std::string result = "ok";
        if (!gone.ok()) {
          // Once more at once, so that the next placements find the GPU as it was.
          ++write_failures;
          Status again = backend->DestroyInstance(gpu.index, made->gi_id);
          result = again.ok() || again.code() == StatusCode::kNotFound ? "destroy-retried"
                                                                       : "destroy-failed";
        }
        out << fmt::format(
            "create gpu={} id={} profile={} placement={}:{} result={} create_ms={:.1f} "
            "destroy_ms={:.1f} gi={} mig_uuid={}{}\n",
            gpu.index, p.id, Q(name), pl.start, pl.size, result, create_ms, destroy_ms, made->gi_id,
            Q(made->mig_uuid), gone.ok() ? "" : " message=" + Q(gone.message()));
      }
    }
    // Leave it as found: it had no instance; whatever is there now was made here.
    StatusOr<std::vector<BackendInstance>> after = backend->ListInstances(gpu.index);
    int left = 0;
    if (after.ok()) {
      for (const BackendInstance& in : *after) {
        if (!backend->DestroyInstance(gpu.index, in.gi_id).ok()) ++left;
      }
      if (!after->empty()) after = backend->ListInstances(gpu.index);
    }
    if (!after.ok()) {
      out << fmt::format("restored gpu={} result=unknown message={}\n", gpu.index,
                         Q(after.status().message()));
      failed = true;
    } else {
      left = static_cast<int>(after->size());
      out << fmt::format("restored gpu={} result={} instances_left={}\n", gpu.index,
                         left == 0 ? "yes" : "no", left);
      failed = failed || left > 0;
    }
  }
  failed = failed || write_failures > 0;
  const char* result = failed ? "failed" : differences > 0 ? "differences" : "ok";
  out << fmt::format("summary gpus={} differences={} writes={} write_failures={} result={}\n",
                     checked, differences, writes, write_failures, result);
  return failed ? kDeviceCheckFailed : differences > 0 ? kDeviceCheckDifferences : kDeviceCheckOk;
}

}  // namespace migsched
