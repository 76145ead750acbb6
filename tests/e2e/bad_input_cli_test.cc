// Bad input to the CLI, end to end: every flag value that cannot be honoured
// is refused (never ignored), before any work, with a message naming the flag,
// the file or the path and the reason. The expected messages are written here
// from what each check promises (cli/sim_flags.h, cli/output_files.h,
// cli/memory_check.h, io/trace_reader.h), not copied from a run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "e2e/simulate.h"
#include "testing/test_util.h"

namespace migsched {
namespace {

namespace fs = std::filesystem;
using ::migsched::testing::MakeTempDir;
using ::migsched::testing::ReadFile;
using ::migsched::testing::ReadJson;
using ::migsched::testing::RunMigsched;
using ::migsched::testing::Simulate;
using ::migsched::testing::SimulateArgs;
using ::migsched::testing::WriteTempFile;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

const char kTrace[] =
    "id,arrival_s,profile,duration_s\n"
    "a,0,1g.5gb,10\n"
    "b,100,1g.5gb,10\n";

// The cluster of the runs below.
const char kOneA100[] = "1xA100-40GB";

struct FlagCase {
  std::vector<std::string> args;
  std::string error;  // the whole first line of stderr
};

// Values CLI11 would take but that mean nothing: refused while parsing
// (exit 2, a usage error), naming the flag and what it must be.
TEST(BadFlagValuesTest, NumbersThatMeanNothingAreRefusedByName) {
  const std::string trace = WriteTempFile("t.csv", kTrace);
  const std::vector<FlagCase> cases = {
      {SimulateArgs(kOneA100, "paper-mix", {"--load", "0"}),
       "--load: must be a number from 0.000001 to 1000000, got '0'"},
      {SimulateArgs(kOneA100, "paper-mix", {"--load", "nan"}),
       "--load: must be a number from 0.000001 to 1000000, got 'nan'"},
      // 1e400 is beyond double's range: not "inf", not "a number > 0".
      {SimulateArgs(kOneA100, "paper-mix", {"--load", "1e400"}),
       "--load: must be a number from 0.000001 to 1000000, got '1e400'"},
      {SimulateArgs(kOneA100, "paper-mix", {"--load", "-0.5"}),
       "--load: must be a number from 0.000001 to 1000000, got '-0.5'"},
      // An unsigned seed: -1 is not read as 2^64 - 1.
      {SimulateArgs(kOneA100, "paper-mix", {"--seed", "-1"}),
       "--seed: must be an integer in 0..18446744073709551615, got '-1'"},
      {SimulateArgs(kOneA100, "paper-mix", {"--seed", "18446744073709551616"}),
       "--seed: must be an integer in 0..18446744073709551615, got '18446744073709551616'"},
      // --jobs 0 used to mean "the default" on paper-mix (200 jobs).
      {SimulateArgs(kOneA100, "paper-mix", {"--jobs", "0"}),
       "--jobs: must be an integer in 1..2147483647, got '0'"},
      {SimulateArgs(kOneA100, trace, {"--jobs", "-4"}),
       "--jobs: must be an integer in 1..2147483647, got '-4'"},
      {{"compare", "--cluster", "1xA100-40GB", "--workload", trace, "--threads", "-3"},
       "--threads: must be an integer in 1..4096, got '-3'"},
      {{"compare", "--cluster", "1xA100-40GB", "--workload", trace, "--threads", "0"},
       "--threads: must be an integer in 1..4096, got '0'"},
      {{"sweep", "--cluster", "1xA100-40GB", "--workload", trace, "--param", "threshold=0.2",
        "--threads", "-1"},
       "--threads: must be an integer in 1..4096, got '-1'"},
      {SimulateArgs(kOneA100, "paper-mix", {"--pcie-share", "2"}),
       "--pcie-share: must be a number in [0, 1], got '2'"},
      {SimulateArgs(kOneA100, "paper-mix", {"--threshold", "nan"}),
       "--threshold: must be a number in [0, 1], got 'nan'"},
      // Regression (trial_load_underflow): 1e-308 underflows strtod, and the message called it
      // not "a finite number > 0"; a load of 1e-300 drew arrivals years apart that no time could
      // hold. The range says what is taken.
      {SimulateArgs(kOneA100, "paper-mix", {"--load", "1e-308"}),
       "--load: must be a number from 0.000001 to 1000000, got '1e-308'"},
      {SimulateArgs(kOneA100, "paper-mix", {"--load", "1e7"}),
       "--load: must be a number from 0.000001 to 1000000, got '1e7'"},
      {SimulateArgs(kOneA100, "paper-mix", {"--reconfig-ms", "-1"}),
       "--reconfig-ms: must be a number of milliseconds from 0 to 3600000 (an hour), got '-1'"},
      // Regression (trial_reconfig_ms_huge): 1e308 ms was taken; every time and the energy of the
      // run came out infinite or hundreds of digits long.
      {SimulateArgs(kOneA100, "paper-mix", {"--reconfig-ms", "1e308"}),
       "--reconfig-ms: must be a number of milliseconds from 0 to 3600000 (an hour), got '1e308'"},
      // Regression (trial_latency_got_twice): the message said "got" twice.
      {SimulateArgs(kOneA100, "paper-mix", {"--reconfig-latency", "lognormal:250,1e300"}),
       "--reconfig-latency: lognormal: sigma must be a number from 0 to 10 (e^10 = 22026 times "
       "the median per standard deviation; measured MIG operations have 0.7-1), got 1e+300 (in "
       "'lognormal:250,1e300')"},
      {SimulateArgs(kOneA100, "paper-mix", {"--reconfig-latency", "fixed:1e9"}),
       "--reconfig-latency: create latency: fixed: milliseconds must be a number from 0 to "
       "3600000, got 1000000000"},
      // Regression (trial_empty_output_name): an output flag given "" wrote nothing, silently.
      {SimulateArgs(kOneA100, "paper-mix", {"--json", ""}), "--json: must name a file, got ''"},
      {{"compare", "--cluster", "1xA100-40GB", "--workload", trace, "--jobs-csv", ""},
       "--jobs-csv: must name a file, got ''"},
      {{"sweep", "--cluster", "1xA100-40GB", "--workload", trace, "--param", "threshold=0.2",
        "--report", ""},
       "--report: must name a file, got ''"},
      {SimulateArgs(kOneA100, "paper-mix", {"--reconfig-latency", "gamma:2"}),
       "--reconfig-latency: must be fixed:MS, lognormal:MEDIAN_MS,SIGMA, empirical:FILE or "
       "field, got 'gamma:2'"},
      {SimulateArgs(kOneA100, "paper-mix", {"--reconfig-latency", "destroy=lognormal:0,1"}),
       "--reconfig-latency: lognormal:MEDIAN_MS,SIGMA needs MEDIAN_MS > 0, got 'lognormal:0,1'"},
      {SimulateArgs(kOneA100, "paper-mix", {"--mode", "fill", "--fill-target", "inf"}),
       "--fill-target: must be a number > 0 and at most 100, got 'inf'"},
      // Regression (trial_fill_target_internal_name): 150 passed the flag's check and was then
      // refused by the simulator's own name for it (fill_target).
      {SimulateArgs(kOneA100, "paper-mix", {"--mode", "fill", "--fill-target", "150"}),
       "--fill-target: must be a number > 0 and at most 100, got '150'"},
  };
  for (const FlagCase& c : cases) {
    auto r = RunMigsched(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.error;
    EXPECT_THAT(r.err, StartsWith(c.error + "\n")) << c.error;
    EXPECT_THAT(r.out, IsEmpty()) << c.error;
  }
}

// Flags that apply to some workloads or modes only: given where they would be
// ignored, the run is refused and told where they apply (exit 1).
TEST(BadFlagValuesTest, FlagsThatWouldBeIgnoredAreRefused) {
  const std::string trace = WriteTempFile("t.csv", kTrace);
  const std::vector<FlagCase> cases = {
      {SimulateArgs(kOneA100, trace, {"--arrivals", "trace-order"}),
       "migsched simulate: --arrivals trace-order: a trace file keeps its own arrival times "
       "unless --load is given; give --load to regenerate them"},
      {SimulateArgs(kOneA100, "paper-mix", {"--arrivals", "trace-order"}),
       "migsched simulate: --arrivals: paper-mix always draws Poisson arrivals at --load; "
       "--arrivals applies to alibaba: and trace files"},
      {SimulateArgs(kOneA100, trace, {"--pcie-share", "0.5"}),
       "migsched simulate: --pcie-share applies to the generated workloads only (paper-mix, churn, "
       "serving, training; a trace gives each job's pcie_gbps)"},
      {SimulateArgs(kOneA100, trace, {"--fill-target", "1.1"}),
       "migsched simulate: --fill-target applies to --mode fill only"},
      {SimulateArgs(kOneA100, trace, {"--mode", "fill", "--reconfig-latency", "field"}),
       "migsched simulate: --reconfig-latency applies to --mode online only (fill mode has no "
       "time)"},
      // Regression: in fill mode (jobs placed at once in workload order, none ending) these were
      // accepted and changed nothing, while --expected-ends was refused there.
      {SimulateArgs(kOneA100, trace, {"--mode", "fill", "--load", "0.5"}),
       "migsched simulate: --load applies to --mode online only (fill mode ignores arrival "
       "times)"},
      {SimulateArgs(kOneA100, "alibaba:x.csv", {"--mode", "fill", "--arrivals", "poisson"}),
       "migsched simulate: --arrivals applies to --mode online only (fill mode ignores arrival "
       "times)"},
      {SimulateArgs(kOneA100, "paper-mix", {"--mode", "fill", "--duration-cap", "60"}),
       "migsched simulate: --duration-cap applies to --mode online only (fill mode ignores "
       "durations)"},
      {SimulateArgs(kOneA100, trace, {"--mode", "fill", "--max-skip-seconds", "0"}),
       "migsched simulate: --max-skip-seconds applies to --mode online only (fill mode has no "
       "queue)"},
      {SimulateArgs(kOneA100, trace, {"--mode", "fill", "--idle-ttl", "0"}),
       "migsched simulate: --idle-ttl applies to --mode online only (fill mode has no "
       "completions)"},
      // Regression (trial_fill_mode_ignored_flags): fill mode places each job at once or counts
      // it failed, never queues, moves a job or keeps time; these were taken and changed nothing.
      {SimulateArgs(kOneA100, trace, {"--mode", "fill", "--reconfig-ms", "5000"}),
       "migsched simulate: --reconfig-ms applies to --mode online only (fill mode has no time)"},
      {SimulateArgs(kOneA100, trace, {"--mode", "fill", "--no-contention"}),
       "migsched simulate: --no-contention applies to --mode online only (fill mode has no "
       "time)"},
      {SimulateArgs(kOneA100, trace, {"--mode", "fill", "--max-wait", "0"}),
       "migsched simulate: --max-wait applies to --mode online only (fill mode has no queue)"},
      {SimulateArgs(kOneA100, trace, {"--mode", "fill", "--queue-order", "response-ratio"}),
       "migsched simulate: --queue-order applies to --mode online only (fill mode has no queue)"},
      {SimulateArgs(kOneA100, trace, {"--mode", "fill", "--migration", "on"}),
       "migsched simulate: --migration applies to --mode online only (fill mode moves no job)"},
      {SimulateArgs(kOneA100, trace, {"--mode", "fill", "--checkpoint-interval", "5"}),
       "migsched simulate: --checkpoint-interval applies to --mode online only (fill mode moves "
       "no job)"},
      {{"sweep", "--cluster", "1xA100-40GB", "--workload", trace, "--mode", "fill", "--param",
        "max-wait=0,60"},
       "migsched sweep: --param max-wait: --max-wait applies to --mode online only (fill mode has "
       "no queue)"},
      {{"sweep", "--cluster", "1xA100-40GB", "--workload", trace, "--mode", "fill", "--param",
        "idle-ttl=0,60"},
       "migsched sweep: --param idle-ttl: --idle-ttl applies to --mode online only (fill mode has "
       "no completions)"},
      {SimulateArgs(kOneA100, trace, {"--reconfig-ms", "5", "--reconfig-latency", "field"}),
       "migsched simulate: --reconfig-ms and --reconfig-latency both given: --reconfig-ms MS is "
       "--reconfig-latency fixed:MS; give one"},
      {SimulateArgs(kOneA100, trace,
                    {"--reconfig-latency", "fixed:1", "--reconfig-latency", "fixed:2"}),
       "migsched simulate: --reconfig-latency: the create latency is given twice ('fixed:2')"},
      {SimulateArgs(kOneA100, trace, {"--snapshot-at", "5"}),
       "migsched simulate: --snapshot-at sets the slot maps of --report; give --report FILE.html "
       "too"},
      {{"compare", "--cluster", "1xA100-40GB", "--workload", trace, "--snapshot-at", "5"},
       "migsched compare: --snapshot-at sets the slot maps of --report; give --report FILE.html "
       "too"},
      // Regression: in fill mode --timeline-csv wrote a header alone (fill mode has no timeline),
      // and nothing wrote the fill curve that docs/formats/outputs.md describes.
      {SimulateArgs(kOneA100, "paper-mix", {"--mode", "fill", "--timeline-csv", "t.csv"}),
       "migsched simulate: --timeline-csv is the timeline of --mode online; the curve of fill "
       "mode is --fill-curve-csv FILE"},
      {SimulateArgs(kOneA100, trace, {"--fill-curve-csv", "f.csv"}),
       "migsched simulate: --fill-curve-csv is the load curve of --mode fill; an online run has "
       "--timeline-csv"},
  };
  for (const FlagCase& c : cases) {
    auto r = RunMigsched(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.error;
    EXPECT_EQ(r.err, c.error + "\n");
    EXPECT_THAT(r.out, IsEmpty()) << c.error;
  }
}

// Regression: `--policies first-fit,,lb` ran (the empty name skipped) while `--policies ''` was
// refused, and a policy named by its name and its alias ran twice (as a name given twice did
// before it was refused: two equal rows). Each is bad usage (exit 2), refused while parsing,
// naming the entry; in compare and report alike.
// Regression (RenamedOptionSaysItsNewName): --speculative-moves became --defrag-passes; the old
// name was refused as an argument CLI11 did not expect, without the new one.
TEST(BadFlagValuesTest, ARenamedOptionSaysItsNewName) {
  const std::string trace = WriteTempFile("t.csv", kTrace);
  for (const std::string value : {"on", "off"}) {
    auto r = RunMigsched(
        {"simulate", "--cluster", kOneA100, "--workload", trace, "--speculative-moves", value});
    EXPECT_EQ(r.exit_code, 2) << value;
    EXPECT_THAT(r.err, StartsWith("--speculative-moves: speculative-moves is now defrag-passes "
                                  "(on: always, off: while-waiting)\n"))
        << value;
    EXPECT_THAT(r.out, IsEmpty());
  }
  // Not listed in --help: only the new name is.
  auto help = RunMigsched({"simulate", "--help"});
  EXPECT_THAT(help.out, HasSubstr("--defrag-passes"));
  EXPECT_THAT(help.out, ::testing::Not(HasSubstr("speculative")));
}

TEST(BadFlagValuesTest, EmptyOrRepeatedPoliciesAreUsageErrors) {
  const std::string trace = WriteTempFile("t.csv", kTrace);
  const std::string html = WriteTempFile("r.html", "");
  const std::vector<std::string> compare = {"compare", "--cluster", kOneA100, "--workload", trace};
  auto with = [](std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  const std::vector<FlagCase> cases = {
      {with(compare, {"--policies", "first-fit,,lb"}),
       "--policies: entry 2 of 'first-fit,,lb' is empty: give comma-separated policy names, each "
       "once"},
      {with(compare, {"--policies", ""}),
       "--policies: entry 1 of '' is empty: give comma-separated policy names, each once"},
      {with(compare, {"--policies", "first-fit,lb,"}),
       "--policies: entry 3 of 'first-fit,lb,' is empty: give comma-separated policy names, each "
       "once"},
      {with(compare, {"--policies", "first-fit,full,first-fit"}),
       "--policies: 'first-fit' is given twice"},
      {with(compare, {"--policies", "frag-aware,lb+frag"}),
       "--policies: 'frag-aware' and 'lb+frag' are the same policy (lb+frag), given twice"},
      {{"report", "--cluster", kOneA100, "--workload", trace, "-o", html, "--policies",
        "lb+frag,frag-aware"},
       "--policies: 'lb+frag' and 'frag-aware' are the same policy (lb+frag), given twice"},
      {{"report", "--cluster", kOneA100, "--workload", trace, "-o", html, "--policies",
        "first-fit,,lb"},
       "--policies: entry 2 of 'first-fit,,lb' is empty: give comma-separated policy names, each "
       "once"},
  };
  for (const FlagCase& c : cases) {
    auto r = RunMigsched(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.error;
    EXPECT_THAT(r.err, StartsWith(c.error + "\n")) << c.error;
    EXPECT_THAT(r.out, IsEmpty()) << c.error;
  }
  // A list of distinct policies still runs, each once.
  auto ok = RunMigsched(with(compare, {"--policies", "first-fit,frag-aware", "--quiet"}));
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("\nfirst-fit "));
  EXPECT_THAT(ok.out, HasSubstr("\nfrag-aware "));
}

TEST(BadFlagValuesTest, ValuesThatMeanSomethingAreHonoured) {
  const std::string trace = WriteTempFile("t.csv", kTrace);
  const std::string json = WriteTempFile("out.json", "");
  // The largest seed is a seed, stored as given.
  nlohmann::json seed = Simulate(kOneA100, "paper-mix", {"--seed", "18446744073709551615"});
  ASSERT_FALSE(seed.is_null());
  EXPECT_EQ(seed["settings"]["seed"].get<uint64_t>(), 18446744073709551615ull);
  // --reconfig-latency field: the preset's distributions in the settings, no single reconfig_ms.
  nlohmann::json field = Simulate(kOneA100, "paper-mix", {"--reconfig-latency", "field"});
  ASSERT_FALSE(field.is_null());
  const auto settings = field["settings"];
  EXPECT_TRUE(settings["reconfig_ms"].is_null());
  EXPECT_EQ(settings["reconfig_latency"]["create"], "lognormal:250,1");
  EXPECT_EQ(settings["reconfig_latency"]["destroy"], "lognormal:1000,0.7");
  // --arrivals trace-order with --load on a file: regenerated at that load.
  auto order = RunMigsched(SimulateArgs(
      kOneA100, trace, {"--arrivals", "trace-order", "--load", "0.5", "--json", json, "--quiet"}));
  ASSERT_EQ(order.exit_code, 0) << order.err;
  EXPECT_THAT(order.out, HasSubstr("t.csv (2 jobs, trace-order arrivals at offered load 0.5)"));
  EXPECT_EQ(ReadJson(json)["settings"]["load"].get<double>(), 0.5);
  EXPECT_EQ(ReadJson(json)["settings"]["arrivals"], "trace-order");
  // Regression (json_arrivals_poisson_for_a_file): the file's own arrival times were recorded as
  // "poisson" (the flag's default); they are "file", with no load.
  auto own = RunMigsched(SimulateArgs(kOneA100, trace, {"--json", json, "--quiet"}));
  ASSERT_EQ(own.exit_code, 0) << own.err;
  EXPECT_EQ(ReadJson(json)["settings"]["arrivals"], "file");
  EXPECT_TRUE(ReadJson(json)["settings"]["load"].is_null());
  // Regression (no_offered_load_for_a_file): what a file's own times offer is said. By hand
  // (§10): three jobs, a 7g.40gb (share 1) of 12 s, a 1g.5gb (1/7) of 14 s and a 2x3g.20gb
  // (2 x 3/7) of 7 s, arriving at 0, 4 and 8 s: mean work (12 + 2 + 6) / 3 = 6.667 GPU-s over a
  // mean gap of 4 s on one GPU: 1.67.
  const std::string three =
      WriteTempFile("three.csv",
                    "id,arrival_s,profile,count,duration_s\na,0,7g.40gb,1,12\nb,4,1g.5gb,1,14\n"
                    "c,8,3g.20gb,2,7\n");
  auto offered = RunMigsched(SimulateArgs("2xA100-40GB", three, {}));
  ASSERT_EQ(offered.exit_code, 0) << offered.err;
  EXPECT_THAT(offered.out, HasSubstr("the file's arrival times offer a load of 0.83 ("));
  auto one_gpu = RunMigsched(SimulateArgs(kOneA100, three, {}));
  EXPECT_THAT(one_gpu.out, HasSubstr("the file's arrival times offer a load of 1.67 ("));
  // --jobs N on paper-mix: N jobs.
  nlohmann::json jobs = Simulate(kOneA100, "paper-mix", {"--jobs", "7"});
  ASSERT_FALSE(jobs.is_null());
  EXPECT_EQ(jobs["jobs_total"].get<int>(), 7);
}

TEST(MemoryCheckCliTest, ARunTooLargeForTheMachineIsRefusedWithItsEstimate) {
  // 2147483647 paper-mix jobs, one simulation without records: 32 MB + 2147483647 × (250 B of
  // workload + 300 B of simulation) = 1,181,148,005,850 B = 1181.1 GB, more than any test
  // machine has. Refused before generating a single job.
  auto r = RunMigsched(SimulateArgs(kOneA100, "paper-mix", {"--jobs", "2147483647", "--quiet"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, StartsWith("migsched simulate: this run needs about 1181.1 GB of memory "
                                "(2147483647 jobs) but "));
  EXPECT_THAT(r.err,
              EndsWith(" is available: lower --jobs, or give --no-memory-check to run anyway\n"));
  // compare with 2 policies at once: 32 MB + 2147483647 × (250 + 2 × 300) B = 1825.4 GB.
  auto c =
      RunMigsched({"compare", "--cluster", "1xA100-40GB", "--workload", "paper-mix", "--jobs",
                   "2147483647", "--policies", "first-fit,best-fit", "--threads", "2", "--quiet"});
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_THAT(c.err, StartsWith("migsched compare: this run needs about 1825.4 GB of memory "
                                "(2147483647 jobs; 2 simulations at once) but "));
  EXPECT_THAT(c.err, EndsWith(" is available: lower --jobs or --threads, or give "
                              "--no-memory-check to run anyway\n"));
}

TEST(ProgressCliTest, GeneratingALargeWorkloadShowsProgress) {
  // 1,000,000 paper-mix jobs (fill mode stops early, so the run is short):
  // the generation reports at least its end (the simulation then its own).
  auto r = RunMigsched({"simulate", "--cluster", "4xA100-40GB", "--workload", "paper-mix", "--jobs",
                        "1000000", "--mode", "fill"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("migsched: generating paper-mix: 100.0% (1000000/1000000 jobs)\n"));
}

TEST(OutputPathsCliTest, MissingFoldersAreCreatedBeforeTheRun) {
  const fs::path dir = MakeTempDir("outputs");
  const fs::path json = dir / "a" / "b" / "run.json";
  const fs::path csv = dir / "c" / "jobs.csv";
  auto r =
      RunMigsched(SimulateArgs(kOneA100, WriteTempFile("t.csv", kTrace),
                               {"--json", json.string(), "--jobs-csv", csv.string(), "--quiet"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadJson(json)["jobs_completed"].get<int>(), 2);
  EXPECT_THAT(ReadFile(csv), StartsWith("id,name,request,outcome,"));
}

TEST(OutputPathsCliTest, UnwritableOutputsFailAtOnceWithTheReason) {
  const std::string trace = WriteTempFile("t.csv", kTrace);
  const std::string folder = MakeTempDir("a-folder").string();
  const std::string file = WriteTempFile("a-file", "");
  const std::string json = WriteTempFile("same.json", "");
  const std::string latencies = WriteTempFile("latencies.txt", "23\n250\n");
  // A data folder of its own, with one GPU model file copied from the bundled catalog.
  const fs::path data = MakeTempDir("data-dir");
  fs::create_directories(data / "gpus");
  const fs::path model = data / "gpus" / "a100-40gb.json";
  fs::copy_file(fs::path(::migsched::testing::SourceDir()) / "data" / "gpus" / "a100-40gb.json",
                model);
  const std::vector<FlagCase> cases = {
      {SimulateArgs(kOneA100, trace, {"--json", folder}),
       "migsched simulate: --json " + folder + ": is a folder, not a file"},
      {SimulateArgs(kOneA100, trace, {"--jobs-csv", file + "/jobs.csv"}),
       "migsched simulate: --jobs-csv " + file + "/jobs.csv: " + file + " is a file, not a folder"},
      {SimulateArgs(kOneA100, trace, {"--timeline-csv", file + "/x/t.csv"}),
       "migsched simulate: --timeline-csv " + file + "/x/t.csv: cannot create the folder " + file +
           "/x: Not a directory"},
      {SimulateArgs(kOneA100, trace, {"--json", json, "--jobs-csv", json}),
       "migsched simulate: --jobs-csv " + json + ": --json writes the same file"},
      {SimulateArgs(kOneA100, trace, {"--report", folder}),
       "migsched simulate: --report " + folder + ": is a folder, not a file"},
      {{"compare", "--cluster", "1xA100-40GB", "--workload", trace, "--json", folder},
       "migsched compare: --json " + folder + ": is a folder, not a file"},
      {{"sweep", "--cluster", "1xA100-40GB", "--workload", trace, "--param", "threshold=0.2",
        "--report", folder},
       "migsched sweep: --report " + folder + ": is a folder, not a file"},
      // Regression: an output naming the input trace overwrote it without a word.
      {SimulateArgs(kOneA100, trace, {"--export-workload", trace}),
       "migsched simulate: --export-workload " + trace +
           ": --workload reads that file; an output would overwrite it"},
      {{"compare", "--cluster", "1xA100-40GB", "--workload", trace, "--json", trace},
       "migsched compare: --json " + trace +
           ": --workload reads that file; an output would overwrite it"},
      {{"report", "--from", json, "-o", json},
       "migsched report: -o " + json + ": --from reads that file; an output would overwrite it"},
      // Regression (trial_output_over_catalog): an output naming a GPU model file of the data
      // folder replaced it, and every later run failed on the catalog.
      {SimulateArgs(kOneA100, trace, {"--data-dir", data.string(), "--jobs-csv", model.string()}),
       "migsched simulate: --jobs-csv " + model.string() + ": the GPU catalog (" +
           (data / "gpus").string() + ") reads that file; an output would overwrite it"},
      // Regression: --json over the measured latencies of --reconfig-latency empirical:FILE
      // replaced them with the run's JSON.
      {SimulateArgs(kOneA100, trace,
                    {"--reconfig-latency", "destroy=empirical:" + latencies, "--json", latencies}),
       "migsched simulate: --json " + latencies +
           ": --reconfig-latency reads that file; an output would overwrite it"},
  };
  for (const FlagCase& c : cases) {
    auto r = RunMigsched(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.error;
    EXPECT_EQ(r.err, c.error + "\n");
    EXPECT_THAT(r.out, IsEmpty()) << "nothing ran: " << c.error;
  }
}

// Regression: `--export-workload` of a JSONL trace whose id holds a comma (CSV cannot write it)
// failed, but left a 0-byte file behind, and over an existing file left it empty.
TEST(OutputPathsCliTest, AFailedExportLeavesNoFileBehind) {
  const std::string trace = WriteTempFile(
      "comma.jsonl", "{\"id\":\"a,b\",\"arrival_s\":0,\"profile\":\"1g.5gb\",\"duration_s\":10}\n");
  const fs::path dir = MakeTempDir("export");
  const std::string fresh = (dir / "new.csv").string();
  auto r = RunMigsched(SimulateArgs(kOneA100, trace, {"--export-workload", fresh}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--export-workload: job 0 (id 'a,b')"));
  EXPECT_FALSE(fs::exists(fresh));
  const std::string existing = (dir / "old.csv").string();
  { std::ofstream(existing) << "kept\n"; }
  r = RunMigsched(SimulateArgs(kOneA100, trace, {"--export-workload", existing}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(ReadFile(existing), "kept\n");
}

// Regression: `--static-layout nope --policy first-fit` was accepted silently (only the static
// policies read the layout, and they refused it at setup). A name some model of the cluster has
// no layout of is refused whatever the policy; a valid one given to first-fit gets a note.
TEST(BadFlagsCliTest, AStaticLayoutIsCheckedWhateverThePolicy) {
  const std::string trace = WriteTempFile("layout.csv", kTrace);
  for (const char* policy : {"first-fit", "static-all-balanced"}) {
    auto r =
        RunMigsched(SimulateArgs(kOneA100, trace, {"--policy", policy, "--static-layout", "nope"}));
    EXPECT_EQ(r.exit_code, 1) << policy;
    EXPECT_EQ(r.err,
              "migsched simulate: --static-layout nope: GPU model 'A100 40GB' has no static layout "
              "'nope' in the catalog (its layouts: all-balanced; or best-for-mix, chosen from the "
              "workload's mix)\n");
  }
  auto ok = RunMigsched(
      SimulateArgs(kOneA100, trace, {"--policy", "first-fit", "--static-layout", "all-balanced"}));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("  note: --static-layout all-balanced has no effect on first-fit "
                                "(it lays no layout; read only by static and "
                                "static-all-balanced)\n"));
}

TEST(BadWorkloadCliTest, UnreadableTracesSayWhy) {
  const std::string dir = MakeTempDir("trace-dir.csv").string();
  const std::string comments = WriteTempFile("comments.csv", "# only a comment\n\n");
  const std::string missing = dir + "/missing.csv";
  // One CPU-only pod and one GPU pod that never ran (deletion before its start): nothing is left.
  const std::string no_gpu_pods = WriteTempFile(
      "no-gpu-pods.csv",
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n"
      "p1,1000,100,0,0,,LS,Running,0,100,10\n"
      "p2,1000,100,1,1000,,LS,Running,0,5,10\n");
  const std::vector<FlagCase> cases = {
      // Regression (trial_alibaba_all_skipped): "no jobs" and nothing more; the reasons the pods
      // were skipped are notes that a run with no jobs never printed.
      {SimulateArgs(kOneA100, "alibaba:" + no_gpu_pods, {}),
       "migsched simulate: --workload alibaba:" + no_gpu_pods +
           ": no jobs: every pod skipped: 1 CPU-only pods (num_gpu 0); 1 pods with deletion_time "
           "<= scheduled_time (no run time)"},
      {SimulateArgs(kOneA100, dir, {}),
       "migsched simulate: " + dir + ": is a directory, not a trace file"},
      {SimulateArgs(kOneA100, missing, {}),
       "migsched simulate: " + missing + ": cannot open trace file: No such file or directory"},
      {SimulateArgs(kOneA100, "alibaba:" + missing, {}),
       "migsched simulate: " + missing +
           ": cannot open Alibaba pod list: No such file or "
           "directory"},
      // Regression: "alibaba:" alone said ": cannot open Alibaba pod list: No such file or
      // directory", an empty path; it needs a file name.
      {SimulateArgs(kOneA100, "alibaba:", {}),
       "migsched simulate: --workload: alibaba:FILE needs the pod list's file name after "
       "'alibaba:' (e.g. alibaba:data/traces/alibaba-v2023/openb_pod_list_default.csv), got "
       "'alibaba:'"},
      {{"compare", "--cluster", kOneA100, "--workload", "alibaba:"},
       "migsched compare: --workload: alibaba:FILE needs the pod list's file name after "
       "'alibaba:' (e.g. alibaba:data/traces/alibaba-v2023/openb_pod_list_default.csv), got "
       "'alibaba:'"},
      {SimulateArgs(kOneA100, comments, {}),
       "migsched simulate: " + comments +
           ": no header line: the file has only blank lines and '#' comments"},
  };
  for (const FlagCase& c : cases) {
    auto r = RunMigsched(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.error;
    EXPECT_EQ(r.err, c.error + "\n");
  }
}

TEST(BadWorkloadCliTest, MessagesSayWhatIsWrongOnce) {
  // An absurd GPU count is a count, not a model name.
  auto count = RunMigsched(
      {"simulate", "--cluster", "99999999999xA100-40GB", "--workload", "paper-mix", "--quiet"});
  EXPECT_EQ(count.exit_code, 1);
  EXPECT_EQ(count.err,
            "migsched simulate: --cluster: cluster spec part '99999999999xA100-40GB': GPU count "
            "must be in 1..1000000\n");
  // paper-mix on a model without its profiles: "paper-mix:" once.
  auto mix =
      RunMigsched({"simulate", "--cluster", "1xA30-24GB", "--workload", "paper-mix", "--quiet"});
  EXPECT_EQ(mix.exit_code, 1);
  EXPECT_EQ(mix.err,
            "migsched simulate: paper-mix: profile '1g.5gb' is not offered by GPU model 'A30 "
            "24GB' (paper-mix is the seed paper's A100 40GB mix and draws its profiles on the "
            "cluster's first GPU model: list a model that offers them first, or use --workload "
            "churn)\n");
  // On a mixed cluster the first model is the one read: the other order runs.
  auto a30_first = RunMigsched({"simulate", "--cluster", "1xA30-24GB,1xA100-40GB", "--workload",
                                "paper-mix", "--jobs", "5", "--quiet"});
  EXPECT_EQ(a30_first.exit_code, 1);
  EXPECT_THAT(a30_first.err, HasSubstr("list a model that offers them first"));
  auto a100_first = RunMigsched({"simulate", "--cluster", "1xA100-40GB,1xA30-24GB", "--workload",
                                 "paper-mix", "--jobs", "5", "--quiet"});
  EXPECT_EQ(a100_first.exit_code, 0) << a100_first.err;
  // An unknown command is named, with the commands.
  auto bogus = RunMigsched({"bogus"});
  EXPECT_EQ(bogus.exit_code, 2);
  EXPECT_THAT(bogus.err, StartsWith("migsched: unknown command 'bogus' (commands: profiles, frag, "
                                    "simulate, compare, sweep, report, "));
  EXPECT_THAT(bogus.err, EndsWith("; migsched --help)\n"));
  // profiles says who speaks, as the other commands do.
  auto profiles = RunMigsched({"profiles", "--gpu", "V100"});
  EXPECT_EQ(profiles.exit_code, 1);
  EXPECT_THAT(profiles.err, StartsWith("migsched profiles: unknown GPU model 'V100' ("));
  // submit without "--": told where the command goes.
  auto submit =
      RunMigsched({"submit", "--profile", "1g.5gb", "python", "train.py", "--epochs", "3"});
  EXPECT_EQ(submit.exit_code, 2);
  EXPECT_THAT(submit.err, HasSubstr("migsched submit: the job's command goes after --, e.g. "
                                    "migsched submit --profile 2g.10gb -- python train.py "
                                    "--epochs 3\n"));
  auto no_command = RunMigsched({"submit", "--profile", "1g.5gb"});
  EXPECT_EQ(no_command.exit_code, 2);
  EXPECT_THAT(no_command.err, HasSubstr("migsched submit: the job's command goes after --"));
  // Regression (trial_submit_hint_with_separator): with "--" there, an unknown option before it
  // is the error, and the hint that the command goes after -- is not given.
  auto bogus_option = RunMigsched({"submit", "--profile", "1g.5gb", "--bogus", "--", "true"});
  EXPECT_EQ(bogus_option.exit_code, 2);
  EXPECT_THAT(bogus_option.err, HasSubstr("--bogus"));
  EXPECT_THAT(bogus_option.err, Not(HasSubstr("the job's command goes after --")));
}

// Regression: `submit --count 99999999999999999999` said "Could not convert" and that the job's
// command goes after -- (it did): a count is checked as the other integer flags are, with its
// range 1..64 (kMaxJobCount), before any daemon is asked, and only the check speaks.
TEST(BadFlagValuesTest, SubmitCountOutOfRangeSaysTheRange) {
  for (const std::string count : {"99999999999999999999", "65", "0"}) {
    auto r = RunMigsched({"submit", "--profile", "1g.5gb", "--count", count, "--", "true"});
    EXPECT_EQ(r.exit_code, 2) << count;
    EXPECT_EQ(r.err, "--count: must be an integer in 1..64, got '" + count +
                         "'\nRun with --help for more information.\n");
  }
}

// Regression (submit_gpu_fraction_zero_blamed_a_missing_flag): `submit --gpu-fraction 0` said
// "give --profile or --gpu-fraction", though it was given. A fraction outside (0, 1] is refused
// with the rule the daemon states, before any daemon is asked; a missing one still asks for one.
TEST(BadFlagValuesTest, SubmitGpuFractionOutsideItsRangeSaysTheRange) {
  for (const std::string fraction : {"0", "1.5", "2"}) {
    auto r = RunMigsched({"submit", "--gpu-fraction", fraction, "--", "true"});
    EXPECT_EQ(r.exit_code, 2) << fraction;
    EXPECT_EQ(r.err, "error: --gpu-fraction must be in (0, 1], got " + fraction + "\n");
  }
  auto none = RunMigsched({"submit", "--", "true"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.err, "error: give --profile or --gpu-fraction\n");
}

// Regression submit_bad_flag_value_exit_1: `submit --env NOEQ` (and a --time-limit that cannot
// be read) exited 1, the code of an error from the daemon, though
// docs/api.md says bad usage exits 2. No daemon is asked (none runs here).
TEST(BadFlagValuesTest, SubmitFlagValuesThatCannotBeReadExit2) {
  struct Case {
    std::vector<std::string> flag;
    std::string starts;
  } cases[] = {
      {{"--env", "NOEQ"}, "error: --env 'NOEQ' is not NAME=VALUE\n"},
      {{"--env", "=1"}, "error: --env '=1' is not NAME=VALUE\n"},
      {{"--migratable", "sometimes"}, "--migratable: sometimes not in {none,restart,checkpoint}"},
      {{"--time-limit", "soon"}, "error: "},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"submit", "--server", "http://127.0.0.1:1", "--profile",
                                     "1g.5gb"};
    args.insert(args.end(), c.flag.begin(), c.flag.end());
    args.insert(args.end(), {"--", "true"});
    auto r = RunMigsched(args);
    EXPECT_EQ(r.exit_code, 2) << c.flag[0];
    EXPECT_THAT(r.err, StartsWith(c.starts)) << c.flag[0];
  }
}

// Regression client_bad_usage_exit_1: `jobs -t bogus`, `jobs --kind bogus`, a --server without a
// scheme, `logs 0` and `cancel 0` are bad usage, found before any daemon answers, and exited 1,
// the code of an error from the daemon; docs/api.md says bad usage exits 2. A token file that
// cannot be read stays an error (1). No daemon runs here.
TEST(BadFlagValuesTest, ClientBadUsageExits2) {
  const std::vector<std::vector<std::string>> usage = {
      {"jobs", "--server", "http://127.0.0.1:1", "-t", "bogus"},
      {"jobs", "--server", "http://127.0.0.1:1", "--kind", "bogus"},
      {"jobs", "--server", "127.0.0.1:7070"},
      {"logs", "--server", "http://127.0.0.1:1", "0"},
      {"cancel", "--server", "http://127.0.0.1:1", "0"},
  };
  for (const auto& args : usage) {
    auto r = RunMigsched(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << args.back() << ": " << r.err;
    EXPECT_THAT(r.err, Not(IsEmpty()));
  }
  auto jobs = RunMigsched({"jobs", "--server", "http://127.0.0.1:1", "-t", "bogus"});
  EXPECT_THAT(jobs.err, StartsWith("error: 'bogus' is not a job state ("));
  // Regression (job_id_range_message): "Value 0 not in range 0.000000 to 1797…" (300 digits).
  auto zero = RunMigsched({"cancel", "--server", "http://127.0.0.1:1", "0"});
  EXPECT_THAT(zero.err, StartsWith("id: must be an integer in 1..9223372036854775807, got '0'"));
  auto token = RunMigsched(
      {"jobs", "--server", "http://127.0.0.1:1", "--token-file", "/nonexistent/migsched-token"});
  EXPECT_EQ(token.exit_code, 1) << token.err;
}

// A data folder whose catalog is one small model with the profiles 1g.8gb
// and 2g.16gb, so that the list of known names is short and exact.
std::string SmallDataDir() { return ::migsched::testing::TestDataDir() + "/catalogs/test-4u"; }

TEST(ProfileNamesCliTest, AnUnknownProfileIsAnInputErrorWithTheKnownNames) {
  const std::string data = SmallDataDir();
  for (const char* name : {"9g.99gb", "1g.5gb"}) {
    const std::string trace =
        WriteTempFile("p.csv", std::string("id,arrival_s,profile,duration_s\na,0,1g.8gb,10\nb,1,") +
                                   name + ",10\n");
    auto r = RunMigsched(
        {"--data-dir", data, "simulate", "--cluster", "1xTEST-4U", "--workload", trace, "--quiet"});
    EXPECT_EQ(r.exit_code, 1) << name;
    EXPECT_EQ(r.err, "migsched simulate: " + trace + ":3: field 'profile': unknown profile '" +
                         name + "' (known: 1g.8gb, 2g.16gb)\n");
    EXPECT_THAT(r.out, IsEmpty());
  }
  // JSON lines: the same check.
  const std::string jsonl =
      WriteTempFile("p.jsonl", R"({"id":"a","arrival_s":0,"profile":"MIG-9g.99gb","duration_s":1})"
                               "\n");
  auto j = RunMigsched(
      {"--data-dir", data, "simulate", "--cluster", "1xTEST-4U", "--workload", jsonl, "--quiet"});
  EXPECT_EQ(j.exit_code, 1);
  EXPECT_EQ(j.err, "migsched simulate: " + jsonl +
                       ":1: field 'profile': unknown profile 'MIG-9g.99gb' (known: 1g.8gb, "
                       "2g.16gb)\n");
}

TEST(ProfileNamesCliTest, UsualSpellingsAreAcceptedEverywhere) {
  // Four spellings of 1g.5gb (10 s each, arriving 100 s apart on one A100):
  // all complete and are counted under the catalog's name.
  const std::string trace = WriteTempFile("spellings.csv",
                                          "id,arrival_s,profile,duration_s\n"
                                          "a,0,1g.5gb,10\n"
                                          "b,100,1G.5GB,10\n"
                                          "c,200,MIG-1g.5gb,10\n"
                                          "d,300,nvidia.com/mig-1g.5gb,10\n");
  const std::string jobs = WriteTempFile("jobs.csv", "");
  const nlohmann::json m = Simulate(kOneA100, trace, {"--jobs-csv", jobs});
  ASSERT_FALSE(m.is_null());
  EXPECT_EQ(m["jobs_completed"].get<int>(), 4);
  EXPECT_EQ(m["per_profile"].size(), 1u);
  EXPECT_EQ(m["per_profile"]["1g.5gb"]["completed"].get<int>(), 4);
  EXPECT_THAT(ReadFile(jobs), Not(HasSubstr("MIG-")));
  // A command-line flag: frag --instances.
  auto frag = RunMigsched({"frag", "--gpu", "A100-40GB", "--instances",
                           "MIG-1g.5gb@0,nvidia.com/mig-1G.5GB@4", "--json"});
  ASSERT_EQ(frag.exit_code, 0) << frag.err;
  // 1g@0 and 1g@4: the worked value of docs/algorithms.md §2, 0.5667 (as FragCliTest).
  EXPECT_NEAR(nlohmann::json::parse(frag.out)["fragcost"].get<double>(), 0.5666666666666667, 1e-9);
}

TEST(ProfileNamesCliTest, AKnownProfileNoGpuOffersIsARejectionShownAtTheTop) {
  // 7g.80gb is a catalog profile (A100 80GB, H100) but not one of A100 40GB:
  // both such jobs are rejected at arrival, the 1g.5gb one completes.
  const std::string trace = WriteTempFile("r.csv",
                                          "id,arrival_s,profile,duration_s,time_limit_s\n"
                                          "a,0,7g.80gb,10,60\n"
                                          "b,1,1g.5gb,10,60\n"
                                          "c,2,7g.80gb,10,60\n");
  const std::string json = WriteTempFile("out.json", "");
  // Every job has its time limit: no note about limits comes first.
  auto r = RunMigsched(SimulateArgs(kOneA100, trace, {"--json", json, "--quiet"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string reason = "no GPU in the cluster (A100 40GB) offers profile 7g.80gb";
  // Right under the workload line and its note (the load the file's times offer, §10: the
  // 1g.5gb's 10/7 GPU-s over 3 jobs, the mean gap 1 s, one GPU: 0.48; the rejected jobs offer
  // nothing), before the policy.
  EXPECT_THAT(r.out, StartsWith("migsched simulate: r.csv (3 jobs, arrival times from the file)\n"
                                "  note: the file's arrival times offer a load of 0.48 (as --load "
                                "counts it, docs/algorithms.md §10: the mean of count x GPU share "
                                "x duration over the jobs, over the mean arrival gap x 1 GPU)\n"
                                "  REJECTED          2 of 3 jobs never ran; why:\n"
                                "                        2 " +
                                reason + "\n  policy "));
  EXPECT_EQ(ReadJson(json)["rejected_reasons"], nlohmann::json({{reason, 2}}));
}

}  // namespace
}  // namespace migsched
