// A stand-in libnvidia-ml.so for the nvml backend's tests (built as
// build/lib/libnvidia-ml-fake.so, target `fake_nvml`; tests find it through the
// MIGSCHED_FAKE_NVML macro, a daemon through `nvml_library:`). No GPU needed.
//
// It implements exactly the NVML calls daemon/nvml_api.h declares, with the
// semantics nvml.h documents (docs/mig-hardware.md §8.2):
//   * profile info by index 0, 1, …: NOT_SUPPORTED for an index the GPU lacks
//     (and for every index while MIG mode is not enabled), INVALID_ARGUMENT from
//     NVML_GPU_INSTANCE_PROFILE_COUNT (0x12) on;
//   * possible placements are static (occupancy is ignored); NULL array = count only;
//   * CreateGpuInstanceWithPlacement: INVALID_ARGUMENT for an unknown profile id
//     or a placement not in the list, INSUFFICIENT_RESOURCES when the placement
//     overlaps a live GI or the profile's instanceCount is reached;
//   * ComputeInstanceDestroy: IN_USE while the GI is marked busy;
//     GpuInstanceDestroy: IN_USE while busy or while a CI exists;
//   * stale GI/CI handles answer INVALID_ARGUMENT (objects are never freed).
// GPU instance ids: the smallest free id >= 1; CI ids from 0; MIG UUIDs
// "MIG-fa4e<gpu 4 hex>-<gi 4 hex>-<ci 4 hex>-8000-<counter 12 hex>".
//
// Configuration: the JSON file named by $MIGSCHED_FAKE_NVML_CONFIG, read at
// the first nvmlInit_v2 (or fakeNvmlReset):
//   {"gpus": [{"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-…",   (uuid optional)
//              "memory_mib": 40960, "compute_slices": 7,
//              "mig": "enabled" | "disabled" | "unsupported", "mig_pending": "enabled",
//              "profiles": [{"index": 0, "id": 19, "slices": 1, "instances": 7,
//                            "memory_mib": 4864, "placements": [[0, 1], [1, 1]]}, …],
//              "instances": [{"profile_id": 9, "start": 0, "size": 4,
//                             "compute_instance": true}],               (existing GIs)
//              "pcie": {"tx_kbps": 1000, "rx_kbps": 2000}}]}
// Every key but `gpus` is optional; `profiles` defaults to the A100 40GB table
// of docs/mig-hardware.md §2.2. Without the variable: two A100 40GB GPUs, MIG enabled.
//
// Test hooks (extern "C", found with dlsym on the same handle):
//   int fakeNvmlReset(void)                         forget all state, reload the config (0 = ok)
//   int fakeNvmlSetInUse(int gpu, unsigned gi, int) mark a GI busy (IN_USE on destroy); 0 = ok
//   int fakeNvmlSetGpuLost(int gpu, int lost)       GPU_IS_LOST on every call about it
//   void fakeNvmlSetNoPermission(int on)            NO_PERMISSION on the privileged calls
//   int fakeNvmlForbiddenCalls(void)                calls of nvmlDeviceSetMigMode (must stay 0)
//   const char* fakeNvmlLastError(void)             why the config was refused
//
// The field's harsher behaviour, on demand (docs/daemon-backends.md "Faults of the real driver"):
//   int fakeNvmlFailNext(const char* call, int gpu, int count, int ret)
//       the next `count` calls of NVML function `call` ("*": any) about GPU `gpu` (-1: any)
//       answer `ret` and do nothing; count -1: until cleared with count 0. ret NVML_SUCCESS (0)
//       answers success without doing anything (a destroy that leaves the instance behind).
//   int fakeNvmlSetLatency(const char* call, int gpu, const char* dist, double a, double b,
//                          unsigned long long seed)
//       every call of `call` ("*": any) about `gpu` (-1: any) first sleeps a time drawn from
//       `dist`: "lognormal" (a = median ms, b = sigma), "pareto" (a = scale ms, the minimum;
//       b = alpha), "fixed" (a ms) or "none" (removes the rule); capped at 60 s; the draws of
//       one rule come from its own generator seeded with `seed`. The first matching rule wins.
//       The sleep happens outside the library's lock (calls overlap as they would in NVML).
//   int fakeNvmlOpenHandle(int gpu, unsigned gi, int delta)
//       handles another process (a monitoring agent) holds on the GI's MIG device: its CI and
//       GI destroys answer IN_USE while any is open, with no job on it
//   int fakeNvmlSetResetRequired(int gpu, int on)   MIG calls answer RESET_REQUIRED (a GPU
//                                                   that needs a reset after a MIG mode change)
//   int fakeNvmlRenumber(int a, int b)              GPUs a and b swap indices (as after a
//                                                   reset or driver reload); old handles go stale
//   double fakeNvmlSleptMs(void)                    total latency drawn so far (ms)
//   int fakeNvmlMaxConcurrentChanges(int gpu)       most GI/CI creates+destroys in flight at once
//   int fakeNvmlInitCalls(void)                     successful nvmlInit_v2 calls since the reset
//   int fakeNvmlCalls(const char* call)             calls of an NVML function since the reset
// The config file takes the same as keys: "faults": [{"call", "gpu", "count", "return"}],
// "latency": [{"call", "gpu", "dist", "median_ms", "sigma", "scale_ms", "alpha", "ms",
// "seed"}], per GPU "reset_required": true, and "driver_version" (nvmlSystemGetDriverVersion).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/nvml_api.h"

namespace migsched::nvml {

struct nvmlDevice_st {
  int gpu = -1;
  nvmlComputeInstance_st* ci = nullptr;  // set for a MIG device handle
};

struct nvmlGpuInstance_st {
  int gpu = -1;
  unsigned int id = 0;
  unsigned int profile_id = 0;
  unsigned int slices = 0;
  nvmlGpuInstancePlacement_t placement{};
  bool alive = false;
  bool busy = false;
  int handles = 0;  // handles another process holds on its MIG device (fakeNvmlOpenHandle)
};

struct nvmlComputeInstance_st {
  nvmlGpuInstance_st* gi = nullptr;
  unsigned int id = 0;
  unsigned int profile_id = 0;
  unsigned int slices = 0;
  bool alive = false;
  std::string uuid;
  nvmlDevice_st device;  // the MIG device handle
};

}  // namespace migsched::nvml

namespace {

using namespace migsched::nvml;  // NOLINT

struct ProfileDef {
  unsigned int index = 0;
  unsigned int id = 0;
  unsigned int slices = 0;
  unsigned int instances = 0;
  unsigned long long memory_mib = 0;
  std::vector<nvmlGpuInstancePlacement_t> placements;
};

struct Gpu {
  std::string name;
  std::string uuid;
  unsigned long long memory_mib = 0;
  unsigned int compute_slices = 7;
  bool mig_capable = true;
  unsigned int mig_current = NVML_DEVICE_MIG_ENABLE;
  unsigned int mig_pending = NVML_DEVICE_MIG_ENABLE;
  std::vector<ProfileDef> profiles;
  std::vector<nvmlGpuInstance_st*> gis;  // live ones
  unsigned int tx_kbps = 0, rx_kbps = 0;
  bool lost = false;
  bool reset_required = false;
  nvmlDevice_st* handle = nullptr;
};

// fakeNvmlFailNext: `count` more calls of `call` about `gpu` answer `ret`.
struct Fault {
  std::string call;  // NVML function name; "*" = any
  int gpu = -1;      // -1 = any
  int count = 0;     // calls left; -1 = until cleared
  nvmlReturn_t ret = NVML_ERROR_UNKNOWN;
};

// fakeNvmlSetLatency: a heavy-tailed delay before a call.
struct Latency {
  std::string call;
  int gpu = -1;
  std::string dist;  // lognormal | pareto | fixed
  double a = 0, b = 0;
  std::mt19937_64 rng;
  double Draw() {
    double ms = 0;
    if (dist == "lognormal") {
      std::normal_distribution<double> n(0.0, 1.0);
      ms = a * std::exp(b * n(rng));
    } else if (dist == "pareto") {
      std::uniform_real_distribution<double> u(0.0, 1.0);
      const double v = 1.0 - u(rng);  // (0, 1]
      ms = a / std::pow(v, 1.0 / b);
    } else {
      ms = a;
    }
    return std::min(ms, 60000.0);
  }
};

struct State {
  bool loaded = false;
  int init_count = 0;
  bool no_permission = false;
  int forbidden_calls = 0;
  unsigned long long uuid_counter = 0;
  std::string last_error;
  std::string driver_version = "570.00.fake";
  std::vector<Fault> faults;
  std::vector<Latency> latencies;
  double slept_ms = 0;
  int init_calls = 0;
  std::map<std::string, int> calls;
  std::map<int, int> in_flight, max_in_flight;  // GI/CI creates and destroys per GPU
  std::vector<Gpu> gpus;
  // Objects are never freed, so a stale handle is detectable (alive == false).
  std::deque<nvmlDevice_st> devices;
  std::deque<nvmlGpuInstance_st> gis;
  std::deque<nvmlComputeInstance_st> cis;
};

std::mutex g_mu;
State& S() {
  static State* s = new State();  // never destroyed: handles stay valid until exit
  return *s;
}

// The A100 40GB table of docs/mig-hardware.md §2.2 (id, index, C, Max, MiB, placements).
std::vector<ProfileDef> A100Profiles() {
  auto starts = [](std::vector<unsigned int> s, unsigned int size) {
    std::vector<nvmlGpuInstancePlacement_t> out;
    for (unsigned int v : s) out.push_back({v, size});
    return out;
  };
  return {
      {0x0, 19, 1, 7, 4864, starts({0, 1, 2, 3, 4, 5, 6}, 1)},
      {0x7, 20, 1, 1, 4864, starts({0, 1, 2, 3, 4, 5, 6}, 1)},
      {0x9, 15, 1, 4, 9856, starts({0, 2, 4, 6}, 2)},
      {0x1, 14, 2, 3, 9856, starts({0, 2, 4}, 2)},
      {0x2, 9, 3, 2, 19968, starts({0, 4}, 4)},
      {0x3, 5, 4, 1, 19968, starts({0}, 4)},
      {0x4, 0, 7, 1, 40192, starts({0}, 8)},
  };
}

Gpu DefaultA100(int index) {
  Gpu g;
  g.name = "NVIDIA A100-SXM4-40GB";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "GPU-fa4e0000-0000-0000-0000-%012x", index);
  g.uuid = buf;
  g.memory_mib = 40960;
  g.profiles = A100Profiles();
  return g;
}

const ProfileDef* FindProfileById(const Gpu& g, unsigned int id) {
  for (const ProfileDef& p : g.profiles) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

bool Overlap(nvmlGpuInstancePlacement_t a, nvmlGpuInstancePlacement_t b) {
  return a.start < b.start + b.size && b.start < a.start + a.size;
}

// Creates a GI (no checks beyond the ones NVML makes); returns the code.
nvmlReturn_t CreateGi(State& s, int gpu, unsigned int profile_id,
                      nvmlGpuInstancePlacement_t placement, nvmlGpuInstance_st** out) {
  Gpu& g = s.gpus[gpu];
  if (g.mig_current != NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_NOT_SUPPORTED;
  const ProfileDef* p = FindProfileById(g, profile_id);
  if (p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  bool valid = false;
  for (const auto& pl : p->placements) {
    valid = valid || (pl.start == placement.start && pl.size == placement.size);
  }
  if (!valid) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int same = 0, slices = 0;
  for (nvmlGpuInstance_st* gi : g.gis) {
    if (Overlap(gi->placement, placement)) return NVML_ERROR_INSUFFICIENT_RESOURCES;
    if (gi->profile_id == profile_id) ++same;
    slices += gi->slices;
  }
  if (same >= p->instances) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  if (slices + p->slices > g.compute_slices) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  unsigned int id = 1;
  for (;; ++id) {
    bool used = false;
    for (nvmlGpuInstance_st* gi : g.gis) used = used || gi->id == id;
    if (!used) break;
  }
  nvmlGpuInstance_st& gi = s.gis.emplace_back();
  gi.gpu = gpu;
  gi.id = id;
  gi.profile_id = profile_id;
  gi.slices = p->slices;
  gi.placement = placement;
  gi.alive = true;
  auto pos = std::find_if(g.gis.begin(), g.gis.end(), [&](nvmlGpuInstance_st* other) {
    return other->placement.start > placement.start;
  });
  g.gis.insert(pos, &gi);
  *out = &gi;
  return NVML_SUCCESS;
}

// CI profile index → compute slices (NVML_COMPUTE_INSTANCE_PROFILE_*: 1, 2, 3, 4, 7 slices at
// indices 0..4; 8_SLICE, 6_SLICE, 1_SLICE_REV1, 7_SLICE_NVL are not offered by this fake).
unsigned int CiSlices(unsigned int index) {
  static const unsigned int kSlices[] = {1, 2, 3, 4, 7};
  return index < 5 ? kSlices[index] : 0;
}

std::vector<nvmlComputeInstance_st*> LiveCis(State& s, nvmlGpuInstance_st* gi) {
  std::vector<nvmlComputeInstance_st*> out;
  for (nvmlComputeInstance_st& ci : s.cis) {
    if (ci.alive && ci.gi == gi) out.push_back(&ci);
  }
  return out;
}

nvmlReturn_t CreateCi(State& s, nvmlGpuInstance_st* gi, unsigned int ci_profile,
                      nvmlComputeInstance_st** out) {
  unsigned int slices = CiSlices(ci_profile);
  if (slices == 0 || slices > gi->slices) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int used = 0;
  auto live = LiveCis(s, gi);
  for (nvmlComputeInstance_st* ci : live) used += ci->slices;
  if (used + slices > gi->slices) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  unsigned int id = 0;
  for (;; ++id) {
    bool taken = false;
    for (nvmlComputeInstance_st* ci : live) taken = taken || ci->id == id;
    if (!taken) break;
  }
  nvmlComputeInstance_st& ci = s.cis.emplace_back();
  ci.gi = gi;
  ci.id = id;
  ci.profile_id = ci_profile;
  ci.slices = slices;
  ci.alive = true;
  ++s.uuid_counter;
  char buf[80];
  std::snprintf(buf, sizeof(buf), "MIG-fa4e%04x-%04x-%04x-8000-%012llx", gi->gpu, gi->id, id,
                s.uuid_counter);
  ci.uuid = buf;
  ci.device.gpu = gi->gpu;
  ci.device.ci = &ci;
  *out = &ci;
  return NVML_SUCCESS;
}

unsigned int MigMode(const std::string& text, bool* ok) {
  if (text == "enabled") return NVML_DEVICE_MIG_ENABLE;
  if (text == "disabled") return NVML_DEVICE_MIG_DISABLE;
  *ok = false;
  return 0;
}

// A latency rule; false for an unknown distribution or bad parameters.
bool MakeLatency(const std::string& call, int gpu, const std::string& dist, double a, double b,
                 unsigned long long seed, Latency* out) {
  if (dist != "lognormal" && dist != "pareto" && dist != "fixed") return false;
  if (!(a >= 0) || (dist == "pareto" && !(b > 0)) || (dist == "lognormal" && !(b >= 0))) {
    return false;
  }
  out->call = call;
  out->gpu = gpu;
  out->dist = dist;
  out->a = a;
  out->b = b;
  out->rng.seed(seed);
  return true;
}

bool Matches(const std::string& rule_call, int rule_gpu, const char* call, int gpu) {
  return (rule_call == "*" || rule_call == call) && (rule_gpu < 0 || rule_gpu == gpu);
}

bool IsChange(const std::string& call) {
  return call == "nvmlDeviceCreateGpuInstanceWithPlacement" ||
         call == "nvmlGpuInstanceCreateComputeInstance" || call == "nvmlComputeInstanceDestroy" ||
         call == "nvmlGpuInstanceDestroy";
}

// Loads the configuration (g_mu held). Returns false and sets last_error on a bad file.
bool Load(State& s) {
  for (nvmlGpuInstance_st& gi : s.gis) gi.alive = false;
  for (nvmlComputeInstance_st& ci : s.cis) ci.alive = false;
  s.gpus.clear();
  s.no_permission = false;
  s.last_error.clear();
  s.driver_version = "570.00.fake";
  s.faults.clear();
  s.latencies.clear();
  s.slept_ms = 0;
  s.init_calls = 0;
  s.calls.clear();
  s.max_in_flight.clear();
  s.loaded = true;
  const char* path = std::getenv("MIGSCHED_FAKE_NVML_CONFIG");
  if (path == nullptr || *path == '\0') {
    s.gpus.push_back(DefaultA100(0));
    s.gpus.push_back(DefaultA100(1));
  } else {
    try {
      std::ifstream in(path);
      if (!in) throw std::runtime_error(std::string("cannot read ") + path);
      std::stringstream text;
      text << in.rdbuf();
      nlohmann::json doc = nlohmann::json::parse(text.str());
      int index = 0;
      for (const auto& jg : doc.at("gpus")) {
        Gpu g = DefaultA100(index);
        g.name = jg.value("name", g.name);
        g.uuid = jg.value("uuid", g.uuid);
        g.memory_mib = jg.value("memory_mib", g.memory_mib);
        g.compute_slices = jg.value("compute_slices", g.compute_slices);
        std::string mig = jg.value("mig", std::string("enabled"));
        bool ok = true;
        if (mig == "unsupported") {
          g.mig_capable = false;
        } else {
          g.mig_current = MigMode(mig, &ok);
        }
        g.mig_pending = jg.contains("mig_pending")
                            ? MigMode(jg.at("mig_pending").get<std::string>(), &ok)
                            : g.mig_current;
        if (!ok) throw std::runtime_error("mig must be enabled, disabled or unsupported");
        if (jg.contains("profiles")) {
          g.profiles.clear();
          for (const auto& jp : jg.at("profiles")) {
            ProfileDef p;
            p.index = jp.at("index").get<unsigned int>();
            p.id = jp.at("id").get<unsigned int>();
            p.slices = jp.at("slices").get<unsigned int>();
            p.instances = jp.at("instances").get<unsigned int>();
            p.memory_mib = jp.at("memory_mib").get<unsigned long long>();
            for (const auto& pl : jp.at("placements")) {
              p.placements.push_back({pl.at(0).get<unsigned int>(), pl.at(1).get<unsigned int>()});
            }
            g.profiles.push_back(std::move(p));
          }
        }
        g.reset_required = jg.value("reset_required", false);
        if (jg.contains("pcie")) {
          g.tx_kbps = jg.at("pcie").value("tx_kbps", 0u);
          g.rx_kbps = jg.at("pcie").value("rx_kbps", 0u);
        }
        s.gpus.push_back(std::move(g));
        ++index;
      }
      s.driver_version = doc.value("driver_version", s.driver_version);
      if (doc.contains("faults")) {
        for (const auto& jf : doc.at("faults")) {
          Fault f;
          f.call = jf.value("call", std::string("*"));
          f.gpu = jf.value("gpu", -1);
          f.count = jf.value("count", -1);
          f.ret = jf.at("return").get<int>();
          s.faults.push_back(f);
        }
      }
      if (doc.contains("latency")) {
        for (const auto& jl : doc.at("latency")) {
          const std::string dist = jl.at("dist").get<std::string>();
          double a = 0, b = 0;
          if (dist == "lognormal") {
            a = jl.at("median_ms").get<double>();
            b = jl.at("sigma").get<double>();
          } else if (dist == "pareto") {
            a = jl.at("scale_ms").get<double>();
            b = jl.at("alpha").get<double>();
          } else if (dist == "fixed") {
            a = jl.at("ms").get<double>();  // required: "median_ms" here was taken as 0 ms
          }
          Latency l;
          if (!MakeLatency(jl.value("call", std::string("*")), jl.value("gpu", -1), dist, a, b,
                           jl.value("seed", 1ull), &l)) {
            throw std::runtime_error("latency " + jl.dump() +
                                     ": dist must be lognormal (median_ms, sigma), pareto "
                                     "(scale_ms, alpha > 0) or fixed (ms)");
          }
          s.latencies.push_back(std::move(l));
        }
      }
      // Existing instances, after every GPU exists.
      index = 0;
      for (const auto& jg : doc.at("gpus")) {
        if (jg.contains("instances")) {
          unsigned int saved_mode = s.gpus[index].mig_current;
          s.gpus[index].mig_current = NVML_DEVICE_MIG_ENABLE;
          for (const auto& ji : jg.at("instances")) {
            nvmlGpuInstance_st* gi = nullptr;
            nvmlReturn_t ret = CreateGi(
                s, index, ji.at("profile_id").get<unsigned int>(),
                {ji.at("start").get<unsigned int>(), ji.at("size").get<unsigned int>()}, &gi);
            if (ret != NVML_SUCCESS) {
              throw std::runtime_error("instance " + ji.dump() + " cannot be created: NVML " +
                                       std::to_string(ret));
            }
            if (ji.value("compute_instance", true)) {
              unsigned int best = 0;
              for (unsigned int k = 0; k < 5; ++k) {
                if (CiSlices(k) <= gi->slices) best = k;
              }
              nvmlComputeInstance_st* ci = nullptr;
              CreateCi(s, gi, best, &ci);
            }
          }
          s.gpus[index].mig_current = saved_mode;
        }
        ++index;
      }
    } catch (const std::exception& e) {
      s.gpus.clear();
      s.last_error = std::string("MIGSCHED_FAKE_NVML_CONFIG=") + path + ": " + e.what();
      std::fprintf(stderr, "fake libnvidia-ml: %s\n", s.last_error.c_str());
      return false;
    }
  }
  for (size_t i = 0; i < s.gpus.size(); ++i) {
    nvmlDevice_st& d = s.devices.emplace_back();
    d.gpu = static_cast<int>(i);
    s.gpus[i].handle = &d;
  }
  return true;
}

// Resolves a physical-GPU handle (not a MIG device). Returns the code.
nvmlReturn_t Resolve(State& s, nvmlDevice_t dev, Gpu** out) {
  if (s.init_count <= 0) return NVML_ERROR_UNINITIALIZED;
  if (dev == nullptr || dev->gpu < 0 || dev->gpu >= static_cast<int>(s.gpus.size())) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  Gpu& g = s.gpus[dev->gpu];
  if (dev->ci == nullptr && g.handle != dev) return NVML_ERROR_INVALID_ARGUMENT;  // stale
  if (g.lost) return NVML_ERROR_GPU_IS_LOST;
  *out = &g;
  return NVML_SUCCESS;
}

nvmlReturn_t ResolveGi(State& s, nvmlGpuInstance_t gi) {
  if (s.init_count <= 0) return NVML_ERROR_UNINITIALIZED;
  if (gi == nullptr || !gi->alive) return NVML_ERROR_INVALID_ARGUMENT;
  if (s.gpus[gi->gpu].lost) return NVML_ERROR_GPU_IS_LOST;
  return NVML_SUCCESS;
}

nvmlReturn_t CopyString(const std::string& text, char* buf, unsigned int length) {
  if (buf == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (length < text.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buf, text.c_str(), text.size() + 1);
  return NVML_SUCCESS;
}

// Every NVML entry point starts with one: counts the call, applies the first matching latency
// rule (sleeping outside g_mu) and the first matching injected fault, and tracks the GI/CI
// changes in flight per GPU. `gpu` is the GPU the call is about (-1: none; read from handles
// without the lock: their `gpu` changes only under fakeNvmlRenumber, which tests call while no
// NVML call is in flight).
class Call {
 public:
  Call(const char* name, int gpu) : gpu_(gpu) {
    double sleep_ms = 0;
    {
      std::lock_guard<std::mutex> lock(g_mu);
      State& s = S();
      ++s.calls[name];
      for (Fault& f : s.faults) {
        if (f.count == 0 || !Matches(f.call, f.gpu, name, gpu)) continue;
        if (f.count > 0) --f.count;
        injected_ = true;
        ret_ = f.ret;
        break;
      }
      for (Latency& l : s.latencies) {
        if (!Matches(l.call, l.gpu, name, gpu)) continue;
        sleep_ms = l.Draw();
        break;
      }
      s.slept_ms += sleep_ms;
      change_ = gpu >= 0 && IsChange(name);
      if (change_) {
        const int n = ++s.in_flight[gpu];
        s.max_in_flight[gpu] = std::max(s.max_in_flight[gpu], n);
      }
    }
    if (sleep_ms > 0)
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(sleep_ms));
  }
  ~Call() {
    if (!change_) return;
    std::lock_guard<std::mutex> lock(g_mu);
    --S().in_flight[gpu_];
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;
  // An injected answer: return it without doing anything.
  bool injected() const { return injected_; }
  nvmlReturn_t ret() const { return ret_; }

 private:
  int gpu_;
  bool change_ = false;
  bool injected_ = false;
  nvmlReturn_t ret_ = NVML_SUCCESS;
};

int GpuOf(nvmlDevice_t d) { return d != nullptr ? d->gpu : -1; }
int GpuOf(nvmlGpuInstance_t gi) { return gi != nullptr ? gi->gpu : -1; }
int GpuOf(nvmlComputeInstance_t ci) {
  return ci != nullptr && ci->gi != nullptr ? ci->gi->gpu : -1;
}

// A GPU needing a reset refuses every MIG call.
bool MigBlocked(const State& s, int gpu) {
  return gpu >= 0 && gpu < static_cast<int>(s.gpus.size()) && s.gpus[gpu].reset_required;
}

#define FAKE_NVML_CALL(name, gpu) \
  Call call_guard(name, gpu);     \
  if (call_guard.injected()) return call_guard.ret()

}  // namespace

#define FAKE_NVML_EXPORT extern "C" __attribute__((visibility("default")))

FAKE_NVML_EXPORT nvmlReturn_t nvmlInit_v2() {
  FAKE_NVML_CALL("nvmlInit_v2", -1);
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  if (!s.loaded && !Load(s)) return NVML_ERROR_UNKNOWN;
  if (!s.last_error.empty()) return NVML_ERROR_UNKNOWN;
  ++s.init_count;
  ++s.init_calls;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlShutdown() {
  FAKE_NVML_CALL("nvmlShutdown", -1);
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  if (s.init_count <= 0) return NVML_ERROR_UNINITIALIZED;
  --s.init_count;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t ret) {
  switch (ret) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_IN_USE:
      return "In use by another client";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "Insufficient Resources";
    case NVML_ERROR_RESET_REQUIRED:
      return "GPU requires reset";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    default:
      return "Unknown Error";
  }
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  FAKE_NVML_CALL("nvmlDeviceGetCount_v2", -1);
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  if (s.init_count <= 0) return NVML_ERROR_UNINITIALIZED;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = static_cast<unsigned int>(s.gpus.size());
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                            nvmlDevice_t* device) {
  FAKE_NVML_CALL("nvmlDeviceGetHandleByIndex_v2", static_cast<int>(index));
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  if (s.init_count <= 0) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || index >= s.gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
  if (s.gpus[index].lost) return NVML_ERROR_GPU_IS_LOST;
  *device = s.gpus[index].handle;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name,
                                                unsigned int length) {
  FAKE_NVML_CALL("nvmlDeviceGetName", GpuOf(device));
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  Gpu* g = nullptr;
  nvmlReturn_t ret = Resolve(s, device, &g);
  if (ret != NVML_SUCCESS) return ret;
  return CopyString(g->name, name, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                                                unsigned int length) {
  FAKE_NVML_CALL("nvmlDeviceGetUUID", GpuOf(device));
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  Gpu* g = nullptr;
  nvmlReturn_t ret = Resolve(s, device, &g);
  if (ret != NVML_SUCCESS) return ret;
  if (device->ci != nullptr) {  // a MIG device handle
    if (!device->ci->alive) return NVML_ERROR_INVALID_ARGUMENT;
    return CopyString(device->ci->uuid, uuid, length);
  }
  return CopyString(g->uuid, uuid, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  FAKE_NVML_CALL("nvmlDeviceGetMemoryInfo", GpuOf(device));
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  Gpu* g = nullptr;
  nvmlReturn_t ret = Resolve(s, device, &g);
  if (ret != NVML_SUCCESS) return ret;
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  memory->total = g->memory_mib * 1024ull * 1024ull;
  memory->used = 0;
  memory->free = memory->total;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current,
                                                   unsigned int* pending) {
  FAKE_NVML_CALL("nvmlDeviceGetMigMode", GpuOf(device));
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  Gpu* g = nullptr;
  nvmlReturn_t ret = Resolve(s, device, &g);
  if (ret != NVML_SUCCESS) return ret;
  if (current == nullptr || pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!g->mig_capable) return NVML_ERROR_NOT_SUPPORTED;
  *current = g->mig_current;
  *pending = g->mig_pending;
  return NVML_SUCCESS;
}

// Present so a test can prove it is never called (migsched must not change MIG mode).
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t, unsigned int,
                                                   nvmlReturn_t* activation) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++S().forbidden_calls;
  if (activation != nullptr) *activation = NVML_ERROR_NO_PERMISSION;
  return NVML_ERROR_NO_PERMISSION;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(
    nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_t* info) {
  FAKE_NVML_CALL("nvmlDeviceGetGpuInstanceProfileInfo", GpuOf(device));
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  Gpu* g = nullptr;
  nvmlReturn_t ret = Resolve(s, device, &g);
  if (ret != NVML_SUCCESS) return ret;
  if (info == nullptr || profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (!g->mig_capable || g->mig_current != NVML_DEVICE_MIG_ENABLE) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  if (g->reset_required) return NVML_ERROR_RESET_REQUIRED;
  for (const ProfileDef& p : g->profiles) {
    if (p.index != profile) continue;
    *info = nvmlGpuInstanceProfileInfo_t{};
    info->id = p.id;
    info->isP2pSupported = 0;
    info->sliceCount = p.slices;
    info->instanceCount = p.instances;
    info->multiprocessorCount = 14 * p.slices;
    info->memorySizeMB = p.memory_mib;
    return NVML_SUCCESS;
  }
  return NVML_ERROR_NOT_SUPPORTED;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t device, unsigned int profile_id, nvmlGpuInstancePlacement_t* placements,
    unsigned int* count) {
  FAKE_NVML_CALL("nvmlDeviceGetGpuInstancePossiblePlacements_v2", GpuOf(device));
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  Gpu* g = nullptr;
  nvmlReturn_t ret = Resolve(s, device, &g);
  if (ret != NVML_SUCCESS) return ret;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (s.no_permission) return NVML_ERROR_NO_PERMISSION;
  if (!g->mig_capable || g->mig_current != NVML_DEVICE_MIG_ENABLE) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  if (g->reset_required) return NVML_ERROR_RESET_REQUIRED;
  const ProfileDef* p = FindProfileById(*g, profile_id);
  if (p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const unsigned int n = static_cast<unsigned int>(p->placements.size());
  if (placements == nullptr) {
    *count = n;
    return NVML_SUCCESS;
  }
  if (*count < n) {
    *count = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  std::copy(p->placements.begin(), p->placements.end(), placements);
  *count = n;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
    nvmlDevice_t device, unsigned int profile_id, const nvmlGpuInstancePlacement_t* placement,
    nvmlGpuInstance_t* gpu_instance) {
  FAKE_NVML_CALL("nvmlDeviceCreateGpuInstanceWithPlacement", GpuOf(device));
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  Gpu* g = nullptr;
  nvmlReturn_t ret = Resolve(s, device, &g);
  if (ret != NVML_SUCCESS) return ret;
  if (placement == nullptr || gpu_instance == nullptr || device->ci != nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (s.no_permission) return NVML_ERROR_NO_PERMISSION;
  if (g->reset_required) return NVML_ERROR_RESET_REQUIRED;
  return CreateGi(s, device->gpu, profile_id, *placement, gpu_instance);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t gpu_instance, unsigned int profile, unsigned int eng_profile,
    nvmlComputeInstanceProfileInfo_t* info) {
  FAKE_NVML_CALL("nvmlGpuInstanceGetComputeInstanceProfileInfo", GpuOf(gpu_instance));
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  nvmlReturn_t ret = ResolveGi(s, gpu_instance);
  if (ret != NVML_SUCCESS) return ret;
  if (info == nullptr || profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  unsigned int slices = CiSlices(profile);
  if (eng_profile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED || slices == 0 ||
      slices > gpu_instance->slices) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  *info = nvmlComputeInstanceProfileInfo_t{};
  info->id = profile;
  info->sliceCount = slices;
  info->instanceCount = gpu_instance->slices / slices;
  info->multiprocessorCount = 14 * slices;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t
nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
                                     nvmlComputeInstance_t* compute_instance) {
  FAKE_NVML_CALL("nvmlGpuInstanceCreateComputeInstance", GpuOf(gpu_instance));
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  nvmlReturn_t ret = ResolveGi(s, gpu_instance);
  if (ret != NVML_SUCCESS) return ret;
  if (compute_instance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (s.no_permission) return NVML_ERROR_NO_PERMISSION;
  if (MigBlocked(s, gpu_instance->gpu)) return NVML_ERROR_RESET_REQUIRED;
  return CreateCi(s, gpu_instance, profile_id, compute_instance);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t ci,
                                                            nvmlComputeInstanceInfo_t* info) {
  FAKE_NVML_CALL("nvmlComputeInstanceGetInfo_v2", GpuOf(ci));
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  if (s.init_count <= 0) return NVML_ERROR_UNINITIALIZED;
  if (ci == nullptr || info == nullptr || !ci->alive) return NVML_ERROR_INVALID_ARGUMENT;
  if (s.gpus[ci->gi->gpu].lost) return NVML_ERROR_GPU_IS_LOST;
  info->device = &ci->device;
  info->gpuInstance = ci->gi;
  info->id = ci->id;
  info->profileId = ci->profile_id;
  info->placement = {0, ci->slices};
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device,
                                                        unsigned int profile_id,
                                                        nvmlGpuInstance_t* gpu_instances,
                                                        unsigned int* count) {
  FAKE_NVML_CALL("nvmlDeviceGetGpuInstances", GpuOf(device));
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  Gpu* g = nullptr;
  nvmlReturn_t ret = Resolve(s, device, &g);
  if (ret != NVML_SUCCESS) return ret;
  if (gpu_instances == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (s.no_permission) return NVML_ERROR_NO_PERMISSION;
  if (!g->mig_capable || g->mig_current != NVML_DEVICE_MIG_ENABLE) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  if (g->reset_required) return NVML_ERROR_RESET_REQUIRED;
  const ProfileDef* p = FindProfileById(*g, profile_id);
  if (p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int n = 0;
  for (nvmlGpuInstance_st* gi : g->gis) {
    if (gi->profile_id == profile_id && n < p->instances) gpu_instances[n++] = gi;
  }
  *count = n;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpu_instance,
                                                     nvmlGpuInstanceInfo_t* info) {
  FAKE_NVML_CALL("nvmlGpuInstanceGetInfo", GpuOf(gpu_instance));
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  nvmlReturn_t ret = ResolveGi(s, gpu_instance);
  if (ret != NVML_SUCCESS) return ret;
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  info->device = s.gpus[gpu_instance->gpu].handle;
  info->id = gpu_instance->id;
  info->profileId = gpu_instance->profile_id;
  info->placement = gpu_instance->placement;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t
nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
                                   nvmlComputeInstance_t* compute_instances, unsigned int* count) {
  FAKE_NVML_CALL("nvmlGpuInstanceGetComputeInstances", GpuOf(gpu_instance));
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  nvmlReturn_t ret = ResolveGi(s, gpu_instance);
  if (ret != NVML_SUCCESS) return ret;
  if (compute_instances == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int slices = CiSlices(profile_id);
  if (slices == 0 || slices > gpu_instance->slices) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int n = 0;
  for (nvmlComputeInstance_st* ci : LiveCis(s, gpu_instance)) {
    if (ci->profile_id == profile_id && n < gpu_instance->slices / slices) {
      compute_instances[n++] = ci;
    }
  }
  *count = n;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t ci) {
  FAKE_NVML_CALL("nvmlComputeInstanceDestroy", GpuOf(ci));
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  if (s.init_count <= 0) return NVML_ERROR_UNINITIALIZED;
  if (ci == nullptr || !ci->alive) return NVML_ERROR_INVALID_ARGUMENT;
  if (s.gpus[ci->gi->gpu].lost) return NVML_ERROR_GPU_IS_LOST;
  if (s.no_permission) return NVML_ERROR_NO_PERMISSION;
  if (MigBlocked(s, ci->gi->gpu)) return NVML_ERROR_RESET_REQUIRED;
  if (ci->gi->busy || ci->gi->handles > 0) return NVML_ERROR_IN_USE;
  ci->alive = false;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpu_instance) {
  FAKE_NVML_CALL("nvmlGpuInstanceDestroy", GpuOf(gpu_instance));
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  nvmlReturn_t ret = ResolveGi(s, gpu_instance);
  if (ret != NVML_SUCCESS) return ret;
  if (s.no_permission) return NVML_ERROR_NO_PERMISSION;
  if (MigBlocked(s, gpu_instance->gpu)) return NVML_ERROR_RESET_REQUIRED;
  if (gpu_instance->busy || gpu_instance->handles > 0 || !LiveCis(s, gpu_instance).empty()) {
    return NVML_ERROR_IN_USE;
  }
  gpu_instance->alive = false;
  auto& list = s.gpus[gpu_instance->gpu].gis;
  list.erase(std::remove(list.begin(), list.end(), gpu_instance), list.end());
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  FAKE_NVML_CALL("nvmlSystemGetDriverVersion", -1);
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  if (s.init_count <= 0) return NVML_ERROR_UNINITIALIZED;
  return CopyString(s.driver_version, version, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, int counter,
                                                          unsigned int* value) {
  FAKE_NVML_CALL("nvmlDeviceGetPcieThroughput", GpuOf(device));
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  Gpu* g = nullptr;
  nvmlReturn_t ret = Resolve(s, device, &g);
  if (ret != NVML_SUCCESS) return ret;
  if (value == nullptr || device->ci != nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (counter == NVML_PCIE_UTIL_TX_BYTES) {
    *value = g->tx_kbps;
  } else if (counter == NVML_PCIE_UTIL_RX_BYTES) {
    *value = g->rx_kbps;
  } else {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return NVML_SUCCESS;
}

// ---- test hooks ----

FAKE_NVML_EXPORT int fakeNvmlReset() {
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  s.forbidden_calls = 0;
  return Load(s) ? 0 : -1;
}

FAKE_NVML_EXPORT int fakeNvmlSetInUse(int gpu, unsigned int gi_id, int in_use) {
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  if (gpu < 0 || gpu >= static_cast<int>(s.gpus.size())) return -1;
  for (nvmlGpuInstance_st* gi : s.gpus[gpu].gis) {
    if (gi->id == gi_id) {
      gi->busy = in_use != 0;
      return 0;
    }
  }
  return -1;
}

FAKE_NVML_EXPORT int fakeNvmlSetGpuLost(int gpu, int lost) {
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  if (gpu < 0 || gpu >= static_cast<int>(s.gpus.size())) return -1;
  s.gpus[gpu].lost = lost != 0;
  return 0;
}

FAKE_NVML_EXPORT void fakeNvmlSetNoPermission(int on) {
  std::lock_guard<std::mutex> lock(g_mu);
  S().no_permission = on != 0;
}

FAKE_NVML_EXPORT int fakeNvmlForbiddenCalls() {
  std::lock_guard<std::mutex> lock(g_mu);
  return S().forbidden_calls;
}

FAKE_NVML_EXPORT const char* fakeNvmlLastError() {
  std::lock_guard<std::mutex> lock(g_mu);
  return S().last_error.c_str();
}

FAKE_NVML_EXPORT int fakeNvmlFailNext(const char* call, int gpu, int count, int ret) {
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  if (call == nullptr) return -1;
  std::erase_if(s.faults, [&](const Fault& f) { return f.call == call && f.gpu == gpu; });
  if (count != 0) s.faults.push_back(Fault{call, gpu, count, ret});
  return 0;
}

FAKE_NVML_EXPORT int fakeNvmlSetLatency(const char* call, int gpu, const char* dist, double a,
                                        double b, unsigned long long seed) {
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  if (call == nullptr || dist == nullptr) return -1;
  std::erase_if(s.latencies, [&](const Latency& l) { return l.call == call && l.gpu == gpu; });
  if (std::string(dist) == "none") return 0;
  Latency l;
  if (!MakeLatency(call, gpu, dist, a, b, seed, &l)) return -1;
  s.latencies.push_back(std::move(l));
  return 0;
}

FAKE_NVML_EXPORT int fakeNvmlOpenHandle(int gpu, unsigned int gi_id, int delta) {
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  if (gpu < 0 || gpu >= static_cast<int>(s.gpus.size())) return -1;
  for (nvmlGpuInstance_st* gi : s.gpus[gpu].gis) {
    if (gi->id == gi_id) {
      gi->handles = std::max(0, gi->handles + delta);
      return 0;
    }
  }
  return -1;
}

FAKE_NVML_EXPORT int fakeNvmlSetResetRequired(int gpu, int on) {
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  if (gpu < 0 || gpu >= static_cast<int>(s.gpus.size())) return -1;
  s.gpus[gpu].reset_required = on != 0;
  return 0;
}

FAKE_NVML_EXPORT int fakeNvmlRenumber(int a, int b) {
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = S();
  const int n = static_cast<int>(s.gpus.size());
  if (a < 0 || b < 0 || a >= n || b >= n) return -1;
  auto swap_index = [&](int& g) { g = g == a ? b : g == b ? a : g; };
  for (nvmlGpuInstance_st& gi : s.gis) swap_index(gi.gpu);
  for (nvmlComputeInstance_st& ci : s.cis) swap_index(ci.device.gpu);
  std::swap(s.gpus[a], s.gpus[b]);
  // New handles for both: the old ones are stale (nvmlDeviceGetHandleByIndex_v2 again).
  for (int i : {a, b}) {
    nvmlDevice_st& d = s.devices.emplace_back();
    d.gpu = i;
    s.gpus[i].handle = &d;
  }
  return 0;
}

FAKE_NVML_EXPORT double fakeNvmlSleptMs() {
  std::lock_guard<std::mutex> lock(g_mu);
  return S().slept_ms;
}

FAKE_NVML_EXPORT int fakeNvmlMaxConcurrentChanges(int gpu) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = S().max_in_flight.find(gpu);
  return it == S().max_in_flight.end() ? 0 : it->second;
}

FAKE_NVML_EXPORT int fakeNvmlInitCalls() {
  std::lock_guard<std::mutex> lock(g_mu);
  return S().init_calls;
}

FAKE_NVML_EXPORT int fakeNvmlCalls(const char* call) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = S().calls.find(call != nullptr ? call : "");
  return it == S().calls.end() ? 0 : it->second;
}
