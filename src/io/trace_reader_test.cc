#include "io/trace_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "io/catalog_loader.h"
#include "testing/builders.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::AJob;

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kKnown[] =
    "id, arrival_s, profile, gpu_fraction, count, duration_s, pcie_gbps, alpha, "
    "latency_sensitive, migratable, time_limit_s";

void ExpectSameJob(const WorkloadJob& a, const WorkloadJob& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.arrival_s, b.arrival_s) << a.name;
  EXPECT_EQ(a.profile, b.profile) << a.name;
  EXPECT_EQ(a.gpu_fraction, b.gpu_fraction) << a.name;
  EXPECT_EQ(a.count, b.count) << a.name;
  EXPECT_EQ(a.duration_s, b.duration_s) << a.name;
  EXPECT_EQ(a.pcie_gbps, b.pcie_gbps) << a.name;
  EXPECT_EQ(a.alpha, b.alpha) << a.name;
  EXPECT_EQ(a.latency_sensitive, b.latency_sensitive) << a.name;
  EXPECT_EQ(a.migratable, b.migratable) << a.name;
  EXPECT_EQ(a.time_limit_s, b.time_limit_s) << a.name;
}

void ExpectSameJobs(const std::vector<WorkloadJob>& a, const std::vector<WorkloadJob>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ExpectSameJob(a[i], b[i]);
}

// What tests/data/traces/small.{csv,jsonl} hold, written out by hand, sorted
// by arrival (stable: bloom560-1 and gang-1 both arrive at 30, file order).
std::vector<WorkloadJob> SmallTraceJobs() {
  return {
      AJob("3g.20gb").Named("resnet-1").Runs(600).LatencySensitive(true),
      AJob().Named("frac-1").ArrivesAt(12.5).Fraction(0.46).Runs(90.5).Pcie(17.65, 1.07),
      AJob("1g.5gb")
          .Named("bloom560-1")
          .ArrivesAt(30)
          .Runs(1200)
          .Pcie(5.7, 1.25)
          .Moves(Migratable::kCheckpoint),
      AJob().Named("gang-1").ArrivesAt(30).Fraction(1).Gang(2).Runs(3600).Moves(
          Migratable::kRestart),
  };
}

TEST(TraceReaderTest, ReadsBundledCsvAndJsonLinesFixtures) {
  for (std::string name : {"small.csv", "small.jsonl"}) {
    SCOPED_TRACE(name);
    auto jobs = ReadTraceFile(testing::TestDataDir() + "/traces/" + name);
    ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
    ExpectSameJobs(*jobs, SmallTraceJobs());
  }
}

TEST(TraceReaderTest, CsvColumnsInAnyOrderWithDefaultsBlanksAndCrlf) {
  std::istringstream in(
      "\r\n"
      "# comment\r\n"
      " duration_s , gpu_fraction,id ,arrival_s\r\n"
      "100, 0.25 ,x,5\r\n"
      "   \r\n"
      "  # indented comment\r\n"
      "1e3,1,y,0\r\n");
  auto jobs = ParseTraceCsv(in, "t.csv");
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ExpectSameJobs(*jobs, {
                            AJob().Named("y").Fraction(1).Runs(1000),
                            AJob().Named("x").ArrivesAt(5).Fraction(0.25).Runs(100),
                        });
}

// Regression: a CSV whose lines end with CR alone (classic Mac) was read as one line, and the
// error said "column '1g.5gb' appears twice", pointing nowhere near the cause.
TEST(TraceReaderTest, CrOnlyLineEndingsAreNamed) {
  std::istringstream in("id,arrival_s,profile,duration_s\ra,0,1g.5gb,10\rb,0,1g.5gb,10\r");
  auto jobs = ParseTraceCsv(in, "t.csv");
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.status().message(),
            "t.csv:1: a carriage return (CR) inside the line: the file's lines end with CR alone; "
            "save it with LF or CRLF line endings");
}

TEST(TraceReaderTest, ExtensionSelectsFormat) {
  const std::string csv = "id,arrival_s,profile,duration_s\na,0,1g.5gb,10\n";
  const std::string jsonl = R"({"id":"a","arrival_s":0,"profile":"1g.5gb","duration_s":10})"
                            "\n";
  for (auto [name, content] : std::vector<std::pair<std::string, std::string>>{
           {"t.CSV", csv}, {"t.jsonl", jsonl}, {"t.ndjson", jsonl}, {"t.json", jsonl}}) {
    SCOPED_TRACE(name);
    auto jobs = ReadTraceFile(testing::WriteTempFile(name, content));
    ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
    ASSERT_EQ(jobs->size(), 1u);
    EXPECT_EQ((*jobs)[0].profile, "1g.5gb");
  }
  std::string txt = testing::WriteTempFile("t.txt", csv);
  auto bad = ReadTraceFile(txt);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            txt + ": unknown trace file extension; expected .csv, .jsonl, .ndjson or .json");
  auto missing = ReadTraceFile("/nonexistent/dir/t.csv");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "/nonexistent/dir/t.csv: cannot open trace file: No such file or directory");
}

// Regression (a CSV saved by Excel: "unknown column '\ufeffid'"): a UTF-8 byte-order mark
// (EF BB BF) at the start of a trace is skipped, in CSV and in JSON lines (where it may stand
// alone on a blank first line); the jobs are those of the file without it. Only the start of the
// file holds a mark: the same bytes further on are text, and stay in the message as written.
TEST(TraceReaderTest, Utf8ByteOrderMarkAtTheStartIsSkipped) {
  const std::string bom = "\xEF\xBB\xBF";
  const std::vector<std::pair<std::string, std::string>> files = {
      {"excel.csv", bom + "id,arrival_s,profile,duration_s,count\r\na,5,1g.5gb,10,2\r\n"},
      {"bom.jsonl",
       bom + R"({"id":"a","arrival_s":5,"profile":"1g.5gb","duration_s":10,"count":2})" + "\n"},
      {"bom-blank.jsonl",
       bom + "\n" + R"({"id":"a","arrival_s":5,"profile":"1g.5gb","duration_s":10,"count":2})"},
  };
  for (const auto& [name, content] : files) {
    SCOPED_TRACE(name);
    auto jobs = ReadTraceFile(testing::WriteTempFile(name, content));
    ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
    ExpectSameJobs(*jobs, {AJob("1g.5gb").Named("a").ArrivesAt(5).Runs(10).Gang(2)});
  }
  std::istringstream late("# a comment first\n" + bom + "id,arrival_s,profile,duration_s\n");
  auto bad = ParseTraceCsv(late, "t.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), StartsWith("t.csv:2: unknown column '" + bom + "id'"));
  // Regression (jsonl_bom_on_a_later_line_accepted): the JSON parser skipped the mark at the
  // start of any line, so a later line's was taken as none.
  std::istringstream late_json(
      R"({"id":"a","arrival_s":5,"profile":"1g.5gb","duration_s":10})"
      "\n" +
      bom + R"({"id":"b","arrival_s":6,"profile":"1g.5gb","duration_s":10})" + "\n");
  auto bad_json = ParseTraceJsonLines(late_json, "t.jsonl", nullptr);
  ASSERT_FALSE(bad_json.ok());
  EXPECT_THAT(bad_json.status().message(),
              StartsWith("t.jsonl:2: invalid JSON: a UTF-8 byte-order mark (EF BB BF) starts this "
                         "line; only the file may start with one"));
}

struct TraceBadCase {
  std::string label;
  std::string content;
  std::string error;  // exact message
};

// Header used by most CSV cases.
constexpr char kHead[] =
    "id,arrival_s,profile,gpu_fraction,count,duration_s,latency_sensitive,migratable\n";

TEST(TraceReaderTest, BadCsvInputsGiveExactErrors) {
  const std::string h = kHead;
  const std::vector<TraceBadCase> cases = {
      {"bad number", h + "a,abc,1g.5gb,,,10,,\n",
       "t.csv:2: field 'arrival_s': 'abc' must be a number from 0 to 1e+15"},
      // Regression (trial_nul_in_a_field_echoed_raw): the NUL byte went to the terminal raw.
      {"NUL in a number", h + std::string("a,10\0,1g.5gb,,,10,,\n", 20),
       "t.csv:2: field 'arrival_s': '10\\x00' must be a number from 0 to 1e+15"},
      {"number with trailing text", h + "a,1s,1g.5gb,,,10,,\n",
       "t.csv:2: field 'arrival_s': '1s' must be a number from 0 to 1e+15"},
      {"negative arrival", h + "a,-1,1g.5gb,,,10,,\n",
       "t.csv:2: field 'arrival_s': '-1' must be a number from 0 to 1e+15"},
      // Regression (trial_arrival_huge): 1.7e308 was taken, and every job ended at its arrival.
      {"huge arrival", h + "a,1.7e308,1g.5gb,,,10,,\n",
       "t.csv:2: field 'arrival_s': '1.7e308' must be a number from 0 to 1e+15"},
      {"infinite arrival", h + "a,inf,1g.5gb,,,10,,\n",
       "t.csv:2: field 'arrival_s': 'inf' must be a number from 0 to 1e+15"},
      {"negative duration", h + "a,0,1g.5gb,,,-3,,\n",
       "t.csv:2: field 'duration_s': '-3' must be a number from 1e-06 to 1e+15"},
      {"zero duration", h + "a,0,1g.5gb,,,0,,\n",
       "t.csv:2: field 'duration_s': '0' must be a number from 1e-06 to 1e+15"},
      {"nan duration", h + "a,0,1g.5gb,,,nan,,\n",
       "t.csv:2: field 'duration_s': 'nan' must be a number from 1e-06 to 1e+15"},
      // Regression extreme_durations_printed_nan: 1e308 s made the utilisation -nan and the
      // energy inf, 5e-324 s an infinite slowdown.
      {"huge duration", h + "a,0,1g.5gb,,,1e308,,\n",
       "t.csv:2: field 'duration_s': '1e308' must be a number from 1e-06 to 1e+15"},
      {"tiny duration", h + "a,0,1g.5gb,,,5e-324,,\n",
       "t.csv:2: field 'duration_s': '5e-324' must be a number from 1e-06 to 1e+15"},
      {"missing duration cell", h + "a,0,1g.5gb,,,,,\n",
       "t.csv:2: field 'duration_s': missing (required)"},
      {"missing id cell", h + ",0,1g.5gb,,,5,,\n", "t.csv:2: field 'id': missing (required)"},
      {"fraction above 1", h + "a,0,,1.5,,10,,\n",
       "t.csv:2: field 'gpu_fraction': '1.5' must be a number in (0, 1]"},
      {"fraction 0", h + "a,0,,0,,10,,\n",
       "t.csv:2: field 'gpu_fraction': '0' must be a number in (0, 1]"},
      {"count 0", h + "a,0,1g.5gb,,0,10,,\n",
       "t.csv:2: field 'count': '0' must be an integer >= 1"},
      {"count fractional", h + "a,0,1g.5gb,,1.5,10,,\n",
       "t.csv:2: field 'count': '1.5' must be an integer >= 1"},
      {"count too large", h + "a,0,1g.5gb,,99999999999,10,,\n",
       "t.csv:2: field 'count': '99999999999' is out of range: must be an integer from 1 to "
       "2147483647"},
      {"unknown column", "id,arrival_s,profile,duration_s,gpus\na,0,1g.5gb,10,1\n",
       std::string("t.csv:1: unknown column 'gpus' (known: ") + kKnown + ")"},
      {"missing required column", "id,arrival_s,profile\na,0,1g.5gb\n",
       "t.csv:1: missing required column 'duration_s'"},
      {"missing profile and fraction columns", "id,arrival_s,duration_s\na,0,1\n",
       "t.csv:1: missing column 'profile' or 'gpu_fraction' (one is required)"},
      {"profile and fraction in a row", h + "a,0,1g.5gb,0.5,,10,,\n",
       "t.csv:2: give exactly one of 'profile' and 'gpu_fraction', not both"},
      {"neither profile nor fraction", h + "a,0,,,,10,,\n",
       "t.csv:2: one of 'profile' or 'gpu_fraction' is required"},
      {"bad boolean", h + "a,0,1g.5gb,,,10,yes,\n",
       "t.csv:2: field 'latency_sensitive': 'yes' must be true or false"},
      {"capitalised boolean", h + "a,0,1g.5gb,,,10,True,\n",
       "t.csv:2: field 'latency_sensitive': 'True' must be true or false"},
      {"bad migratable", h + "a,0,1g.5gb,,,10,,live\n",
       "t.csv:2: field 'migratable': 'live' is not one of none, restart, checkpoint"},
      {"quoted field", h + "\"a\",0,1g.5gb,,,10,,\n",
       "t.csv:2: quoted fields are not supported (found '\"'); write plain comma-separated "
       "values without quotes"},
      {"duplicate id", h + "a,0,1g.5gb,,,10,,\n# c\nb,0,1g.5gb,,,10,,\na,5,1g.5gb,,,10,,\n",
       "t.csv:5: field 'id': duplicate id 'a' (first on line 2)"},
      {"too few fields", h + "a,0,1g.5gb,,,10\n",
       "t.csv:2: expected 8 comma-separated fields (as in the header on line 1), found 6"},
      {"duplicate column", "id,id,arrival_s\n", "t.csv:1: column 'id' appears twice"},
      {"empty column name", "id,,arrival_s\n", "t.csv:1: column 2 of the header is empty"},
      {"only comments", "# only a comment\n\n",
       "t.csv: no header line: the file has only blank lines and '#' comments"},
      {"empty file", "", "t.csv: no header line: the file is empty"},
      {"bad pcie", "id,arrival_s,profile,duration_s,pcie_gbps\na,0,1g.5gb,10,-1\n",
       "t.csv:2: field 'pcie_gbps': '-1' must be a number >= 0"},
      {"bad alpha", "id,arrival_s,profile,duration_s,alpha\na,0,1g.5gb,10,0\n",
       "t.csv:2: field 'alpha': '0' must be a number > 0"},
  };
  for (const TraceBadCase& c : cases) {
    SCOPED_TRACE(c.label);
    std::istringstream in(c.content);
    auto jobs = ParseTraceCsv(in, "t.csv");
    ASSERT_FALSE(jobs.ok());
    EXPECT_EQ(jobs.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(jobs.status().message(), c.error);
  }
}

TEST(TraceReaderTest, BadJsonLinesGiveExactErrors) {
  const std::string ok = R"({"id":"a","arrival_s":0,"profile":"1g.5gb","duration_s":10})"
                         "\n";
  const std::vector<TraceBadCase> cases = {
      {"unknown key", R"({"id":"a","arrival_s":0,"profile":"1g.5gb","duration_s":10,"gpus":1})",
       std::string("t.jsonl:1: unknown key 'gpus' (known: ") + kKnown + ")"},
      {"wrong type number", ok + R"({"id":"b","arrival_s":0,"profile":"1g.5gb","duration_s":"10"})",
       "t.jsonl:2: field 'duration_s': expected a number, got string \"10\""},
      {"wrong type boolean",
       R"({"id":"a","arrival_s":0,"profile":"1g.5gb","duration_s":1,"latency_sensitive":"true"})",
       "t.jsonl:1: field 'latency_sensitive': expected a boolean, got string \"true\""},
      {"wrong type id", R"({"id":7,"arrival_s":0,"profile":"1g.5gb","duration_s":1})",
       "t.jsonl:1: field 'id': expected a string, got number 7"},
      {"wrong type profile", R"({"id":"a","arrival_s":0,"profile":["1g.5gb"],"duration_s":1})",
       "t.jsonl:1: field 'profile': expected a string, got array [\"1g.5gb\"]"},
      {"count not integer",
       R"({"id":"a","arrival_s":0,"profile":"1g.5gb","duration_s":1,"count":2.5})",
       "t.jsonl:1: field 'count': '2.5' must be an integer >= 1"},
      {"count negative", R"({"id":"a","arrival_s":0,"profile":"1g.5gb","duration_s":1,"count":-2})",
       "t.jsonl:1: field 'count': '-2' must be an integer >= 1"},
      {"negative duration", R"({"id":"a","arrival_s":0,"profile":"1g.5gb","duration_s":-3})",
       "t.jsonl:1: field 'duration_s': '-3' must be a number from 1e-06 to 1e+15"},
      {"bad migratable",
       R"({"id":"a","arrival_s":0,"profile":"1g.5gb","duration_s":1,"migratable":"live"})",
       "t.jsonl:1: field 'migratable': 'live' is not one of none, restart, checkpoint"},
      {"both profile and fraction",
       R"({"id":"a","arrival_s":0,"profile":"1g.5gb","gpu_fraction":0.5,"duration_s":1})",
       "t.jsonl:1: give exactly one of 'profile' and 'gpu_fraction', not both"},
      {"missing arrival", R"({"id":"a","profile":"1g.5gb","duration_s":1})",
       "t.jsonl:1: field 'arrival_s': missing (required)"},
      {"null required", R"({"id":"a","arrival_s":null,"profile":"1g.5gb","duration_s":1})",
       "t.jsonl:1: field 'arrival_s': missing (required)"},
      {"empty profile", R"({"id":"a","arrival_s":0,"profile":"","duration_s":1})",
       "t.jsonl:1: field 'profile': must not be empty"},
      {"not an object", ok + "\n[1,2]\n",
       "t.jsonl:3: expected a JSON object, got array (JSON lines: one object per line, not an "
       "array)"},
      {"duplicate key", R"({"id":"a","arrival_s":0,"id":"b","profile":"1g.5gb","duration_s":1})",
       "t.jsonl:1: key 'id' appears twice"},
      {"duplicate id", ok + ok, "t.jsonl:2: field 'id': duplicate id 'a' (first on line 1)"},
  };
  for (const TraceBadCase& c : cases) {
    SCOPED_TRACE(c.label);
    std::istringstream in(c.content);
    auto jobs = ParseTraceJsonLines(in, "t.jsonl");
    ASSERT_FALSE(jobs.ok());
    EXPECT_EQ(jobs.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(jobs.status().message(), c.error);
  }
}

// Regression ("count": 2.0 was refused as not an integer): in JSON lines a number with an
// integral value is that integer however it is written (io/integer_input.h); 2.5 is refused
// naming the field and the value as written.
TEST(TraceReaderTest, JsonCountWithAnIntegralValueIsThatInteger) {
  const std::string head = R"({"id":"a","arrival_s":0,"profile":"1g.5gb","duration_s":10,)";
  for (const std::string count : {"2.0", "2e0", "0.2e1", "2"}) {
    SCOPED_TRACE(count);
    std::istringstream in(head + R"("count":)" + count + "}\n");
    auto jobs = ParseTraceJsonLines(in, "t.jsonl");
    ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
    ASSERT_EQ(jobs->size(), 1u);
    EXPECT_EQ((*jobs)[0].count, 2);
  }
  const std::pair<std::string, std::string> refused[] = {
      {"2.5", "t.jsonl:1: field 'count': '2.5' must be an integer >= 1"},
      {"2.50", "t.jsonl:1: field 'count': '2.50' must be an integer >= 1"},  // as written
      {"0.0", "t.jsonl:1: field 'count': '0.0' must be an integer >= 1"},
      {"-2.0", "t.jsonl:1: field 'count': '-2.0' must be an integer >= 1"},
  };
  for (const auto& [count, want] : refused) {
    SCOPED_TRACE(count);
    std::istringstream in(head + R"("count":)" + count + "}\n");
    auto jobs = ParseTraceJsonLines(in, "t.jsonl");
    ASSERT_FALSE(jobs.ok());
    EXPECT_EQ(jobs.status().message(), want);
  }
}

// Regression (a count too large for the reader said "must be an integer >= 1", which it is): a
// count above 2147483647 (INT_MAX, the largest the job holds) is out of range, said with the
// range and the value as written, in CSV and JSON lines; whether an int64 could hold it or not
// (99999999999999999999 > 2^64; the JSON parser reads it as the double 1e20).
TEST(TraceReaderTest, CountTooLargeIsOutOfRangeWithTheRange) {
  const std::string range = "is out of range: must be an integer from 1 to 2147483647";
  auto expect_jsonl_refused = [&](const std::string& count) {
    std::istringstream jsonl(R"({"id":"a","arrival_s":0,"profile":"1g.5gb","duration_s":10,)"
                             R"("count":)" +
                             count + "}\n");
    auto j = ParseTraceJsonLines(jsonl, "t.jsonl");
    ASSERT_FALSE(j.ok());
    EXPECT_EQ(j.status().message(), "t.jsonl:1: field 'count': '" + count + "' " + range);
  };
  for (const std::string count : {"2147483648", "99999999999999999999"}) {
    SCOPED_TRACE(count);
    std::istringstream csv("id,arrival_s,profile,duration_s,count\na,0,1g.5gb,10," + count + "\n");
    auto c = ParseTraceCsv(csv, "t.csv");
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().message(), "t.csv:2: field 'count': '" + count + "' " + range);
    expect_jsonl_refused(count);
  }
  // Written as a double, 3e9 and 18446744073709551615 (the largest uint64) too.
  for (const std::string count : {"3e9", "18446744073709551615"}) {
    SCOPED_TRACE(count);
    expect_jsonl_refused(count);
  }
  // The largest count is a count.
  std::istringstream max("id,arrival_s,profile,duration_s,count\na,0,1g.5gb,10,2147483647\n");
  auto m = ParseTraceCsv(max, "t.csv");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)[0].count, 2147483647);
}

TEST(TraceReaderTest, BadJsonLineNamesLineAndParser) {
  // The parser's own wording depends on the nlohmann-json version; the
  // essential parts are the location and "invalid JSON".
  std::istringstream in(
      "{\"id\":\"a\",\"arrival_s\":0,\"profile\":\"1g.5gb\",\"duration_s\":1}\n"
      "{\"id\":\"b\", arrival_s: 0}\n");
  auto jobs = ParseTraceJsonLines(in, "t.jsonl");
  ASSERT_FALSE(jobs.ok());
  EXPECT_THAT(jobs.status().message(), StartsWith("t.jsonl:2: invalid JSON: "));
  EXPECT_THAT(jobs.status().message(), HasSubstr("parse error"));
  EXPECT_THAT(jobs.status().message(), ::testing::Not(HasSubstr("[json.exception")));
}

// Regression: a number that JSON allows but a double cannot hold (1e400) made nlohmann throw
// out_of_range, which the reader did not catch: the program aborted. It is the line's bad input,
// in a known field or in one the reader ignores.
TEST(TraceReaderTest, NumberTooLargeForADoubleIsALineError) {
  const std::string ok = "{\"id\":\"a\",\"arrival_s\":0,\"profile\":\"1g.5gb\",\"duration_s\":1}\n";
  for (const std::string& bad :
       {std::string("{\"id\":\"b\",\"arrival_s\":0,\"profile\":\"1g.5gb\",\"duration_s\":1,"
                    "\"count\":1e400}"),
        std::string("{\"id\":\"b\",\"arrival_s\":-1e400,\"profile\":\"1g.5gb\",\"duration_s\":1}"),
        std::string("{\"id\":\"b\",\"arrival_s\":0,\"profile\":\"1g.5gb\",\"duration_s\":1,"
                    "\"note\":1e400}")}) {
    SCOPED_TRACE(bad);
    std::istringstream in(ok + bad + "\n");
    auto jobs = ParseTraceJsonLines(in, "t.jsonl");
    ASSERT_FALSE(jobs.ok());
    EXPECT_EQ(jobs.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(jobs.status().message(), StartsWith("t.jsonl:2: invalid JSON: "));
    EXPECT_THAT(jobs.status().message(), HasSubstr("1e400"));
    EXPECT_THAT(jobs.status().message(), ::testing::Not(HasSubstr("[json.exception")));
  }
}

TEST(TraceReaderTest, CsvRoundTrip) {
  std::vector<WorkloadJob> jobs = SmallTraceJobs();
  // Values whose shortest decimal form is long, and a very small/large one.
  jobs.push_back(AJob()
                     .Named("odd")
                     .ArrivesAt(1.0 / 3.0)
                     .Fraction(0.1 + 0.2)
                     .Gang(3)
                     .Runs(1e-7 + 1)
                     .Pcie(1e20, 0.7)
                     .LatencySensitive(true)
                     .Moves(Migratable::kCheckpoint)
                     .Limit(7200.5));
  std::ostringstream out;
  ASSERT_TRUE(WriteTraceCsv(jobs, out).ok());
  std::istringstream in(out.str());
  auto back = ParseTraceCsv(in, "roundtrip.csv");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << out.str();
  // Reading sorts by arrival: 1/3 s comes second (after 0, before 12.5).
  std::vector<WorkloadJob> expected = jobs;
  std::stable_sort(expected.begin(), expected.end(),
                   [](const Job& a, const Job& b) { return a.arrival_s < b.arrival_s; });
  ASSERT_EQ(expected[1].name, "odd");
  ExpectSameJobs(*back, expected);
}

// time_limit_s is optional in both encodings: absent or empty means none (0);
// a limit must be a number > 0.
TEST(TraceReaderTest, TimeLimitColumnIsOptionalAndChecked) {
  std::istringstream csv(
      "id,arrival_s,profile,duration_s,time_limit_s\n"
      "a,0,1g.5gb,100,3600\n"
      "b,1,1g.5gb,100,\n");
  auto jobs = ParseTraceCsv(csv, "t.csv");
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].time_limit_s, 3600);
  EXPECT_EQ((*jobs)[1].time_limit_s, 0);
  std::istringstream jsonl(
      R"({"id":"a","arrival_s":0,"profile":"1g.5gb","duration_s":100,"time_limit_s":60})"
      "\n"
      R"({"id":"b","arrival_s":0,"profile":"1g.5gb","duration_s":100,"time_limit_s":null})");
  jobs = ParseTraceJsonLines(jsonl, "t.jsonl");
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  EXPECT_EQ((*jobs)[0].time_limit_s, 60);
  EXPECT_EQ((*jobs)[1].time_limit_s, 0);
  std::istringstream bad("id,arrival_s,profile,duration_s,time_limit_s\na,0,1g.5gb,100,0\n");
  jobs = ParseTraceCsv(bad, "t.csv");
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.status().message(), "t.csv:2: field 'time_limit_s': '0' must be a number > 0");
}

TEST(TraceReaderTest, WriterRejectsUnwritableIds) {
  struct Case {
    std::string id;
    std::string profile;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"a,b", "1g.5gb", "job 0 (id 'a,b'): the id cannot be written to CSV: it contains ','"},
      {"#a", "1g.5gb", "job 0 (id '#a'): the id cannot be written to CSV: it starts with '#'"},
      {"", "1g.5gb", "job 0 (id ''): the id cannot be written to CSV: it is empty"},
      {" a", "1g.5gb",
       "job 0 (id ' a'): the id cannot be written to CSV: it has leading or trailing blanks"},
      {"a", "1g\"", "job 0 (id 'a'): the profile cannot be written to CSV: it contains '\"'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.id);
    WorkloadJob j = AJob(c.profile).Named(c.id);
    std::ostringstream out;
    Status st = WriteTraceCsv({j}, out);
    EXPECT_EQ(st.message(), c.error);
    EXPECT_EQ(out.str(), "");
  }
  WorkloadJob a = AJob("1g.5gb").Named("a");
  std::ostringstream out;
  EXPECT_EQ(WriteTraceCsv({a, a}, out).message(), "job 1: duplicate id 'a'");
}

// A catalog of one small model with the profiles 1g.8gb and 2g.16gb.
Catalog SmallCatalog() {
  StatusOr<GpuModel> m =
      LoadGpuModelFile(testing::TestDataDir() + "/catalogs/test-4u/gpus/test-4u.json");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  Catalog c;
  EXPECT_TRUE(c.Add(std::move(*m)).ok());
  return c;
}

TEST(TraceReaderTest, ProfileSpellingsBecomeTheCatalogsWithACatalog) {
  const Catalog catalog = SmallCatalog();
  std::istringstream csv(
      "id,arrival_s,profile,duration_s\n"
      "a,0,1G.8GB,10\n"
      "b,1,MIG-1g.8gb,10\n"
      "c,2,nvidia.com/mig-2g.16gb,10\n"
      "d,3,2g.16gb,10\n");
  auto jobs = ParseTraceCsv(csv, "t.csv", &catalog);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  std::vector<std::string> profiles;
  for (const WorkloadJob& j : *jobs) profiles.push_back(j.profile);
  EXPECT_EQ(profiles, (std::vector<std::string>{"1g.8gb", "1g.8gb", "2g.16gb", "2g.16gb"}));
  std::istringstream jsonl(R"({"id":"a","arrival_s":0,"profile":"Mig-2G.16gb","duration_s":1})");
  auto j = ParseTraceJsonLines(jsonl, "t.jsonl", &catalog);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->front().profile, "2g.16gb");
}

TEST(TraceReaderTest, UnknownProfileIsAnErrorWithTheKnownNames) {
  const Catalog catalog = SmallCatalog();
  std::istringstream csv("id,arrival_s,profile,duration_s\na,0,1g.8gb,10\nb,1,9g.99gb,10\n");
  auto jobs = ParseTraceCsv(csv, "t.csv", &catalog);
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(jobs.status().message(),
            "t.csv:3: field 'profile': unknown profile '9g.99gb' (known: 1g.8gb, 2g.16gb)");
  std::istringstream jsonl(R"({"id":"a","arrival_s":0,"profile":"1g.5gb","duration_s":1})");
  auto j = ParseTraceJsonLines(jsonl, "t.jsonl", &catalog);
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message(),
            "t.jsonl:1: field 'profile': unknown profile '1g.5gb' (known: 1g.8gb, 2g.16gb)");
  // Without a catalog the name is kept as written (checked later, per model).
  std::istringstream again("id,arrival_s,profile,duration_s\nb,1,9g.99gb,10\n");
  auto kept = ParseTraceCsv(again, "t.csv");
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->front().profile, "9g.99gb");
}

TEST(TraceReaderTest, UnreadablePathsSayWhy) {
  const std::filesystem::path dir = ::migsched::testing::MakeTempDir("trace-dir.csv");
  auto d = ReadTraceFile(dir.string());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(d.status().message(), dir.string() + ": is a directory, not a trace file");
  const std::string missing = (dir / "missing.csv").string();
  auto m = ReadTraceFile(missing);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(m.status().message(), missing + ": cannot open trace file: No such file or directory");
}

}  // namespace
}  // namespace migsched
