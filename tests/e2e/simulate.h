// `migsched simulate` as the end-to-end tests run it: the command line and
// its JSON summary, in one place. Test-only.
//
//   // A run that must succeed, judged by its summary:
//   nlohmann::json m = Simulate("1xA100-40GB", trace, {"--policy", "full"});
//   ASSERT_FALSE(m.is_null());
//   EXPECT_EQ(m["jobs_completed"], 4);
//   // A command line to run otherwise (an expected error, stdout wanted):
//   auto r = RunMigsched(SimulateArgs("1xA100-40GB", "paper-mix", {"--load", "0"}));
#ifndef MIGSCHED_TESTS_E2E_SIMULATE_H_
#define MIGSCHED_TESTS_E2E_SIMULATE_H_

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testing/test_util.h"

namespace migsched::testing {

// The arguments of `migsched simulate --cluster <cluster> --workload
// <workload> <more...>`, for RunMigsched.
inline std::vector<std::string> SimulateArgs(const std::string& cluster,
                                             const std::string& workload,
                                             const std::vector<std::string>& more = {}) {
  std::vector<std::string> args = {"simulate", "--cluster", cluster, "--workload", workload};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// Runs `migsched simulate --cluster <cluster> --workload <workload> <more...>
// --json <a file of the test's temp dir> --quiet` and returns the JSON
// summary. A run that does not exit 0 fails the test (with its stderr) and
// returns null (which throws on a key lookup, so a test that goes on fails
// rather than reading garbage; ASSERT_FALSE(m.is_null()) stops it).
inline nlohmann::json Simulate(const std::string& cluster, const std::string& workload,
                               const std::vector<std::string>& more = {}) {
  const std::string json = WriteTempFile("simulate-summary.json", "");
  std::vector<std::string> args = SimulateArgs(cluster, workload, more);
  args.insert(args.end(), {"--json", json, "--quiet"});
  const CommandResult r = RunMigsched(args);
  EXPECT_EQ(r.exit_code, 0) << "migsched simulate failed: " << r.err;
  if (r.exit_code != 0) return nullptr;
  return ReadJson(json);
}

}  // namespace migsched::testing

#endif  // MIGSCHED_TESTS_E2E_SIMULATE_H_
