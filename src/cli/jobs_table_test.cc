#include "cli/jobs_table.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace migsched::cli {
namespace {

constexpr double kNow = 1'800'000'000;

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Splits on runs of spaces (the columns below hold no spaces).
std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

DaemonJobRecord Job(DaemonJobId id, JobState state, double submitted, double started,
                    double ended) {
  DaemonJobRecord r;
  r.id = id;
  r.state = state;
  r.submitted_at = submitted;
  r.started_at = started;
  r.ended_at = ended;
  r.request.profile = "2g.10gb";
  r.request.command = {"train.sh"};
  return r;
}

TEST(JobsTableTest, ElapsedIsRunTimeOnceStartedElseTheWait) {
  // Queued since 45 s ago: waited 45 s.
  EXPECT_EQ(JobElapsedSeconds(Job(1, JobState::kQueued, kNow - 45, 0, 0), kNow), 45);
  // Submitted 100 s ago, started 60 s ago: ran 60 s.
  EXPECT_EQ(JobElapsedSeconds(Job(2, JobState::kRunning, kNow - 100, kNow - 60, 0), kNow), 60);
  // Started at -60, ended at -10: ran 50 s, whatever now is.
  EXPECT_EQ(JobElapsedSeconds(Job(3, JobState::kTimeout, kNow - 100, kNow - 60, kNow - 10), kNow),
            50);
  // Cancelled while queued: waited from -30 to -20.
  EXPECT_EQ(JobElapsedSeconds(Job(4, JobState::kCancelled, kNow - 30, 0, kNow - 20), kNow), 10);
}

TEST(JobsTableTest, RowsShowStateTimeLimitAndPlacementOrReason) {
  DaemonJobRecord running = Job(1, JobState::kRunning, kNow - 4000, kNow - 3723, 0);
  running.request.name = "train";
  running.request.user = "alice";
  running.request.time_limit_s = 2 * 3600;
  running.instances = {JobInstance{{0, "2g.10gb", 4}, 2, "MIG-x", 1, 0}};
  DaemonJobRecord queued = Job(2, JobState::kQueued, kNow - 75, 0, 0);
  queued.request.count = 2;
  DaemonJobRecord waiting = Job(3, JobState::kQueued, kNow - 5, 0, 0);
  waiting.reason = "waiting:GPU_1";  // no spaces: one cell for the test's split
  DaemonJobRecord ok = Job(4, JobState::kSucceeded, kNow - 50, kNow - 40, kNow - 30);
  ok.exit_code = 0;
  DaemonJobRecord timeout = Job(5, JobState::kTimeout, kNow - 200, kNow - 190, kNow - 9);
  timeout.exit_code = 143;
  timeout.reason = "limit_3:00";
  timeout.request.time_limit_s = 180;
  const std::vector<std::string> lines =
      Lines(FormatJobsTable({running, queued, waiting, ok, timeout}, kNow));
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(Cells(lines[0]),
            (std::vector<std::string>{"ID", "NAME", "USER", "STATE", "TIME", "LIMIT", "REQUEST",
                                      "PLACEMENT(REASON)", "COMMAND"}));
  // 3723 s = 1 h 2 min 3 s; the limit 7200 s = 2:00:00; GPU 0, start 4, size 2.
  EXPECT_EQ(Cells(lines[1]), (std::vector<std::string>{"1", "train", "alice", "running", "1:02:03",
                                                       "2:00:00", "2g.10gb", "0:4+2", "train.sh"}));
  // Waited 75 s = 1:15; a gang of two; no reason of the daemon's: Resources.
  EXPECT_EQ(Cells(lines[2]), (std::vector<std::string>{"2", "-", "-", "queued", "1:15", "-",
                                                       "2x2g.10gb", "(Resources)", "train.sh"}));
  EXPECT_EQ(Cells(lines[3])[7], "(waiting:GPU_1)");
  // Ran from -40 to -30: 0:10, ended with exit 0 and no reason.
  EXPECT_EQ(Cells(lines[4]), (std::vector<std::string>{"4", "-", "-", "succeeded", "0:10", "-",
                                                       "2g.10gb", "exit", "0", "train.sh"}));
  // Ran from -190 to -9: 181 s = 3:01, past its 3:00 limit by the kill grace.
  EXPECT_EQ(Cells(lines[5]), (std::vector<std::string>{"5", "-", "-", "timeout", "3:01", "3:00",
                                                       "2g.10gb", "(limit_3:00)", "train.sh"}));
}

// Regression: the daemon keeps a job's instances in its record after it ends (GET /v1/jobs shows
// where it ran), and the table showed them instead of why the job ended, so `migsched jobs`
// never showed "exited with code 3" or "exit 0". Ended jobs show their reason or exit code;
// a running job and a job moving between instances show where they run.
TEST(JobsTableTest, AnEndedJobShowsWhyItEndedNotWhereItRan) {
  const JobInstance where{{0, "2g.10gb", 4}, 2, "MIG-x", 1, 0};
  DaemonJobRecord failed = Job(1, JobState::kFailed, kNow - 50, kNow - 40, kNow - 30);
  failed.exit_code = 3;
  failed.reason = "exited_with_code_3";
  failed.instances = {where};
  DaemonJobRecord ok = Job(2, JobState::kSucceeded, kNow - 50, kNow - 40, kNow - 30);
  ok.exit_code = 0;
  ok.instances = {where};
  DaemonJobRecord moving = Job(3, JobState::kMigrating, kNow - 50, kNow - 40, 0);
  moving.instances = {where};
  const std::vector<std::string> lines = Lines(FormatJobsTable({failed, ok, moving}, kNow));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(Cells(lines[1])[7], "(exited_with_code_3)");
  EXPECT_EQ(Cells(lines[2])[7], "exit");
  EXPECT_EQ(Cells(lines[2])[8], "0");
  EXPECT_EQ(Cells(lines[3])[7], "0:4+2");
}

// Long cells are cut to their column with "...": the 24 characters of PLACEMENT(REASON).
TEST(JobsTableTest, LongReasonsAreCutToTheirColumn) {
  DaemonJobRecord r = Job(1, JobState::kFailed, kNow - 5, 0, kNow - 1);
  r.reason = "could_not_create_its_instances_(3_tries)";
  const std::vector<std::string> lines = Lines(FormatJobsTable({r}, kNow));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(Cells(lines[1])[7], "(could_not_create_its...");
}

// Regression: a name or command holding a newline printed a line of its own, which could pass
// for another job's row ("evil\nID 999 fake"), and a long UTF-8 name was cut inside a character.
// Control characters are now shown escaped, invalid UTF-8 as '?', and a cut keeps whole
// characters.
TEST(JobsTableTest, ControlCharactersAreEscapedAndCutsKeepWholeCharacters) {
  DaemonJobRecord r = Job(1, JobState::kQueued, kNow - 5, 0, 0);
  r.request.name = "ev\nil";
  r.request.command = {"sh", "-c", "a\tb\x1b[2Jc"};
  const std::vector<std::string> lines = Lines(FormatJobsTable({r}, kNow));
  ASSERT_EQ(lines.size(), 2u);  // a header and one row: no line of the job's own
  EXPECT_EQ(Cells(lines[1])[1], "ev\\nil");
  EXPECT_NE(lines[1].find("sh -c a\\tb\\x1b[2Jc"), std::string::npos) << lines[1];
  // Ten characters fit the NAME column: "ünïcødé名前xy" (11 characters, 19 bytes) is cut after
  // its 7th character, "ünïcødé", then "..." (7 + 3 = 10).
  r.request.name = "\u00fcn\u00efc\u00f8d\u00e9\u540d\u524dxy";
  r.request.command = {"\xff\xfe", "\xc2\x9b"};  // invalid UTF-8; U+009B, a C1 CSI
  const std::vector<std::string> utf8 = Lines(FormatJobsTable({r}, kNow));
  ASSERT_EQ(utf8.size(), 2u);
  EXPECT_EQ(Cells(utf8[1])[1], "\u00fcn\u00efc\u00f8d\u00e9...");
  EXPECT_EQ(Cells(utf8[1])[8], "??");
  EXPECT_EQ(Cells(utf8[1])[9], "\\u009b");
  // Regression bidi_override_in_jobs_table: U+202E (right-to-left override) was printed as is and
  // turned the rest of the row around on a terminal; it is escaped, as U+2066 (an isolate) is.
  r.request.name = "a\u202eb\u2066c";
  const std::vector<std::string> bidi = Lines(FormatJobsTable({r}, kNow));
  ASSERT_EQ(bidi.size(), 2u);
  // (15 columns escaped: NAME's 10 keep "a", the first escape and "...", test below.)
  EXPECT_EQ(Cells(bidi[1])[1], "a\\u202e...");
  r.request.command = {"a\u202eb\u2066c"};
  EXPECT_EQ(Cells(Lines(FormatJobsTable({r}, kNow))[1])[8], "a\\u202eb\\u2066c");
}

// Regression escaped_name_shifts_jobs_columns: fmt padded NAME by code points, so "a\x1bb" (one
// escape, 4 columns: "a\\x1bb" is 6 columns wide) took 6 columns where 3 were counted and every
// later column of the row moved 3 to the right of its header. By hand: ID "1" in 6 columns and a
// space (7), NAME in 10 columns and a space (18): USER starts at column 18 as in the header.
TEST(JobsTableTest, EscapedAndWideNamesKeepTheColumnsUnderTheirHeaders) {
  DaemonJobRecord r = Job(1, JobState::kQueued, kNow - 5, 0, 0);
  r.request.user = "alice";
  r.request.name =
      "a\x1b"
      "b";
  const std::vector<std::string> lines = Lines(FormatJobsTable({r}, kNow));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].find("USER"), 18u) << lines[0];
  EXPECT_EQ(lines[1].find("alice"), 18u) << lines[1];
  EXPECT_EQ(lines[1].substr(0, 23), "1      a\\x1bb     alice") << lines[1];
  EXPECT_EQ(lines[1].find("queued"), lines[0].find("STATE")) << lines[1];
  // Two wide characters (2 columns each, 3 bytes each): "名前" then 6 spaces fill NAME's 10.
  r.request.name = "\u540d\u524d";
  const std::vector<std::string> wide = Lines(FormatJobsTable({r}, kNow));
  EXPECT_EQ(wide[1].substr(0, 7 + 6 + 6 + 1 + 5), "1      \u540d\u524d       alice") << wide[1];
  // An escape is never cut in half: eight escapes (32 columns) keep one (4 columns) and "..."
  // (7 of NAME's 10 columns; the next escape would need 8 > 7), then 3 spaces.
  r.request.name = std::string(8, '\x01');
  const std::vector<std::string> cut = Lines(FormatJobsTable({r}, kNow));
  EXPECT_EQ(cut[1].substr(0, 23), "1      \\x01...    alice") << cut[1];
}

// Regression (trial_jobs_limit_column_overflow): a limit of 11574-01:46:40 (1e9 s, 14 columns)
// in LIMIT's 10 pushed REQUEST and the rest of its row to the right of their headers. TIME and
// LIMIT are as wide as their longest value: every row's columns start under their headers.
TEST(JobsTableTest, ALongLimitWidensItsColumnForEveryRow) {
  DaemonJobRecord long_limit = Job(1, JobState::kQueued, kNow - 5, 0, 0);
  long_limit.request.time_limit_s = 1e9;  // 11574 days 1:46:40
  DaemonJobRecord short_limit = Job(2, JobState::kQueued, kNow - 5, 0, 0);
  short_limit.request.time_limit_s = 60;
  const std::vector<std::string> lines = Lines(FormatJobsTable({long_limit, short_limit}, kNow));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(Cells(lines[1])[5], "11574-01:46:40");
  const size_t request = lines[0].find("REQUEST");
  for (size_t i = 1; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].find("2g.10gb"), request) << lines[i];
    // LIMIT is right-aligned: each limit ends where the header's LIMIT ends.
    const std::string limit = Cells(lines[i])[5];
    EXPECT_EQ(lines[i].find(limit) + limit.size(), lines[0].find("LIMIT") + 5) << lines[i];
  }
}

TEST(JobsTableTest, AllocationsShowTheirOwnerAndProfiles) {
  DaemonJobRecord a;
  a.id = 7;
  a.kind = JobKind::kAllocation;
  a.state = JobState::kRunning;
  a.submitted_at = kNow - 10;
  a.started_at = kNow - 9;
  a.allocation.owner = "slurm:1234";
  a.allocation.instances = {{1, "3g.20gb", 4}};
  a.instances = {JobInstance{{1, "3g.20gb", 4}, 4, "MIG-y", 2, 0}};
  const std::vector<std::string> lines = Lines(FormatJobsTable({a}, kNow));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(Cells(lines[1]),
            (std::vector<std::string>{"7", "-", "-", "running", "0:09", "-", "3g.20gb", "1:4+4",
                                      "allocation", "of", "slurm:1234"}));
}

}  // namespace
}  // namespace migsched::cli
