#include "report/html_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "report/assets.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

// A small online result: metrics, a 3-sample timeline, 2 completed jobs and
// `snapshots` snapshots of one A100 40GB with a busy 3g.20gb@4 and an idle
// 1g.5gb@0.
SimResult OnlineResult(const std::string& policy, double makespan_s, int snapshots) {
  SimResult r;
  r.metrics.mode = "online";
  r.metrics.policy = policy;
  r.metrics.cluster = "1xA100 40GB";
  r.metrics.jobs_total = 2;
  r.metrics.jobs_completed = 2;
  r.metrics.makespan_s = makespan_s;
  r.metrics.utilization = 0.5;
  r.metrics.per_profile["3g.20gb"].jobs = 2;
  r.metrics.per_profile["3g.20gb"].completed = 2;
  r.metrics.per_profile["3g.20gb"].jct_mean_s = 90;
  for (double t : {0.0, 10.0, makespan_s}) {
    TimelineSample s;
    s.time_s = t;
    s.frag_rate = t == 10 ? 0.25 : 0;
    r.timeline.push_back(s);
  }
  for (double jct : {60.0, 120.0}) {
    JobRecord j;
    j.jct_s = jct;
    r.jobs.push_back(j);
  }
  for (int k = 0; k < snapshots; ++k) {
    ClusterSnapshot c;
    c.time_s = 10.0 * (k + 1);
    GpuSnapshot g;
    g.model = "A100 40GB";
    g.placement_units = 8;
    g.instances = {SnapshotInstance{"1g.5gb", 0, 1, kNoJob}, SnapshotInstance{"3g.20gb", 4, 4, 7}};
    c.gpus.push_back(g);
    r.snapshots.push_back(c);
  }
  return r;
}

std::vector<std::string> Kinds(const nlohmann::json& charts) {
  std::vector<std::string> out;
  for (const auto& c : charts) out.push_back(c["kind"].get<std::string>());
  return out;
}

TEST(HtmlReportTest, ChartsOfTwoSimulatedRuns) {
  HtmlReport report("t");
  report.AddRun("frag-aware", OnlineResult("frag-aware", 200, 2));
  report.AddRun("first-fit", OnlineResult("first-fit", 400, 1));
  // First the key metrics as bars, one per run: JCT mean, makespan,
  // utilisation and fragmentation rate mean (jobs rejected: none, so no
  // chart); then 3 over time (fragmentation, utilisation, queue) + 1 JCT CDF
  // + 2 + 1 slot maps.
  EXPECT_THAT(Kinds(report.Charts()),
              ::testing::ElementsAre("bars", "bars", "bars", "bars", "timeline", "timeline",
                                     "timeline", "cdf", "slotmap", "slotmap", "slotmap"));
  const nlohmann::json charts = report.Charts();
  EXPECT_EQ(charts[0]["metric"], "jct_mean_s");
  EXPECT_EQ(charts[1]["metric"], "makespan_s");
  EXPECT_EQ(charts[1]["values"], nlohmann::json({200, 400}));
  // 400 s at most: minutes (ChooseUnit).
  EXPECT_EQ(charts[1]["unit"]["name"], "min");
  EXPECT_EQ(charts[8]["run"], 0);
  EXPECT_EQ(charts[9]["snapshot"], 1);
  EXPECT_EQ(charts[10]["run"], 1);
  const nlohmann::json data = report.Data();
  ASSERT_EQ(data["runs"].size(), 2u);
  // The timeline is short enough to be kept as recorded.
  EXPECT_EQ(data["runs"][0]["timeline"]["frag_rate"], nlohmann::json({0, 0.25, 0}));
  EXPECT_EQ(data["runs"][0]["jct_cdf"]["jct_s"], nlohmann::json({60, 120}));
  const nlohmann::json& inst = data["runs"][0]["snapshots"][0]["gpus"][0]["instances"];
  EXPECT_EQ(inst[0]["busy"], false);
  EXPECT_TRUE(inst[0]["job"].is_null());
  EXPECT_EQ(inst[1]["busy"], true);
  EXPECT_EQ(inst[1]["job"], 7);
}

TEST(HtmlReportTest, SummaryTableHasRatiosToTheFirstRun) {
  HtmlReport report("t");
  report.AddRun("frag-aware", OnlineResult("frag-aware", 200, 0));
  report.AddRun("first-fit", OnlineResult("first-fit", 400, 0));
  const std::string html = report.Render();
  // makespan 200 s = 3.33 min and 400 s = 6.67 min (3 significant digits for
  // the smaller); 400 / 200 = 2, worse (lower is better).
  EXPECT_THAT(html, HasSubstr("<tr data-metric=\"makespan_s\"><th>makespan</th><td>3.33 min</td>"
                              "<td>6.67 min <span class=\"ratio worse\">×2.000</span></td></tr>"));
  // Equal utilisation: ratio 1, neither better nor worse.
  EXPECT_THAT(html, HasSubstr("<td>50.0%</td><td>50.0% <span class=\"ratio same\">×1.000</span>"));
  // Per-profile table: JCT mean 90 s.
  EXPECT_THAT(html, HasSubstr("<tr><th>3g.20gb</th><td>90.0 s</td>"));
}

// The bug: a row read "2.10 h" next to "111.1 min", each cell in its own
// unit. Now the row has one unit, chosen from its values: the largest,
// 7560 s, is over 2 h, so hours; 6666 s = 1.85 h.
TEST(HtmlReportTest, UnitsDoNotChangeWithinARow) {
  HtmlReport report("t");
  report.AddRun("a", OnlineResult("a", 7560, 0));
  report.AddRun("b", OnlineResult("b", 6666, 0));
  const std::string html = report.Render();
  EXPECT_THAT(html, HasSubstr("<tr data-metric=\"makespan_s\"><th>makespan</th><td>2.10 h</td>"
                              "<td>1.85 h <span class=\"ratio better\">×0.882</span></td></tr>"));
  EXPECT_THAT(html, Not(HasSubstr("111.1 min")));
}

TEST(HtmlReportTest, TheReportOpensWithItsFindingsAndKeyCharts) {
  HtmlReport report("t");
  report.AddRun("frag-aware", OnlineResult("frag-aware", 200, 1));
  report.AddRun("first-fit", OnlineResult("first-fit", 400, 1));
  const std::string html = report.Render();
  // Page order: the findings, the key charts' container, the charts over
  // time, and only then the table of every metric and the slot maps.
  // (Searched from <main>: the style sheet names sections too.)
  const size_t main = html.find("<main>");
  const size_t findings = html.find("id=\"key-findings\"", main);
  const size_t key = html.find("data-section=\"key\"", main);
  const size_t time = html.find("data-section=\"time\"", main);
  const size_t table = html.find("id=\"summary-table\"", main);
  const size_t slots = html.find("data-section=\"slots\"", main);
  ASSERT_NE(main, std::string::npos);
  ASSERT_NE(findings, std::string::npos);
  EXPECT_LT(findings, key);
  EXPECT_LT(key, time);
  EXPECT_LT(time, table);
  EXPECT_LT(table, slots);
  // makespan 200 s against 400 s: 200 / 400 - 1 = -50%; in minutes, as the
  // larger (400 s) is over 120 s: 3.33 min and 6.67 min. One run each: no
  // interval, and the page says what would give one.
  EXPECT_THAT(html, HasSubstr("<li><b>makespan</b> (lower is better): <b>frag-aware</b> 3.33 min, "
                              "-50.0% against first-fit (6.67 min); one run each, no "
                              "interval.</li>"));
  // Equal utilisation (50%): a tie, not a win.
  EXPECT_THAT(html, HasSubstr("frag-aware and first-fit tie at 50.0%."));
  // Nor is a change that would print as 0.0%: 1000 s against 1000.4 s is
  // 0.04% apart.
  HtmlReport close("t");
  ASSERT_TRUE(
      close.AddRunMetrics("x", nlohmann::json{{"mode", "online"}, {"makespan_s", 1000.4}}).ok());
  ASSERT_TRUE(
      close.AddRunMetrics("y", nlohmann::json{{"mode", "online"}, {"makespan_s", 1000}}).ok());
  EXPECT_THAT(close.Render(), HasSubstr("<li><b>makespan</b> (lower is better): y and x tie at "
                                        "16.7 min (under 0.05% apart).</li>"));
  EXPECT_THAT(html, HasSubstr("<code>--replicas N</code>"));
}

TEST(HtmlReportTest, OneRunHasItsKeyFiguresAndNoRanking) {
  HtmlReport report("t");
  report.AddRun("frag-aware", OnlineResult("frag-aware", 200, 0));
  const std::string html = report.Render();
  // Makespan 200 s = 3.33 min, utilisation 50%; nothing to rank it against.
  EXPECT_THAT(html, HasSubstr("<li><b>frag-aware</b>: JCT mean 0.0 s, makespan 3.33 min, "
                              "utilisation (busy compute slices, time mean) 50.0%"));
  EXPECT_THAT(html, Not(HasSubstr("against the next best")));
  EXPECT_THAT(html, HasSubstr("One run, so no interval: <code>--replicas N</code>"));
}

// A run's metrics over replicas with these makespans (seconds) and seeds: the mean, and each
// replica's own results, as `compare --json` writes them.
nlohmann::json MakespanReplicas(std::vector<double> makespans, std::vector<int> seeds) {
  nlohmann::json results = nlohmann::json::array();
  double sum = 0;
  for (double m : makespans) {
    results.push_back({{"mode", "online"}, {"makespan_s", m}});
    sum += m;
  }
  return nlohmann::json{{"mode", "online"},
                        {"makespan_s", sum / static_cast<double>(makespans.size())},
                        {"replicas", makespans.size()},
                        {"seeds", seeds},
                        {"replica_results", results}};
}

// Replicas of the same seeds: the best run's change against the next best
// with its paired 95% interval (sim/replicas.h ComparePaired), computed here
// by hand. b (the reference, first) makespans 100, 110, 120 s; a 90, 100,
// 112 s. Differences a - b: -10, -10, -8: mean -9.333, sample sd 1.1547,
// standard error 1.1547 / sqrt(3) = 0.6667, t(0.975, 2) = 4.3027, half-width
// 2.8684. Ratio of means 100.667 / 110 = 0.91515 (-8.5%), its half-width
// 2.8684 / 110 = 0.02608: -11.1% to -5.9%, excluding 0: significant.
TEST(HtmlReportTest, FindingsGiveThePairedIntervalOverReplicas) {
  auto run = [](std::vector<double> makespans, double half) {
    nlohmann::json r = MakespanReplicas(std::move(makespans), {1, 2, 3});
    r["ci95"] = {{"makespan_s", half}};
    return r;
  };
  HtmlReport report("t");
  ASSERT_TRUE(report.AddRunMetrics("b", run({100, 110, 120}, 24.8)).ok());
  ASSERT_TRUE(report.AddRunMetrics("a", run({90, 100, 112}, 27.4)).ok());
  const std::string html = report.Render();
  // Means 110 s and 100.667 s: seconds (under 120 s), 1 decimal.
  EXPECT_THAT(html, HasSubstr("<li><b>makespan</b> (lower is better): <b>a</b> 100.7 ±27.4 s, "
                              "-8.5% against b (110.0 ±24.8 s); 95% interval -11.1% to -5.9% over "
                              "3 paired replicas.</li>"));
  EXPECT_THAT(html, HasSubstr("with the 95% interval of that change over replicas"));
  // The key chart of the makespan carries each mean's half-width (whiskers).
  const nlohmann::json charts = report.Charts();
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(charts[0]["kind"], "bars");
  EXPECT_EQ(charts[0]["halves"], nlohmann::json({24.8, 27.4}));
  EXPECT_EQ(charts[0]["replicas"], 3);
  // A run without replicas pairs with nothing, and the page says so.
  HtmlReport mixed("t");
  ASSERT_TRUE(mixed.AddRunMetrics("b", run({100, 110, 120}, 24.8)).ok());
  ASSERT_TRUE(
      mixed.AddRunMetrics("c", nlohmann::json{{"mode", "online"}, {"makespan_s", 90}}).ok());
  EXPECT_THAT(mixed.Render(), HasSubstr("; no paired interval (not replicas of the same seeds)."));
}

// Regression (merged_reports_ratios_against_their_own_file): `report --from c.json --from r.json`
// showed r.json's runs with the ratios stored in r.json, against r.json's own first run, under a
// header naming the first column. Every ratio is now against the first column: paired replica by
// replica where the seeds are the same (a: 0.91515 ±0.02608, worked out above), else plain.
// z (another file, other seeds, a stored "paired" of 1.0 against its own reference): makespan
// 220 s against b's 110 s, x2.000, worse.
TEST(HtmlReportTest, EveryRatioIsAgainstTheFirstColumn) {
  const auto run = MakespanReplicas;
  HtmlReport report("t");
  ASSERT_TRUE(report.AddRunMetrics("b", run({100, 110, 120}, {1, 2, 3})).ok());
  ASSERT_TRUE(report.AddRunMetrics("a", run({90, 100, 112}, {1, 2, 3})).ok());
  nlohmann::json z = run({200, 220, 240}, {7, 8, 9});
  z["paired"] = {{"makespan_s", {{"ratio", 1.0}, {"ratio_ci95", 0.0}, {"significant", false}}}};
  ASSERT_TRUE(report.AddRunMetrics("z", z).ok());
  const std::string html = report.Render();
  const size_t row = html.find("<tr data-metric=\"makespan_s\">");
  ASSERT_NE(row, std::string::npos) << html;
  const std::string makespan = html.substr(row, html.find("</tr>", row) - row);
  EXPECT_THAT(makespan, HasSubstr("<span class=\"ratio better\">×0.915 ±0.026*</span>"));
  EXPECT_THAT(makespan, HasSubstr("<span class=\"ratio worse\">×2.000</span>"));
  EXPECT_THAT(makespan, Not(HasSubstr("×1.000")));
}

TEST(HtmlReportTest, SweepFindingsAndKeyCharts) {
  HtmlReport report("t");
  auto point = [](double makespan, double custom) {
    return nlohmann::json{{"mode", "online"}, {"makespan_s", makespan}, {"custom_metric", custom}};
  };
  ASSERT_TRUE(report
                  .SetSweepJson("threshold", "lb+frag",
                                {{0.2, point(100, 1)}, {0.4, point(90, 2)}, {0.6, point(95, 3)}})
                  .ok());
  // Lowest makespan at 0.4 (90 s); the next best 0.6 (95 s): 90 / 95 - 1 = -5.3%.
  EXPECT_THAT(report.Render(),
              HasSubstr("<li><b>makespan</b> (lower is better): best at <b>threshold = 0.4</b> "
                        "90.0 s, -5.3% against threshold = 0.6 (95.0 s); one run each, no "
                        "interval.</li>"));
  // The key metric's chart opens the page; the unknown metric's is in the sweep section.
  const nlohmann::json charts = report.Charts();
  ASSERT_EQ(charts.size(), 2u);
  EXPECT_EQ(charts[0]["section"], "key");
  EXPECT_EQ(charts[0]["metric"], "makespan_s");
  EXPECT_EQ(charts[1]["section"], "sweep");
  EXPECT_EQ(charts[1]["metric"], "custom_metric");
}

TEST(HtmlReportTest, MetricsOnlyRunsHaveTablesButNoCharts) {
  HtmlReport report("t");
  nlohmann::json m = MetricsToJson(OnlineResult("x", 100, 0).metrics);
  m["bytes_frobnicated"] = 1.5;  // a metric the report does not know: shown under its key
  ASSERT_TRUE(report.AddRunMetrics("saved", m).ok());
  EXPECT_TRUE(report.Charts().empty());
  const std::string html = report.Render();
  EXPECT_THAT(html, HasSubstr("<tr data-metric=\"bytes_frobnicated\"><th>bytes_frobnicated</th>"
                              "<td>1.50</td>"));  // 3 significant digits
  EXPECT_THAT(html, HasSubstr("data-charts-expected=\"0\""));
  EXPECT_THAT(html, Not(HasSubstr("id=\"sec-time\"")));
}

TEST(HtmlReportTest, RatiosAreColouredOnlyBetweenRunsThatCompare) {
  HtmlReport report("t");
  report.AddRun("a", OnlineResult("a", 100, 0));
  report.AddRun("b", OnlineResult("b", 90, 0));  // faster over the same 2 jobs: green
  SimResult fewer = OnlineResult("c", 50, 0);
  fewer.metrics.jobs_completed = 1;  // "faster" only because it did less
  report.AddRun("c", fewer);
  ASSERT_TRUE(
      report
          .AddRunMetrics(
              "d",
              nlohmann::json{
                  {"mode", "online"}, {"jobs_total", 2}, {"jobs_completed", 2}, {"makespan_s", 80}},
              "another workload")
          .ok());
  EXPECT_EQ(report.ComparabilityNotes(),
            (std::vector<std::string>{
                "c completed 1 jobs, a 2: its times, rates and energy are over other jobs"}));
  const std::string html = report.Render();
  // makespan (100 s, 90 s, 50 s, 80 s): b ×0.900 better; c ×0.500 grey; d
  // ×0.800 better (d's workload is named, a's is not: not known to differ).
  const size_t row = html.find("<tr data-metric=\"makespan_s\">");
  ASSERT_NE(row, std::string::npos);
  EXPECT_EQ(html.substr(row, html.find("</tr>", row) - row),
            "<tr data-metric=\"makespan_s\"><th>makespan</th><td>100.0 s</td>"
            "<td>90.0 s <span class=\"ratio better\">×0.900</span></td>"
            "<td>50.0 s <span class=\"ratio incomparable\">×0.500</span></td>"
            "<td>80.0 s <span class=\"ratio better\">×0.800</span></td>");
  EXPECT_THAT(html, HasSubstr("<th class=\"incomparable\""));
  // Named workloads that differ do not compare either.
  HtmlReport named("t");
  ASSERT_TRUE(named.AddRunMetrics("x", nlohmann::json{{"mode", "online"}}, "w1").ok());
  ASSERT_TRUE(named.AddRunMetrics("y", nlohmann::json{{"mode", "online"}}, "w2").ok());
  EXPECT_EQ(named.ComparabilityNotes(),
            (std::vector<std::string>{"y ran another workload (w2) than x (w1)"}));
}

// The bug: means over replicas (59.667 jobs completed against 60) were
// written with no decimals, "completed 60 jobs, a 60", a reason that
// contradicted itself.
TEST(HtmlReportTest, IncomparableReplicaMeansShowTheirFraction) {
  HtmlReport report("t");
  ASSERT_TRUE(
      report.AddRunMetrics("a", nlohmann::json{{"mode", "online"}, {"jobs_completed", 60}}).ok());
  ASSERT_TRUE(
      report.AddRunMetrics("b", nlohmann::json{{"mode", "online"}, {"jobs_completed", 179 / 3.0}})
          .ok());
  EXPECT_EQ(report.ComparabilityNotes(),
            (std::vector<std::string>{
                "b completed 59.7 jobs, a 60: its times, rates and energy are over other jobs"}));
}

// A replicated run's metrics as `compare --replicas` gives them to the report
// (cli/replica_output.h ReplicaRunJson): the means, then each replica's
// results; `completed[r]` of 10 jobs completed in replica r, the rest timed out.
nlohmann::json ReplicatedCounts(const std::vector<int>& completed) {
  nlohmann::json m = {{"mode", "online"}, {"jobs_total", 10}, {"rejected", 0}};
  double sum = 0;
  m["replica_results"] = nlohmann::json::array();
  for (int c : completed) {
    m["replica_results"].push_back(
        {{"mode", "online"}, {"jobs_total", 10}, {"jobs_completed", c}, {"rejected", 0}});
    sum += c;
  }
  m["jobs_completed"] = sum / static_cast<double>(completed.size());
  m["replicas"] = completed.size();
  return m;
}

// The bug: the report compared the means over replicas, while `compare`'s
// JSON read replica 0 and its terminal table compared every run: a policy
// with the reference's mean but other jobs completed replica by replica was
// ranked in the summary. Now the one rule (sim/replicas.h
// ComparableToReference): every replica's counts.
TEST(HtmlReportTest, ReplicasThatDifferAreNotComparedEvenWithTheSameMeanOrReplicaZero) {
  HtmlReport report("t");
  ASSERT_TRUE(report.AddRunMetrics("ref", ReplicatedCounts({10, 9, 10})).ok());
  // Same mean (29 / 3), replica 0 differs: 9 against 10.
  ASSERT_TRUE(report.AddRunMetrics("swapped", ReplicatedCounts({9, 10, 10})).ok());
  // Replica 0 matches, replica 2 does not; means 9.33 and 9.67.
  ASSERT_TRUE(report.AddRunMetrics("late", ReplicatedCounts({10, 9, 9})).ok());
  ASSERT_TRUE(report.AddRunMetrics("same", ReplicatedCounts({10, 9, 10})).ok());
  EXPECT_EQ(report.ComparabilityNotes(),
            (std::vector<std::string>{
                "swapped completed 9 jobs in replica 0, ref 10: its times, rates and energy are "
                "over other jobs",
                "late completed 9.3 jobs, ref 9.7: its times, rates and energy are over other "
                "jobs"}));
  const std::string html = report.Render();
  EXPECT_THAT(html, HasSubstr("<th class=\"incomparable\" title=\"swapped completed 9 jobs"));
  EXPECT_THAT(html, HasSubstr("<th class=\"incomparable\" title=\"late completed"));
  EXPECT_THAT(html, HasSubstr("<th>same</th>"));
}

TEST(HtmlReportTest, AddRunMetricsNeedsAMode) {
  HtmlReport report("t");
  Status st = report.AddRunMetrics("bad", nlohmann::json{{"makespan_s", 1}});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "run 'bad': metrics must be a JSON object with a \"mode\" string");
}

TEST(HtmlReportTest, SweepChartsOnePerMetricPresent) {
  HtmlReport report("t");
  // makespan_s and utilization are known metrics with a better direction;
  // jobs_total has none (no chart); custom_metric is unknown (charted).
  auto point = [](double makespan, double util, double custom) {
    return nlohmann::json{{"mode", "online"},
                          {"makespan_s", makespan},
                          {"utilization", util},
                          {"jobs_total", 3},
                          {"custom_metric", custom}};
  };
  ASSERT_TRUE(report
                  .SetSweepJson("threshold", "lb+frag",
                                {{0.2, point(100, 0.5, 2)}, {0.4, point(90, 0.6, 3)}})
                  .ok());
  const nlohmann::json charts = report.Charts();
  ASSERT_EQ(charts.size(), 3u);
  EXPECT_EQ(charts[0]["metric"], "makespan_s");
  EXPECT_EQ(charts[1]["metric"], "utilization");
  EXPECT_EQ(charts[2]["metric"], "custom_metric");
  EXPECT_EQ(report.Data()["sweep"]["values"], nlohmann::json({0.2, 0.4}));
  EXPECT_THAT(report.Render(), HasSubstr("<th>threshold</th><th>0.2</th><th>0.4</th>"));
}

TEST(HtmlReportTest, FlatSweepMetricsAreListedNotCharted) {
  // jobs_completed and rejected are the same at both values: a flat line says
  // nothing, so they get no chart and are named in one line instead.
  HtmlReport report("t");
  auto point = [](double makespan) {
    return nlohmann::json{
        {"mode", "online"}, {"makespan_s", makespan}, {"jobs_completed", 200}, {"rejected", 0}};
  };
  ASSERT_TRUE(report.SetSweepJson("threshold", "p", {{0.2, point(100)}, {0.4, point(90)}}).ok());
  const nlohmann::json charts = report.Charts();
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(charts[0]["metric"], "makespan_s");
  EXPECT_THAT(report.Render(),
              HasSubstr("The same at every value, so not charted: jobs completed 200, jobs "
                        "rejected 0."));
}

TEST(HtmlReportTest, SweepOfMetricsAndBadSweeps) {
  HtmlReport report("t");
  Metrics m;
  m.mode = "online";
  EXPECT_TRUE(report.SetSweep("threshold", "p", {{0.2, m}, {0.3, m}}).ok());
  EXPECT_EQ(report.Data()["sweep"]["metrics"].size(), 2u);
  Status empty = report.SetSweep("threshold", "p", {});
  EXPECT_EQ(empty.message(), "sweep of threshold: no points");
  Status nan = report.SetSweep("threshold", "p", {{NAN, m}});
  EXPECT_EQ(nan.message(), "sweep of threshold: value nan is not finite");
}

TEST(HtmlReportTest, PageIsSelfContainedAndSafe) {
  HtmlReport report("A <title>");
  report.AddRun("</script><b>x", OnlineResult("p", 100, 1));
  const std::string html = report.Render();
  // The charting library is inline (no src= to fetch), without its source-map URL.
  EXPECT_THAT(html, HasSubstr("Chart.js v4"));
  EXPECT_THAT(html, Not(HasSubstr("sourceMappingURL")));
  EXPECT_THAT(html, Not(HasSubstr("<script src")));
  EXPECT_THAT(html, Not(HasSubstr("<link")));
  EXPECT_THAT(html, HasSubstr(std::string(report_assets::ReportJs())));
  // 4 script elements end: error hook, Chart.js, data, page script; the
  // label's "</script>" is escaped in the data and in the tables.
  EXPECT_EQ(Count(html, "</script"), 4u);
  EXPECT_THAT(html, HasSubstr("\\u003c/script>\\u003cb>x"));
  EXPECT_THAT(html, HasSubstr("<th>&lt;/script&gt;&lt;b&gt;x</th>"));
  EXPECT_THAT(html, HasSubstr("<title>A &lt;title&gt;</title>"));
  // 3 over time + CDF + 1 slot map.
  EXPECT_THAT(html, HasSubstr("data-charts-expected=\"5\""));
}

// Regression (trial_report_from_malformed_metrics): `report --from` drew a hand-made output whose
// "jct_mean_s" was "abc", whose mode was "weird" and whose per_profile was a list.
TEST(HtmlReportTest, SavedMetricsThatAreNotMetricsAreRefused) {
  HtmlReport r("t");
  EXPECT_EQ(
      r.AddRunMetrics("x", nlohmann::json{{"mode", "online"}, {"jct_mean_s", "abc"}}).message(),
      "run 'x': \"jct_mean_s\" must be a number, got \"abc\"");
  EXPECT_EQ(r.AddRunMetrics("x", nlohmann::json{{"mode", "weird"}}).message(),
            "run 'x': \"mode\" must be \"online\" or \"fill\", got \"weird\"");
  EXPECT_EQ(r.AddRunMetrics("x", nlohmann::json{{"mode", "fill"}, {"per_profile", {1}}}).message(),
            "run 'x': \"per_profile\" must be an object of profiles");
  // A metric not measured is null, and a key that is no metric is kept as it is.
  EXPECT_TRUE(r.AddRunMetrics(
                   "y", nlohmann::json{{"mode", "online"}, {"energy_kwh", nullptr}, {"note", "x"}})
                  .ok());
}

}  // namespace
}  // namespace migsched
