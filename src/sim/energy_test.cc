// The energy estimate (sim/energy.h) on hand-worked numbers and on a tiny
// trace through the whole simulator.
#include "sim/energy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/simulator.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AJob;
using ::migsched::testing::Model;

// A100 40GB in the bundled catalog: idle 35 W, board limit 250 W, so
// (250 - 35) / 7 = 30.714285... W per busy compute slice.
constexpr double kIdleW = 35;
constexpr double kSliceW = (250.0 - 35.0) / 7;

TEST(EnergyTest, FormulaOnHandNumbers) {
  // 2 GPUs for 3600 s: idle 2 x 35 W x 3600 s = 252,000 J. 7 slices busy
  // for 1800 s = 12,600 slice-seconds x 30.714 W = 387,000 J. Total 639,000 J
  // = 0.1775 kWh; 71 jobs -> 400 jobs per kWh.
  const EnergyEstimate e = EstimateEnergy({{&Model("A100-40GB"), 2, 12600}}, 3600, 71);
  ASSERT_TRUE(e.energy_kwh.has_value());
  EXPECT_NEAR(*e.energy_kwh, 0.1775, 1e-12);
  EXPECT_NEAR(*e.jobs_per_kwh, 400, 1e-9);
  // A fully busy GPU draws its board limit: 250 W for an hour = 0.25 kWh.
  EXPECT_NEAR(*EstimateEnergy({{&Model("A100-40GB"), 1, 7 * 3600.0}}, 3600, 0).energy_kwh, 0.25,
              1e-12);
  // Nothing ran: 0 kWh, no jobs per kWh.
  const EnergyEstimate none = EstimateEnergy({{&Model("A100-40GB"), 4, 0}}, 0, 0);
  EXPECT_EQ(none.energy_kwh, 0.0);
  EXPECT_FALSE(none.jobs_per_kwh.has_value());
}

TEST(EnergyTest, UnknownWithoutPowerData) {
  GpuModel::Spec spec = Model("A100-40GB").spec();
  spec.name = "No power";
  spec.power.reset();
  auto model = GpuModel::Create(spec);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const EnergyEstimate e =
      EstimateEnergy({{&Model("A100-40GB"), 1, 100}, {&*model, 1, 100}}, 3600, 5);
  EXPECT_FALSE(e.energy_kwh.has_value());
  EXPECT_FALSE(e.jobs_per_kwh.has_value());
}

TEST(EnergyTest, MeterIntegratesPerModel) {
  const GpuModel& a100 = Model("A100-40GB");
  const GpuModel& a30 = Model("A30-24GB");
  ConfigTableCache tables;
  Cluster cluster({&a100, &a30, &a100}, &tables);
  EnergyMeter meter(cluster);
  ASSERT_EQ(meter.usage().size(), 2u);
  EXPECT_EQ(meter.usage()[0].gpus, 2);  // A100s
  EXPECT_EQ(meter.usage()[1].gpus, 1);  // A30
  meter.Sample(10, {3, 1});             // [10, 20): 3 A100 slices, 1 A30 slice
  meter.Sample(20, {0, 4});             // [20, 25): 0, 4
  meter.Sample(20, {7, 4});             // replaces the sample at 20: [20, 25): 7, 4
  meter.Finish(25);
  EXPECT_DOUBLE_EQ(meter.usage()[0].busy_slice_seconds, 3 * 10 + 7 * 5);  // 65
  EXPECT_DOUBLE_EQ(meter.usage()[1].busy_slice_seconds, 1 * 10 + 4 * 5);  // 30
}

TEST(EnergyTest, TinyTraceThroughTheSimulator) {
  // One A100, lb+frag, r = 0.023 s per create (as tests/e2e simulate's
  // FragAwareReusesTheIdleInstance): a 4g.20gb 0 -> 100.023 (busy from its
  // placement at 0), c 3g.20gb placed at 10, runs to 60.023, b 4g.20gb reuses
  // a's instance 100.023 -> 200.023. Makespan 200.023 s.
  // Busy slice-seconds: 4 x 100.023 + 3 x 50.023 + 4 x 100 = 950.161.
  // E = 35 x 200.023 + 30.714... x 950.161 = 7000.805 + 29183.516 J
  //   = 36184.321 J = 0.0100512 kWh; 3 jobs -> 298.47 jobs per kWh.
  ManualClock clock;
  SimOptions o;
  o.clock = &clock;
  o.self_check = true;
  auto r =
      RunSimulation({&Model("A100-40GB")},
                    {AJob("4g.20gb").Named("a").Runs(100), AJob("4g.20gb").Named("b").Runs(100),
                     AJob("3g.20gb").Named("c").ArrivesAt(10).Runs(50)},
                    "lb+frag", SchedulerOptions{}, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const double joules = kIdleW * 200.023 + kSliceW * 950.161;
  ASSERT_TRUE(r->metrics.energy_kwh.has_value());
  EXPECT_NEAR(*r->metrics.energy_kwh, joules / 3.6e6, 1e-12);
  EXPECT_NEAR(*r->metrics.energy_kwh, 0.0100512, 1e-7);
  EXPECT_NEAR(*r->metrics.jobs_per_kwh, 3 / (joules / 3.6e6), 1e-6);
  // Same busy area as the utilisation: 950.161 / (7 x 200.023).
  EXPECT_NEAR(r->metrics.utilization, 950.161 / (7 * 200.023), 1e-9);
}

}  // namespace
}  // namespace migsched
