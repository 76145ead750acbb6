#include "cli/output_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "testing/test_util.h"

namespace migsched::cli {
namespace {

namespace fs = std::filesystem;
using ::migsched::testing::MakeTempDir;
using ::migsched::testing::ReadFile;
using ::migsched::testing::WriteTempFile;

Status WriteHello(std::ostream& o) {
  o << "hello\n";
  return Status();
}

TEST(OutputFilesTest, CheckCreatesMissingFoldersAndLeavesNoFileBehind) {
  const fs::path dir = MakeTempDir("out");
  const fs::path path = dir / "a" / "b" / "run.json";
  ASSERT_TRUE(CheckOutputFiles({{"--json", path.string()}, {"--report", ""}}).ok());
  EXPECT_TRUE(fs::is_directory(dir / "a" / "b"));
  EXPECT_FALSE(fs::exists(path)) << "the check removes a file it had to create";
  // An existing file is kept as it is (not truncated by the check).
  const std::string existing = WriteTempFile("keep.json", "old");
  ASSERT_TRUE(CheckOutputFiles({{"--json", existing}}).ok());
  EXPECT_EQ(ReadFile(existing), "old");
}

TEST(OutputFilesTest, CheckRefusesWithTheFlagPathAndReason) {
  const std::string folder = MakeTempDir("folder").string();
  const std::string file = WriteTempFile("plain", "");
  struct Case {
    std::vector<OutputFile> outputs;
    std::string error;
  } cases[] = {
      {{{"--json", folder}}, "--json " + folder + ": is a folder, not a file"},
      {{{"-o", file + "/r.html"}}, "-o " + file + "/r.html: " + file + " is a file, not a folder"},
      {{{"--report", file + "/x/r.html"}},
       "--report " + file + "/x/r.html: cannot create the folder " + file + "/x: Not a directory"},
      {{{"--json", folder + "/a.json"}, {"--jobs-csv", folder + "/./a.json"}},
       "--jobs-csv " + folder + "/./a.json: --json writes the same file"},
  };
  for (const Case& c : cases) {
    Status st = CheckOutputFiles(c.outputs);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.error;
    EXPECT_EQ(st.message(), c.error);
  }
}

// Regression (relative_outputs_overwrote_each_other): `--json q.json --jobs-csv ../dir/q.json`
// (or `--json ./z.json --report z.json`) in dir wrote both outputs to one file, the later over
// the earlier: a relative path none of whose parts existed was compared unresolved.
TEST(OutputFilesTest, RelativeSpellingsOfOneNewFileAreOneFile) {
  const fs::path dir = MakeTempDir("relative");
  fs::create_directory(dir / "sub");
  const fs::path before = fs::current_path();
  fs::current_path(dir / "sub");
  const Status up = CheckOutputFiles({{"--json", "q.json"}, {"--jobs-csv", "../sub/q.json"}});
  const Status dot = CheckOutputFiles({{"--json", "./z.json"}, {"--report", "z.json"}});
  const Status apart = CheckOutputFiles({{"--json", "z.json"}, {"--report", "../z.json"}});
  fs::current_path(before);
  EXPECT_EQ(up.message(), "--jobs-csv ../sub/q.json: --json writes the same file");
  EXPECT_EQ(dot.message(), "--report z.json: --json writes the same file");
  EXPECT_TRUE(apart.ok()) << apart.ToString();
}

// Regression: `simulate --workload t.csv --export-workload t.csv` (or --json, --timeline-csv,
// `report -o` over a --from file) overwrote the user's input without a word. An output may not
// name an input: by the same path written another way, or through a symbolic link.
TEST(OutputFilesTest, AnOutputMayNotOverwriteAnInput) {
  const fs::path dir = MakeTempDir("inputs");
  const std::string trace = (dir / "t.csv").string();
  { std::ofstream(trace) << "id,arrival_s,profile,duration_s\n"; }
  const std::string link = (dir / "link.csv").string();
  fs::create_symlink(trace, link);
  const std::vector<InputFile> inputs = {{"--workload", trace}, {"--catalog", ""}};
  struct Case {
    OutputFile output;
    std::string error;
  } cases[] = {
      {{"--export-workload", trace},
       "--export-workload " + trace + ": --workload reads that file; an output would overwrite it"},
      {{"--json", (dir / "." / "t.csv").string()},
       "--json " + (dir / "." / "t.csv").string() +
           ": --workload reads that file; an output would overwrite it"},
      {{"--timeline-csv", link},
       "--timeline-csv " + link + ": --workload reads that file; an output would overwrite it"},
  };
  for (const Case& c : cases) {
    Status st = CheckOutputFiles({c.output}, inputs);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.error;
    EXPECT_EQ(st.message(), c.error);
  }
  EXPECT_EQ(ReadFile(trace), "id,arrival_s,profile,duration_s\n");  // untouched
  // Another file beside it is fine.
  EXPECT_TRUE(CheckOutputFiles({{"--json", (dir / "run.json").string()}}, inputs).ok());
}

TEST(OutputFilesTest, WriteGivesTheSystemsReason) {
  const fs::path dir = MakeTempDir("write");
  const std::string ok = (dir / "ok.txt").string();
  ASSERT_TRUE(WriteOutputFile(ok, WriteHello).ok());
  EXPECT_EQ(ReadFile(ok), "hello\n");
  const std::string file = WriteTempFile("plain-file", "");
  Status st = WriteOutputFile(file + "/r.html", WriteHello);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "cannot write " + file + "/r.html: Not a directory");
  // The writer's own error comes back as it is.
  Status mine = WriteOutputFile(ok, [](std::ostream&) { return UnavailableError("mine"); });
  EXPECT_EQ(mine.message(), "mine");
}

// Regression: a failed output (`simulate --export-workload` of a trace whose id holds a comma,
// which CSV cannot write) left a 0-byte file behind, and over an existing file it left that file
// emptied. A failed write leaves no file where there was none, and an existing one as it was;
// nothing of the temporary file it wrote remains beside it.
TEST(OutputFilesTest, AFailedWriteLeavesNoPartialFile) {
  const fs::path dir = MakeTempDir("failed");
  auto half_then_fail = [](std::ostream& o) {
    o << "id,arrival_s\n";
    return InvalidArgumentError("job 0 (id 'a,b'): the id cannot be written to CSV");
  };
  const std::string fresh = (dir / "new.csv").string();
  Status st = WriteOutputFile(fresh, half_then_fail);
  EXPECT_EQ(st.message(), "job 0 (id 'a,b'): the id cannot be written to CSV");
  EXPECT_FALSE(fs::exists(fresh));
  const std::string existing = (dir / "old.csv").string();
  { std::ofstream(existing) << "old\n"; }
  EXPECT_FALSE(WriteOutputFile(existing, half_then_fail).ok());
  EXPECT_EQ(ReadFile(existing), "old\n");
  // Only old.csv is in the folder: no temporary file left over.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++entries;
    EXPECT_EQ(e.path().filename(), "old.csv");
  }
  EXPECT_EQ(entries, 1);
  // A write that succeeds replaces the file whole.
  ASSERT_TRUE(WriteOutputFile(existing, WriteHello).ok());
  EXPECT_EQ(ReadFile(existing), "hello\n");
}

// The file behind a symbolic link is the one written (the link stays a link), and an existing
// file keeps its permissions.
TEST(OutputFilesTest, WriteKeepsALinkAndThePermissions) {
  const fs::path dir = MakeTempDir("link");
  const fs::path real = dir / "real.json";
  { std::ofstream(real) << "old"; }
  fs::permissions(real, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  const fs::path link = dir / "link.json";
  fs::create_symlink(real, link);
  ASSERT_TRUE(WriteOutputFile(link.string(), WriteHello).ok());
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(ReadFile(real), "hello\n");
  EXPECT_EQ(fs::status(real).permissions() & fs::perms::mask,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
}

}  // namespace
}  // namespace migsched::cli
