// The one rule for an integer field of an input (io/integer_input.h), against values written out
// by hand.
#include "io/integer_input.h"

#include <gtest/gtest.h>

#include <string>

namespace migsched {
namespace {

using nlohmann::json;

TEST(IntegerInputTest, TextIsDigitsWithAnOptionalMinus) {
  int64_t v = -7;
  EXPECT_EQ(ReadIntegerText("2", 1, 10, &v), IntegerInput::kInRange);
  EXPECT_EQ(v, 2);
  EXPECT_EQ(ReadIntegerText("007", 1, 10, &v), IntegerInput::kInRange);
  EXPECT_EQ(v, 7);
  EXPECT_EQ(ReadIntegerText("-3", -5, 10, &v), IntegerInput::kInRange);
  EXPECT_EQ(v, -3);
  for (const char* bad : {"", "-", "+2", " 2", "2 ", "2.0", "1e3", "0x10", "two", "--1"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(ReadIntegerText(bad, 1, 10, &v), IntegerInput::kNotInteger);
  }
  EXPECT_EQ(ReadIntegerText("0", 1, 10, &v), IntegerInput::kBelowRange);
  EXPECT_EQ(ReadIntegerText("11", 1, 10, &v), IntegerInput::kAboveRange);
  // Beyond int64 (9223372036854775807): still an integer, outside any range.
  EXPECT_EQ(ReadIntegerText("99999999999999999999", 1, 10, &v), IntegerInput::kAboveRange);
  EXPECT_EQ(ReadIntegerText("-99999999999999999999", 1, 10, &v), IntegerInput::kBelowRange);
  EXPECT_EQ(v, -3);  // untouched by every refusal above
}

TEST(IntegerInputTest, JsonNumbersWithAnIntegralValueAreIntegers) {
  int64_t v = 0;
  for (const char* two : {"2", "2.0", "2e0", "0.2e1", "20e-1"}) {
    SCOPED_TRACE(two);
    v = 0;
    EXPECT_EQ(ReadJsonInteger(json::parse(two), 1, 10, &v), IntegerInput::kInRange);
    EXPECT_EQ(v, 2);
  }
  EXPECT_EQ(ReadJsonInteger(json::parse("-1e3"), -1000, 0, &v), IntegerInput::kInRange);
  EXPECT_EQ(v, -1000);
  for (const char* bad : {"2.5", "0.1", "\"2\"", "true", "null", "[2]"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(ReadJsonInteger(json::parse(bad), 1, 10, &v), IntegerInput::kNotInteger);
  }
  EXPECT_EQ(ReadJsonInteger(json::parse("0.0"), 1, 10, &v), IntegerInput::kBelowRange);
  EXPECT_EQ(ReadJsonInteger(json::parse("-2"), 1, 10, &v), IntegerInput::kBelowRange);
  EXPECT_EQ(ReadJsonInteger(json::parse("11.0"), 1, 10, &v), IntegerInput::kAboveRange);
  EXPECT_EQ(ReadJsonInteger(json::parse("11"), 1, 10, &v), IntegerInput::kAboveRange);
  // The largest uint64, and a number no integer type of the parser holds (read as 1e20).
  EXPECT_EQ(ReadJsonInteger(json::parse("18446744073709551615"), 1, 10, &v),
            IntegerInput::kAboveRange);
  EXPECT_EQ(ReadJsonInteger(json::parse("99999999999999999999"), 1, 10, &v),
            IntegerInput::kAboveRange);
  EXPECT_EQ(ReadJsonInteger(json::parse("-99999999999999999999"), 1, 10, &v),
            IntegerInput::kBelowRange);
}

// Nested fields, named as the errors name them (for the daemon API's placements[0].gpu).
TEST(IntegerInputTest, JsonNumberAsWrittenFindsANestedFieldByItsName) {
  const std::string body =
      R"({"owner": "o", "placements": [{"gpu": 1, "start": 2.50},)"
      R"( {"gpu": 100000000000000000000, "start": [7.0], "x": {"y": 1E3}}], "ttl_s": 1e1})";
  EXPECT_EQ(JsonNumberAsWritten(body, "placements[0].gpu"), "1");
  EXPECT_EQ(JsonNumberAsWritten(body, "placements[0].start"), "2.50");
  EXPECT_EQ(JsonNumberAsWritten(body, "placements[1].gpu"), "100000000000000000000");
  EXPECT_EQ(JsonNumberAsWritten(body, "placements[1].start"), "");  // an array
  EXPECT_EQ(JsonNumberAsWritten(body, "placements[1].start[0]"), "7.0");
  EXPECT_EQ(JsonNumberAsWritten(body, "placements[1].x.y"), "1E3");
  EXPECT_EQ(JsonNumberAsWritten(body, "ttl_s"), "1e1");
  EXPECT_EQ(JsonNumberAsWritten(body, "placements[2].gpu"), "");  // no such element
  EXPECT_EQ(JsonNumberAsWritten(body, "gpu"), "");                // not at the top level
  EXPECT_EQ(JsonNumberAsWritten("[2.0, 3.00]", "[1]"), "3.00");
}

TEST(IntegerInputTest, JsonNumberAsWrittenIsTheMembersText) {
  const std::string line =
      R"({"a": {"count": 1.0}, "count": 2.50, "b": [3.0], "big": 99999999999999999999, "n": 7})";
  EXPECT_EQ(JsonNumberAsWritten(line, "count"), "2.50");  // the top level's, not a's
  EXPECT_EQ(JsonNumberAsWritten(line, "big"), "99999999999999999999");
  EXPECT_EQ(JsonNumberAsWritten(line, "n"), "7");
  EXPECT_EQ(JsonNumberAsWritten(line, "b"), "");                 // an array
  EXPECT_EQ(JsonNumberAsWritten(line, "missing"), "");           // absent
  EXPECT_EQ(JsonNumberAsWritten(R"({"count": )", "count"), "");  // does not parse
  EXPECT_EQ(JsonNumberAsWritten("[2.0]", "count"), "");          // not an object
}

}  // namespace
}  // namespace migsched
