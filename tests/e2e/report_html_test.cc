// The HTML report end to end: `migsched simulate/compare --report` and
// `migsched report`, and the page rendered in headless Chromium (Debian's
// `chromium`, installed by scripts/test.sh through MIGSCHED_WITH_BROWSER=1).
// The page writes data-render-status ("ok" / "error") and data-charts-drawn
// on <html> after drawing (src/report/assets/report.js); the tests read them
// from the DOM that Chromium dumps. Without Chromium the rendering tests are
// skipped with a message, never passed.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::ReadFile;

namespace fs = std::filesystem;
using ::migsched::testing::RunMigsched;
using ::migsched::testing::WriteTempFile;
using ::testing::HasSubstr;
using ::testing::Not;

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

// $MIGSCHED_CHROMIUM, else chromium / chromium-browser on the PATH; "" if none.
std::string FindChromium() {
  if (const char* env = std::getenv("MIGSCHED_CHROMIUM"); env != nullptr && *env != '\0') {
    return env;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    for (const char* name : {"chromium", "chromium-browser"}) {
      const fs::path p = fs::path(dir) / name;
      if (access(p.c_str(), X_OK) == 0) return p.string();
    }
  }
  return "";
}

struct Rendered {
  int exit_code = -1;
  std::string dom;     // what --dump-dom printed
  std::string stderr;  // Chromium's own log (noisy; shown on failure)
};

// Loads `html` in headless Chromium (at most 120 s) and returns the DOM after
// the page's scripts ran.
Rendered Render(const std::string& chromium, const std::string& html) {
  const fs::path dir = fs::path(html).parent_path();
  const std::string out = (dir / "dom.html").string(), err = (dir / "chromium.log").string();
  const std::string profile = (dir / "chromium-profile").string();
  fs::create_directories(profile);
  std::vector<std::string> args = {"timeout",
                                   "120",
                                   chromium,
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--no-first-run",
                                   "--user-data-dir=" + profile,
                                   "--dump-dom",
                                   "file://" + fs::absolute(html).string()};
  Rendered r;
  const pid_t pid = fork();
  if (pid == 0) {
    const int in = open("/dev/null", O_RDONLY);
    const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(in, 0);
    dup2(o, 1);
    dup2(e, 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.dom = ReadFile(out);
  r.stderr = ReadFile(err);
  return r;
}

// The value of attribute `name` on <html> in a dumped DOM; "" if absent.
// (Plain string search: GCC 12 warns inside <regex> under the sanitizers.)
std::string HtmlAttribute(const std::string& dom, const std::string& name) {
  const size_t open = dom.find("<html");
  if (open == std::string::npos) return "";
  const std::string tag = dom.substr(open, dom.find('>', open) - open);
  const std::string key = " " + name + "=\"";
  const size_t at = tag.find(key);
  if (at == std::string::npos) return "";
  const size_t begin = at + key.size();
  return tag.substr(begin, tag.find('"', begin) - begin);
}

// The text of #render-errors (the page's error list).
std::string RenderErrors(const std::string& dom) {
  const size_t open = dom.find("<pre id=\"render-errors\"");
  if (open == std::string::npos) return "";
  const size_t begin = dom.find('>', open) + 1;
  return dom.substr(begin, dom.find("</pre>", begin) - begin);
}

#define SKIP_WITHOUT_CHROMIUM(chromium)                                                        \
  if ((chromium).empty()) {                                                                    \
    GTEST_SKIP() << "chromium is not installed, so the report was NOT rendered: install it "   \
                    "(apt-get install chromium, or MIGSCHED_WITH_BROWSER=1 scripts/setup.sh) " \
                    "or point MIGSCHED_CHROMIUM at a Chromium binary";                         \
  }

// Two A100 40GB GPUs; every job fits, so all complete.
const char kTrace[] =
    "id,arrival_s,profile,duration_s\n"
    "a,0,4g.20gb,100\n"
    "b,0,3g.20gb,60\n"
    "c,10,2g.10gb,50\n"
    "d,20,7g.40gb,30\n"
    "e,25,1g.5gb,40\n";

TEST(ReportHtmlTest, CompareReportDrawsEveryChartInChromium) {
  const std::string chromium = FindChromium();
  SKIP_WITHOUT_CHROMIUM(chromium);
  const std::string trace = WriteTempFile("trace.csv", kTrace);
  const std::string html = WriteTempFile("compare.html", "");
  auto r =
      RunMigsched({"compare", "--cluster", "2xA100-40GB", "--workload", trace, "--policies",
                   "frag-aware,first-fit", "--report", html, "--snapshot-at", "5,30", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Charts: fragmentation, utilisation and queue over time (3) + the JCT
  // distribution (1) + per policy one slot map per --snapshot-at instant (2)
  // and one at its fragmentation peak (1): 3 + 1 + 2 * 3 = 10.
  const std::string page = ReadFile(html);
  EXPECT_THAT(page, HasSubstr("data-charts-expected=\"10\""));
  const Rendered dom = Render(chromium, html);
  ASSERT_EQ(dom.exit_code, 0) << dom.stderr;
  EXPECT_EQ(HtmlAttribute(dom.dom, "data-render-status"), "ok") << RenderErrors(dom.dom);
  EXPECT_EQ(HtmlAttribute(dom.dom, "data-charts-drawn"), "10");
  EXPECT_EQ(Count(dom.dom, "<canvas"), 10u);
  EXPECT_EQ(RenderErrors(dom.dom), "");
  // Once every chart drew the page says nothing about drawing (no debug text).
  EXPECT_THAT(
      dom.dom,
      HasSubstr(
          "<p id=\"render-status\" class=\"status\" data-charts-expected=\"10\" hidden=\"\">"));
  EXPECT_THAT(dom.dom, Not(HasSubstr("charts drawn")));
  // The tables are there too: both policies' columns.
  EXPECT_THAT(dom.dom, HasSubstr("<th>frag-aware</th><th>first-fit</th>"));
}

TEST(ReportHtmlTest, ABrokenChartIsReportedNotHidden) {
  // The check above can fail: a chart of an unknown kind makes the page say
  // "error" and name it.
  const std::string chromium = FindChromium();
  SKIP_WITHOUT_CHROMIUM(chromium);
  const std::string trace = WriteTempFile("trace.csv", kTrace);
  const std::string html = WriteTempFile("simulate.html", "");
  auto r = RunMigsched(
      {"simulate", "--cluster", "2xA100-40GB", "--workload", trace, "--report", html, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string page = ReadFile(html);
  const std::string cdf = "\"kind\":\"cdf\"";
  ASSERT_NE(page.find(cdf), std::string::npos);
  page.replace(page.find(cdf), cdf.size(), "\"kind\":\"bogus\"");
  const std::string broken = WriteTempFile("broken.html", page);
  const Rendered dom = Render(chromium, broken);
  ASSERT_EQ(dom.exit_code, 0) << dom.stderr;
  EXPECT_EQ(HtmlAttribute(dom.dom, "data-render-status"), "error");
  EXPECT_THAT(RenderErrors(dom.dom), HasSubstr("unknown chart kind bogus"));
}

TEST(ReportHtmlTest, SweepReRenderedFromSavedJson) {
  const std::string chromium = FindChromium();
  SKIP_WITHOUT_CHROMIUM(chromium);
  // A saved `sweep --json` (its format: param, policy, results with a value
  // and the metrics): makespan_s and utilization get a chart each; jobs_total
  // (no better direction) does not: 2 charts.
  const std::string json = WriteTempFile("sweep.json", R"({
    "policy": "lb+frag", "param": "threshold", "values": [0.2, 0.4, 0.6],
    "results": [
      {"value": 0.2, "mode": "online", "makespan_s": 3600, "utilization": 0.7, "jobs_total": 5},
      {"value": 0.4, "mode": "online", "makespan_s": 3000, "utilization": 0.8, "jobs_total": 5},
      {"value": 0.6, "mode": "online", "makespan_s": 3300, "utilization": 0.75, "jobs_total": 5}
    ]})");
  const std::string html = WriteTempFile("sweep.html", "");
  auto r = RunMigsched({"report", "--from", json, "-o", html});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(0 runs, 2 charts)"));
  const Rendered dom = Render(chromium, html);
  ASSERT_EQ(dom.exit_code, 0) << dom.stderr;
  EXPECT_EQ(HtmlAttribute(dom.dom, "data-render-status"), "ok") << RenderErrors(dom.dom);
  EXPECT_EQ(HtmlAttribute(dom.dom, "data-charts-drawn"), "2");
  EXPECT_EQ(Count(dom.dom, "<canvas"), 2u);
  // The sweep table: makespan 1 h = 60.0 min, 3000 s = 50.0 min, 3300 s = 55.0 min.
  EXPECT_THAT(dom.dom, HasSubstr("<td>60.0 min</td><td>50.0 min</td><td>55.0 min</td>"));
}

// The rest needs no browser.

TEST(ReportCliTest, SimulateReportHasTheTablesAndTheData) {
  const std::string trace = WriteTempFile("trace.csv", kTrace);
  const std::string html = WriteTempFile("simulate.html", "");
  auto r = RunMigsched({"simulate", "--cluster", "2xA100-40GB", "--workload", trace, "--policy",
                        "first-fit", "--report", html, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = ReadFile(html);
  // One run: 3 over time + 1 JCT distribution + slot maps at the 3 default
  // instants (25/50/75% of the arrival span 0..25 s) and the peak: 8 charts.
  EXPECT_THAT(page, HasSubstr("data-charts-expected=\"8\""));
  EXPECT_THAT(page,
              HasSubstr("<tr data-metric=\"jobs_completed\"><th>jobs completed</th><td>5</td>"));
  // The embedded data: snapshot times 6.25, 12.5, 18.75 s.
  const size_t begin = page.find("<script type=\"application/json\" id=\"report-data\">");
  ASSERT_NE(begin, std::string::npos);
  const size_t start = page.find('\n', begin) + 1;
  const nlohmann::json data =
      nlohmann::json::parse(page.substr(start, page.find("</script>", start) - start));
  ASSERT_EQ(data["runs"][0]["snapshots"].size(), 4u);
  EXPECT_EQ(data["runs"][0]["snapshots"][0]["time_s"], 6.25);
  EXPECT_EQ(data["runs"][0]["snapshots"][1]["time_s"], 12.5);
  EXPECT_EQ(data["runs"][0]["snapshots"][2]["time_s"], 18.75);
  EXPECT_EQ(data["runs"][0]["snapshots"][3]["peak_fragmentation"], true);
  EXPECT_EQ(data["runs"][0]["jct_cdf"]["jobs"], 5);
}

TEST(ReportCliTest, ReportCommandSimulatesLikeCompare) {
  const std::string trace = WriteTempFile("trace.csv", kTrace);
  const std::string html = WriteTempFile("report.html", "");
  auto r = RunMigsched({"report", "--cluster", "2xA100-40GB", "--workload", trace, "--policies",
                        "frag-aware,best-fit", "--snapshot-at", "5", "-o", html, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 3 + 1 + 2 policies * (1 instant + the peak) = 8.
  EXPECT_THAT(r.out, HasSubstr("(2 runs, 8 charts)"));
  EXPECT_THAT(ReadFile(html), HasSubstr("<th>frag-aware</th><th>best-fit</th>"));
}

TEST(ReportCliTest, ReportFromCompareJson) {
  const std::string trace = WriteTempFile("trace.csv", kTrace);
  const std::string json = WriteTempFile("compare.json", "");
  auto c = RunMigsched({"compare", "--cluster", "2xA100-40GB", "--workload", trace, "--policies",
                        "frag-aware,first-fit", "--json", json, "--quiet"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const std::string html = WriteTempFile("from.html", "");
  auto r = RunMigsched({"report", "--from", json, "-o", html});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Metrics only: the tables, no charts.
  EXPECT_THAT(r.out, HasSubstr("(2 runs, 0 charts)"));
  const std::string page = ReadFile(html);
  EXPECT_THAT(page, HasSubstr("<th>frag-aware</th><th>first-fit</th>"));
  EXPECT_THAT(page,
              HasSubstr("<tr data-metric=\"jobs_completed\"><th>jobs completed</th><td>5</td>"));
}

TEST(ReportCliTest, SweepReportHasTheSweepTable) {
  const std::string trace = WriteTempFile("trace.csv", kTrace);
  const std::string html = WriteTempFile("sweep.html", "");
  auto r = RunMigsched({"sweep", "--cluster", "2xA100-40GB", "--workload", trace, "--param",
                        "threshold=0.2,0.4", "--report", html, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = ReadFile(html);
  EXPECT_THAT(page, HasSubstr("<th>threshold</th><th>0.2</th><th>0.4</th>"));
  EXPECT_THAT(page, HasSubstr("<tr data-metric=\"jobs_completed\"><th>jobs completed</th>"
                              "<td>5</td><td>5</td></tr>"));
  EXPECT_THAT(page, HasSubstr("\"kind\":\"sweep\""));
}

TEST(ReportCliTest, ReportCommandErrors) {
  const std::string html = WriteTempFile("x.html", "");
  auto none = RunMigsched({"report", "-o", html});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("migsched report: give --cluster and --workload to simulate, or "
                                  "--from FILE.json to re-render saved outputs"));
  const std::string json = WriteTempFile("m.json", R"({"mode": "online", "makespan_s": 1})");
  auto both = RunMigsched({"report", "--from", json, "--cluster", "1xA100-40GB", "-o", html});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.err, HasSubstr("--from re-renders saved outputs; it cannot be combined with "
                                  "--cluster/--workload"));
  const std::string bad = WriteTempFile("bad.json", "{\"x\": 1}");
  auto unknown = RunMigsched({"report", "--from", bad, "-o", html});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr(bad + ": not an output of simulate --json, compare --json or "
                                           "sweep --json"));
  const std::string junk = WriteTempFile("junk.json", "{not json");
  auto invalid = RunMigsched({"report", "--from", junk, "-o", html});
  EXPECT_EQ(invalid.exit_code, 1);
  EXPECT_THAT(invalid.err, HasSubstr(junk + ": not valid JSON"));
  // A folder where the page should go, and a path under a plain file: refused
  // before any work, with the reason.
  const std::string folder = ::migsched::testing::MakeTempDir("report-out").string();
  auto is_folder = RunMigsched({"report", "--from", json, "-o", folder});
  EXPECT_EQ(is_folder.exit_code, 1);
  EXPECT_THAT(is_folder.err,
              HasSubstr("migsched report: -o " + folder + ": is a folder, not a file"));
  auto unwritable = RunMigsched({"report", "--from", json, "-o", html + "/r.html"});
  EXPECT_EQ(unwritable.exit_code, 1);
  EXPECT_THAT(unwritable.err, HasSubstr("migsched report: -o " + html + "/r.html: " + html +
                                        " is a file, not a folder"));
}

TEST(ReportCliTest, SnapshotAtMustBeNonNegative) {
  const std::string trace = WriteTempFile("trace.csv", kTrace);
  auto r = RunMigsched({"simulate", "--cluster", "1xA100-40GB", "--workload", trace, "--report",
                        WriteTempFile("x.html", ""), "--snapshot-at", "-5", "--quiet"});
  EXPECT_NE(r.exit_code, 0) << r.err;  // CLI11's code for a value its check refuses
  EXPECT_THAT(r.err, HasSubstr("--snapshot-at: times are seconds >= 0, got '-5'"));
}

}  // namespace
}  // namespace migsched
