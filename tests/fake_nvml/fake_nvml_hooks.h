// The fake libnvidia-ml's test hooks (tests/fake_nvml/fake_nvml.cc), resolved with dlsym on
// a handle of the library: dlopen of the same path gives the handle NvmlBackend::Open gets,
// so the hooks act on the state the backend sees. Test-only.
#ifndef MIGSCHED_TESTS_FAKE_NVML_FAKE_NVML_HOOKS_H_
#define MIGSCHED_TESTS_FAKE_NVML_FAKE_NVML_HOOKS_H_

#include <dlfcn.h>
#include <stdlib.h>

#include <string>
#include <type_traits>

namespace migsched::testing {

// NVML's GPU-instance profile ids of the A100 40GB's profiles that the tests use
// (docs/mig-hardware.md §2.2).
inline constexpr int kNvml1g5 = 19, kNvml2g = 14, kNvml3g = 9, kNvml7g = 0;

struct FakeNvmlHooks {
  void* lib = nullptr;
  int (*reset)() = nullptr;
  int (*set_in_use)(int, unsigned int, int) = nullptr;
  int (*set_gpu_lost)(int, int) = nullptr;
  void (*set_no_permission)(int) = nullptr;
  int (*forbidden_calls)() = nullptr;
  int (*fail_next)(const char*, int, int, int) = nullptr;
  int (*set_latency)(const char*, int, const char*, double, double, unsigned long long) = nullptr;
  int (*open_handle)(int, unsigned int, int) = nullptr;
  int (*set_reset_required)(int, int) = nullptr;
  int (*renumber)(int, int) = nullptr;
  double (*slept_ms)() = nullptr;
  int (*max_concurrent_changes)(int) = nullptr;
  int (*init_calls)() = nullptr;
  int (*calls)(const char*) = nullptr;

  // dlopen(path) and every hook; false (and `error`) if any is missing.
  bool Load(const char* path, std::string* error) {
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      *error = dlerror();
      return false;
    }
    bool ok = true;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (fn == nullptr) {
        ok = false;
        *error += std::string(name) + " missing; ";
      }
    };
    get(reset, "fakeNvmlReset");
    get(set_in_use, "fakeNvmlSetInUse");
    get(set_gpu_lost, "fakeNvmlSetGpuLost");
    get(set_no_permission, "fakeNvmlSetNoPermission");
    get(forbidden_calls, "fakeNvmlForbiddenCalls");
    get(fail_next, "fakeNvmlFailNext");
    get(set_latency, "fakeNvmlSetLatency");
    get(open_handle, "fakeNvmlOpenHandle");
    get(set_reset_required, "fakeNvmlSetResetRequired");
    get(renumber, "fakeNvmlRenumber");
    get(slept_ms, "fakeNvmlSleptMs");
    get(max_concurrent_changes, "fakeNvmlMaxConcurrentChanges");
    get(init_calls, "fakeNvmlInitCalls");
    get(calls, "fakeNvmlCalls");
    return ok;
  }
  void Close() {
    if (lib != nullptr) dlclose(lib);
    lib = nullptr;
  }
  // `path` names the node's JSON config (empty: the default two A100 40GB), then a reset.
  bool UseConfig(const std::string& path) {
    if (path.empty()) {
      unsetenv("MIGSCHED_FAKE_NVML_CONFIG");
    } else {
      setenv("MIGSCHED_FAKE_NVML_CONFIG", path.c_str(), 1);
    }
    return reset() == 0;
  }
};

}  // namespace migsched::testing

#endif  // MIGSCHED_TESTS_FAKE_NVML_FAKE_NVML_HOOKS_H_
