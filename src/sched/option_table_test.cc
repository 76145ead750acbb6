#include "sched/option_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace migsched {
namespace {

// Every entry reads back what it writes, has a unique kebab-case name, a rule and a help line,
// and refuses a value of the wrong kind with "must be <rule>, got '<text>'".
TEST(OptionTableTest, EveryEntryRoundTripsAndRefusesNonsense) {
  std::set<std::string> names;
  for (const SchedulerOptionSpec& s : SchedulerOptionTable()) {
    SCOPED_TRACE(s.name);
    EXPECT_TRUE(names.insert(s.name).second) << "listed twice";
    EXPECT_EQ(s.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz-"), std::string::npos);
    EXPECT_FALSE(s.rule.empty());
    EXPECT_FALSE(s.help.empty());
    SchedulerOptions o;
    const std::string before = s.get(o);
    EXPECT_TRUE(s.set(before, &o).ok());
    EXPECT_EQ(s.get(o), before);
    if (s.kind != OptionKind::kString) {
      Status st = s.set("x?", &o);
      EXPECT_FALSE(st.ok());
      EXPECT_EQ(st.message(), "must be " + s.rule + ", got 'x?'");
      EXPECT_EQ(s.get(o), before) << "a refused value changed the field";
    }
    // snake_case finds the same entry.
    std::string snake = s.name;
    for (char& c : snake) c = c == '-' ? '_' : c;
    EXPECT_EQ(FindSchedulerOption(snake), &s);
  }
  EXPECT_EQ(FindSchedulerOption("nope"), nullptr);
}

// Regression: the on/off options took true/false and yes/no too, but their refusal said "must be
// on or off". The message names what is taken, and everything it names is taken.
TEST(OptionTableTest, BoolRefusalNamesEverySpellingItTakes) {
  const SchedulerOptionSpec* s = FindSchedulerOption("joint-placement");
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->kind, OptionKind::kBool);
  SchedulerOptions o;
  for (const char* yes : {"on", "true", "yes", "True", "TRUE"}) {
    o.joint_placement = false;
    EXPECT_TRUE(s->set(yes, &o).ok()) << yes;
    EXPECT_TRUE(o.joint_placement) << yes;
  }
  for (const char* no : {"off", "false", "no", "False", "FALSE"}) {
    o.joint_placement = true;
    EXPECT_TRUE(s->set(no, &o).ok()) << no;
    EXPECT_FALSE(o.joint_placement) << no;
  }
  Status st = s->set("maybe", &o);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "must be on/off, true/false or yes/no, got 'maybe'");
  EXPECT_EQ(s->rule, "on/off, true/false or yes/no");
  EXPECT_FALSE(s->set("1", &o).ok());
  EXPECT_FALSE(s->set("onn", &o).ok());
  EXPECT_FALSE(s->set("o", &o).ok());
}

// Regression (a user's trial): `--migration ON` was refused, though every word it names is taken;
// the words are taken in any case.
TEST(OptionTableTest, OnInCapitalsIsTaken) {
  const SchedulerOptionSpec* s = FindSchedulerOption("joint-placement");
  ASSERT_NE(s, nullptr);
  SchedulerOptions o;
  for (const char* yes : {"ON", "On", "YES", "Yes", "tRuE"}) {
    o.joint_placement = false;
    EXPECT_TRUE(s->set(yes, &o).ok()) << yes;
    EXPECT_TRUE(o.joint_placement) << yes;
  }
  for (const char* no : {"OFF", "Off", "NO", "No", "fAlSe"}) {
    o.joint_placement = true;
    EXPECT_TRUE(s->set(no, &o).ok()) << no;
    EXPECT_FALSE(o.joint_placement) << no;
  }
}

// The given bits: an option a policy has defaults for marks its bit, the others none.
TEST(OptionTableTest, ApplyMarksTheGivenBit) {
  SchedulerOptions o;
  ExplicitOptions e;
  ASSERT_TRUE(FindSchedulerOption("evacuation")->Apply("queue", &o, &e).ok());
  EXPECT_EQ(o.evacuation, EvacuationScope::kQueue);
  EXPECT_TRUE(e.evacuation);
  EXPECT_FALSE(e.metric);
  ASSERT_TRUE(FindSchedulerOption("threshold")->Apply("0.5", &o, &e).ok());
  EXPECT_EQ(o.threshold, 0.5);
  // Out of range: refused, nothing marked.
  ExplicitOptions none;
  EXPECT_FALSE(FindSchedulerOption("reserve-full")->Apply("-1", &o, &none).ok());
  EXPECT_FALSE(none.reserve_full);
  EXPECT_EQ(FindSchedulerOption("reserve-full")->Apply("2", &o, &none).ok(), true);
  EXPECT_TRUE(none.reserve_full);
  EXPECT_EQ(o.reserve_full, 2);
}

}  // namespace
}  // namespace migsched
