// deploy/monitoring/ checked against the code: every PromQL query of the Grafana
// dashboard and of the alert rules names only metric families the daemon's
// /metrics exports (RenderPrometheus), and each parses (promtool check rules
// on the dashboard's queries as recording rules; skipped without promtool).
// The alert rules' own unit tests run as the ctest `monitoring_rules`.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/metrics.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using nlohmann::json;

std::string Monitoring(const std::string& file) {
  return testing::SourceDir() + "/deploy/monitoring/" + file;
}

// "# TYPE name type" of an exposition: name → type.
std::map<std::string, std::string> Families(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string hash, kw, name, type;
    if (words >> hash >> kw >> name >> type && hash == "#" && kw == "TYPE") out[name] = type;
  }
  return out;
}

// The metric names a query mentions (migsched_…), a histogram's series named by their family.
std::vector<std::string> MetricsOf(const std::string& expr) {
  static const std::regex name(R"(\bmigsched_[a-z0-9_]+)");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), name); it != std::sregex_iterator();
       ++it) {
    out.push_back(it->str());
  }
  return out;
}

// Every family the daemon can export: a DaemonMetrics with a GPU measuring PCIe (the only
// families shown conditionally need it).
std::map<std::string, std::string> Exported() {
  DaemonMetrics m;
  GpuView g;
  g.pcie = PcieThroughput{1, 1};
  m.gpus = {g};
  return Families(RenderPrometheus(m));
}

std::string Unknown(const std::string& expr, const std::map<std::string, std::string>& families) {
  for (const std::string& n : MetricsOf(expr)) {
    if (families.count(n)) continue;
    bool histogram_series = false;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s = suffix;
      if (n.size() > s.size() && n.ends_with(s)) {
        auto f = families.find(n.substr(0, n.size() - s.size()));
        histogram_series = histogram_series || (f != families.end() && f->second == "histogram");
      }
    }
    if (!histogram_series) return n;
  }
  return "";
}

std::vector<std::string> DashboardQueries() {
  std::ifstream in(Monitoring("migsched-dashboard.json"));
  const json d = json::parse(in);
  std::vector<std::string> out;
  for (const json& p : d.at("panels")) {
    for (const json& t : p.value("targets", json::array()))
      out.push_back(t.at("expr").get<std::string>());
  }
  for (const json& v : d.at("templating").at("list")) {
    if (v.value("type", "") == "query") out.push_back(v.at("definition").get<std::string>());
  }
  return out;
}

TEST(MonitoringTest, DashboardQueriesNameExportedMetrics) {
  const auto families = Exported();
  ASSERT_GT(families.size(), 15u);
  const std::vector<std::string> queries = DashboardQueries();
  ASSERT_GT(queries.size(), 15u);
  std::set<std::string> used;
  for (const std::string& q : queries) {
    EXPECT_FALSE(MetricsOf(q).empty()) << "no migsched metric in: " << q;
    EXPECT_EQ(Unknown(q, families), "") << "not exported by the daemon, in: " << q;
    for (const std::string& n : MetricsOf(q)) used.insert(n);
  }
  // The dashboard shows the families operators ask for (docs/daemon.md, "Monitoring").
  for (const char* n : {"migsched_mig_instances", "migsched_mig_free_instances",
                        "migsched_mig_instance_busy_seconds_total", "migsched_jobs_ended_total",
                        "migsched_reconfiguration_seconds_bucket"}) {
    EXPECT_TRUE(used.count(n)) << n;
  }
}

// The checker fails on a name the daemon does not export (it could not pass everything).
TEST(MonitoringTest, CheckerRefusesUnknownMetrics) {
  const auto families = Exported();
  EXPECT_EQ(Unknown("rate(migsched_jobs_total[5m])", families), "migsched_jobs_total");
  EXPECT_EQ(Unknown("migsched_queue_length_bucket", families), "migsched_queue_length_bucket");
  EXPECT_EQ(
      Unknown("histogram_quantile(0.5, rate(migsched_decision_seconds_bucket[5m]))", families), "");
}

TEST(MonitoringTest, AlertRulesNameExportedMetrics) {
  const auto families = Exported();
  const YAML::Node doc = YAML::LoadFile(Monitoring("migsched-alerts.yml"));
  std::set<std::string> alerts;
  for (const YAML::Node& group : doc["groups"]) {
    for (const YAML::Node& rule : group["rules"]) {
      const std::string expr = rule["expr"].as<std::string>();
      alerts.insert(rule["alert"].as<std::string>());
      EXPECT_FALSE(MetricsOf(expr).empty()) << expr;
      EXPECT_EQ(Unknown(expr, families), "") << "not exported by the daemon, in: " << expr;
    }
  }
  EXPECT_EQ(alerts, (std::set<std::string>{"MigschedGpuStuckInDestroy", "MigschedStoreDegraded",
                                           "MigschedJobsWaitingWhileSlicesFree",
                                           "MigschedControlLoopNotTicking"}));
}

// Each dashboard query parses as PromQL: promtool checks them as recording rules (Grafana's
// variables replaced by what they stand for).
TEST(MonitoringTest, DashboardQueriesParse) {
  if (std::system("command -v promtool > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "promtool is not installed (Debian package prometheus; scripts/setup.sh)";
  }
  YAML::Emitter e;
  e << YAML::BeginMap << YAML::Key << "groups" << YAML::Value << YAML::BeginSeq << YAML::BeginMap
    << YAML::Key << "name" << YAML::Value << "dashboard" << YAML::Key << "rules" << YAML::Value
    << YAML::BeginSeq;
  int i = 0;
  for (std::string q : DashboardQueries()) {
    if (q.starts_with("label_values(")) continue;  // Grafana's, not PromQL
    for (const char* var : {"$instance", "$host"}) {
      for (size_t at; (at = q.find(var)) != std::string::npos;) q.replace(at, strlen(var), ".*");
    }
    e << YAML::BeginMap << YAML::Key << "record" << YAML::Value
      << "dashboard:query" + std::to_string(i++) << YAML::Key << "expr" << YAML::Value << q
      << YAML::EndMap;
  }
  e << YAML::EndSeq << YAML::EndMap << YAML::EndSeq << YAML::EndMap;
  const std::string rules = testing::WriteTempFile("dashboard-rules.yml", e.c_str());
  const std::string out = rules + ".out";
  const int status = std::system(("promtool check rules " + rules + " > " + out + " 2>&1").c_str());
  EXPECT_EQ(status, 0) << testing::ReadFile(out) << "\n" << e.c_str();
}

}  // namespace
}  // namespace migsched
