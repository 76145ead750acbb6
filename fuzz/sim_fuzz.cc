// libFuzzer target for the scheduler core through the simulator (sim/stress.h): the bytes become
// a small cluster of catalog models, a small workload (every job attribute of the trace format)
// and scheduler settings (a policy, options of the table given or not, --reconfig-ms, expected
// ends known or not), run with the simulator's self-check on and the stress harness's end
// checks. An internal error (a broken invariant, a job lost, accounting that does not balance)
// prints the case's `migsched simulate` command and aborts; other refusals (a policy that cannot
// set up the cluster) are not findings. Build and run: docs/performance.md, "Stress harness".
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "build_paths.h"
#include "core/catalog.h"
#include "core/rng.h"
#include "io/catalog_loader.h"
#include "sched/option_table.h"
#include "sched/policy.h"
#include "sim/stress.h"

namespace {

const migsched::Catalog& TheCatalog() {
  static const migsched::Catalog* catalog = [] {
    auto* c = new migsched::Catalog();
    const char* dir = std::getenv("MIGSCHED_DATA_DIR");
    const std::string gpus = std::string(dir != nullptr ? dir : MIGSCHED_SOURCE_DATA_DIR) + "/gpus";
    migsched::Status st = migsched::LoadCatalogPath(gpus, c);
    if (!st.ok()) {
      std::fprintf(stderr, "sim_fuzz: %s\n", st.ToString().c_str());
      std::abort();
    }
    return c;
  }();
  return *catalog;
}

template <typename T>
const T& PickFrom(FuzzedDataProvider& in, const std::vector<T>& v) {
  return v[in.ConsumeIntegralInRange<size_t>(0, v.size() - 1)];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace migsched;
  FuzzedDataProvider in(data, size);
  const std::vector<const GpuModel*> models = TheCatalog().models();
  StressCase c;
  const int groups = in.ConsumeIntegralInRange<int>(1, 2);
  for (int g = 0; g < groups; ++g) {
    const GpuModel* m = PickFrom(in, models);
    const int count = in.ConsumeIntegralInRange<int>(1, 2);
    c.groups.emplace_back(count, m);
    for (int i = 0; i < count; ++i) c.gpus.push_back(m);
  }
  c.policy = PickFrom(in, PolicyNames());
  c.fraction_rule = in.ConsumeBool() ? FractionRule::kCompute : FractionRule::kMemory;
  c.reconfig_ms = PickFrom(in, std::vector<double>{0, 23, 2000});
  c.knowledge = PickFrom(
      in, std::vector<Knowledge>{Knowledge::kLimits, Knowledge::kKnown, Knowledge::kUnknown});
  c.user_estimates = in.ConsumeBool();
  c.contention = in.ConsumeBool();
  for (const GpuModel* m : c.gpus) c.contention = c.contention && m->pcie_max_gbps() > 0;
  Rng values(in.ConsumeIntegral<uint64_t>());
  for (const SchedulerOptionSpec& spec : SchedulerOptionTable()) {
    if (!in.ConsumeBool()) continue;
    std::string v = DrawOptionValue(spec.name, c.gpus, values);
    if (!v.empty()) c.options.emplace_back(spec.name, std::move(v));
  }
  std::vector<std::string> names;
  for (const GpuModel* m : c.gpus) {
    for (const Profile& p : m->profiles()) names.push_back(p.name);
  }
  const int n_jobs = in.ConsumeIntegralInRange<int>(1, 16);
  double t = 0;
  for (int i = 0; i < n_jobs && in.remaining_bytes() > 0; ++i) {
    WorkloadJob j;
    j.name = "j" + std::to_string(i);
    t += in.ConsumeIntegralInRange<int>(0, 1000) / 10.0;
    j.arrival_s = t;
    if (in.ConsumeIntegralInRange<int>(0, 7) == 0) {
      j.gpu_fraction = in.ConsumeIntegralInRange<int>(1, 100) / 100.0;
    } else {
      j.profile = PickFrom(in, names);
    }
    j.fraction_rule = c.fraction_rule;
    j.count = in.ConsumeIntegralInRange<int>(0, 3) == 0 ? in.ConsumeIntegralInRange<int>(2, 8) : 1;
    j.duration_s = in.ConsumeIntegralInRange<int>(1, 10000) / 10.0;
    if (in.ConsumeBool()) {
      j.pcie_gbps = in.ConsumeIntegralInRange<int>(1, 400) / 10.0;
      j.alpha = 1 + in.ConsumeIntegralInRange<int>(0, 100) / 100.0;
    }
    j.latency_sensitive = in.ConsumeBool();
    j.migratable = static_cast<Migratable>(in.ConsumeIntegralInRange<int>(0, 2));
    c.jobs.push_back(std::move(j));
  }
  if (c.jobs.empty()) return 0;
  Status st = RunStressCase(c, nullptr);
  if (!st.ok() && st.code() == StatusCode::kInternal) {
    std::fprintf(stderr, "sim_fuzz: %s\n  replay (write the jobs with WriteTraceCsv): %s\n",
                 st.ToString().c_str(), c.CommandLine("TRACE.csv").c_str());
    std::abort();
  }
  return 0;
}
