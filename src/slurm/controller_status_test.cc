#include "slurm/controller_status.h"

#include <gtest/gtest.h>

namespace migsched::slurm {
namespace {

// A snapshot written by hand and the table it reads as: health, one line per
// node with the MIG counts Slurm can start jobs with (zero counts and the pad
// left out), each GPU's layout, the rooms, the waiting jobs, the lost
// allocations.
TEST(ControllerStatusTest, TheTableShowsWhatTheSnapshotHolds) {
  ControllerStatus s;
  s.partition = "mig";
  s.policy = "full";
  s.started_s = 1000;
  s.last_tick_s = 1099.5;
  s.tick_interval_s = 1;
  s.gate_open = true;
  StatusNode n1;
  n1.name = "n1";
  n1.usable = true;
  n1.slurm_state = "mixed";
  n1.gres = "mig:3g.20gb:1,mig:4g.20gb:1,mig:7g.40gb:0,mig:migsched-pad:17";
  n1.gpus = {{0,
              "A100 40GB",
              {{"4g.20gb", 0, "reservation", "slurm-room:0:4g.20gb:0"},
               {"3g.20gb", 4, "allocation", "slurm:12"}}}};
  StatusNode n2;
  n2.name = "n2";
  n2.usable = false;
  n2.error = "connection refused";
  n2.slurm_state = "idle";
  n2.gres = "mig:3g.20gb:0,mig:migsched-pad:19";
  s.nodes = {n1, n2};
  s.rooms = {{"n1", 0, "4g.20gb", 0, "slurm:13"}};
  s.waiting = {{13, "4g.20gb:1", "room on n1 GPU 0 4g.20gb@0: Slurm may start it", "13"}};
  s.lost = {{9, "n1", 1080}};
  auto table = FormatStatusTable(ToJson(s, 1100));
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(*table,
            "controller: healthy; partition mig UP (open); policy full; last tick 0.5 s ago\n"
            "\n"
            "NODE             USABLE  SLURM            MIG COUNTS\n"
            "n1               yes     mixed            mig:3g.20gb:1,mig:4g.20gb:1\n"
            "  GPU 0 A100 40GB: 4g.20gb@0 slurm-room:0:4g.20gb:0, 3g.20gb@4 slurm:12\n"
            "n2               no      idle             -\n"
            "  not usable: connection refused\n"
            "\n"
            "ROOMS (1)\n"
            "  n1 GPU 0 4g.20gb@0 for slurm:13\n"
            "\n"
            "WAITING JOBS (1)\n"
            "  JOB        REQUEST                  REASON\n"
            "  13         4g.20gb:1                room on n1 GPU 0 4g.20gb@0: Slurm may start it\n"
            "\n"
            "RUNNING IN SLURM, ALLOCATION GONE (1)\n"
            "  job 9 on n1 since 20 s\n");
  // Not a status document: a clear error.
  auto bad = FormatStatusTable(nlohmann::json{{"nodes", 1}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("not a controller status document: ", 0), 0u);
}

}  // namespace
}  // namespace migsched::slurm
