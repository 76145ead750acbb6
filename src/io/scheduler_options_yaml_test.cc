#include "io/scheduler_options_yaml.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "io/yaml_errors.h"
#include "sched/option_table.h"
#include "sched/policy.h"
#include "testing/status_matchers.h"

namespace migsched {
namespace {

using ::testing::HasSubstr;

// Every option of the table is read, in kebab-case and in snake_case, into its own field.
// The values are chosen by hand to differ from every default.
TEST(SchedulerOptionsYamlTest, ReadsEveryOptionByItsFlagName) {
  ASSERT_OK_AND_ASSIGN(SchedulerConfig c, ParseSchedulerYaml(R"(
policy: lb+frag
threshold: 0.3
metric: blocked-placements
demand-window: 50
reserve-full: 1
joint-placement: off
frag-objective: post
static-layout: all-1g
max-skip-seconds: 600
reservation: conservative
reservation_depth: 3
reservation-slack: 0.5
evacuation: queue
evacuation-min-wait: 30
evacuation_min_slices: 4
evacuation-when: after-backfill
migration-order: before-scan
max-wait: 7200
idle-ttl: 60
defrag-interval: 0
max-moves-per-pass: 2
migration-cooldown: 10
migration-fixed-s: 1
migration-gbps: 5
switch-s: 0.25
checkpoint-interval: 300
)",
                                                             "s.yaml"));
  const SchedulerOptions& o = c.options;
  EXPECT_EQ(c.policy, "lb+frag");
  EXPECT_EQ(o.threshold, 0.3);
  EXPECT_EQ(o.metric, "blocked-placements");
  EXPECT_EQ(o.demand_window, 50);
  EXPECT_EQ(o.reserve_full, 1);
  EXPECT_FALSE(o.joint_placement);  // given: lb+frag's own default (on) does not apply
  EXPECT_EQ(o.frag_objective, FragObjective::kPost);
  EXPECT_EQ(o.static_layout, "all-1g");
  EXPECT_EQ(o.max_skip_seconds, 600);
  EXPECT_EQ(o.reservation, ReservationMode::kConservative);
  EXPECT_EQ(o.reservation_depth, 3);
  EXPECT_EQ(o.reservation_slack, 0.5);
  EXPECT_EQ(o.evacuation, EvacuationScope::kQueue);
  EXPECT_EQ(o.evacuation_min_wait_s, 30);
  EXPECT_EQ(o.evacuation_min_slices, 4);
  EXPECT_TRUE(o.evacuation_after_backfill);
  EXPECT_TRUE(o.migrate_before_scan);
  EXPECT_EQ(o.max_wait_s, 7200);
  EXPECT_EQ(o.idle_ttl_s, 60);
  EXPECT_EQ(o.migration.defrag_interval_s, 0);
  EXPECT_EQ(o.migration.max_moves_per_pass, 2);
  EXPECT_EQ(o.migration.cooldown_s, 10);
  EXPECT_EQ(o.migration.fixed_s, 1);
  EXPECT_EQ(o.migration.gbps, 5);
  EXPECT_EQ(o.migration.switch_s, 0.25);
  EXPECT_EQ(o.migration.checkpoint_interval_s, 300);
  // Which of the policy-defaulted options were given.
  EXPECT_TRUE(c.given.metric);
  EXPECT_TRUE(c.given.reserve_full);
  EXPECT_TRUE(c.given.max_skip_seconds);
  EXPECT_TRUE(c.given.joint_placement);
  EXPECT_TRUE(c.given.reservation);
  EXPECT_TRUE(c.given.reservation_slack);
  EXPECT_TRUE(c.given.evacuation);
  EXPECT_TRUE(c.given.evacuation_min_wait);
  EXPECT_TRUE(c.given.evacuation_min_slices);
  EXPECT_TRUE(c.given.evacuation_when);
  EXPECT_TRUE(c.given.migration_order);
}

// Nothing given: the options `simulate --policy NAME` runs with, for every registered policy.
TEST(SchedulerOptionsYamlTest, WhatIsNotGivenTakesThePolicysRegistryDefaults) {
  for (const std::string& name : PolicyNames()) {
    SCOPED_TRACE(name);
    ASSERT_OK_AND_ASSIGN(SchedulerConfig c, ParseSchedulerYaml("policy: " + name, "s.yaml"));
    EXPECT_TRUE(
        SameTableOptions(c.options, OptionsForPolicy(name, SchedulerOptions{}, ExplicitOptions{})));
  }
  // An empty mapping: `full`, the default policy.
  ASSERT_OK_AND_ASSIGN(SchedulerConfig c, ParseSchedulerYaml("", "s.yaml"));
  EXPECT_EQ(c.policy, "full");
  EXPECT_EQ(c.options.metric, "demand-weighted");  // sched/full_policy.h kFullDefaultMetric
}

struct OptionsBadCase {
  std::string yaml;
  std::string message;  // the whole message
};

// Mistakes name the file, the line and the key, and say what the value must be, in the words
// of the command line's checks (the same table).
TEST(SchedulerOptionsYamlTest, MistakesNameTheFileLineAndKey) {
  const std::vector<OptionsBadCase> cases = {
      {"threshold: 0.5\nevacuation: all",
       "s.yaml:2: scheduler.evacuation must be one of off, head, queue, got 'all'"},
      {"reservation-depth: 0",
       "s.yaml:1: scheduler.reservation-depth must be an integer in "
       "1..2147483647, got '0'"},
      {"evacuation-min-wait: -1",
       "s.yaml:1: scheduler.evacuation-min-wait must be a finite number >= 0, got '-1'"},
      {"migration-gbps: 0",
       "s.yaml:1: scheduler.migration-gbps must be a finite number > 0, got "
       "'0'"},
      {"threshold: 1.5", "s.yaml:1: scheduler.threshold must be a number in [0, 1], got '1.5'"},
      {"joint-placement: maybe",
       "s.yaml:1: scheduler.joint-placement must be on/off, true/false or yes/no, got "
       "'maybe'"},
      {"max-skip-seconds: [1]",
       "s.yaml:1: scheduler.max-skip-seconds must be a finite number, got a list"},
      {"policy: nope",
       "s.yaml: scheduler.policy: unknown policy 'nope' (known: first-fit, lb, "
       "lb+frag, full, best-fit, driver-default, mfi, largest-free-run, static, "
       "static-all-balanced, frag-aware (= lb+frag))"},
      // One option under both spellings (regression: the last one used to win, silently).
      {"reservation-horizon: 3600\nthreshold: 0.5\nreservation_horizon: 1800",
       "s.yaml:3: scheduler.reservation_horizon is given twice (as 'reservation-horizon' and "
       "'reservation_horizon'); keep one"},
      // Migration needs a policy that creates instances: refused with the file, before any
      // driver starts on it (a move creates an instance at its target; `static` never does).
      {"policy: static\nmigration: on",
       "s.yaml: scheduler: migration on needs a policy that creates instances; 'static' never "
       "reconfigures (a move creates an instance at its target): turn migration off "
       "(--migration off, or migration: off in a config file's scheduler section) or choose "
       "another policy"},
  };
  for (const OptionsBadCase& b : cases) {
    SCOPED_TRACE(b.yaml);
    StatusOr<SchedulerConfig> c = ParseSchedulerYaml(b.yaml, "s.yaml");
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(c.status().message(), b.message);
  }
  // An option's old name says its new one (Regression: RenamedOptionSaysItsNewName).
  for (const char* old : {"speculative-moves: on", "speculative_moves: off"}) {
    StatusOr<SchedulerConfig> r = ParseSchedulerYaml(old, "s.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message(),
              fmt::format("s.yaml:1: unknown key 'scheduler.{}': speculative-moves is now "
                          "defrag-passes (on: always, off: while-waiting)",
                          std::string_view(old).substr(0, 17)));
  }
  // An unknown key lists every known one.
  StatusOr<SchedulerConfig> c = ParseSchedulerYaml("evacuate: queue", "s.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "s.yaml:1: unknown key 'scheduler.evacuate' (known: policy, " +
                                      SchedulerOptionNames() + ")");
  EXPECT_THAT(
      SchedulerOptionNames(),
      HasSubstr(
          "max-skip-seconds, reservation, reservation-depth, reservation-slack, "
          "reservation-horizon, reservation-ageing, reservation-keep, reservation-oldest, "
          "reservation-unknown-ends, "
          "evacuation, "
          "evacuation-min-wait, evacuation-min-slices, evacuation-when, evacuation-keeps-room, "
          "migration-order"));
}

// Regression: an option with no value (`threshold:` and then the next key) was reported at the
// next key's line, or past the end of the text when it was the last.
TEST(SchedulerOptionsYamlTest, OptionWithNoValueIsReportedAtItsOwnLine) {
  const std::vector<OptionsBadCase> cases = {
      {"policy: lb\nthreshold:\nmetric: fragcost\n",
       "s.yaml:2: scheduler.threshold must be a number in [0, 1], got nothing (null)"},
      {"policy: lb\njoint-placement:\n\n\n",
       "s.yaml:2: scheduler.joint-placement must be on/off, true/false or yes/no, got nothing "
       "(null)"},
      {"policy:\nthreshold: 0.5\n",
       "s.yaml:1: scheduler.policy must be a policy name, got nothing (null)"},
  };
  for (const OptionsBadCase& b : cases) {
    SCOPED_TRACE(b.yaml);
    StatusOr<SchedulerConfig> c = ParseSchedulerYaml(b.yaml, "s.yaml");
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().message(), b.message);
  }
}

// The printed section parses back to the policy's registry defaults, option by option.
TEST(SchedulerOptionsYamlTest, PrintedDefaultsParseToThePolicysOptions) {
  for (const std::string& name : PolicyNames()) {
    SCOPED_TRACE(name);
    ASSERT_OK_AND_ASSIGN(std::string text, DefaultSchedulerYaml(name));
    // The text is "scheduler:\n  ...": a mapping with one key.
    ASSERT_OK_AND_ASSIGN(SchedulerConfig inner,
                         ReadSchedulerYaml(YAML::Load(text)["scheduler"], "printed"));
    EXPECT_EQ(inner.policy, name);
    SchedulerOptions want = OptionsForPolicy(name, SchedulerOptions{}, ExplicitOptions{});
    // Regression (trial_printed_static_config_refused): `static`'s best-for-mix is the
    // simulator's alone (a daemon refuses it); the section prints all-balanced.
    if (want.static_layout == "best-for-mix") want.static_layout = "all-balanced";
    EXPECT_THAT(text, ::testing::Not(HasSubstr("static-layout: best-for-mix")));
    for (const SchedulerOptionSpec& s : SchedulerOptionTable()) {
      EXPECT_THAT(text, HasSubstr("\n  " + s.name + ": " + s.get(want) + "\n"));
      EXPECT_EQ(s.get(inner.options), s.get(want)) << s.name;
    }
  }
  EXPECT_EQ(DefaultSchedulerYaml("nope").status().code(), StatusCode::kNotFound);
}

// CheckQuotesClosedOnTheirLine (io/yaml_errors.h), every reader of a config file's first check.
// Regression (trial_unclosed_quote_swallowed_keys): a quoted value left open took the lines after
// it. The columns are counted by hand from the texts.
TEST(YamlQuotesTest, AQuoteLeftOpenIsRefusedWithItsLine) {
  const std::string ok =
      "a: \"x\"\n"
      "b: 'it''s'\n"
      "c: it's plain\n"
      "d: \"an \\\" inside\"\n"
      "# \"a comment\n"
      "e: [0, \"GPU-1\", 'x']\n"
      "f: |\n"
      "  \"free text of a block\n"
      "g: 1 # 'a comment\n"
      "- \"item\"\n"
      "h: {k: \"v\", l: 'w'}\r\n";
  EXPECT_OK(CheckQuotesClosedOnTheirLine("c.yaml", ok));
  struct Bad {
    std::string text;
    int line, column;
  };
  for (const Bad& b : std::vector<Bad>{{"a: 1\nb: \"x\nc: 2\n", 2, 4},
                                       {"gpus: [\"GPU-1, 2]\n", 1, 8},
                                       {"- 'a\n", 1, 3},
                                       {"f: |\n  text\ng: 'open", 3, 4},
                                       {"h: {k: 'v}\n", 1, 8}}) {
    SCOPED_TRACE(b.text);
    EXPECT_EQ(
        CheckQuotesClosedOnTheirLine("c.yaml", b.text).message(),
        fmt::format("c.yaml:{}: the quoted value that opens at column {} is not closed on its "
                    "line; close it (a value of this file is written on one line)",
                    b.line, b.column));
  }
}

}  // namespace
}  // namespace migsched
