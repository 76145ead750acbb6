#include "daemon/fake_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "testing/test_util.h"

namespace migsched {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

// A100 40GB profile ids, from the table in docs/mig-hardware.md §2.2.
constexpr int k1g5 = 19;    // 1g.5gb     {0..6}:1, max 7
constexpr int k1g5me = 20;  // 1g.5gb+me  {0..6}:1, max 1
constexpr int k1g10 = 15;   // 1g.10gb    {0,2,4,6}:2, max 4
constexpr int k2g = 14;     // 2g.10gb    {0,2,4}:2, max 3
constexpr int k3g = 9;      // 3g.20gb    {0,4}:4, max 2
constexpr int k4g = 5;      // 4g.20gb    {0}:4
constexpr int k7g = 0;      // 7g.40gb    {0}:8

FakeBackend TwoA100(FakeFaults faults = {}) {
  const GpuModel* a100 = &testing::Model("A100-40GB");
  return FakeBackend({a100, a100}, faults);
}

TEST(FakeBackendTest, ListGpusReportsTheModelsAliasAndStableUuids) {
  FakeBackend backend = TwoA100();
  auto gpus = backend.ListGpus();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const BackendGpu& g = (*gpus)[i];
    EXPECT_EQ(g.index, i);
    // nvidia-smi name of the SXM4 board (docs/mig-hardware.md §2.2).
    EXPECT_EQ(g.name, "NVIDIA A100-SXM4-40GB");
    EXPECT_TRUE(g.mig_enabled);
    EXPECT_FALSE(g.mig_pending_change);
    // 7g.40gb's memorySizeMB, the largest profile (mig-hardware.md §2.2 table).
    EXPECT_EQ(g.memory_mib, 40192);
  }
  EXPECT_EQ((*gpus)[0].uuid, "GPU-fake-00000000-0000-0000-0000-000000000000");
  EXPECT_EQ((*gpus)[1].uuid, "GPU-fake-00000000-0000-0000-0000-000000000001");
}

TEST(FakeBackendTest, ListProfilesMatchesTheA100Table) {
  FakeBackend backend = TwoA100();
  auto profiles = backend.ListProfiles(0);
  ASSERT_TRUE(profiles.ok()) << profiles.status().ToString();
  // (id, index, compute slices, max instances, MiB, starts, size) from docs/mig-hardware.md §2.2.
  struct Row {
    int id, index, slices, max, mib;
    std::vector<int> starts;
    int size;
  };
  const std::vector<Row> expected = {
      {19, 0x0, 1, 7, 4864, {0, 1, 2, 3, 4, 5, 6}, 1},
      {20, 0x7, 1, 1, 4864, {0, 1, 2, 3, 4, 5, 6}, 1},
      {15, 0x9, 1, 4, 9856, {0, 2, 4, 6}, 2},
      {14, 0x1, 2, 3, 9856, {0, 2, 4}, 2},
      {9, 0x2, 3, 2, 19968, {0, 4}, 4},
      {5, 0x3, 4, 1, 19968, {0}, 4},
      {0, 0x4, 7, 1, 40192, {0}, 8},
  };
  ASSERT_EQ(profiles->size(), expected.size());
  for (const Row& row : expected) {
    SCOPED_TRACE("profile id " + std::to_string(row.id));
    const BackendProfile* found = nullptr;
    for (const BackendProfile& p : *profiles) {
      if (p.id == row.id) found = &p;
    }
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(found->nvml_profile_index, row.index);
    EXPECT_EQ(found->slice_count, row.slices);
    EXPECT_EQ(found->instance_count, row.max);
    EXPECT_EQ(found->memory_mib, row.mib);
    std::vector<Placement> placements;
    for (int s : row.starts) placements.push_back({s, row.size});
    EXPECT_EQ(found->placements, placements);
  }
}

// Creates on an empty A100 40GB: `existing` first (each must succeed), then
// `create`, whose outcome is derived from the placement table of
// docs/mig-hardware.md §2.2 (units a profile occupies = [start, start + size)).
struct CreateCase {
  std::string name;
  std::vector<std::pair<int, Placement>> existing;  // (profile id, placement)
  int profile_id;
  Placement placement;
  StatusCode code;      // kOk or the expected error
  std::string message;  // essential part of the error text
};

class FakeBackendCreateTest : public ::testing::TestWithParam<CreateCase> {};

TEST_P(FakeBackendCreateTest, EnforcesPlacementsLikeNvml) {
  const CreateCase& c = GetParam();
  FakeBackend backend = TwoA100();
  for (const auto& [id, p] : c.existing) {
    auto made = backend.CreateInstance(0, id, p);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
  }
  auto made = backend.CreateInstance(0, c.profile_id, c.placement);
  if (c.code == StatusCode::kOk) {
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    EXPECT_EQ(made->placement, c.placement);
    EXPECT_EQ(made->profile_id, c.profile_id);
    auto list = backend.ListInstances(0);
    ASSERT_TRUE(list.ok());
    EXPECT_EQ(list->size(), c.existing.size() + 1);
  } else {
    ASSERT_FALSE(made.ok());
    EXPECT_EQ(made.status().code(), c.code) << made.status().ToString();
    EXPECT_THAT(made.status().message(), HasSubstr(c.message));
    auto list = backend.ListInstances(0);
    ASSERT_TRUE(list.ok());
    EXPECT_EQ(list->size(), c.existing.size());  // nothing half-made
  }
}

INSTANTIATE_TEST_SUITE_P(
    A100Table, FakeBackendCreateTest,
    ::testing::Values(
        CreateCase{"FullGpuOnEmpty", {}, k7g, {0, 8}, StatusCode::kOk, ""},
        // 7g covers units 0-7, so 1g.5gb@6 (unit 6) overlaps GI 1.
        CreateCase{"OneSliceUnderFull",
                   {{k7g, {0, 8}}},
                   k1g5,
                   {6, 1},
                   StatusCode::kResourceExhausted,
                   "GPU 0: cannot create 1g.5gb (profile id 19) at placement 6:1: placement "
                   "units 6-6 overlap GPU instance 1 (7g.40gb (profile id 0) at 0:8, MIG-"},
        // 3g@0 covers 0-3 and 3g@4 covers 4-7: disjoint.
        CreateCase{"TwoThreeG", {{k3g, {0, 4}}}, k3g, {4, 4}, StatusCode::kOk, ""},
        // 2g@2 covers 2-3, inside 3g@0's 0-3.
        CreateCase{"TwoGInsideThreeG",
                   {{k3g, {0, 4}}},
                   k2g,
                   {2, 2},
                   StatusCode::kResourceExhausted,
                   "placement units 2-3 overlap GPU instance 1 (3g.20gb (profile id 9) at 0:4"},
        // 4g@0 (4 compute, units 0-3) + 3g@4 (3 compute, units 4-7) = 7 compute slices.
        CreateCase{"FourGPlusThreeG", {{k4g, {0, 4}}}, k3g, {4, 4}, StatusCode::kOk, ""},
        // 2g@4 covers 4-5, 1g.10gb@6 covers 6-7.
        CreateCase{"OneGTenNextToTwoG", {{k2g, {4, 2}}}, k1g10, {6, 2}, StatusCode::kOk, ""},
        // 3g@4 covers 4-7; 1g.10gb@6 holds 6-7.
        CreateCase{"ThreeGOverOneGTen",
                   {{k1g10, {6, 2}}},
                   k3g,
                   {4, 4},
                   StatusCode::kResourceExhausted,
                   "placement units 6-7 overlap GPU instance 1 (1g.10gb (profile id 15) at 6:2"},
        // 1g.10gb@6 covers 6-7; 1g.5gb@6 holds unit 6.
        CreateCase{"OneGTenOverOneG",
                   {{k1g5, {6, 1}}},
                   k1g10,
                   {6, 2},
                   StatusCode::kResourceExhausted,
                   "placement units 6-6 overlap GPU instance 1"},
        // 2g@4 is GI 2 (covers 4-5); 3g@4 covers 4-7: the error names GI 2, not GI 1.
        CreateCase{"NamesTheOverlappingInstance",
                   {{k2g, {0, 2}}, {k2g, {4, 2}}},
                   k3g,
                   {4, 4},
                   StatusCode::kResourceExhausted,
                   "placement units 4-5 overlap GPU instance 2 (2g.10gb (profile id 14) at 4:2"},
        CreateCase{"SevenOneGs",
                   {{k1g5, {0, 1}},
                    {k1g5, {1, 1}},
                    {k1g5, {2, 1}},
                    {k1g5, {3, 1}},
                    {k1g5, {4, 1}},
                    {k1g5, {5, 1}}},
                   k1g5,
                   {6, 1},
                   StatusCode::kOk,
                   ""},
        // 2g.10gb's placements are {0,2,4}:2 — not 6.
        CreateCase{"TwoGAtSixIsInvalid",
                   {},
                   k2g,
                   {6, 2},
                   StatusCode::kResourceExhausted,
                   "2g.10gb (profile id 14) at placement 6:2: not a valid placement of this "
                   "profile (valid: 0:2, 2:2, 4:2)"},
        // 1g.5gb cannot start at unit 7 (mig-hardware.md §2.4 note, same GA100 geometry).
        CreateCase{"OneGAtSevenIsInvalid",
                   {},
                   k1g5,
                   {7, 1},
                   StatusCode::kResourceExhausted,
                   "not a valid placement"},
        CreateCase{"ThreeGAtTwoIsInvalid",
                   {},
                   k3g,
                   {2, 4},
                   StatusCode::kResourceExhausted,
                   "(valid: 0:4, 4:4)"},
        CreateCase{"WrongSizeIsInvalid",
                   {},
                   k2g,
                   {0, 1},
                   StatusCode::kResourceExhausted,
                   "not a valid placement"},
        // 1g.5gb+me: Max 1 (one media engine set).
        CreateCase{"SecondMediaExtensionInstance",
                   {{k1g5me, {0, 1}}},
                   k1g5me,
                   {1, 1},
                   StatusCode::kResourceExhausted,
                   "already has 1 instance(s) of this profile"},
        CreateCase{"UnknownProfileId",
                   {},
                   42,
                   {0, 1},
                   StatusCode::kNotFound,
                   "GPU 0 (NVIDIA A100-SXM4-40GB) has no GPU-instance profile id 42"}),
    [](const ::testing::TestParamInfo<CreateCase>& info) { return info.param.name; });

TEST(FakeBackendTest, GpuInstanceIdsAreReusedButMigUuidsAreNot) {
  FakeBackend backend = TwoA100();
  auto a = backend.CreateInstance(0, k2g, {0, 2});
  auto b = backend.CreateInstance(0, k2g, {2, 2});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->gi_id, 1u);
  EXPECT_EQ(b->gi_id, 2u);
  EXPECT_EQ(a->ci_id, 0u);
  EXPECT_TRUE(a->has_compute_instance);
  EXPECT_THAT(a->mig_uuid, MatchesRegex("MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
                                        "[0-9a-f]{12}"));
  ASSERT_TRUE(backend.DestroyInstance(0, 1).ok());
  auto c = backend.CreateInstance(0, k1g10, {0, 2});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->gi_id, 1u);  // the freed id, as NVML does
  auto d = backend.CreateInstance(1, k1g10, {0, 2});
  ASSERT_TRUE(d.ok());
  std::set<std::string> uuids = {a->mig_uuid, b->mig_uuid, c->mig_uuid, d->mig_uuid};
  EXPECT_EQ(uuids.size(), 4u);
  EXPECT_EQ(backend.creates(), 4);
  EXPECT_EQ(backend.destroys(), 1);
  // Listed by ascending start.
  auto list = backend.ListInstances(0);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].placement, (Placement{0, 2}));
  EXPECT_EQ((*list)[0].mig_uuid, c->mig_uuid);
  EXPECT_EQ((*list)[1].placement, (Placement{2, 2}));
  EXPECT_EQ((*list)[1].mig_uuid, b->mig_uuid);
}

TEST(FakeBackendTest, DestroyUnknownInstanceIsNotFound) {
  FakeBackend backend = TwoA100();
  Status st = backend.DestroyInstance(0, 3);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_EQ(st.message(), "GPU 0: no GPU instance with id 3");
  EXPECT_EQ(backend.DestroyInstance(7, 1).code(), StatusCode::kNotFound);
}

TEST(FakeBackendTest, DestroyAnswersInUseNTimesPerInstance) {
  FakeFaults faults;
  faults.destroy_in_use = 2;
  FakeBackend backend = TwoA100(faults);
  auto a = backend.CreateInstance(0, k3g, {0, 4});
  auto b = backend.CreateInstance(0, k3g, {4, 4});
  ASSERT_TRUE(a.ok() && b.ok());
  for (int attempt = 0; attempt < 2; ++attempt) {
    Status st = backend.DestroyInstance(0, a->gi_id);
    EXPECT_EQ(st.code(), StatusCode::kUnavailable);
    EXPECT_THAT(st.message(), HasSubstr("in use"));
    EXPECT_THAT(st.message(), HasSubstr("GPU 0: cannot destroy GPU instance 1 (3g.20gb"));
  }
  EXPECT_TRUE(backend.DestroyInstance(0, a->gi_id).ok());
  // The count is per instance: b still answers "in use" twice.
  EXPECT_EQ(backend.DestroyInstance(0, b->gi_id).code(), StatusCode::kUnavailable);
  EXPECT_EQ(backend.DestroyInstance(0, b->gi_id).code(), StatusCode::kUnavailable);
  EXPECT_TRUE(backend.DestroyInstance(0, b->gi_id).ok());
}

TEST(FakeBackendTest, SetInUseBlocksDestroyUntilCleared) {
  FakeBackend backend = TwoA100();
  auto a = backend.CreateInstance(1, k7g, {0, 8});
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(backend.SetInUse(1, a->gi_id, true).ok());
  for (int attempt = 0; attempt < 3; ++attempt) {
    Status st = backend.DestroyInstance(1, a->gi_id);
    EXPECT_EQ(st.code(), StatusCode::kUnavailable);
    EXPECT_THAT(st.message(), HasSubstr("in use (processes are running on it)"));
  }
  ASSERT_TRUE(backend.SetInUse(1, a->gi_id, false).ok());
  EXPECT_TRUE(backend.DestroyInstance(1, a->gi_id).ok());
  EXPECT_EQ(backend.SetInUse(1, a->gi_id, true).code(), StatusCode::kNotFound);
}

TEST(FakeBackendTest, FailCreateFailsTheNextNCreates) {
  FakeFaults faults;
  faults.fail_create = 2;
  FakeBackend backend = TwoA100(faults);
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto made = backend.CreateInstance(0, k2g, {0, 2});
    ASSERT_FALSE(made.ok());
    EXPECT_EQ(made.status().code(), StatusCode::kUnavailable);
    EXPECT_THAT(made.status().message(), HasSubstr("injected failure"));
  }
  EXPECT_TRUE(backend.CreateInstance(0, k2g, {0, 2}).ok());
}

TEST(FakeBackendTest, DisappearGpuFaultTriggersAtFirstChange) {
  FakeFaults faults;
  faults.disappear_gpu = 1;
  FakeBackend backend = TwoA100(faults);
  // Discovery still sees it.
  ASSERT_EQ(backend.ListGpus()->size(), 2u);
  EXPECT_TRUE(backend.ListProfiles(1).ok());
  EXPECT_TRUE(backend.ListInstances(1).ok());
  // Other GPUs are unaffected.
  EXPECT_TRUE(backend.CreateInstance(0, k2g, {0, 2}).ok());
  auto made = backend.CreateInstance(1, k2g, {0, 2});
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(made.status().message(),
            "GPU 1 (GPU-fake-00000000-0000-0000-0000-000000000001) is gone: it fell off the bus "
            "(fake backend)");
  EXPECT_EQ(backend.ListInstances(1).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(backend.ListProfiles(1).status().code(), StatusCode::kUnavailable);
  auto gpus = backend.ListGpus();
  ASSERT_EQ(gpus->size(), 1u);
  EXPECT_EQ((*gpus)[0].index, 0);
}

TEST(FakeBackendTest, DisappearHook) {
  FakeBackend backend = TwoA100();
  auto a = backend.CreateInstance(0, k7g, {0, 8});
  ASSERT_TRUE(a.ok());
  backend.Disappear(0);
  EXPECT_EQ(backend.DestroyInstance(0, a->gi_id).code(), StatusCode::kUnavailable);
  EXPECT_EQ(backend.GetPcieThroughput(0).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(backend.ListGpus()->size(), 1u);
}

TEST(FakeBackendTest, MigDisabledGpuIsRefusedWithInstructions) {
  FakeBackend backend = TwoA100();
  backend.SetMigEnabled(1, false);
  EXPECT_FALSE((*backend.ListGpus())[1].mig_enabled);
  for (const Status& st : {backend.ListProfiles(1).status(), backend.ListInstances(1).status(),
                           backend.CreateInstance(1, k7g, {0, 8}).status()}) {
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(st.message(), HasSubstr("GPU 1 (NVIDIA A100-SXM4-40GB, GPU-fake-"));
    EXPECT_THAT(st.message(), HasSubstr("does not have MIG mode enabled"));
    EXPECT_THAT(st.message(), HasSubstr("sudo nvidia-smi -i 1 -mig 1"));
  }
  EXPECT_TRUE(backend.ListProfiles(0).ok());
}

TEST(FakeBackendTest, OutOfRangeGpuIsNotFound) {
  FakeBackend backend = TwoA100();
  auto st = backend.ListProfiles(2).status();
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_EQ(st.message(), "GPU 2 not found (the fake node has 2 GPUs)");
  EXPECT_EQ(backend.ListInstances(-1).status().code(), StatusCode::kNotFound);
}

TEST(FakeBackendTest, PcieThroughputOnlyWhenSet) {
  FakeBackend backend = TwoA100();
  EXPECT_EQ(backend.GetPcieThroughput(0).status().code(), StatusCode::kUnavailable);
  backend.SetPcieThroughput(0, {1000, 2000});
  auto t = backend.GetPcieThroughput(0);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->tx_kbps, 1000);
  EXPECT_EQ(t->rx_kbps, 2000);
  EXPECT_EQ(backend.name(), "fake");
}

TEST(FakeBackendTest, OverriddenProfilesAreEnforced) {
  FakeBackend backend = TwoA100();
  // An older driver without 1g.10gb (profile 15): docs/mig-hardware.md §2.2 "Older -lgipp dumps
  // lack IDs 20/15".
  std::vector<BackendProfile> profiles = BackendProfilesOf(testing::Model("A100-40GB"));
  std::erase_if(profiles, [](const BackendProfile& p) { return p.id == k1g10 || p.id == k1g5me; });
  backend.OverrideProfiles(0, profiles);
  EXPECT_EQ(backend.ListProfiles(0)->size(), 5u);
  EXPECT_EQ(backend.CreateInstance(0, k1g10, {0, 2}).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(backend.CreateInstance(1, k1g10, {0, 2}).ok());
}

// Regression: the state file was created with the process's umask (0644 where the backend is
// made before the daemon sets 077), though everything in a state dir is to be 0600.
TEST(FakeBackendTest, StateFileIsTheDaemonsAlone) {
  const GpuModel* a100 = &testing::Model("A100-40GB");
  const std::string path = testing::WriteTempFile("fake-state-mode.json", "");
  std::filesystem::remove(path);
  const mode_t old = ::umask(022);
  auto backend = FakeBackend::Open({a100}, {}, path);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  ASSERT_TRUE((*backend)->CreateInstance(0, k7g, {0, 8}).ok());
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(FakeBackendTest, StateFileKeepsInstancesAcrossRestarts) {
  const GpuModel* a100 = &testing::Model("A100-40GB");
  const std::string path = testing::WriteTempFile("fake-state-restart.json", "");
  std::filesystem::remove(path);
  std::string uuid_a, uuid_b;
  {
    auto backend = FakeBackend::Open({a100, a100}, {}, path);
    ASSERT_TRUE(backend.ok()) << backend.status().ToString();
    auto a = (*backend)->CreateInstance(1, k3g, {4, 4});
    auto b = (*backend)->CreateInstance(1, k2g, {0, 2});
    auto c = (*backend)->CreateInstance(0, k7g, {0, 8});
    ASSERT_TRUE(a.ok() && b.ok() && c.ok());
    ASSERT_TRUE((*backend)->DestroyInstance(0, c->gi_id).ok());
    uuid_a = a->mig_uuid;
    uuid_b = b->mig_uuid;
  }  // the "crash": nothing but the file survives
  auto backend = FakeBackend::Open({a100, a100}, {}, path);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  EXPECT_TRUE((*backend)->ListInstances(0)->empty());
  auto list = (*backend)->ListInstances(1);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].placement, (Placement{0, 2}));
  EXPECT_EQ((*list)[0].profile_id, k2g);
  EXPECT_EQ((*list)[0].gi_id, 2u);
  EXPECT_EQ((*list)[0].mig_uuid, uuid_b);
  EXPECT_EQ((*list)[1].placement, (Placement{4, 4}));
  EXPECT_EQ((*list)[1].gi_id, 1u);
  EXPECT_EQ((*list)[1].mig_uuid, uuid_a);
  // Still enforced after loading: 3g@0 covers 0-3, 2g@0 holds 0-1.
  EXPECT_EQ((*backend)->CreateInstance(1, k3g, {0, 4}).status().code(),
            StatusCode::kResourceExhausted);
  // The UUID counter continues: a new instance gets a UUID never seen before.
  auto d = (*backend)->CreateInstance(0, k7g, {0, 8});
  ASSERT_TRUE(d.ok());
  EXPECT_NE(d->mig_uuid, uuid_a);
  EXPECT_NE(d->mig_uuid, uuid_b);
  EXPECT_EQ(d->mig_uuid, "MIG-00000000-0001-4000-8000-000000000004");  // the 4th create
}

// Regression: `fake: {disappear_gpu: 9}` on a one-GPU node was taken without a word, and the
// fault it asked for never happened.
TEST(FakeBackendTest, AFaultForAGpuTheNodeLacksIsRefused) {
  const GpuModel* a100 = &testing::Model("A100-40GB");
  FakeFaults faults;
  faults.disappear_gpu = 9;
  auto backend = FakeBackend::Open({a100}, faults, "");
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.status().message(),
            "fake.disappear_gpu 9: the node has 1 GPU (indices 0-0); -1 for none");
  faults.disappear_gpu = 1;  // the second of two GPUs: taken
  EXPECT_TRUE(FakeBackend::Open({a100, a100}, faults, "").ok());
  faults.disappear_gpu = -1;  // none
  EXPECT_TRUE(FakeBackend::Open({a100}, faults, "").ok());
}

TEST(FakeBackendTest, BadStateFilesAreRefusedWithTheFileName) {
  const GpuModel* a100 = &testing::Model("A100-40GB");
  struct Case {
    std::string content;
    StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"not json", StatusCode::kInvalidArgument, "not a JSON object"},
      {R"({"schema": 3, "counter": 0, "gpus": [[]]})", StatusCode::kInvalidArgument,
       "schema is not \"migsched-fake-backend/1\""},
      {R"({"schema": "migsched-fake-backend/1", "counter": 0, "gpus": [[], []]})",
       StatusCode::kFailedPrecondition, "lists 2 GPUs but the configured node has 1"},
      // Regression: a file of another model (the node's `gpus:` changed while the daemon was
      // down) was read as if its instances were there: an A100's 1g.5gb came back as an H100's
      // 1g.10gb (both profile id 19).
      {R"({"schema": "migsched-fake-backend/1", "counter": 1, "models": ["H100 80GB"],
          "gpus": [[{"profile_id": 19, "start": 6, "size": 1, "gi_id": 1, "mig_uuid": "MIG-x"}]]})",
       StatusCode::kFailedPrecondition,
       "was written for GPUs [H100 80GB] but the configured node has [A100 40GB]; remove the "
       "file to start with empty GPUs"},
      {R"({"schema": "migsched-fake-backend/1", "counter": 0, "models": "A100 40GB",
          "gpus": [[]]})",
       StatusCode::kInvalidArgument, "`models` is not an array"},
      {R"({"schema": "migsched-fake-backend/1", "counter": 0, "gpus": [[{"profile_id": 9}]]})",
       StatusCode::kInvalidArgument, "gpus[0][0].start is missing or not an integer"},
      // 2g.10gb (id 14) has no placement at 6 (mig-hardware.md §2.2).
      {R"({"schema": "migsched-fake-backend/1", "counter": 1, "gpus": [[{"profile_id": 14,
          "start": 6, "size": 2, "gi_id": 1, "mig_uuid": "MIG-x"}]]})",
       StatusCode::kInvalidArgument, "gpus[0][0]: GPU 0: cannot create 2g.10gb"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].content);
    const std::string path =
        testing::WriteTempFile("fake-state-bad-" + std::to_string(i) + ".json", cases[i].content);
    auto backend = FakeBackend::Open({a100}, {}, path);
    ASSERT_FALSE(backend.ok());
    EXPECT_EQ(backend.status().code(), cases[i].code);
    EXPECT_THAT(backend.status().message(), HasSubstr("fake backend state file " + path));
    EXPECT_THAT(backend.status().message(), HasSubstr(cases[i].message));
  }
}

}  // namespace
}  // namespace migsched
