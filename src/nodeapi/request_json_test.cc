#include "nodeapi/request_json.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "nodeapi/node_client.h"

namespace migsched {
namespace {

using ojson = nlohmann::ordered_json;

TEST(ParseJobRequestTest, FullRequest) {
  auto r = ParseJobRequest(R"({"profile": "2g.10gb", "count": 2, "command": ["python", "t.py"],
      "env": {"A": "1", "B": ""}, "cwd": "/w", "migratable": "restart",
      "latency_sensitive": true, "priority": -3, "name": "train", "time_limit_s": 5400})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->profile, "2g.10gb");
  EXPECT_EQ(r->gpu_fraction, 0);
  EXPECT_EQ(r->count, 2);
  EXPECT_EQ(r->command, (std::vector<std::string>{"python", "t.py"}));
  EXPECT_EQ(r->env, (std::map<std::string, std::string>{{"A", "1"}, {"B", ""}}));
  EXPECT_EQ(r->cwd, "/w");
  EXPECT_EQ(r->migratable, Migratable::kRestart);
  EXPECT_TRUE(r->latency_sensitive);
  EXPECT_EQ(r->priority, -3);
  EXPECT_EQ(r->name, "train");
  EXPECT_EQ(r->time_limit_s, 5400);
  EXPECT_EQ(r->ToJob().time_limit_s, 5400);  // the scheduler's expected run time
}

TEST(ParseJobRequestTest, DefaultsWithAFraction) {
  auto r = ParseJobRequest(R"({"gpu_fraction": 0.5, "command": ["true"]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->profile, "");
  EXPECT_DOUBLE_EQ(r->gpu_fraction, 0.5);
  EXPECT_EQ(r->count, 1);  // JobRequest defaults
  EXPECT_EQ(r->migratable, Migratable::kNone);
  EXPECT_FALSE(r->latency_sensitive);
  EXPECT_EQ(r->priority, 0);
  // Boundary: 1 is allowed, the interval is (0, 1].
  EXPECT_TRUE(ParseJobRequest(R"({"gpu_fraction": 1, "command": ["x"]})").ok());
  // count 64 = kMaxJobCount is allowed.
  EXPECT_TRUE(ParseJobRequest(R"({"profile": "p", "count": 64, "command": ["x"]})").ok());
}

// Regression ("count": 2.0 was refused as "non-integer number 2"): an integer field takes a
// JSON number with an integral value however it is written (io/integer_input.h), the value
// being the integer; one with a fraction is refused naming the field and the value; an integral
// one outside the field's range is refused as such, with the range.
TEST(ParseJobRequestTest, IntegralNumbersWrittenWithAFractionOrExponentAreIntegers) {
  auto r = ParseJobRequest(R"({"profile": "p", "count": 2.0, "priority": -1e3, "command": ["x"]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->count, 2);
  EXPECT_EQ(r->priority, -1000);
  auto e = ParseJobRequest(R"({"profile": "p", "count": 64e0, "command": ["x"]})");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->count, 64);  // kMaxJobCount
  auto res = ParseReservationRequest(
      R"({"owner": "o", "placements": [{"gpu": 1.0, "profile": "1g.5gb", "start": 4.0}]})");
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->placements[0].gpu, NvmlIndex{1});
  EXPECT_EQ(res->placements[0].start, 4);
  const std::pair<const char*, const char*> refused[] = {
      {R"({"profile": "p", "count": 2.5, "command": ["x"]})",
       "field 'count' must be an integer, got non-integer number 2.5"},
      {R"({"profile": "p", "count": 65.0, "command": ["x"]})",
       "field 'count' must be from 1 to 64, got 65.0"},
      {R"({"profile": "p", "count": 0.0, "command": ["x"]})",
       "field 'count' must be from 1 to 64, got 0.0"},
      // Beyond every integer type of the parser: read as the double 1e20, still above 64, and
      // quoted as written.
      {R"({"profile": "p", "count": 99999999999999999999, "command": ["x"]})",
       "field 'count' must be from 1 to 64, got 99999999999999999999"},
  };
  for (const auto& [body, want] : refused) {
    SCOPED_TRACE(body);
    auto bad = ParseJobRequest(body);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(bad.status().message(), want);
  }
}

TEST(ParseJobRequestTest, BadRequestsGiveExactMessages) {
  const std::string kKnown =
      "(known: profile, gpu_fraction, count, command, env, cwd, migratable, latency_sensitive, "
      "priority, name, user, time_limit_s)";
  struct Case {
    std::string body;
    std::string want;
  } cases[] = {
      {"[1]", "request body must be a JSON object, got array"},
      {"\"x\"", "request body must be a JSON object, got string"},
      {R"({"profile": "p", "command": ["x"], "gpus": 2})", "unknown field 'gpus' " + kKnown},
      {R"({"command": ["x"]})",
       "one of 'profile' (e.g. \"2g.10gb\") or 'gpu_fraction' (in (0, 1]) is required"},
      {R"({"profile": "p", "gpu_fraction": 0.5, "command": ["x"]})",
       "give only one of 'profile' and 'gpu_fraction'"},
      // Regression null_fraction_said_give_only_one.
      {R"({"profile": "p", "gpu_fraction": null, "command": ["x"]})",
       "field 'gpu_fraction' must be a number, got null"},
      {R"({"profile": null, "gpu_fraction": 0.5, "command": ["x"]})",
       "field 'profile' must be a string, got null"},
      {R"({"profile": 3, "command": ["x"]})", "field 'profile' must be a string, got number"},
      {R"({"profile": "", "command": ["x"]})", "field 'profile' must not be empty"},
      {R"({"gpu_fraction": "half", "command": ["x"]})",
       "field 'gpu_fraction' must be a number, got string"},
      {R"({"gpu_fraction": 0, "command": ["x"]})", "field 'gpu_fraction' must be in (0, 1], got 0"},
      {R"({"gpu_fraction": 1.5, "command": ["x"]})",
       "field 'gpu_fraction' must be in (0, 1], got 1.5"},
      {R"({"gpu_fraction": -0.1, "command": ["x"]})",
       "field 'gpu_fraction' must be in (0, 1], got -0.1"},
      {R"({"profile": "p", "count": "2", "command": ["x"]})",
       "field 'count' must be an integer, got string"},
      {R"({"profile": "p", "count": 2.5, "command": ["x"]})",
       "field 'count' must be an integer, got non-integer number 2.5"},
      {R"({"profile": "p", "count": 0, "command": ["x"]})",
       "field 'count' must be from 1 to 64, got 0"},
      {R"({"profile": "p", "count": 65, "command": ["x"]})",
       "field 'count' must be from 1 to 64, got 65"},
      {R"({"profile": "p", "count": 18446744073709551615, "command": ["x"]})",
       "field 'count' must be from 1 to 64, got 18446744073709551615"},
      {R"({"profile": "p"})", "field 'command' is required"},
      {R"({"profile": "p", "command": "echo hi"})",
       "field 'command' must be an array of strings, got string"},
      {R"({"profile": "p", "command": []})",
       "field 'command' must not be empty (argv: program, arguments)"},
      {R"({"profile": "p", "command": ["echo", 1]})",
       "field 'command[1]' must be a string, got number"},
      {R"({"profile": "p", "command": [""]})",
       "field 'command[0]' (the program) must not be empty"},
      {R"({"profile": "p", "command": ["a\u0000b"]})",
       "field 'command[0]' must not contain a NUL character"},
      {R"({"profile": "p", "command": ["x"], "env": ["A=1"]})",
       "field 'env' must be an object of strings, got array"},
      {R"({"profile": "p", "command": ["x"], "env": {"A": 1}})",
       "field 'env.A' must be a string, got number"},
      {R"({"profile": "p", "command": ["x"], "env": {"A=B": "1"}})",
       "field 'env': variable names must be non-empty and contain no '=' or NUL"},
      {R"({"profile": "p", "command": ["x"], "env": {"": "1"}})",
       "field 'env': variable names must be non-empty and contain no '=' or NUL"},
      {R"({"profile": "p", "command": ["x"], "cwd": false})",
       "field 'cwd' must be a string, got boolean"},
      {R"({"profile": "p", "command": ["x"], "migratable": "live"})",
       "field 'migratable' must be one of none, restart, checkpoint, got \"live\""},
      {R"({"profile": "p", "command": ["x"], "migratable": true})",
       "field 'migratable' must be a string (none, restart, checkpoint), got boolean"},
      {R"({"profile": "p", "command": ["x"], "latency_sensitive": "yes"})",
       "field 'latency_sensitive' must be a boolean, got string"},
      {R"({"profile": "p", "command": ["x"], "priority": 1.5e-3})",
       "field 'priority' must be an integer, got non-integer number 1.5e-3"},
      {R"({"profile": "p", "command": ["x"], "priority": 2147483648})",
       "field 'priority' must be from -2147483648 to 2147483647, got 2147483648"},
      {R"({"profile": "p", "command": ["x"], "name": null})",
       "field 'name' must be a string, got null"},
      {R"({"profile": "p", "command": ["x"], "time_limit_s": 0})",
       "field 'time_limit_s' must be a number of seconds from 1 to 1e9 (absent: no limit), got 0"},
      {R"({"profile": "p", "command": ["x"], "time_limit_s": -5})",
       "field 'time_limit_s' must be a number of seconds from 1 to 1e9 (absent: no limit), got -5"},
      {R"({"profile": "p", "command": ["x"], "time_limit_s": "1h"})",
       "field 'time_limit_s' must be a number of seconds from 1 to 1e9 (absent: no limit), got "
       "\"1h\""},
      // Regression (time_limit_out_of_bounds): both were taken, 1e-300 shown as a limit of 0:00
      // and 1e300 as UNLIMITED.
      {R"({"profile": "p", "command": ["x"], "time_limit_s": 1e-300})",
       "field 'time_limit_s' must be a number of seconds from 1 to 1e9 (absent: no limit), got "
       "1e-300"},
      {R"({"profile": "p", "command": ["x"], "time_limit_s": 0.5})",
       "field 'time_limit_s' must be a number of seconds from 1 to 1e9 (absent: no limit), got "
       "0.5"},
      {R"({"profile": "p", "command": ["x"], "time_limit_s": 1e300})",
       "field 'time_limit_s' must be a number of seconds from 1 to 1e9 (absent: no limit), got "
       "1e300"},
      {R"({"profile": "p", "command": ["x"], "time_limit_s": 1000000001})",
       "field 'time_limit_s' must be a number of seconds from 1 to 1e9 (absent: no limit), got "
       "1000000001"},
  };
  for (const Case& k : cases) {
    auto r = ParseJobRequest(k.body);
    ASSERT_FALSE(r.ok()) << k.body;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << k.body;
    EXPECT_EQ(r.status().message(), k.want) << k.body;
  }
}

// Regression: a number refused for its range was quoted as the parser read it back, a huge
// integer in exponent form (100000000000000000000 as 1e+20); now as the client wrote it, at any
// depth of the body.
// The bounds of time_limit_s (kMinTimeLimitS, kMaxTimeLimitS) are taken as they are.
TEST(ParseRequestsTest, TimeLimitBoundsAreTaken) {
  for (double want : {1.0, 1e9}) {
    auto r = ParseJobRequest(
        fmt::format(R"({{"profile": "p", "command": ["x"], "time_limit_s": {}}})", want));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->time_limit_s, want);
  }
}

TEST(ParseRequestsTest, RefusedNumberIsQuotedAsWritten) {
  const std::pair<const char*, const char*> jobs[] = {
      {R"({"profile": "p", "command": ["x"], "count": 100000000000000000000})",
       "field 'count' must be from 1 to 64, got 100000000000000000000"},
      {R"({"profile": "p", "command": ["x"], "count": 65.0})",
       "field 'count' must be from 1 to 64, got 65.0"},
      {R"({"profile": "p", "command": ["x"], "count": 2.50})",
       "field 'count' must be an integer, got non-integer number 2.50"},
      {R"({"profile": "p", "command": ["x"], "priority": -3E10})",
       "field 'priority' must be from -2147483648 to 2147483647, got -3E10"},
      {R"({"gpu_fraction": 1.50, "command": ["x"]})",
       "field 'gpu_fraction' must be in (0, 1], got 1.50"},
      {R"({"profile": "p", "command": ["x"], "time_limit_s": -1e2})",
       "field 'time_limit_s' must be a number of seconds from 1 to 1e9 (absent: no limit), got "
       "-1e2"},
  };
  for (const auto& [body, want] : jobs) {
    auto r = ParseJobRequest(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.status().message(), want) << body;
  }
  auto res = ParseReservationRequest(
      R"({"owner": "o", "placements": [{"gpu": 0, "profile": "1g.5gb", "start": 0},)"
      R"( {"gpu": 100000000000000000000, "profile": "1g.5gb", "start": 0}]})");
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.status().message(),
            "field 'placements[1].gpu' must be from 0 to 1048576, got 100000000000000000000");
  auto ttl = ParseReservationRequest(
      R"({"owner": "o", "placements": [{"gpu": 0, "profile": "1g.5gb", "start": 0}],)"
      R"( "ttl_s": -0.50})");
  ASSERT_FALSE(ttl.ok());
  EXPECT_EQ(ttl.status().message(), "field 'ttl_s' must be > 0, got -0.50");
  auto alloc = ParseAllocationRequest(R"({"owner": "a", "instances": [{"profile": "1g.5gb"},)"
                                      R"( {"profile": "1g.5gb", "gpu": 1, "start": 1e30}]})");
  ASSERT_FALSE(alloc.ok());
  EXPECT_EQ(alloc.status().message(),
            "field 'instances[1].start' must be from 0 to 1048576, got 1e30");
  // A JSON value without its text (a record read back) is quoted as the parser reads it.
  auto from_json = JobRequestFromJson(nlohmann::json::parse(
      R"({"profile": "p", "command": ["x"], "count": 100000000000000000000})"));
  ASSERT_FALSE(from_json.ok());
  EXPECT_EQ(from_json.status().message(), "field 'count' must be from 1 to 64, got 1e+20");
}

// Regression (exec_limits_checked_only_at_launch): an argument or an
// environment too large for exec was accepted, stored, and failed at launch.
// Linux takes at most 131072 bytes per string (NUL included); the daemon
// takes at most 1 MiB of argv + env in all.
TEST(ParseJobRequestTest, ArgvAndEnvMustFitExec) {
  JobRequest r;
  r.profile = "1g.5gb";
  r.command = {"echo", std::string(131071, 'a')};  // 131071 + NUL = 131072: fits
  EXPECT_TRUE(ValidateJobRequest(r).ok());
  r.command[1] += 'a';
  EXPECT_EQ(ValidateJobRequest(r).message(),
            "field 'command[1]' is 131072 bytes long; exec takes at most 131071 per argument");
  r.command = {"echo"};
  r.env["BIG"] = std::string(131072, 'b');  // "BIG=" + value + NUL = 131077
  EXPECT_EQ(ValidateJobRequest(r).message(),
            "field 'env.BIG' is 131076 bytes long; exec takes at most 131071 per variable");
  r.env.clear();
  // 9 arguments of 120,000 bytes: each fits, together 9 × (120,001 + 8) + 5 + 8 bytes > 1 MiB.
  for (int i = 0; i < 9; ++i) r.command.push_back(std::string(120000, 'c'));
  EXPECT_EQ(ValidateJobRequest(r).message(),
            "fields 'command' and 'env' take 1080094 bytes; exec takes at most 1048576 in all");
  // The same rules through the JSON body.
  const std::string body =
      R"({"profile": "p", "command": ["echo", ")" + std::string(200000, 'x') + R"("]})";
  EXPECT_EQ(ParseJobRequest(body).status().message(),
            "field 'command[1]' is 200000 bytes long; exec takes at most 131071 per argument");
}

// Regression: a relative "cwd" was accepted (201) and the job failed only at its launch, with the
// directory looked up from wherever the daemon ran.
TEST(ParseJobRequestTest, ARelativeWorkingDirectoryIsRefusedAtSubmission) {
  JobRequest r;
  r.profile = "1g.5gb";
  r.command = {"true"};
  r.cwd = "/srv/data";
  EXPECT_TRUE(ValidateJobRequest(r).ok());
  r.cwd = "relative/dir";
  EXPECT_EQ(ValidateJobRequest(r).message(),
            "field 'cwd' must be an absolute path, got 'relative/dir' (`migsched submit --cwd` "
            "makes a relative one absolute from where it runs)");
  EXPECT_EQ(ValidateJobRequest(r).code(), StatusCode::kInvalidArgument);
}

TEST(ParseJobRequestTest, MalformedJsonSaysWhereItBroke) {
  struct Case {
    std::string body;
    std::string want;  // the message starts with this
  } cases[] = {
      {"", "request body is not valid JSON: parse error at line 1, column 1"},
      {"{\"profile\": ", "request body is not valid JSON: parse error at line 1, column 13"},
      {"{'a': 1}", "request body is not valid JSON: parse error at line 1, column 2"},
      {"{\"a\": 1} x", "request body is not valid JSON: parse error at line 1, column 10"},
      {"\"\xff\"", "request body is not valid JSON: parse error at line 1, column 2"},
  };
  for (const Case& k : cases) {
    auto r = ParseJobRequest(k.body);
    ASSERT_FALSE(r.ok()) << k.body;
    EXPECT_EQ(r.status().message().rfind(k.want, 0), 0u) << r.status().message();
  }
}

// Regression: a key given twice was taken silently, the last one winning
// (`"profile": "1g.5gb", ..., "profile": "2g.10gb"` ran a 2g.10gb job). It is refused, in the
// request and in any object inside it; the same key in two objects is fine.
TEST(ParseJobRequestTest, AKeyGivenTwiceIsRefused) {
  auto top = ParseJobRequest(R"({"profile":"1g.5gb","command":["true"],"profile":"2g.10gb"})");
  ASSERT_FALSE(top.ok());
  EXPECT_EQ(top.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(top.status().message(),
            "request body is not valid: key 'profile' appears twice in one object");
  auto inner =
      ParseJobRequest(R"({"profile":"1g.5gb","command":["true"],"env":{"A":"1","A":"2"}})");
  ASSERT_FALSE(inner.ok());
  EXPECT_EQ(inner.status().message(),
            "request body is not valid: key 'A' appears twice in one object");
  auto apart = ParseReservationRequest(
      R"({"owner":"o","placements":[{"gpu":0,"profile":"1g.5gb","start":0},)"
      R"({"gpu":0,"profile":"1g.5gb","start":1}]})");
  EXPECT_TRUE(apart.ok()) << apart.status().ToString();
}

// Regression (job_name_unbounded): a job's name had no length limit (one of max_body_bytes was
// stored and sent in every list page). At most kMaxJobNameBytes = 256 bytes, counted in bytes.
TEST(ParseJobRequestTest, JobNameLongerThanTheLimitIsRefused) {
  const std::string head = R"({"profile": "1g.5gb", "command": ["true"], "name": ")";
  auto fits = ParseJobRequest(head + std::string(256, 'n') + "\"}");
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  EXPECT_EQ(fits->name.size(), 256u);
  auto over = ParseJobRequest(head + std::string(257, 'n') + "\"}");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(over.status().message(), "field 'name' is 257 bytes long; at most 256 are allowed");
  // 129 x "\u00e9" (2 bytes in UTF-8 each) = 258 bytes, though 129 characters.
  std::string accents;
  for (int i = 0; i < 129; ++i) accents += "\xc3\xa9";
  auto wide = ParseJobRequest(head + accents + "\"}");
  ASSERT_FALSE(wide.ok());
  EXPECT_EQ(wide.status().message(), "field 'name' is 258 bytes long; at most 256 are allowed");
}

// Regression: an allocation's name had no limit, where a job's is 256 bytes. The same limit and
// words now (an allocation is a job's record kind too: `name` shows in the same listings).
TEST(ParseAllocationRequestTest, AllocationNameLongerThanTheLimitIsRefused) {
  const std::string head = R"({"owner": "o", "instances": [{"profile": "1g.5gb"}], "name": ")";
  auto fits = ParseAllocationRequest(head + std::string(256, 'n') + "\"}");
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  EXPECT_EQ(fits->name.size(), 256u);
  auto over = ParseAllocationRequest(head + std::string(300, 'n') + "\"}");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(over.status().message(), "field 'name' is 300 bytes long; at most 256 are allowed");
}

// A record the daemon stored before the limit keeps its name when a client reads it: the limit
// refuses new requests, it never hides a job already there.
TEST(JobRecordJsonTest, ARecordsNameLongerThanTheLimitIsReadAsStored) {
  DaemonJobRecord r;
  r.id = 7;
  r.request.profile = "1g.5gb";
  r.request.command = {"true"};
  r.request.name = std::string(300, 'n');
  auto back = JobRecordFromJson(nlohmann::json::parse(JobRecordToJson(r).dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->request.name, std::string(300, 'n'));
  EXPECT_EQ(back->request.profile, "1g.5gb");
}

// The bodies of POST /v1/reservations and POST /v1/allocations (the texts
// docs/api.md quotes).
TEST(ParseNodeRequestsTest, ReservationsAndAllocations) {
  auto r = ParseReservationRequest(
      R"({"owner": "slurm-room:n1:3g.20gb:0", "placements": [{"gpu": 1, "profile": "3g.20gb", "start": 4}], "ttl_s": 120})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->owner, "slurm-room:n1:3g.20gb:0");
  ASSERT_EQ(r->placements.size(), 1u);
  EXPECT_EQ(r->placements[0].gpu, NvmlIndex{1});
  EXPECT_EQ(r->placements[0].start, 4);
  EXPECT_EQ(r->ttl_s, 120);
  auto a = ParseAllocationRequest(
      R"({"reservation_prefix": "k8s:", "instances": [{"profile": "3g.20gb"}], "name": null})");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->owner, "");  // the bound reservation's owner (Daemon::Allocate)
  EXPECT_EQ(a->instances[0].gpu, NvmlIndex{-1});
  struct Case {
    bool reservation;
    std::string body;
    std::string want;
  } cases[] = {
      {true, R"({"placements": []})", "field 'owner' is required"},
      {true, R"({"owner": "x", "placements": []})",
       "field 'placements' must hold 1 to 64 placements, got 0"},
      {true, R"({"owner": "x", "placements": [{"gpu": 1, "profile": "1g.5gb"}]})",
       "field 'placements[0]' needs both 'gpu' and 'start'"},
      {true,
       R"({"owner": "x", "placements": [{"gpu": 0, "profile": "1g.5gb", "start": 0}], "ttl_s": 0})",
       "field 'ttl_s' must be > 0, got 0"},
      {true,
       R"({"owner": "a\u0001b", "placements": [{"gpu": 0, "profile": "1g.5gb", "start": 0}]})",
       "field 'owner' must not contain control characters"},
      // Regression (c1_control_in_owner): a C1 control (U+0085, NEL) was taken.
      {true,
       R"({"owner": "a\u0085b", "placements": [{"gpu": 0, "profile": "1g.5gb", "start": 0}]})",
       "field 'owner' must not contain control characters"},
      {false, R"({"instances": [{"profile": "1g.5gb"}]})",
       "field 'owner' is required (it may be left out only when binding a reservation)"},
      {false, R"({"owner": "", "reservation": "r"})", "field 'owner' must not be empty"},
      {false, R"({"owner": "x", "instances": [{"profile": "1g.5gb", "gpu": 0}]})",
       "field 'instances[0]' needs both 'gpu' and 'start' (or neither: the daemon chooses the "
       "placement)"},
      {false, R"({"owner": "x", "pod": "p"})",
       "unknown field 'pod' (known: owner, instances, reservation, reservation_prefix, name, "
       "anchors)"},
      {false, R"({"owner": "x", "instances": [{"profile": "1g.5gb"}], "anchors": "yes"})",
       "field 'anchors' must be a boolean, got string"},
      {true,
       R"({"owner": "x", "placements": [{"gpu": 0, "profile": "1g.5gb", "start": 0}], "anchors": 1})",
       "field 'anchors' must be a boolean, got number"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    const Status st = c.reservation ? ParseReservationRequest(c.body).status()
                                    : ParseAllocationRequest(c.body).status();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(st.message(), c.want);
  }
}

// §4 step 2: `anchors` (a job its owner never moves off its GPU) in both requests: absent is false,
// null is refused; and it comes back through the record, the reservation and the GPU view a client
// reads.
TEST(ParseNodeRequestsTest, AnchorsInReservationsAndAllocations) {
  const std::string placement = R"("placements": [{"gpu": 0, "profile": "1g.5gb", "start": 0}])";
  auto plain = ParseReservationRequest(R"({"owner": "k8s:a", )" + placement + "}");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_FALSE(plain->anchors);
  auto res = ParseReservationRequest(R"({"owner": "k8s:a", "anchors": true, )" + placement + "}");
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_TRUE(res->anchors);
  // null is refused, as for the other boolean fields (a trial found it taken as false).
  auto nul = ParseAllocationRequest(R"({"owner": "o", "reservation": "r", "anchors": null})");
  EXPECT_EQ(nul.status().message(), "field 'anchors' must be a boolean, got null");
  auto alloc = ParseAllocationRequest(R"({"owner": "o", "reservation": "r", "anchors": true})");
  ASSERT_TRUE(alloc.ok()) << alloc.status().ToString();
  EXPECT_TRUE(alloc->anchors);

  DaemonJobRecord r;
  r.id = 9;
  r.kind = JobKind::kAllocation;
  r.state = JobState::kRunning;
  r.allocation = *alloc;
  auto back = JobRecordFromJson(nlohmann::json::parse(JobRecordToJson(r).dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->allocation.anchors);
  // The request the record shows is one a client may send again as it is.
  auto again = ParseAllocationRequest(AllocationRequestToJson(back->allocation).dump());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->anchors);

  ReservationView rv;
  rv.record = {
      .owner = "k8s:a", .placements = {}, .created_at = 1, .expires_at = 2, .anchors = true};
  auto rback = ReservationViewFromJson(nlohmann::json::parse(ReservationViewToJson(rv).dump()));
  ASSERT_TRUE(rback.ok()) << rback.status().ToString();
  EXPECT_TRUE(rback->record.anchors);

  GpuView g;
  g.model = "A100 40GB";
  g.placement_units = 8;
  g.anchored = true;
  InstanceView in;
  in.profile = "1g.5gb";
  in.size = 1;
  in.busy = true;
  in.holder = HolderKind::kAllocation;
  in.job = 9;
  in.owner = "o";
  in.anchors = true;
  g.instances = {in, in};
  g.instances[1].start = 1;
  g.instances[1].anchors = false;
  auto gback = GpuViewFromJson(nlohmann::json::parse(GpuViewToJson(g).dump()));
  ASSERT_TRUE(gback.ok()) << gback.status().ToString();
  EXPECT_TRUE(gback->anchored);
  ASSERT_EQ(gback->instances.size(), 2u);
  EXPECT_TRUE(gback->instances[0].anchors);
  EXPECT_FALSE(gback->instances[1].anchors);
}

TEST(JobRequestJsonTest, RoundTrips) {
  JobRequest a;
  a.gpu_fraction = 0.25;
  a.count = 3;
  a.command = {"sh", "-c", "echo \"hi\""};
  a.env = {{"X", "y z"}};
  a.cwd = "/tmp";
  a.migratable = Migratable::kCheckpoint;
  a.latency_sensitive = true;
  a.priority = 7;
  a.name = "n";
  a.time_limit_s = 90.5;
  auto b = ParseJobRequest(JobRequestToJson(a).dump());
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->profile, a.profile);
  EXPECT_EQ(b->gpu_fraction, a.gpu_fraction);
  EXPECT_EQ(b->count, a.count);
  EXPECT_EQ(b->command, a.command);
  EXPECT_EQ(b->env, a.env);
  EXPECT_EQ(b->cwd, a.cwd);
  EXPECT_EQ(b->migratable, a.migratable);
  EXPECT_EQ(b->latency_sensitive, a.latency_sensitive);
  EXPECT_EQ(b->priority, a.priority);
  EXPECT_EQ(b->name, a.name);
  EXPECT_EQ(b->time_limit_s, a.time_limit_s);
}

TEST(JobRecordJsonTest, FieldsAndNulls) {
  DaemonJobRecord r;
  r.id = 12;
  r.request.profile = "3g.20gb";
  r.request.command = {"sleep", "1"};
  r.state = JobState::kRunning;
  r.submitted_at = 100.5;
  r.started_at = 101;
  r.instances.push_back(JobInstance{{1, "3g.20gb", 4}, 4, "MIG-x", 2, 0});
  r.pid = 4242;
  const ojson j = JobRecordToJson(r);
  EXPECT_EQ(j["id"], 12);
  EXPECT_EQ(j["state"], "running");
  EXPECT_EQ(j["request"]["profile"], "3g.20gb");
  EXPECT_EQ(j["submitted_at"], 100.5);
  EXPECT_EQ(j["started_at"], 101.0);
  EXPECT_TRUE(j["ended_at"].is_null());  // 0 = not yet
  EXPECT_TRUE(j["exit_code"].is_null());
  EXPECT_EQ(j["pid"], 4242);
  EXPECT_EQ(j["instances"].dump(),
            R"([{"gpu":1,"profile":"3g.20gb","start":4,"size":4,"mig_uuid":"MIG-x"}])");
  r.state = JobState::kFailed;
  r.exit_code = 137;
  r.pid = 0;
  r.reason = "killed by signal 9";
  const ojson f = JobRecordToJson(r);
  EXPECT_EQ(f["state"], "failed");
  EXPECT_EQ(f["exit_code"], 137);
  EXPECT_TRUE(f["pid"].is_null());
  EXPECT_EQ(f["reason"], "killed by signal 9");
}

TEST(GpuViewJsonTest, InstancesLoadAndPcie) {
  GpuView g;
  g.index = 0;
  g.uuid = "GPU-1";
  g.model = "A100 40GB";
  g.placement_units = 8;
  g.utilisation = 3.0 / 7;
  g.frag_cost = 0.5;
  g.lazy = false;
  InstanceView busy;
  busy.profile = "3g.20gb";
  busy.size = 4;
  busy.mig_uuid = "MIG-a";
  busy.busy = true;
  busy.holder = HolderKind::kJob;
  busy.job = 5;
  InstanceView idle;
  idle.profile = "1g.5gb";
  idle.start = 6;
  idle.size = 1;
  idle.mig_uuid = "MIG-b";
  InstanceView held = busy;
  held.start = 4;
  held.holder = HolderKind::kReservation;
  held.job = 0;
  held.owner = "slurm:7";
  held.expires_at = 1796000060;
  g.instances = {busy, held, idle};
  const ojson j = GpuViewToJson(g);
  EXPECT_EQ(j["load"], "busy");
  EXPECT_TRUE(j["pcie"].is_null());
  EXPECT_EQ(j["instances"][0]["job"], 5);
  EXPECT_EQ(j["instances"][0]["busy"], true);
  EXPECT_EQ(j["instances"][0]["holder"], "job");
  EXPECT_TRUE(j["instances"][0]["owner"].is_null());
  EXPECT_EQ(j["instances"][1]["holder"], "reservation");
  EXPECT_EQ(j["instances"][1]["owner"], "slurm:7");
  EXPECT_EQ(j["instances"][1]["expires_at"], 1796000060.0);
  EXPECT_TRUE(j["instances"][1]["job"].is_null());
  EXPECT_TRUE(j["instances"][2]["job"].is_null());
  EXPECT_TRUE(j["instances"][2]["holder"].is_null());
  EXPECT_EQ(j["anchored"], false);
  g.lazy = true;
  g.anchored = true;
  g.pcie = PcieThroughput{1000, 2};
  const ojson k = GpuViewToJson(g);
  EXPECT_EQ(k["load"], "lazy");
  EXPECT_EQ(k["anchored"], true);
  // KB/s × 1024 = bytes/s: 1000 KB/s → 1,024,000 B/s; 2 KB/s → 2048 B/s.
  EXPECT_EQ(k["pcie"]["tx_bytes_per_second"], 1024000.0);
  EXPECT_EQ(k["pcie"]["rx_bytes_per_second"], 2048.0);
}

TEST(ErrorJsonTest, BodyAndStatusCodes) {
  EXPECT_EQ(
      ErrorBody(InvalidArgumentError("field 'x' must be a string, got number")),
      R"({"error":{"code":"INVALID_ARGUMENT","message":"field 'x' must be a string, got number"}})");
  struct Case {
    StatusCode code;
    int http;
  } cases[] = {
      {StatusCode::kInvalidArgument, 400}, {StatusCode::kUnauthenticated, 401},
      {StatusCode::kNotFound, 404},        {StatusCode::kFailedPrecondition, 409},
      {StatusCode::kAlreadyExists, 409},   {StatusCode::kResourceExhausted, 429},
      {StatusCode::kUnavailable, 503},     {StatusCode::kInternal, 500},
  };
  for (const Case& k : cases) EXPECT_EQ(HttpStatusFor(k.code), k.http) << StatusCodeName(k.code);
}

}  // namespace
}  // namespace migsched
