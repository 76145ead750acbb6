#include "nodeapi/api_types.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "nodeapi/node_client.h"
#include "nodeapi/request_json.h"
#include "testing/status_matchers.h"

namespace migsched {
namespace {

using json = nlohmann::json;

const HolderKind kEveryHolder[] = {HolderKind::kIdle, HolderKind::kJob, HolderKind::kAllocation,
                                   HolderKind::kReservation, HolderKind::kPlaceholder};

// The words of docs/api.md ("GPUs": an instance's holder), written out here.
TEST(HolderKindTest, EveryKindHasTheApiWordAndReadsBack) {
  const char* words[] = {"idle", "job", "allocation", "reservation", "placeholder"};
  for (size_t k = 0; k < std::size(kEveryHolder); ++k) {
    EXPECT_EQ(HolderKindName(kEveryHolder[k]), words[k]);
    ASSERT_OK_AND_ASSIGN(HolderKind back, ParseHolderKind(words[k]));
    EXPECT_EQ(back, kEveryHolder[k]) << words[k];
  }
  StatusOr<HolderKind> bad = ParseHolderKind("tenant");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "unknown holder 'tenant' (idle, job, allocation, reservation or placeholder)");
}

// What the daemon writes (GpuViewToJson) the client reads back (GpuViewFromJson)
// as the same holder, for every kind: the controllers read the daemon's own type.
TEST(HolderKindTest, AGpuViewReadBackKeepsEveryInstancesHolder) {
  GpuView g;
  g.index = 3;
  g.uuid = "GPU-3";
  g.model = "A100 40GB";
  g.placement_units = 8;
  int start = 0;
  for (HolderKind h : kEveryHolder) {
    InstanceView i;
    i.profile = "1g.5gb";
    i.start = start++;
    i.size = 1;
    i.busy = h != HolderKind::kIdle;
    i.holder = h;
    if (h == HolderKind::kJob || h == HolderKind::kAllocation) i.job = 7;
    if (h == HolderKind::kAllocation || h == HolderKind::kReservation) i.owner = "slurm:7";
    g.instances.push_back(i);
  }
  const json wire = json::parse(GpuViewToJson(g).dump());
  ASSERT_OK_AND_ASSIGN(GpuView back, GpuViewFromJson(wire));
  ASSERT_EQ(back.instances.size(), g.instances.size());
  for (size_t k = 0; k < g.instances.size(); ++k) {
    EXPECT_EQ(back.instances[k].holder, g.instances[k].holder) << k;
    EXPECT_EQ(back.instances[k].busy, g.instances[k].busy) << k;
    EXPECT_EQ(back.instances[k].owner, g.instances[k].owner) << k;
  }
}

// A holder word this client does not know is an answer it cannot read (kInternal
// naming the word), never an instance silently taken for a job's.
TEST(HolderKindTest, AnUnknownHolderFromTheDaemonIsAnErrorNotAJob) {
  const json wire = json::parse(R"({
    "index": 0, "uuid": "GPU-0", "model": "A100 40GB", "placement_units": 8,
    "instances": [{"profile": "1g.5gb", "start": 0, "size": 1, "busy": true,
                   "holder": "tenant", "job": 4}]
  })");
  StatusOr<GpuView> g = GpuViewFromJson(wire);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInternal);
  EXPECT_NE(g.status().message().find("unknown holder 'tenant'"), std::string::npos)
      << g.status().message();
}

// A reservation's placements read back from the API are the PlacementRefs the
// daemon's store keeps (one placement type on both sides).
TEST(PlacementRefTest, AReservationsPlacementsReadBackAsTheStoresPlacements) {
  const json wire = json::parse(R"({
    "owner": "slurm-room:n1:3g.20gb:0", "created_at": 100, "expires_at": 220,
    "placements": [{"gpu": 1, "profile": "3g.20gb", "start": 4, "size": 4,
                    "mig_uuid": "MIG-x", "gpu_uuid": "GPU-1"},
                   {"gpu": 0, "profile": "1g.5gb", "start": 6, "size": 1}]
  })");
  ASSERT_OK_AND_ASSIGN(ReservationView v, ReservationViewFromJson(wire));
  const ReservationRecord want{
      "slurm-room:n1:3g.20gb:0", {{1, "3g.20gb", 4}, {0, "1g.5gb", 6}}, 100, 220};
  EXPECT_EQ(v.record.owner, want.owner);
  EXPECT_EQ(v.record.placements, want.placements);
  EXPECT_EQ(v.record.created_at, want.created_at);
  EXPECT_EQ(v.record.expires_at, want.expires_at);
  EXPECT_EQ(v.gpu_uuids, (std::vector<std::string>{"GPU-1", ""}));
}

}  // namespace
}  // namespace migsched
