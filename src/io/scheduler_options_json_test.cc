#include "io/scheduler_options_json.h"

#include <gtest/gtest.h>

#include "sched/option_table.h"
#include "sched/policy.h"

namespace migsched {
namespace {

// Every option of the table is written under its snake_case name and read back: `full`'s
// defaults and a setting where every option differs from them.
TEST(SchedulerOptionsJsonTest, EveryOptionRoundTrips) {
  SchedulerOptions changed;
  ExplicitOptions given;
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"threshold", "0.3"},
                                                        {"metric", "blocked-placements"},
                                                        {"demand-window", "50"},
                                                        {"reserve-full", "1"},
                                                        {"joint-placement", "on"},
                                                        {"frag-objective", "post"},
                                                        {"static-layout", "all-1g"},
                                                        {"max-skip-seconds", "600"},
                                                        {"reservation", "conservative"},
                                                        {"reservation-depth", "3"},
                                                        {"reservation-slack", "0.5"},
                                                        {"evacuation", "head"},
                                                        {"evacuation-min-wait", "30"},
                                                        {"evacuation-min-slices", "4"},
                                                        {"evacuation-when", "after-backfill"},
                                                        {"migration-order", "before-scan"},
                                                        {"max-wait", "7200"},
                                                        {"idle-ttl", "60"},
                                                        {"defrag-interval", "0"},
                                                        {"max-moves-per-pass", "2"},
                                                        {"migration-cooldown", "10"},
                                                        {"migration-fixed-s", "1"},
                                                        {"migration-gbps", "5"},
                                                        {"switch-s", "0.25"},
                                                        {"checkpoint-interval", "300"}}) {
    ASSERT_TRUE(FindSchedulerOption(name)->Apply(value, &changed, &given).ok()) << name;
  }
  for (const SchedulerOptions& o :
       {OptionsForPolicy("full", SchedulerOptions{}, ExplicitOptions{}), changed}) {
    const nlohmann::ordered_json j = SchedulerOptionsToJson(o);
    EXPECT_EQ(j.size(), SchedulerOptionTable().size());
    EXPECT_TRUE(SameTableOptions(SchedulerOptionsFromJson(nlohmann::json::parse(j.dump())), o))
        << j.dump();
  }
  const nlohmann::ordered_json j = SchedulerOptionsToJson(changed);
  EXPECT_EQ(j["evacuation"], "head");
  EXPECT_EQ(j["reservation_depth"], 3);
  EXPECT_EQ(j["joint_placement"], true);
  EXPECT_EQ(j["max_skip_seconds"], 600.0);
  // "Off" numbers are null.
  const nlohmann::ordered_json d = SchedulerOptionsToJson(SchedulerOptions{});
  EXPECT_TRUE(d["max_skip_seconds"].is_null());
  EXPECT_TRUE(d["max_wait"].is_null());
  EXPECT_TRUE(d["idle_ttl"].is_null());
  // A reader of another version: unknown keys ignored, wrong types keep the defaults.
  const SchedulerOptions r = SchedulerOptionsFromJson(
      nlohmann::json::parse(R"({"threshold": "high", "evacuation": 3, "future_knob": 1})"));
  EXPECT_TRUE(SameTableOptions(r, SchedulerOptions{}));
}

}  // namespace
}  // namespace migsched
