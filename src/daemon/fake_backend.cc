#include "daemon/fake_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "daemon/nvml_backend.h"

namespace migsched {

std::vector<BackendProfile> BackendProfilesOf(const GpuModel& model) {
  std::vector<BackendProfile> out;
  for (const Profile& p : model.profiles()) {
    if (p.id < 0) continue;
    BackendProfile b;
    b.nvml_profile_index = p.nvml_profile_index;
    b.id = p.id;
    b.slice_count = p.compute_slices;
    b.instance_count = p.max_instances;
    b.memory_mib = p.memory_mib;
    b.placements = p.placements;
    out.push_back(std::move(b));
  }
  return out;
}

FakeBackend::FakeBackend(std::vector<const GpuModel*> models, FakeFaults faults)
    : faults_(faults), fail_create_left_(faults.fail_create) {
  gpus_.reserve(models.size());
  for (size_t i = 0; i < models.size(); ++i) {
    const GpuModel* m = models[i];
    Gpu g;
    g.model = m;
    g.info.index = static_cast<int>(i);
    g.info.uuid = fmt::format("GPU-fake-00000000-0000-0000-0000-{:012x}", i);
    g.info.name = m->aliases().empty() ? m->name() : m->aliases().front();
    g.info.mig_enabled = true;
    g.info.mig_pending_change = false;
    for (const Profile& p : m->profiles()) {
      g.info.memory_mib = std::max(g.info.memory_mib, p.memory_mib);
    }
    g.profiles = BackendProfilesOf(*m);
    gpus_.push_back(std::move(g));
  }
}

StatusOr<FakeBackend::Gpu*> FakeBackend::Lookup(int gpu) {
  if (gpu < 0 || gpu >= static_cast<int>(gpus_.size())) {
    return NotFoundError(
        fmt::format("GPU {} not found (the fake node has {} GPUs)", gpu, gpus_.size()));
  }
  Gpu& g = gpus_[gpu];
  if (g.gone) {
    return Status(
        StatusCode::kUnavailable,
        fmt::format("GPU {} ({}) is gone: it fell off the bus (fake backend)", gpu, g.info.uuid),
        StatusReason::kDeviceLost);
  }
  return &g;
}

Status FakeBackend::RequireMig(const Gpu& g) const {
  if (g.info.mig_enabled) return Status::Ok();
  return MigNotEnabledError(g.info);
}

std::string FakeBackend::ProfileLabel(const Gpu& g, int profile_id) const {
  for (const Profile& p : g.model->profiles()) {
    if (p.id == profile_id) return fmt::format("{} (profile id {})", p.name, profile_id);
  }
  return fmt::format("profile id {}", profile_id);
}

Status FakeBackend::CheckDisappearing(int gpu) {
  if (faults_.disappear_gpu == gpu && gpu >= 0 && gpu < static_cast<int>(gpus_.size())) {
    gpus_[gpu].gone = true;
  }
  return Status::Ok();
}

StatusOr<std::vector<BackendGpu>> FakeBackend::ListGpus() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<BackendGpu> out;
  for (const Gpu& g : gpus_) {
    if (!g.gone) out.push_back(g.info);
  }
  return out;
}

StatusOr<std::vector<BackendProfile>> FakeBackend::ListProfiles(int gpu) {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(Gpu * g, Lookup(gpu));
  RETURN_IF_ERROR(RequireMig(*g));
  return g->profiles;
}

StatusOr<std::vector<BackendInstance>> FakeBackend::ListInstances(int gpu) {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(Gpu * g, Lookup(gpu));
  RETURN_IF_ERROR(RequireMig(*g));
  std::vector<BackendInstance> out;
  for (const Instance& inst : g->instances) out.push_back(inst.info);
  return out;
}

StatusOr<BackendInstance> FakeBackend::CreateInstance(int gpu, int profile_id,
                                                      Placement placement) {
  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(CheckDisappearing(gpu));
  ASSIGN_OR_RETURN(BackendInstance made, CreateLocked(gpu, profile_id, placement, 0, ""));
  Status saved = Save();
  if (!saved.ok()) {
    // Undo: a create the state file does not know would be lost at the next start.
    auto& list = gpus_[gpu].instances;
    std::erase_if(list, [&](const Instance& i) { return i.info.gi_id == made.gi_id; });
    --creates_;
    return saved;
  }
  return made;
}

StatusOr<BackendInstance> FakeBackend::CreateLocked(int gpu, int profile_id, Placement placement,
                                                    unsigned int forced_gi_id,
                                                    const std::string& forced_uuid) {
  ASSIGN_OR_RETURN(Gpu * g, Lookup(gpu));
  RETURN_IF_ERROR(RequireMig(*g));
  const BackendProfile* prof = nullptr;
  for (const BackendProfile& p : g->profiles) {
    if (p.id == profile_id) prof = &p;
  }
  if (prof == nullptr) {
    return NotFoundError(fmt::format("GPU {} ({}) has no GPU-instance profile id {}", gpu,
                                     g->info.name, profile_id));
  }
  const std::string what = fmt::format("GPU {}: cannot create {} at placement {}", gpu,
                                       ProfileLabel(*g, profile_id), PlacementText(placement));
  if (forced_gi_id == 0 && fail_create_left_ > 0) {
    --fail_create_left_;
    return UnavailableError(what + ": injected failure (fake backend fail_create)");
  }
  if (std::find(prof->placements.begin(), prof->placements.end(), placement) ==
      prof->placements.end()) {
    std::string valid;
    for (const Placement& p : prof->placements) {
      valid += (valid.empty() ? "" : ", ") + PlacementText(p);
    }
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("{}: not a valid placement of this profile (valid: {})", what,
                              valid.empty() ? "none" : valid));
  }
  int same_profile = 0;
  int compute_used = 0;
  for (const Instance& inst : g->instances) {
    if (Overlaps(inst.info.placement, placement)) {
      return Status(StatusCode::kResourceExhausted,
                    fmt::format("{}: placement units {}-{} overlap GPU instance {} ({} at {}, {})",
                                what, std::max(placement.start, inst.info.placement.start),
                                std::min(placement.start + placement.size,
                                         inst.info.placement.start + inst.info.placement.size) -
                                    1,
                                inst.info.gi_id, ProfileLabel(*g, inst.info.profile_id),
                                PlacementText(inst.info.placement), inst.info.mig_uuid));
    }
    if (inst.info.profile_id == profile_id) ++same_profile;
    for (const BackendProfile& p : g->profiles) {
      if (p.id == inst.info.profile_id) compute_used += p.slice_count;
    }
  }
  if (prof->instance_count > 0 && same_profile >= prof->instance_count) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("{}: the GPU already has {} instance(s) of this profile, its maximum",
                              what, same_profile));
  }
  if (compute_used + prof->slice_count > g->model->compute_slices()) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("{}: {} compute slices in use + {} exceeds the GPU's {}", what,
                              compute_used, prof->slice_count, g->model->compute_slices()));
  }
  unsigned int gi_id = forced_gi_id > 0 ? forced_gi_id : 1;
  for (;; ++gi_id) {
    bool used = false;
    for (const Instance& inst : g->instances) used = used || inst.info.gi_id == gi_id;
    if (!used) break;
    if (forced_gi_id > 0) {
      return InvalidArgumentError(fmt::format("GPU {}: GPU instance id {} twice", gpu, gi_id));
    }
  }
  if (forced_uuid.empty()) ++counter_;
  Instance inst;
  inst.info.gpu = gpu;
  inst.info.profile_id = profile_id;
  inst.info.placement = placement;
  inst.info.gi_id = gi_id;
  inst.info.ci_id = 0;
  inst.info.mig_uuid =
      forced_uuid.empty() ? fmt::format("MIG-{:08x}-{:04x}-4000-8000-{:012x}", gpu, gi_id, counter_)
                          : forced_uuid;
  inst.info.has_compute_instance = true;
  inst.in_use_answers_left = faults_.destroy_in_use;
  auto pos = std::find_if(g->instances.begin(), g->instances.end(), [&](const Instance& other) {
    return other.info.placement.start > placement.start;
  });
  BackendInstance result = inst.info;
  g->instances.insert(pos, std::move(inst));
  ++creates_;
  return result;
}

Status FakeBackend::DestroyInstance(int gpu, unsigned int gi_id) {
  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(CheckDisappearing(gpu));
  ASSIGN_OR_RETURN(Gpu * g, Lookup(gpu));
  auto it = std::find_if(g->instances.begin(), g->instances.end(),
                         [&](const Instance& inst) { return inst.info.gi_id == gi_id; });
  if (it == g->instances.end()) {
    return NotFoundError(fmt::format("GPU {}: no GPU instance with id {}", gpu, gi_id));
  }
  const std::string what = fmt::format("GPU {}: cannot destroy GPU instance {} ({} at {}, {})", gpu,
                                       gi_id, ProfileLabel(*g, it->info.profile_id),
                                       PlacementText(it->info.placement), it->info.mig_uuid);
  if (it->marked_in_use) {
    return Status(StatusCode::kUnavailable, what + ": in use (processes are running on it)",
                  StatusReason::kInUse);
  }
  if (it->in_use_answers_left > 0) {
    --it->in_use_answers_left;
    return Status(StatusCode::kUnavailable, what + ": in use (injected fault: destroy_in_use)",
                  StatusReason::kInUse);
  }
  Instance removed = *it;
  auto pos = g->instances.erase(it);
  Status saved = Save();
  if (!saved.ok()) {
    g->instances.insert(pos, std::move(removed));
    return saved;
  }
  ++destroys_;
  return Status::Ok();
}

namespace {
// "[A100 40GB, H100 80GB]"
std::string JoinModels(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) out += (i > 0 ? ", " : "") + names[i];
  return out + "]";
}
}  // namespace

StatusOr<std::unique_ptr<FakeBackend>> FakeBackend::Open(std::vector<const GpuModel*> models,
                                                         FakeFaults faults,
                                                         const std::string& state_file) {
  // A fault for a GPU the node does not have would silently never happen.
  if (faults.disappear_gpu < -1 || faults.disappear_gpu >= static_cast<int>(models.size())) {
    return InvalidArgumentError(
        fmt::format("fake.disappear_gpu {}: the node has {} GPU{} (indices 0-{}); -1 for none",
                    faults.disappear_gpu, models.size(), models.size() == 1 ? "" : "s",
                    static_cast<int>(models.size()) - 1));
  }
  auto backend = std::make_unique<FakeBackend>(std::move(models), faults);
  backend->state_file_ = state_file;
  if (!state_file.empty()) {
    std::lock_guard<std::mutex> lock(backend->mu_);
    RETURN_IF_ERROR(backend->Load());
  }
  return backend;
}

Status FakeBackend::Load() {
  std::error_code ec;
  if (!std::filesystem::exists(state_file_, ec)) return Save();
  std::ifstream in(state_file_);
  if (!in) {
    return InvalidArgumentError(
        fmt::format("fake backend state file {}: cannot be read", state_file_));
  }
  std::stringstream text;
  text << in.rdbuf();
  auto bad = [&](const std::string& what) {
    return InvalidArgumentError(fmt::format("fake backend state file {}: {}", state_file_, what));
  };
  nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return bad("not a JSON object");
  if (!doc.contains("schema") || doc["schema"] != "migsched-fake-backend/1") {
    return bad("schema is not \"migsched-fake-backend/1\"");
  }
  const auto& gpus = doc["gpus"];
  if (!gpus.is_array()) return bad("`gpus` is not an array");
  if (gpus.size() != gpus_.size()) {
    return FailedPreconditionError(
        fmt::format("fake backend state file {} lists {} GPUs but the configured node has {}; "
                    "remove the file to start with empty GPUs",
                    state_file_, gpus.size(), gpus_.size()));
  }
  // The models the file was written for (files written before 2026-12-06 have none): a GPU
  // replaced by another model while the daemon was down comes back empty on real hardware, so a
  // file of other models is refused rather than read as if the instances were there.
  std::vector<std::string> configured;
  for (const Gpu& g : gpus_) configured.push_back(g.model->name());
  if (doc.contains("models")) {
    const auto& models = doc["models"];
    std::vector<std::string> written;
    if (!models.is_array()) return bad("`models` is not an array");
    for (const auto& m : models) {
      if (!m.is_string()) return bad("`models` holds a value that is not a string");
      written.push_back(m.get<std::string>());
    }
    if (written != configured) {
      return FailedPreconditionError(fmt::format(
          "fake backend state file {} was written for GPUs {} but the configured node has {}; "
          "remove the file to start with empty GPUs",
          state_file_, JoinModels(written), JoinModels(configured)));
    }
  }
  if (!doc["counter"].is_number_unsigned()) return bad("`counter` is not a non-negative integer");
  uint64_t counter = doc["counter"].get<uint64_t>();
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (!gpus[i].is_array()) return bad(fmt::format("gpus[{}] is not an array", i));
    for (size_t k = 0; k < gpus[i].size(); ++k) {
      const auto& e = gpus[i][k];
      const std::string where = fmt::format("gpus[{}][{}]", i, k);
      for (const char* key : {"profile_id", "start", "size", "gi_id"}) {
        if (!e.is_object() || !e.contains(key) || !e[key].is_number_integer()) {
          return bad(fmt::format("{}.{} is missing or not an integer", where, key));
        }
      }
      if (!e.contains("mig_uuid") || !e["mig_uuid"].is_string() ||
          e["mig_uuid"].get<std::string>().empty()) {
        return bad(where + ".mig_uuid is missing or not a string");
      }
      int gi_id = e["gi_id"].get<int>();
      if (gi_id <= 0) return bad(where + ".gi_id must be positive");
      auto made = CreateLocked(static_cast<int>(i), e["profile_id"].get<int>(),
                               {e["start"].get<int>(), e["size"].get<int>()},
                               static_cast<unsigned int>(gi_id), e["mig_uuid"].get<std::string>());
      if (!made.ok()) return bad(where + ": " + made.status().message());
    }
  }
  counter_ = counter;
  creates_ = 0;
  return Status::Ok();
}

Status FakeBackend::Save() const {
  if (state_file_.empty()) return Status::Ok();
  nlohmann::json doc;
  doc["schema"] = "migsched-fake-backend/1";
  doc["counter"] = counter_;
  doc["models"] = nlohmann::json::array();
  for (const Gpu& g : gpus_) doc["models"].push_back(g.model->name());
  doc["gpus"] = nlohmann::json::array();
  for (const Gpu& g : gpus_) {
    nlohmann::json list = nlohmann::json::array();
    for (const Instance& inst : g.instances) {
      list.push_back({{"profile_id", inst.info.profile_id},
                      {"start", inst.info.placement.start},
                      {"size", inst.info.placement.size},
                      {"gi_id", inst.info.gi_id},
                      {"mig_uuid", inst.info.mig_uuid}});
    }
    doc["gpus"].push_back(std::move(list));
  }
  const std::string tmp = state_file_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << doc.dump(1) << "\n";
    out.flush();
    if (!out) {
      return UnavailableError(
          fmt::format("fake backend state file {}: cannot write {}", state_file_, tmp));
    }
  }
  std::error_code ec;
  // The state dir's files are the daemon's alone (0600), whatever the umask when the backend
  // was made (the daemon sets 077 later, at its start).
  std::filesystem::permissions(
      tmp, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write, ec);
  std::filesystem::rename(tmp, state_file_, ec);
  if (ec) {
    return UnavailableError(fmt::format("fake backend state file {}: cannot rename {}: {}",
                                        state_file_, tmp, ec.message()));
  }
  return Status::Ok();
}

StatusOr<PcieThroughput> FakeBackend::GetPcieThroughput(int gpu) {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(Gpu * g, Lookup(gpu));
  if (!g->pcie) {
    return UnavailableError(
        fmt::format("GPU {}: the fake backend has no PCIe throughput sample", gpu));
  }
  return *g->pcie;
}

Status FakeBackend::SetInUse(int gpu, unsigned int gi_id, bool in_use) {
  std::lock_guard<std::mutex> lock(mu_);
  if (gpu < 0 || gpu >= static_cast<int>(gpus_.size())) {
    return NotFoundError(fmt::format("GPU {} not found", gpu));
  }
  for (Instance& inst : gpus_[gpu].instances) {
    if (inst.info.gi_id == gi_id) {
      inst.marked_in_use = in_use;
      return Status::Ok();
    }
  }
  return NotFoundError(fmt::format("GPU {}: no GPU instance with id {}", gpu, gi_id));
}

void FakeBackend::Disappear(int gpu) {
  std::lock_guard<std::mutex> lock(mu_);
  if (gpu >= 0 && gpu < static_cast<int>(gpus_.size())) gpus_[gpu].gone = true;
}

void FakeBackend::SetMigEnabled(int gpu, bool enabled) {
  std::lock_guard<std::mutex> lock(mu_);
  if (gpu >= 0 && gpu < static_cast<int>(gpus_.size())) gpus_[gpu].info.mig_enabled = enabled;
}

void FakeBackend::SetGpuName(int gpu, std::string name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (gpu >= 0 && gpu < static_cast<int>(gpus_.size())) gpus_[gpu].info.name = std::move(name);
}

void FakeBackend::SetMemoryMib(int gpu, int64_t mib) {
  std::lock_guard<std::mutex> lock(mu_);
  if (gpu >= 0 && gpu < static_cast<int>(gpus_.size())) gpus_[gpu].info.memory_mib = mib;
}

void FakeBackend::OverrideProfiles(int gpu, std::vector<BackendProfile> profiles) {
  std::lock_guard<std::mutex> lock(mu_);
  if (gpu >= 0 && gpu < static_cast<int>(gpus_.size())) {
    gpus_[gpu].profiles = std::move(profiles);
  }
}

void FakeBackend::SetPcieThroughput(int gpu, PcieThroughput value) {
  std::lock_guard<std::mutex> lock(mu_);
  if (gpu >= 0 && gpu < static_cast<int>(gpus_.size())) gpus_[gpu].pcie = value;
}

int64_t FakeBackend::creates() const {
  std::lock_guard<std::mutex> lock(mu_);
  return creates_;
}

int64_t FakeBackend::destroys() const {
  std::lock_guard<std::mutex> lock(mu_);
  return destroys_;
}

}  // namespace migsched
