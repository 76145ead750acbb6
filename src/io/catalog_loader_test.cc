#include "io/catalog_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "testing/test_util.h"

namespace migsched {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ::migsched::testing::BundledCatalog;
using ::migsched::testing::Model;
using ::migsched::testing::SourceDir;
using ::migsched::testing::WriteTempFile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string GpusDir() { return SourceDir() + "/data/gpus"; }

// ---------------------------------------------------------------------------
// The bundled catalog.

// Every bundled file, in file-name order (the order LoadCatalogPath loads a folder).
const std::vector<std::pair<std::string, std::string>> kBundled = {
    {"a100-40gb", "A100 40GB"},
    {"a100-80gb", "A100 80GB"},
    {"a30-24gb", "A30 24GB"},
    {"b200-180gb", "B200 180GB"},
    {"b300-269gb", "B300 269GB"},
    {"gb200-186gb", "GB200 186GB"},
    {"gb300-278gb", "GB300 278GB"},
    {"gh200-144gb", "GH200 144GB"},
    {"gh200-96gb", "GH200 96GB"},
    {"h100-80gb", "H100 80GB"},
    {"h100-nvl-94gb", "H100 NVL 94GB"},
    {"h20-96gb", "H20 96GB"},
    {"h200-141gb", "H200 141GB"},
    {"rtx-pro-4500", "RTX PRO 4500 Blackwell 32GB"},
    {"rtx-pro-5000", "RTX PRO 5000 Blackwell 48GB"},
    {"rtx-pro-6000", "RTX PRO 6000 Blackwell 96GB"},
};

TEST(BundledCatalogTest, EveryModelLoads) {
  Catalog c;
  std::vector<std::string> files;
  Status st = LoadCatalogPath(GpusDir(), &c, &files);
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<std::string> names, want_names, want_files;
  for (const GpuModel* m : c.models()) names.push_back(m->name());
  for (const auto& [file, name] : kBundled) {
    want_names.push_back(name);
    want_files.push_back(GpusDir() + "/" + file + ".json");
    StatusOr<GpuModel> m = LoadGpuModelFile(GpusDir() + "/" + file + ".json");
    EXPECT_TRUE(m.ok()) << m.status().ToString();
  }
  EXPECT_EQ(names, want_names);
  // LoadCatalogPath reports the files it loaded, in load order.
  EXPECT_EQ(files, want_files);
}

// Placements observed in a driver listing: the six models of docs/mig-hardware.md §2; every other
// model's are inferred (mig-hardware.md §3) and say from what.
TEST(BundledCatalogTest, ConfirmedAreTheModelsOfHardwareSection2) {
  const std::set<std::string> confirmed = {"A30 24GB",      "A100 40GB",
                                           "A100 80GB",     "H100 80GB",
                                           "H100 NVL 94GB", "RTX PRO 6000 Blackwell 96GB"};
  for (const GpuModel* m : BundledCatalog().models()) {
    SCOPED_TRACE(m->name());
    EXPECT_EQ(m->confirmed(), confirmed.count(m->name()) > 0);
    ASSERT_FALSE(m->placements_evidence().empty());
    EXPECT_THAT(m->placements_evidence(),
                StartsWith(m->confirmed() ? "observed: " : "inferred from "));
    EXPECT_THAT(m->placements_evidence(), HasSubstr(m->confirmed() ? "docs/mig-hardware.md §2."
                                                                   : "docs/mig-hardware.md §3."));
    EXPECT_FALSE(m->pci_device_ids().empty());
    for (const std::string& id : m->pci_device_ids()) {
      EXPECT_THAT(id, ::testing::MatchesRegex("0x[0-9A-F]{4}10DE")) << id;
    }
  }
}

// Names nvidia-smi prints and PCI ids of the models added from docs/mig-hardware.md §3 (the
// driver README's compatible-GPU table), written out here by hand.
TEST(BundledCatalogTest, InferredModelsNamesAndPciIds) {
  struct Want {
    std::string gpu;
    std::vector<std::string> aliases, pci;
  };
  const std::vector<Want> want = {
      {"GH200-96GB", {"NVIDIA GH200 480GB", "NVIDIA GH200 120GB"}, {"0x234210DE"}},
      {"GH200-144GB", {"NVIDIA GH200 144G HBM3e"}, {"0x234810DE"}},
      {"H20", {"NVIDIA H20"}, {"0x232910DE"}},
      {"B200", {"NVIDIA B200"}, {"0x290110DE", "0x290910DE"}},
      {"GB200", {"NVIDIA GB200"}, {"0x294110DE"}},
      {"B300", {"NVIDIA B300 SXM6 AC"}, {"0x318210DE"}},
      {"GB300", {"NVIDIA GB300"}, {"0x31C210DE", "0x31C310DE"}},
      {"RTX-PRO-5000", {"NVIDIA RTX PRO 5000 Blackwell"}, {"0x2BB310DE"}},
      {"RTX-PRO-4500",
       {"NVIDIA RTX PRO 4500 Blackwell", "NVIDIA RTX PRO 4500 Blackwell Server Edition"},
       {"0x2C3110DE", "0x2C3A10DE"}},
  };
  for (const Want& w : want) {
    SCOPED_TRACE(w.gpu);
    const GpuModel& m = Model(w.gpu);
    EXPECT_EQ(m.aliases(), w.aliases);
    EXPECT_EQ(m.pci_device_ids(), w.pci);
    for (const std::string& alias : w.aliases) EXPECT_EQ(*BundledCatalog().Find(alias), &m);
  }
}

TEST(BundledCatalogTest, PcieBandwidthPerAlgorithmsSection8) {
  // §8: A100 PCIe 4.0 30.08 GB/s measured; PCIe 5.0 models about 55 (assumption); A30 (PCIe 4.0)
  // by the A100 figure; the Grace-based modules (NVLink-C2C, 900 GB/s both ways) 450 per direction.
  const std::vector<std::pair<std::string, double>> expected = {
      {"A100-40GB", 30.08},  {"A100-80GB", 30.08},   {"A30", 30.08},         {"H100-80GB", 55.0},
      {"H100-94GB", 55.0},   {"H200-141GB", 55.0},   {"RTX-PRO-6000", 55.0}, {"H20", 55.0},
      {"B200", 55.0},        {"B300", 55.0},         {"RTX-PRO-5000", 55.0}, {"RTX-PRO-4500", 55.0},
      {"GH200-96GB", 450.0}, {"GH200-144GB", 450.0}, {"GB200", 450.0},       {"GB300", 450.0}};
  EXPECT_EQ(expected.size(), BundledCatalog().models().size());
  for (const auto& [gpu, gbps] : expected) {
    EXPECT_DOUBLE_EQ(Model(gpu).pcie_max_gbps(), gbps) << gpu;
  }
}

// Base profile of a media-extension variant, derived here independently of the converter:
// the name before a trailing "+me.all", "+me", "-me" or "+gfx".
std::string ExpectedVariantOf(const std::string& name) {
  for (const std::string suffix : {"+me.all", "+me", "-me", "+gfx"}) {
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return name.substr(0, name.size() - suffix.size());
    }
  }
  return "";
}

// An independent check of data/gpus/sources/convert.py: every fact of the research file's
// gpus[] must be in the loaded catalog, unchanged.
TEST(BundledCatalogTest, MatchesTheResearchFile) {
  const std::string path = GpusDir() + "/sources/mig-profiles.research.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const json research = json::parse(in);
  ASSERT_EQ(research["gpus"].size(), 7u);
  // The research file's 7 models and the 9 of inferred-models.json.
  EXPECT_EQ(BundledCatalog().models().size(), 16u);
  for (const json& g : research["gpus"]) {
    SCOPED_TRACE(g["model"].get<std::string>());
    StatusOr<const GpuModel*> found = BundledCatalog().Find(g["aliases"][0].get<std::string>());
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    const GpuModel& m = **found;
    EXPECT_EQ(m.aliases(), g["aliases"].get<std::vector<std::string>>());
    EXPECT_EQ(m.confirmed(), g["confirmed"].get<bool>());
    EXPECT_EQ(m.compute_slices(), g["compute_slices"].get<int>());
    EXPECT_EQ(m.memory_slices(), g["memory_slices"].get<int>());
    EXPECT_EQ(m.placement_units(), g["placement_units"].get<int>());
    ASSERT_EQ(m.profiles().size(), g["profiles"].size());
    for (size_t i = 0; i < m.profiles().size(); ++i) {
      const json& rp = g["profiles"][i];
      const Profile& p = m.profile(static_cast<int>(i));
      SCOPED_TRACE(rp["name"].get<std::string>());
      EXPECT_EQ(p.name, rp["name"].get<std::string>());
      EXPECT_EQ(p.id, rp["id"].get<int>());
      EXPECT_EQ(p.nvml_profile_index, rp["nvml_profile_index"].get<int>());
      EXPECT_EQ(p.compute_slices, rp["compute_slices"].get<int>());
      EXPECT_EQ(p.memory_slices, rp["memory_slices"].get<int>());
      EXPECT_EQ(p.memory_mib, rp["memory_mib"].get<int64_t>());
      EXPECT_EQ(p.max_instances, rp["max_instances"].get<int>());
      std::vector<Placement> want;
      for (const json& pl : rp["placements"]) {
        want.push_back({pl["start"].get<int>(), pl["size"].get<int>()});
      }
      EXPECT_EQ(p.placements, want);
      EXPECT_EQ(p.variant_of, ExpectedVariantOf(p.name));
    }
  }
}

// The inferred models of docs/mig-hardware.md §3, checked independently of the converter: every
// fact the research file's unconfirmed[] entry gives is carried unchanged, and the placements are
// those of H100 80GB (mig-hardware.md §2.4) for the profile's shape, written out here by hand:
//   1 compute / 1 memory slice {0..6}:1, 1/2 {0,2,4,6}:2, 2/2 {0,2,4}:2, 3/4 {0,4}:4,
//   4/4 {0}:4, 7/8 {0}:8;
// on the 2-slice RTX PRO 5000/4500 (one unit per memory slice, mig-hardware.md §3.9): 1g {0,1}:1,
// 2g {0}:2.
TEST(BundledCatalogTest, InferredModelsMatchResearchAndH100Placements) {
  const auto P = [](std::vector<int> starts, int size) {
    std::vector<Placement> out;
    for (int s : starts) out.push_back({s, size});
    return out;
  };
  const std::map<std::pair<int, int>, std::vector<Placement>> h100 = {
      {{1, 1}, P({0, 1, 2, 3, 4, 5, 6}, 1)},
      {{1, 2}, P({0, 2, 4, 6}, 2)},
      {{2, 2}, P({0, 2, 4}, 2)},
      {{3, 4}, P({0, 4}, 4)},
      {{4, 4}, P({0}, 4)},
      {{7, 8}, P({0}, 8)}};
  const std::map<std::pair<int, int>, std::vector<Placement>> two_way = {{{1, 1}, P({0, 1}, 1)},
                                                                         {{2, 2}, P({0}, 2)}};
  std::ifstream in(GpusDir() + "/sources/mig-profiles.research.json");
  ASSERT_TRUE(in);
  const json research = json::parse(in);
  std::map<std::string, const json*> unconfirmed;
  for (const json& g : research["unconfirmed"]) unconfirmed[g["aliases"][0]] = &g;
  int checked = 0;
  for (const GpuModel* m : BundledCatalog().models()) {
    if (m->confirmed()) continue;
    SCOPED_TRACE(m->name());
    ++checked;
    const auto& shapes = m->compute_slices() == 2 ? two_way : h100;
    EXPECT_EQ(m->placement_units(), m->compute_slices() == 2 ? 2 : 8);
    for (const Profile& p : m->profiles()) {
      SCOPED_TRACE(p.name);
      auto it = shapes.find({p.compute_slices, p.memory_slices});
      ASSERT_NE(it, shapes.end());
      EXPECT_EQ(p.placements, it->second);
      EXPECT_EQ(p.variant_of, ExpectedVariantOf(p.name));
    }
    auto r = m->aliases().empty() ? unconfirmed.end() : unconfirmed.find(m->aliases()[0]);
    if (m->name() == "GH200 144GB")
      r = unconfirmed.find("NVIDIA GH200 144G HBM3e (unverified string)");
    if (r == unconfirmed.end()) continue;  // not in the research file (H20, B300, GB300, RTX PRO)
    const json& g = *r->second;
    EXPECT_EQ(m->compute_slices(), g["compute_slices"].get<int>());
    EXPECT_EQ(m->memory_slices(), g["memory_slices"].get<int>());
    ASSERT_EQ(m->profiles().size(), g["profiles"].size());
    for (size_t i = 0; i < g["profiles"].size(); ++i) {
      const json& rp = g["profiles"][i];
      const Profile& p = m->profile(static_cast<int>(i));
      SCOPED_TRACE(p.name);
      EXPECT_EQ(p.name, rp["name"].get<std::string>());
      EXPECT_EQ(p.compute_slices, rp["compute_slices"].get<int>());
      EXPECT_EQ(p.memory_slices, rp["memory_slices"].get<int>());
      EXPECT_EQ(p.max_instances, rp["max_instances"].get<int>());
      if (!rp["id"].is_null()) {
        EXPECT_EQ(p.id, rp["id"].get<int>());
      }
      if (rp.contains("memory_mib")) {
        EXPECT_EQ(p.memory_mib, rp["memory_mib"].get<int64_t>());
      }
      if (rp.contains("nvml_profile_index")) {
        EXPECT_EQ(p.nvml_profile_index, rp["nvml_profile_index"].get<int>());
      }
    }
  }
  EXPECT_EQ(checked, 10);  // H200 and the 9 models of inferred-models.json
}

// data/gpus/*.json are generated: they must be what the converter writes today.
TEST(BundledCatalogTest, FilesAreWhatTheConverterWrites) {
  if (std::system("python3 --version > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3 not found: cannot run data/gpus/sources/convert.py --check";
  }
  const std::string cmd = "python3 '" + GpusDir() + "/sources/convert.py' --check > /dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0)
      << "data/gpus/ is out of date: run python3 data/gpus/sources/convert.py";
}

TEST(BundledCatalogTest, JsonRoundTrip) {
  for (const GpuModel* m : BundledCatalog().models()) {
    const nlohmann::ordered_json j = GpuModelToJson(*m);
    StatusOr<GpuModel> back = ParseGpuModelJson(j.dump(), "round-trip");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(GpuModelToJson(*back), j) << m->name();
    EXPECT_EQ(back->slots().size(), m->slots().size());
  }
}

// ---------------------------------------------------------------------------
// Bad input. A hand-written valid model, then one mutation per case.

json ValidModel() {
  return json::parse(R"({
    "$comment": "test model",
    "schema": "migsched-gpu-model/1",
    "name": "Test 8U",
    "short_names": ["TEST-8U"],
    "aliases": ["NVIDIA Test"],
    "confirmed": true,
    "compute_slices": 7,
    "memory_slices": 8,
    "placement_units": 8,
    "pcie_max_gbps": 30.08,
    "driver_default": {"highest_first": true, "orders": {"1g": [6, 4, 5, 0, 1, 2, 3]}},
    "static_layouts": {"all-balanced": [{"profile": "2g", "start": 0}, {"profile": "1g", "start": 2},
                                        {"profile": "1g", "start": 3}, {"profile": "3g", "start": 4}]},
    "profiles": [
      {"name": "1g", "id": 19, "nvml_profile_index": 0, "compute_slices": 1, "memory_slices": 1,
       "memory_mib": 4864, "max_instances": 7,
       "placements": [{"start": 0, "size": 1}, {"start": 1, "size": 1}, {"start": 2, "size": 1},
                      {"start": 3, "size": 1}, {"start": 4, "size": 1}, {"start": 5, "size": 1},
                      {"start": 6, "size": 1}]},
      {"name": "2g", "id": 14, "nvml_profile_index": 1, "compute_slices": 2, "memory_slices": 2,
       "memory_mib": 9856, "max_instances": 3,
       "placements": [{"start": 0, "size": 2}, {"start": 2, "size": 2}, {"start": 4, "size": 2}]},
      {"name": "2g+me", "id": 6, "nvml_profile_index": 8, "compute_slices": 2, "memory_slices": 2,
       "memory_mib": 9856, "max_instances": 1, "variant_of": "2g", "notes": "a variant",
       "placements": [{"start": 0, "size": 2}, {"start": 2, "size": 2}, {"start": 4, "size": 2}]},
      {"name": "3g", "id": 9, "nvml_profile_index": 2, "compute_slices": 3, "memory_slices": 4,
       "memory_mib": 19968, "max_instances": 2,
       "placements": [{"start": 0, "size": 4}, {"start": 4, "size": 4}]},
      {"name": "7g", "id": 0, "nvml_profile_index": 4, "compute_slices": 7, "memory_slices": 8,
       "memory_mib": 40192, "max_instances": 1, "placements": [{"start": 0, "size": 8}]}
    ],
    "source": "written by hand for catalog_loader_test",
    "notes": ["one", "two"]
  })");
}

TEST(CatalogLoaderTest, ValidModelLoads) {
  const std::string path = WriteTempFile("valid.json", ValidModel().dump(2));
  StatusOr<GpuModel> m = LoadGpuModelFile(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->name(), "Test 8U");
  EXPECT_EQ(m->slots().size(), 7u + 3u + 2u + 1u);
  EXPECT_EQ(m->profile(m->FindProfile("2g+me")).variant_of, "2g");
  EXPECT_EQ(m->DriverDefaultOrder(m->FindProfile("1g")), (std::vector<int>{6, 4, 5, 0, 1, 2, 3}));
}

TEST(CatalogLoaderTest, PciIdsAndEvidenceAreOptionalAndKept) {
  StatusOr<GpuModel> plain = ParseGpuModelJson(ValidModel().dump(), "plain");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_TRUE(plain->pci_device_ids().empty());
  EXPECT_TRUE(plain->placements_evidence().empty());
  // A model with confirmed false and no evidence still loads (files written before the field
  // existed); `migsched profiles` then says the file does not state it.
  json inferred = ValidModel();
  inferred["confirmed"] = false;
  EXPECT_TRUE(ParseGpuModelJson(inferred.dump(), "inferred").ok());
  json j = ValidModel();
  j["pci_device_ids"] = {"0x233010DE", "0x2331abcd"};
  j["placements_evidence"] = "observed: by hand";
  StatusOr<GpuModel> m = ParseGpuModelJson(j.dump(), "with-ids");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_THAT(m->pci_device_ids(), ElementsAre("0x233010DE", "0x2331abcd"));
  EXPECT_EQ(m->placements_evidence(), "observed: by hand");
  const nlohmann::ordered_json back = GpuModelToJson(*m);
  EXPECT_EQ(back["pci_device_ids"], json({"0x233010DE", "0x2331abcd"}));
  EXPECT_EQ(back["placements_evidence"], "observed: by hand");
  EXPECT_FALSE(GpuModelToJson(*plain).contains("pci_device_ids"));
}

TEST(CatalogLoaderTest, PowerIsOptionalAndCompletedFromEitherField) {
  EXPECT_EQ(LoadGpuModelFile(WriteTempFile("nopower.json", ValidModel().dump()))->power(), nullptr);
  struct Case {
    json power;
    double max_w, per_slice_w;
  } cases[] = {
      // The board limit given: (250 - 35) / 7 compute slices = 30.714... W per busy slice.
      {{{"idle_w", 35}, {"max_w", 250}}, 250, 215.0 / 7},
      // The per-slice power given: 20 + 7 x 10 = 90 W at full use.
      {{{"idle_w", 20}, {"per_active_slice_w", 10}}, 90, 10},
      // Both, below the limit: kept as given.
      {{{"idle_w", 20}, {"max_w", 300}, {"per_active_slice_w", 10}, {"notes", "x"}}, 300, 10},
  };
  for (const Case& c : cases) {
    json j = ValidModel();
    j["power"] = c.power;
    StatusOr<GpuModel> m = LoadGpuModelFile(WriteTempFile("power.json", j.dump()));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    ASSERT_NE(m->power(), nullptr);
    EXPECT_DOUBLE_EQ(m->power()->idle_w, c.power["idle_w"].get<double>());
    EXPECT_DOUBLE_EQ(m->power()->max_w, c.max_w);
    EXPECT_DOUBLE_EQ(m->power()->per_active_slice_w, c.per_slice_w);
  }
}

TEST(BundledCatalogTest, BoardPowerLimits) {
  // The PCIe cards' board power (docs/formats/catalog.md `power`, sources in each file's notes):
  // A100 40GB 250 W, A100 80GB 300 W, A30 165 W, H100 80GB 350 W, H100 NVL 400 W, H200 NVL 600 W,
  // RTX PRO 6000 600 W, RTX PRO 5000 300 W, RTX PRO 4500 200 W. The SXM-only and Grace-based
  // models have none (no PCIe card to compare with): no energy estimate for them.
  const std::vector<std::pair<std::string, double>> expected = {
      {"A100-40GB", 250},    {"A100-80GB", 300},    {"A30", 165},
      {"H100-80GB", 350},    {"H100-94GB", 400},    {"H200-141GB", 600},
      {"RTX-PRO-6000", 600}, {"RTX-PRO-5000", 300}, {"RTX-PRO-4500", 200}};
  for (const char* gpu : {"GH200-96GB", "GH200-144GB", "H20", "B200", "GB200", "B300", "GB300"}) {
    EXPECT_EQ(Model(gpu).power(), nullptr) << gpu;
  }
  for (const auto& [gpu, max_w] : expected) {
    ASSERT_NE(Model(gpu).power(), nullptr) << gpu;
    EXPECT_DOUBLE_EQ(Model(gpu).power()->max_w, max_w) << gpu;
    EXPECT_GT(Model(gpu).power()->idle_w, 0) << gpu;
    EXPECT_LT(Model(gpu).power()->idle_w, max_w) << gpu;
  }
}

TEST(CatalogLoaderTest, DriverDefaultAndLayoutsAreOptional) {
  json j = ValidModel();
  j.erase("driver_default");
  j.erase("static_layouts");
  j.erase("source");
  j.erase("notes");
  j.erase("$comment");
  StatusOr<GpuModel> m = LoadGpuModelFile(WriteTempFile("minimal.json", j.dump()));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  // Documented default: highest start first.
  EXPECT_EQ(m->DriverDefaultOrder(m->FindProfile("1g")), (std::vector<int>{6, 5, 4, 3, 2, 1, 0}));
  EXPECT_TRUE(m->spec().static_layouts.empty());
}

struct CatalogBadCase {
  std::string name;
  std::function<void(json&)> mutate;
  std::string message;  // after "<path>: "
  bool exact = true;    // false: the message starts with `message`
};

class CatalogLoaderBadInputTest : public ::testing::TestWithParam<CatalogBadCase> {};

TEST_P(CatalogLoaderBadInputTest, NamesFileModelProfileAndProblem) {
  const CatalogBadCase& c = GetParam();
  json j = ValidModel();
  c.mutate(j);
  const std::string path = WriteTempFile("bad.json", j.dump(2));
  StatusOr<GpuModel> m = LoadGpuModelFile(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  if (c.exact) {
    EXPECT_EQ(m.status().message(), path + ": " + c.message);
  } else {
    EXPECT_THAT(m.status().message(), StartsWith(path + ": " + c.message));
  }
}

const char kPrefix[] = "GPU model 'Test 8U'";

INSTANTIATE_TEST_SUITE_P(
    Cases, CatalogLoaderBadInputTest,
    ::testing::Values(
        CatalogBadCase{"MissingProfileField", [](json& j) { j["profiles"][1].erase("memory_mib"); },
                       "GPU model 'Test 8U', profile '2g': field 'memory_mib' is missing"},
        CatalogBadCase{"MissingModelField", [](json& j) { j.erase("placement_units"); },
                       "GPU model 'Test 8U': field 'placement_units' is missing"},
        CatalogBadCase{"MissingName", [](json& j) { j.erase("name"); }, "field 'name' is missing"},
        CatalogBadCase{"ProfileWithoutName", [](json& j) { j["profiles"][4].erase("name"); },
                       "GPU model 'Test 8U', profiles[4]: field 'name' is missing"},
        CatalogBadCase{
            "WrongTypeString", [](json& j) { j["profiles"][3]["compute_slices"] = "3"; },
            "GPU model 'Test 8U', profile '3g': field 'compute_slices' must be an integer"},
        CatalogBadCase{
            "WrongTypeFloat", [](json& j) { j["profiles"][1]["max_instances"] = 3.5; },
            "GPU model 'Test 8U', profile '2g': field 'max_instances' must be an integer"},
        CatalogBadCase{"WrongTypeBool", [](json& j) { j["confirmed"] = "yes"; },
                       "GPU model 'Test 8U': field 'confirmed' must be true or false"},
        CatalogBadCase{"WrongTypeNumber", [](json& j) { j["pcie_max_gbps"] = "30"; },
                       "GPU model 'Test 8U': field 'pcie_max_gbps' must be a number"},
        CatalogBadCase{"ShortNamesNotAList", [](json& j) { j["short_names"] = "TEST-8U"; },
                       "GPU model 'Test 8U': field 'short_names' must be a list of strings"},
        CatalogBadCase{"PciIdsNotAList", [](json& j) { j["pci_device_ids"] = "0x233010DE"; },
                       "GPU model 'Test 8U': field 'pci_device_ids' must be a list of strings"},
        CatalogBadCase{
            "PciIdWithoutVendor", [](json& j) { j["pci_device_ids"] = {"0x2330"}; },
            "GPU model 'Test 8U': field 'pci_device_ids': '0x2330' is not a PCI id such as "
            "0x233010DE (0x, the 4 hex digits of the device, then those of the vendor)"},
        CatalogBadCase{
            "PciIdNotHex", [](json& j) { j["pci_device_ids"] = {"0x23G010DE"}; },
            "GPU model 'Test 8U': field 'pci_device_ids': '0x23G010DE' is not a PCI id such "
            "as 0x233010DE (0x, the 4 hex digits of the device, then those of the vendor)"},
        CatalogBadCase{"EmptyEvidence", [](json& j) { j["placements_evidence"] = ""; },
                       "GPU model 'Test 8U': field 'placements_evidence' must not be empty"},
        CatalogBadCase{"EvidenceNotAString", [](json& j) { j["placements_evidence"] = 3; },
                       "GPU model 'Test 8U': field 'placements_evidence' must be a string"},
        CatalogBadCase{"IdOutOfRange",
                       [](json& j) { j["profiles"][0]["id"] = int64_t{5000000000}; },
                       "GPU model 'Test 8U', profile '1g': field 'id' is out of range"},
        CatalogBadCase{
            "NegativeId", [](json& j) { j["profiles"][0]["id"] = -2; },
            "GPU model 'Test 8U', profile '1g': field 'id' must be >= 0, or -1 if unknown"},
        CatalogBadCase{"PlacementStartNotInteger",
                       [](json& j) { j["profiles"][0]["placements"][2]["start"] = nullptr; },
                       "GPU model 'Test 8U', profile '1g': placements[2]: field 'start' must be an "
                       "integer"},
        CatalogBadCase{
            "PlacementsNotAList", [](json& j) { j["profiles"][0]["placements"] = "{0..6}:1"; },
            "GPU model 'Test 8U', profile '1g': field 'placements' must be a list of {start, "
            "size}"},
        CatalogBadCase{
            "PlacementOutsideGrid",
            [](json& j) {
              j["profiles"][3]["placements"][1] = {{"start", 6}, {"size", 4}};
            },
            "GPU model 'Test 8U', profile '3g': placement 6:4 does not fit the 8-unit grid"},
        CatalogBadCase{
            "PlacementSizesDiffer", [](json& j) { j["profiles"][3]["placements"][1]["size"] = 2; },
            "GPU model 'Test 8U', profile '3g': placements have different sizes (4 at start "
            "0, 2 at start 4)"},
        CatalogBadCase{
            "VariantWithOtherPlacements",
            [](json& j) {
              j["profiles"][2]["placements"] = json::parse(R"([{"start": 0, "size": 2}])");
            },
            "GPU model 'Test 8U', profile '2g+me': variant of '2g' but its compute slices or "
            "placements differ"},
        CatalogBadCase{
            "VariantOfUnknownBase", [](json& j) { j["profiles"][2]["variant_of"] = "2g.20gb"; },
            "GPU model 'Test 8U', profile '2g+me': variant of unknown profile '2g.20gb'"},
        CatalogBadCase{
            "UnknownTopLevelField", [](json& j) { j["placement_unit"] = 8; },
            "GPU model 'Test 8U': unknown field 'placement_unit' (allowed: schema, name, "
            "short_names, aliases, pci_device_ids, confirmed, placements_evidence, "
            "compute_slices, memory_slices, placement_units, pcie_max_gbps, power, "
            "driver_default, static_layouts, profiles, source, notes)"},
        CatalogBadCase{
            "UnknownProfileField", [](json& j) { j["profiles"][0]["compute_slice"] = 1; },
            "GPU model 'Test 8U', profile '1g': unknown field 'compute_slice' (allowed: ", false},
        CatalogBadCase{"UnknownPlacementField",
                       [](json& j) { j["profiles"][0]["placements"][0]["length"] = 1; },
                       "GPU model 'Test 8U', profile '1g': placements[0]: unknown field 'length' "
                       "(allowed: start, size)"},
        CatalogBadCase{
            "WrongSchema", [](json& j) { j["schema"] = "migsched-gpu-model/2"; },
            "GPU model 'Test 8U': field 'schema' is 'migsched-gpu-model/2'; this migsched "
            "reads 'migsched-gpu-model/1'"},
        CatalogBadCase{"NotesWrongType", [](json& j) { j["notes"] = 3; },
                       "GPU model 'Test 8U': field 'notes' must be a string or a list of strings"},
        CatalogBadCase{"ProfilesNotAList", [](json& j) { j["profiles"] = json::object(); },
                       "GPU model 'Test 8U': field 'profiles' must be a list of objects"},
        CatalogBadCase{"DriverDefaultUnknownField",
                       [](json& j) { j["driver_default"]["highest"] = true; },
                       "GPU model 'Test 8U', driver_default: unknown field 'highest' (allowed: "
                       "highest_first, orders)"},
        CatalogBadCase{"DriverDefaultOrderWrongStarts",
                       [](json& j) { j["driver_default"]["orders"]["1g"] = {6, 4, 5, 0, 1, 2, 7}; },
                       "GPU model 'Test 8U': driver-default order for '1g' must list each of its 7 "
                       "starts once"},
        CatalogBadCase{
            "LayoutUnknownProfile",
            [](json& j) { j["static_layouts"]["all-balanced"][0]["profile"] = "2g.10gb"; },
            "GPU model 'Test 8U': static layout 'all-balanced': unknown profile '2g.10gb'"},
        CatalogBadCase{"LayoutInvalidStart",
                       [](json& j) { j["static_layouts"]["all-balanced"][3]["start"] = 2; },
                       "GPU model 'Test 8U': static layout 'all-balanced': 3g@2 is not a valid "
                       "placement"},
        CatalogBadCase{
            "PowerNotAnObject", [](json& j) { j["power"] = 250; },
            "GPU model 'Test 8U': field 'power' must be an object {\"idle_w\": W, \"max_w\": "
            "W}"},
        CatalogBadCase{"PowerUnknownField",
                       [](json& j) {
                         j["power"] = {{"idle_w", 35}, {"tdp_w", 250}};
                       },
                       "GPU model 'Test 8U', power: unknown field 'tdp_w' (allowed: idle_w, max_w, "
                       "per_active_slice_w, notes)"},
        CatalogBadCase{"PowerWithoutIdle",
                       [](json& j) {
                         j["power"] = {{"max_w", 250}};
                       },
                       "GPU model 'Test 8U', power: field 'idle_w' is missing"},
        CatalogBadCase{"PowerIdleOnly",
                       [](json& j) {
                         j["power"] = {{"idle_w", 35}};
                       },
                       "GPU model 'Test 8U', power: give 'max_w' (board power limit) or "
                       "'per_active_slice_w', or both"},
        CatalogBadCase{"PowerNegative",
                       [](json& j) {
                         j["power"] = {{"idle_w", -1}, {"max_w", 250}};
                       },
                       "GPU model 'Test 8U', power: field 'idle_w' must be >= 0 (watts)"},
        // Regression (trial_power_huge): 1e308 W was taken and every energy figure was inf.
        CatalogBadCase{"PowerHuge",
                       [](json& j) {
                         j["power"] = {{"idle_w", 35}, {"max_w", 1e308}};
                       },
                       "GPU model 'Test 8U', power: field 'max_w' must be at most 100000 (watts), "
                       "got 1e+308"},
        CatalogBadCase{"PowerNotANumber",
                       [](json& j) {
                         j["power"] = {{"idle_w", "35"}, {"max_w", 250}};
                       },
                       "GPU model 'Test 8U', power: field 'idle_w' must be a number"},
        CatalogBadCase{"PowerMaxBelowIdle",
                       [](json& j) { j["power"] = {{"idle_w", 50}, {"max_w", 40}}; },
                       "GPU model 'Test 8U': power: max_w 40 is below idle_w 50"},
        // 35 + 7 x 40 = 315 > 250.
        CatalogBadCase{
            "PowerInconsistent",
            [](json&
                   j) { j["power"] = {{"idle_w", 35}, {"max_w", 250}, {"per_active_slice_w", 40}}; },
            "GPU model 'Test 8U': power: idle_w 35 + 7 compute slices x per_active_slice_w "
            "40 exceeds max_w 250"}),
    [](const ::testing::TestParamInfo<CatalogBadCase>& info) { return info.param.name; });

struct BadTextCase {
  std::string name;
  std::string text;
  std::string message;  // the message starts with "<path>: " + message
};

class CatalogLoaderBadTextTest : public ::testing::TestWithParam<BadTextCase> {};

TEST_P(CatalogLoaderBadTextTest, NamesFileAndProblem) {
  const std::string path = WriteTempFile("bad.json", GetParam().text);
  StatusOr<GpuModel> m = LoadGpuModelFile(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(), StartsWith(path + ": " + GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CatalogLoaderBadTextTest,
    ::testing::Values(
        BadTextCase{"Truncated", ValidModel().dump(2).substr(0, 200),
                    "invalid JSON: parse error at line"},
        BadTextCase{"Empty", "", "invalid JSON: parse error at line 1, column 1"},
        BadTextCase{"TrailingComma", R"({"name": "x",})", "invalid JSON: parse error at line 1"},
        BadTextCase{"DuplicateKey", R"({"name": "A", "compute_slices": 7, "name": "B"})",
                    "invalid JSON: key 'name' appears twice in one object"},
        BadTextCase{"TopLevelArray", "[]",
                    "the top level must be a JSON object (one GPU model per file)"}),
    [](const ::testing::TestParamInfo<BadTextCase>& info) { return info.param.name; });

// ---------------------------------------------------------------------------
// Folders and name clashes.

TEST(CatalogLoaderPathTest, DuplicateNameAcrossTwoFiles) {
  const std::string a = WriteTempFile("a.json", ValidModel().dump());
  json other = ValidModel();
  other["short_names"] = {"OTHER"};
  other["aliases"] = json::array();
  const std::string b = WriteTempFile("b.json", other.dump());
  WriteTempFile("README.txt", "not a model; ignored");
  Catalog c;
  Status st = LoadCatalogPath(fs::path(a).parent_path().string(), &c);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            b + ": " + kPrefix + ": name 'Test 8U' is already used by 'Test 8U' (" + a + ")");
  EXPECT_TRUE(c.models().empty()) << "a failing folder adds nothing";
}

TEST(CatalogLoaderPathTest, DuplicateAliasAcrossTwoFiles) {
  const std::string a = WriteTempFile("a.json", ValidModel().dump());
  json other = ValidModel();
  other["name"] = "Other";
  other["short_names"] = {"OTHER"};
  const std::string b = WriteTempFile("b.json", other.dump());
  Catalog c;
  Status st = LoadCatalogPath(fs::path(a).parent_path().string(), &c);
  EXPECT_EQ(st.message(),
            b + ": GPU model 'Other': name 'NVIDIA Test' is already used by 'Test 8U' (" + a + ")");
}

// Regression catalog_clash_named_no_file: the model it clashes with is named with its file, as
// within one folder (it said only "in the catalog").
TEST(CatalogLoaderPathTest, ClashWithTheBundledCatalog) {
  Catalog c;
  ASSERT_TRUE(LoadCatalogPath(GpusDir(), &c).ok());
  json j = ValidModel();
  j["aliases"] = {"nvidia a100-sxm4-40gb"};
  const std::string path = WriteTempFile("clash.json", j.dump());
  Status st = LoadCatalogPath(path, &c);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), path + ": " + kPrefix +
                              ": name 'nvidia a100-sxm4-40gb' is already used by 'A100 40GB' (" +
                              GpusDir() + "/a100-40gb.json)");
  EXPECT_EQ(c.models().size(), kBundled.size());
}

TEST(CatalogLoaderPathTest, BadFileInAFolderAddsNothing) {
  const std::string a = WriteTempFile("a.json", ValidModel().dump());
  json bad = ValidModel();
  bad["name"] = "Bad";
  bad["short_names"] = {"BAD"};
  bad["aliases"] = json::array();
  bad["profiles"][0]["compute_slices"] = "1";
  const std::string b = WriteTempFile("b.json", bad.dump());
  Catalog c;
  Status st = LoadCatalogPath(fs::path(a).parent_path().string(), &c);
  EXPECT_EQ(st.message(),
            b + ": GPU model 'Bad', profile '1g': field 'compute_slices' must be an integer");
  EXPECT_TRUE(c.models().empty());
}

TEST(CatalogLoaderPathTest, ExtraFileAfterTheBundledCatalog) {
  Catalog c;
  ASSERT_TRUE(LoadCatalogPath(GpusDir(), &c).ok());
  const std::string path = WriteTempFile("extra.json", ValidModel().dump());
  Status st = LoadCatalogPath(path, &c);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(c.models().size(), kBundled.size() + 1);
  ASSERT_TRUE(c.Find("test-8u").ok());
  EXPECT_EQ((*c.Find("test-8u"))->name(), "Test 8U");
}

TEST(CatalogLoaderPathTest, MissingPathsAreNotFound) {
  Catalog c;
  Status st = LoadCatalogPath("/nonexistent/gpus", &c);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_EQ(st.message(), "/nonexistent/gpus: cannot open: no such file or folder");
  StatusOr<GpuModel> m = LoadGpuModelFile("/nonexistent/x.json");
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(m.status().message(), "/nonexistent/x.json: cannot open: no such file");
}

TEST(CatalogLoaderPathTest, FolderWithoutModelsIsAnError) {
  const std::string dir = fs::path(WriteTempFile("notes.txt", "x")).parent_path().string();
  Catalog c;
  Status st = LoadCatalogPath(dir, &c);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_EQ(st.message(), dir + ": no GPU model files (*.json) in this folder");
}

}  // namespace
}  // namespace migsched
