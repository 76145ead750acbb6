// The HTML report end to end: `migsched simulate/compare --report` and
// `migsched report`, and the page rendered in headless Chromium (Debian's
// `chromium`, installed by scripts/test.sh through MIGSCHED_WITH_BROWSER=1).
// The page writes data-render-status ("ok" / "error") and data-charts-drawn
// on <html> after drawing (src/report/assets/report.js); the tests read them
// from the DOM that Chromium dumps. Without Chromium the rendering tests are
// skipped with a message, never passed.
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
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

// Loads `html` in headless Chromium (at most 120 s) in a 1280 × 800 window
// and returns the DOM after the page's scripts ran.
Rendered Render(const std::string& chromium, const std::string& html) {
  const fs::path dir = fs::path(html).parent_path();
  const std::string out = (dir / "dom.html").string(), err = (dir / "chromium.log").string();
  const std::string profile = (dir / "chromium-profile").string();
  fs::create_directories(profile);
  std::vector<std::string> args = {"timeout", "120", chromium, "--headless", "--no-sandbox",
                                   "--disable-gpu", "--disable-background-networking",
                                   "--disable-component-update", "--disable-sync", "--no-first-run",
                                   // The layout of a laptop screen: the page records where
                                   // its charts landed (data-top) for this width.
                                   "--window-size=1280,800", "--user-data-dir=" + profile,
                                   "--dump-dom", "file://" + fs::absolute(html).string()};
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

// Takes a screenshot of `html` (width × height CSS pixels) into `png` with
// headless Chromium; returns its exit code.
int Screenshot(const std::string& chromium, const std::string& html, const std::string& png,
               int width, int height) {
  const fs::path dir = fs::path(png).parent_path();
  const std::string profile = (dir / "chromium-shot-profile").string();
  fs::create_directories(profile);
  const std::string cmd = fmt::format(
      "timeout 120 '{}' --headless --no-sandbox --disable-gpu --hide-scrollbars "
      "--disable-background-networking --disable-component-update --disable-sync --no-first-run "
      "--user-data-dir='{}' --window-size={},{} --screenshot='{}' 'file://{}' >/dev/null 2>&1",
      chromium, profile, width, height, png, fs::absolute(html).string());
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// Width and height of a PNG file from its IHDR chunk; {0, 0} if it is none.
std::pair<uint32_t, uint32_t> PngSize(const std::string& path) {
  const std::string b = ReadFile(path);
  if (b.size() < 24 || b.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0 || b.compare(12, 4, "IHDR") != 0) {
    return {0, 0};
  }
  auto be32 = [&](size_t at) {
    return (static_cast<uint32_t>(static_cast<unsigned char>(b[at])) << 24) |
           (static_cast<uint32_t>(static_cast<unsigned char>(b[at + 1])) << 16) |
           (static_cast<uint32_t>(static_cast<unsigned char>(b[at + 2])) << 8) |
           static_cast<uint32_t>(static_cast<unsigned char>(b[at + 3]));
  };
  return {be32(16), be32(20)};
}

// The attributes `name` of every <figure> of a dumped DOM that has
// data-kind... (figures carry data-model / data-x-max / data-x-ticks once
// drawn): a list of the values of attribute `name` of the figures whose
// opening tag contains `filter`.
std::vector<std::string> FigureAttributes(const std::string& dom, const std::string& filter,
                                          const std::string& name) {
  std::vector<std::string> out;
  for (size_t at = dom.find("<figure"); at != std::string::npos; at = dom.find("<figure", at + 1)) {
    const std::string tag = dom.substr(at, dom.find('>', at) - at);
    if (tag.find(filter) == std::string::npos) continue;
    const std::string key = " " + name + "=\"";
    const size_t k = tag.find(key);
    if (k == std::string::npos) continue;
    const size_t begin = k + key.size();
    out.push_back(tag.substr(begin, tag.find('"', begin) - begin));
  }
  return out;
}

// HTML character references back to text (the DOM dump escapes attribute values).
std::string Unescape(std::string s) {
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"&quot;", "\""}, {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}}) {
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) {
      s.replace(p, from.size(), to);
    }
  }
  return s;
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
  // Charts: the key metrics as bars (JCT mean, makespan, utilisation,
  // fragmentation rate mean; nothing rejected, so no bars of it: 4) +
  // fragmentation, utilisation and queue over time (3) + the JCT distribution
  // (1) + per policy one slot map per --snapshot-at instant (2) and one at its
  // fragmentation peak (1): 4 + 3 + 1 + 2 * 3 = 14.
  const std::string page = ReadFile(html);
  EXPECT_THAT(page, HasSubstr("data-charts-expected=\"14\""));
  const Rendered dom = Render(chromium, html);
  ASSERT_EQ(dom.exit_code, 0) << dom.stderr;
  EXPECT_EQ(HtmlAttribute(dom.dom, "data-render-status"), "ok") << RenderErrors(dom.dom);
  EXPECT_EQ(HtmlAttribute(dom.dom, "data-charts-drawn"), "14");
  EXPECT_EQ(Count(dom.dom, "<canvas"), 14u);
  EXPECT_EQ(RenderErrors(dom.dom), "");
  // Once every chart drew the page says nothing about drawing (no debug text).
  EXPECT_THAT(
      dom.dom,
      HasSubstr(
          "<p id=\"render-status\" class=\"status\" data-charts-expected=\"14\" hidden=\"\">"));
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
  // No axis title is longer than its axis (the metric's name is the caption;
  // the axis gives the unit).
  EXPECT_EQ(FigureAttributes(dom.dom, "chart-sweep", "data-cut-labels"),
            std::vector<std::string>(2, "[]"));
  // The bug: the y axis was zoomed to the data (here 50 to 60 min), so a
  // small difference looked large. Both axes start at zero; one run per
  // value, so no interval is drawn.
  EXPECT_EQ(FigureAttributes(dom.dom, "chart-sweep", "data-y-min"),
            std::vector<std::string>(2, "0"));
  EXPECT_EQ(FigureAttributes(dom.dom, "chart-sweep", "data-intervals"),
            std::vector<std::string>(2, "0"));
  // The sweep table: makespan 1 h = 60.0 min, 3000 s = 50.0 min, 3300 s = 55.0 min.
  EXPECT_THAT(dom.dom, HasSubstr("<td>60.0 min</td><td>50.0 min</td><td>55.0 min</td>"));
}

TEST(ReportHtmlTest, MixedClusterSlotMapsLogTicksAndScreenshots) {
  const std::string chromium = FindChromium();
  SKIP_WITHOUT_CHROMIUM(chromium);
  // One A100 40GB (8 placement units) and one A30 24GB (4 units): 1g.5gb only
  // the A100 offers, 1g.6gb only the A30. JCTs from 1 s to 2000 s: more than
  // a factor 100, so the JCT distribution has a log axis.
  const std::string trace = WriteTempFile("mixed.csv",
                                          "id,arrival_s,profile,duration_s\n"
                                          "a,0,1g.5gb,1\n"
                                          "b,0,1g.6gb,2000\n"
                                          "c,0,2g.10gb,30\n"
                                          "d,1,2g.12gb,300\n"
                                          "e,2,1g.5gb,60\n");
  const fs::path dir = ::migsched::testing::MakeTempDir("report-shots");
  const std::string html = (dir / "mixed.html").string();
  auto r = RunMigsched({"compare", "--cluster", "1xA100-40GB,1xA30-24GB", "--workload", trace,
                        "--policies", "first-fit,frag-aware", "--snapshot-at", "0.5", "--report",
                        html, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Charts: 4 key metrics as bars (JCT mean, makespan, utilisation,
  // fragmentation mean) + 3 over time + the JCT distribution + per policy (2)
  // and snapshot (the one at 0.5 s and the fragmentation peak: 2) one slot
  // map per GPU model (2): 4 + 4 + 2 * 2 * 2 = 16.
  const Rendered dom = Render(chromium, html);
  ASSERT_EQ(dom.exit_code, 0) << dom.stderr;
  ASSERT_EQ(HtmlAttribute(dom.dom, "data-render-status"), "ok") << RenderErrors(dom.dom);
  EXPECT_EQ(HtmlAttribute(dom.dom, "data-charts-drawn"), "16");
  // No chart's axis title is cut off.
  for (const std::string& cut : FigureAttributes(dom.dom, "<figure", "data-cut-labels")) {
    EXPECT_EQ(cut, "[]");
  }
  // An axis per model: the A100 rows end at unit 8, the A30 rows at 4.
  EXPECT_EQ(FigureAttributes(dom.dom, "data-model=\"A100 40GB\"", "data-x-max"),
            std::vector<std::string>(4, "8"));
  EXPECT_EQ(FigureAttributes(dom.dom, "data-model=\"A30 24GB\"", "data-x-max"),
            std::vector<std::string>(4, "4"));
  // The log axis: ticks only at 1, 2 and 5 times a power of ten, written
  // short (no "0.0001", no four decimals).
  const std::vector<std::string> ticks = FigureAttributes(dom.dom, "chart-cdf", "data-x-ticks");
  ASSERT_EQ(ticks.size(), 1u);
  const nlohmann::json labels = nlohmann::json::parse(Unescape(ticks[0]));
  ASSERT_GE(labels.size(), 3u) << ticks[0];
  for (const auto& l : labels) {
    const std::string t = l.get<std::string>();
    const double v = std::stod(t) * (t.back() == 'k' ? 1e3 : 1);
    const double mantissa = v / std::pow(10, std::floor(std::log10(v) + 1e-9));
    EXPECT_TRUE(std::fabs(mantissa - 1) < 1e-6 || std::fabs(mantissa - 2) < 1e-6 ||
                std::fabs(mantissa - 5) < 1e-6)
        << t;
    EXPECT_LE(t.size(), 5u) << t;
  }
  // A screenshot of the whole page for a person to look at (its path is
  // printed): a PNG of the size asked for.
  const std::string full = (dir / "report.png").string();
  ASSERT_EQ(Screenshot(chromium, html, full, 1280, 4000), 0);
  EXPECT_EQ(PngSize(full), std::make_pair(1280u, 4000u));
  std::cout << "report screenshot: " << full << "\n";
}

// What a reader sees first, in a 1280 px wide window: the findings and the
// key charts, not a long table. Three policies over 3 replicas, so each bar
// has its 95% interval.
TEST(ReportHtmlTest, KeyChartsOnTheFirstScreenAt1280WithIntervals) {
  const std::string chromium = FindChromium();
  SKIP_WITHOUT_CHROMIUM(chromium);
  const fs::path dir = ::migsched::testing::MakeTempDir("report-first-screen");
  const std::string html = (dir / "compare.html").string();
  auto r = RunMigsched({"compare", "--cluster", "4xA100-40GB", "--workload", "paper-mix", "--jobs",
                        "60", "--replicas", "3", "--policies", "frag-aware,first-fit,best-fit",
                        "--report", html, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Rendered dom = Render(chromium, html);
  ASSERT_EQ(dom.exit_code, 0) << dom.stderr;
  ASSERT_EQ(HtmlAttribute(dom.dom, "data-render-status"), "ok") << RenderErrors(dom.dom);
  // The first chart of the page is a key metric's bars, wholly inside the
  // first 800 px (the window's height); the findings come before it.
  const std::vector<std::string> kinds = FigureAttributes(dom.dom, "<figure", "class");
  ASSERT_FALSE(kinds.empty());
  EXPECT_EQ(kinds.front(), "chart chart-bars");
  const std::vector<std::string> bottoms = FigureAttributes(dom.dom, "<figure", "data-bottom");
  ASSERT_FALSE(bottoms.empty());
  EXPECT_LE(std::stoi(bottoms.front()), 800) << "the first chart ends below the first screen";
  EXPECT_LT(dom.dom.find("id=\"key-findings\""), dom.dom.find("<figure"));
  // Who won, by how much, how sure: the paired interval over the 3 replicas.
  EXPECT_THAT(dom.dom, HasSubstr("over 3 paired replicas"));
  // Each bar chart (one bar per policy) starts at zero and draws the 95%
  // interval of each of the 3 means.
  const std::vector<std::string> y_min = FigureAttributes(dom.dom, "chart-bars", "data-y-min");
  ASSERT_GE(y_min.size(), 4u);
  for (const std::string& y : y_min) EXPECT_EQ(y, "0");
  for (const std::string& n : FigureAttributes(dom.dom, "chart-bars", "data-intervals")) {
    EXPECT_EQ(n, "3");
  }
  // The first screen as a reader sees it (its path is printed to look at).
  const std::string png = (dir / "first-screen.png").string();
  ASSERT_EQ(Screenshot(chromium, html, png, 1280, 800), 0);
  EXPECT_EQ(PngSize(png), std::make_pair(1280u, 800u));
  std::cout << "first screen of the report: " << png << "\n";
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
  // 4 key metrics' bars + 3 over time + 1 + 2 policies * (1 instant + the peak) = 12.
  EXPECT_THAT(r.out, HasSubstr("(2 runs, 12 charts)"));
  EXPECT_THAT(ReadFile(html), HasSubstr("<th>frag-aware</th><th>best-fit</th>"));
}

// `report --from` over the JSON that `compare --policies POLICIES --json` wrote for kTrace on two
// A100s; the page goes to `html`.
::migsched::testing::CommandResult ReportOverCompare(const std::string& policies,
                                                     const std::string& html) {
  const std::string trace = WriteTempFile("trace.csv", kTrace);
  const std::string json = WriteTempFile("compare.json", "");
  auto c = RunMigsched({"compare", "--cluster", "2xA100-40GB", "--workload", trace, "--policies",
                        policies, "--json", json, "--quiet"});
  EXPECT_EQ(c.exit_code, 0) << c.err;
  return RunMigsched({"report", "--from", json, "-o", html});
}

TEST(ReportCliTest, ReportFromCompareJson) {
  const std::string html = WriteTempFile("from.html", "");
  auto r = ReportOverCompare("frag-aware,first-fit", html);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Metrics only: the tables and the key metrics as bars (JCT mean, makespan,
  // utilisation, fragmentation mean; none rejected): 4 charts, none over time.
  EXPECT_THAT(r.out, HasSubstr("(2 runs, 4 charts)"));
  const std::string page = ReadFile(html);
  EXPECT_THAT(page, HasSubstr("<th>frag-aware</th><th>first-fit</th>"));
  EXPECT_THAT(page,
              HasSubstr("<tr data-metric=\"jobs_completed\"><th>jobs completed</th><td>5</td>"));
}

// Regression: a report of one run said "(1 runs, ...)".
TEST(ReportCliTest, OneRunIsSaidInTheSingular) {
  const std::string html = WriteTempFile("one.html", "");
  auto r = ReportOverCompare("first-fit", html);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(1 run, "));
  EXPECT_THAT(r.out, Not(HasSubstr("1 runs")));
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

TEST(ReportCliTest, FromRunsOfDifferentWorkloadsWarnsAndDoesNotColourRatios) {
  // Two saved simulate outputs of different traces (2 jobs and 5 jobs): their
  // ratios mean nothing.
  const std::string a = WriteTempFile("a.csv",
                                      "id,arrival_s,profile,duration_s\na,0,1g.5gb,10\n"
                                      "b,0,1g.5gb,20\n");
  const std::string b = WriteTempFile("b.csv", kTrace);
  const std::string ja = WriteTempFile("a.json", "");
  const std::string jb = WriteTempFile("b.json", "");
  for (const auto& [trace, json] : {std::pair(a, ja), std::pair(b, jb)}) {
    auto r = RunMigsched(
        {"simulate", "--cluster", "2xA100-40GB", "--workload", trace, "--json", json, "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const std::string html = WriteTempFile("from.html", "");
  auto r = RunMigsched({"report", "--from", ja, "--from", jb, "-o", html});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Each run is named "<policy> (<file>)"; a workload is its description and seed.
  const std::string why =
      "frag-aware (b.json) ran another workload (b.csv (5 jobs, arrival times from the file), "
      "seed 1) than frag-aware (a.json) (a.csv (2 jobs, arrival times from the file), seed 1)";
  EXPECT_EQ(r.err, "migsched report: warning: " + why + "\n");
  const std::string page = ReadFile(html);
  EXPECT_THAT(page,
              HasSubstr("* Not compared with frag-aware (a.json) (ratios left uncoloured, not "
                        "in the lines above): " +
                        std::string("frag-aware (b.json) ran another workload")));
  EXPECT_THAT(page, HasSubstr("class=\"ratio incomparable\""));
  EXPECT_THAT(page, Not(HasSubstr("class=\"ratio better\"")));
  EXPECT_THAT(page, Not(HasSubstr("class=\"ratio worse\"")));
  // The same workload twice compares: no warning, coloured ratios.
  auto same = RunMigsched({"report", "--from", ja, "--from", ja, "-o", html});
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(same.err, "");
  EXPECT_THAT(ReadFile(html), Not(HasSubstr("ratio incomparable")));
}

TEST(ReportCliTest, RejectionsAreAtTheTopOfTheReport) {
  const std::string trace = WriteTempFile("r.csv",
                                          "id,arrival_s,profile,duration_s\n"
                                          "a,0,7g.80gb,10\n"
                                          "b,1,1g.5gb,10\n");
  const std::string html = WriteTempFile("r.html", "");
  auto r = RunMigsched(
      {"simulate", "--cluster", "1xA100-40GB", "--workload", trace, "--report", html, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = ReadFile(html);
  const size_t rejections = page.find("<div class=\"rejections\"");
  ASSERT_NE(rejections, std::string::npos);
  EXPECT_LT(rejections, page.find("id=\"summary-table\""));
  EXPECT_THAT(page, HasSubstr("<li><b>frag-aware</b>: 1 of 2 jobs: 1 × no GPU in the cluster (A100 "
                              "40GB) offers profile 7g.80gb</li>"));
}

TEST(ReportCliTest, SweepChartsOnlyWhatChanges) {
  // Every job completes at every threshold (2 A100s, 5 small jobs): jobs
  // completed (5) and rejected (0) are flat lines, listed instead of charted.
  const std::string trace = WriteTempFile("trace.csv", kTrace);
  const std::string html = WriteTempFile("sweep.html", "");
  auto r = RunMigsched({"sweep", "--cluster", "2xA100-40GB", "--workload", trace, "--param",
                        "threshold=0.2,0.6", "--report", html, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = ReadFile(html);
  EXPECT_THAT(page, HasSubstr("The same at every value, so not charted: jobs completed 5, jobs "
                              "rejected 0"));
  EXPECT_THAT(page, Not(HasSubstr("\"metric\":\"jobs_completed\"")));
  EXPECT_THAT(page, Not(HasSubstr("\"metric\":\"rejected\"")));
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
