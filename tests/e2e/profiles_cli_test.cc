// End-to-end tests of `migsched profiles`: run the built binary, check what it prints.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "build_paths.h"
#include "e2e/simulate.h"
#include "io/catalog_loader.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::RunMigsched;
using ::migsched::testing::WriteTempFile;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

const char kExtraModel[] = R"({
  "schema": "migsched-gpu-model/1", "name": "Test 4U", "short_names": ["TEST-4U"], "aliases": [],
  "confirmed": false, "compute_slices": 2, "memory_slices": 4, "placement_units": 4,
  "pcie_max_gbps": 16,
  "profiles": [
    {"name": "1g.8gb", "id": 3, "nvml_profile_index": 0, "compute_slices": 1, "memory_slices": 2,
     "memory_mib": 8192, "max_instances": 2,
     "placements": [{"start": 0, "size": 2}, {"start": 2, "size": 2}]},
    {"name": "2g.16gb", "id": 0, "nvml_profile_index": 1, "compute_slices": 2, "memory_slices": 4,
     "memory_mib": 16384, "max_instances": 1, "placements": [{"start": 0, "size": 4}]}
  ]
})";

std::string kExtraModelText() { return kExtraModel; }

// The table row of `profile` (the line whose first word is the profile name).
std::string RowOf(const std::string& out, const std::string& profile) {
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string first;
    words >> first;
    if (first == profile) return line;
  }
  return "";
}

TEST(ProfilesCliTest, TableForOneGpu) {
  auto r = RunMigsched({"profiles", "--gpu", "A100-40GB"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("A100 40GB\n"));
  EXPECT_THAT(r.out, HasSubstr("NVIDIA A100-SXM4-40GB"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("H100")));
  // docs/mig-hardware.md §2.2, as nvidia-smi mig -lgipp prints it.
  EXPECT_THAT(RowOf(r.out, "2g.10gb"), HasSubstr("{0,2,4}:2"));
  EXPECT_THAT(RowOf(r.out, "1g.5gb"), HasSubstr("{0,1,2,3,4,5,6}:1"));
  EXPECT_THAT(RowOf(r.out, "7g.40gb"), HasSubstr("{0}:8"));
  // id 20, variant of 1g.5gb.
  EXPECT_THAT(RowOf(r.out, "1g.5gb+me"), ::testing::MatchesRegex(".* 20 .*1g\\.5gb$"));
  EXPECT_THAT(r.out, HasSubstr("18 (base profile, placement) pairs over 6 base profiles"));
  EXPECT_THAT(r.err, IsEmpty());
}

TEST(ProfilesCliTest, UnconfirmedModelIsFlagged) {
  auto r = RunMigsched({"profiles", "--gpu", "NVIDIA H200"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("H200 141GB"));
  EXPECT_THAT(r.out, HasSubstr("placements inferred, not observed"));
  auto a100 = RunMigsched({"profiles", "--gpu", "A100-40GB"});
  EXPECT_THAT(a100.out, ::testing::Not(HasSubstr("inferred")));
}

// The line of the summary table whose first column is `model` (a model name has spaces: the
// line that starts with it).
std::string SummaryRowOf(const std::string& out, const std::string& model) {
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(model + "  ", 0) == 0) return line;
  }
  return "";
}

TEST(ProfilesCliTest, SummarySaysWhereTheCatalogComesFromAndWhatIsConfirmed) {
  auto r = RunMigsched({"profiles", "--summary"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The test binary runs from its build tree: the source tree's data/ (docs/algorithms.md
  // is silent here; src/cli/context.h FindDataDir, step 4).
  EXPECT_THAT(r.out, ::testing::StartsWith(
                         "GPU catalog: 16 models\n  bundled: " MIGSCHED_SOURCE_DATA_DIR
                         "/gpus, 16 models from 16 files (found in the source tree of this build"));
  // docs/mig-hardware.md §2: observed in a driver listing; §3: inferred.
  for (const char* m : {"A30 24GB", "A100 40GB", "A100 80GB", "H100 80GB", "H100 NVL 94GB",
                        "RTX PRO 6000 Blackwell 96GB"}) {
    EXPECT_THAT(SummaryRowOf(r.out, m), HasSubstr("  confirmed  ")) << m;
  }
  for (const char* m : {"H200 141GB", "GH200 96GB", "GH200 144GB", "H20 96GB", "B200 180GB",
                        "GB200 186GB", "B300 269GB", "GB300 278GB", "RTX PRO 5000 Blackwell 48GB",
                        "RTX PRO 4500 Blackwell 32GB"}) {
    EXPECT_THAT(SummaryRowOf(r.out, m), HasSubstr("  inferred  ")) << m;
  }
  EXPECT_THAT(SummaryRowOf(r.out, "B300 269GB"), HasSubstr("NVIDIA B300 SXM6 AC"));
  EXPECT_THAT(r.out, HasSubstr("10 of 16 models have inferred placements"));
  // --summary: no profile tables.
  EXPECT_THAT(r.out, Not(HasSubstr("PLACEMENTS  VARIANT")));
  EXPECT_THAT(r.err, IsEmpty());
}

// Regression: --summary with --gpu printed the model's whole profile table.
TEST(ProfilesCliTest, SummaryOfOneGpuIsItsLineAlone) {
  auto r = RunMigsched({"profiles", "--gpu", "A100-40GB", "--summary"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(SummaryRowOf(r.out, "A100 40GB"), HasSubstr("  confirmed  "));
  EXPECT_THAT(r.out, Not(HasSubstr("H100")));
  EXPECT_THAT(r.out, Not(HasSubstr("PLACEMENTS  VARIANT")));  // no profile table
  EXPECT_THAT(r.err, IsEmpty());
}

TEST(ProfilesCliTest, InferredModelSaysFromWhat) {
  auto r = RunMigsched({"profiles", "--gpu", "NVIDIA GH200 144G HBM3e"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("GH200 144GB\n  catalog file:     " MIGSCHED_SOURCE_DATA_DIR
                               "/gpus/gh200-144gb.json\n"));
  EXPECT_THAT(r.out, HasSubstr("  PCI device ids:   0x234810DE\n"));
  EXPECT_THAT(r.out, HasSubstr("  confirmed:        NO - placements inferred, not observed"));
  EXPECT_THAT(r.out, HasSubstr("  evidence:         inferred from H100 80GB"));
  // docs/mig-hardware.md §3.3: 3g.72gb, id inferred as 9, at H100's {0,4}:4.
  EXPECT_THAT(RowOf(r.out, "3g.72gb"),
              ::testing::MatchesRegex(" *3g\\.72gb +9 +3 +4 .*\\{0,4\\}:4 +-"));
}

TEST(ProfilesCliTest, VerboseListsTheCatalogFilesOnStderr) {
  const std::string path = WriteTempFile("extra-verbose.json", kExtraModelText());
  auto r = RunMigsched({"--verbose", "--catalog", path, "profiles", "--gpu", "TEST-4U", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("migsched: catalog bundled: " MIGSCHED_SOURCE_DATA_DIR
                               "/gpus, 16 models from 16 files (found in the source tree"));
  EXPECT_THAT(r.err, HasSubstr("migsched: catalog --catalog: " + path + ", 1 model from 1 file\n"));
  EXPECT_THAT(r.err, HasSubstr("migsched: catalog files (--catalog): extra-verbose.json\n"));
  // stdout stays one JSON document.
  EXPECT_EQ(nlohmann::json::parse(r.out).size(), 1u);
  // Without --verbose nothing is said.
  auto quiet = RunMigsched({"--catalog", path, "profiles", "--gpu", "TEST-4U", "--json"});
  EXPECT_THAT(quiet.err, IsEmpty());
}

// Every bundled model, by its first short name, runs a small simulation: three jobs given as GPU
// fractions (half, whole, a quarter), resolved on each model (docs/algorithms.md §4). On one GPU
// the whole-GPU job waits for the half one to end, and all three complete.
TEST(ProfilesCliTest, EveryModelSimulates) {
  const std::string trace = WriteTempFile(
      "fractions.csv",
      "id,arrival_s,gpu_fraction,duration_s\na,0,0.5,100\nb,0,1.0,100\nc,10,0.25,50\n");
  auto list = RunMigsched({"profiles", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  int models = 0;
  for (const auto& m : nlohmann::json::parse(list.out)) {
    const std::string gpu = m["short_names"][0].get<std::string>();
    SCOPED_TRACE(gpu);
    const nlohmann::json j = migsched::testing::Simulate("1x" + gpu, trace);
    ASSERT_FALSE(j.is_null());
    EXPECT_EQ(j["jobs_completed"], 3);
    EXPECT_EQ(j["rejected"], 0);
    // b (the whole GPU) starts when a ends at 100 s and runs 100 s.
    EXPECT_GE(j["makespan_s"].get<double>(), 200.0);
    ++models;
  }
  EXPECT_EQ(models, 16);
}

TEST(ProfilesCliTest, JsonListsEveryModel) {
  auto r = RunMigsched({"profiles", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  ASSERT_TRUE(doc.is_array());
  ASSERT_EQ(doc.size(), 16u);
  std::set<std::string> names;
  for (const auto& m : doc) names.insert(m["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{
                       "A100 40GB", "A100 80GB", "A30 24GB", "B200 180GB", "B300 269GB",
                       "GB200 186GB", "GB300 278GB", "GH200 144GB", "GH200 96GB", "H100 80GB",
                       "H100 NVL 94GB", "H20 96GB", "H200 141GB", "RTX PRO 4500 Blackwell 32GB",
                       "RTX PRO 5000 Blackwell 48GB", "RTX PRO 6000 Blackwell 96GB"}));
  // The JSON is the catalog format alone: no header lines.
  EXPECT_EQ(r.out.front(), '[');
  // Each element is a catalog file in its own right.
  for (const auto& m : doc) {
    StatusOr<GpuModel> back = ParseGpuModelJson(m.dump(), "profiles --json");
    EXPECT_TRUE(back.ok()) << back.status().ToString();
  }
}

TEST(ProfilesCliTest, JsonForOneGpu) {
  auto r = RunMigsched({"profiles", "--gpu", "a30", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc.size(), 1u);
  EXPECT_EQ(doc[0]["name"], "A30 24GB");
  EXPECT_EQ(doc[0]["placement_units"], 4);
  // docs/mig-hardware.md §2.1: 2g.12gb is ID 5 at {0,2}:2.
  const auto& p = doc[0]["profiles"][2];
  EXPECT_EQ(p["name"], "2g.12gb");
  EXPECT_EQ(p["id"], 5);
  EXPECT_EQ(p["placements"],
            nlohmann::json::parse(R"([{"start":0,"size":2},{"start":2,"size":2}])"));
}

TEST(ProfilesCliTest, UnknownGpuExits1) {
  auto r = RunMigsched({"profiles", "--gpu", "V100"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, IsEmpty());
  EXPECT_THAT(r.err, HasSubstr("migsched profiles: unknown GPU model 'V100' (known: A100-40GB, "
                               "A100-80GB, A30-24GB, B200-180GB, "));
}

TEST(ProfilesCliTest, ExtraCatalogFile) {
  const std::string path = WriteTempFile("extra.json", kExtraModel);
  auto r = RunMigsched({"--catalog", path, "profiles", "--gpu", "test-4u"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(RowOf(r.out, "1g.8gb"), HasSubstr("{0,2}:2"));
  EXPECT_THAT(r.out, HasSubstr("placements inferred, not observed"));
}

// Regression default_policies_on_a_model_without_static_layouts: static_layouts is optional in
// a catalog file, but compare and report ran static-all-balanced among their default policies
// and failed on such a model. Test 4U has none: the default list leaves that policy out with a
// note; naming it is still refused.
TEST(ProfilesCliTest, DefaultPoliciesLeaveOutALayoutTheModelLacks) {
  const std::string path = WriteTempFile("no-layouts.json", kExtraModel);
  const std::string trace = WriteTempFile(
      "test4u.csv", "id,arrival_s,profile,duration_s\na,0,1g.8gb,100\nb,5,2g.16gb,50\n");
  const std::string note =
      "static-all-balanced left out: GPU model 'Test 4U' has no static layout 'all-balanced' in "
      "the catalog (static_layouts); name the policies with --policies, or give --static-layout "
      "best-for-mix";
  auto r =
      RunMigsched({"--catalog", path, "compare", "--cluster", "2xTEST-4U", "--workload", trace});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("  note: " + note + "\n"));
  EXPECT_THAT(r.out, HasSubstr("\nfirst-fit "));
  EXPECT_THAT(r.out, HasSubstr("\nstatic "));  // best-for-mix: needs no catalog layout
  EXPECT_THAT(r.out, HasSubstr("\nfull "));
  EXPECT_THAT(r.out, Not(HasSubstr("\nstatic-all-balanced ")));

  const std::string html = (migsched::testing::MakeTempDir("no-layouts") / "r.html").string();
  auto rep = RunMigsched(
      {"--catalog", path, "report", "--cluster", "2xTEST-4U", "--workload", trace, "-o", html});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  std::ifstream in(html);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("static-all-balanced left out"));

  auto named = RunMigsched({"--catalog", path, "compare", "--cluster", "2xTEST-4U", "--workload",
                            trace, "--policies", "first-fit,static-all-balanced"});
  EXPECT_EQ(named.exit_code, 1);
  EXPECT_THAT(named.err, HasSubstr("has no static layout 'all-balanced'"));
}

TEST(ProfilesCliTest, BadExtraCatalogFileExits1) {
  std::string text = kExtraModel;
  text.replace(text.find("\"compute_slices\": 2,"), 20, "\"compute_slices\": \"2\",");
  const std::string path = WriteTempFile("bad.json", text);
  auto r = RunMigsched({"--catalog", path, "profiles"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, IsEmpty());
  EXPECT_THAT(r.err,
              HasSubstr(path + ": GPU model 'Test 4U': field 'compute_slices' must be an integer"));
}

}  // namespace
}  // namespace migsched
