// `migsched stress`: the long run of the scheduler stress harness (sim/stress.h): generated
// cases one seed after another until --minutes have passed (or --cases ran), each with the
// simulator's self-check on and the end checks. The first failure stops the run (exit 1) and is
// written to --out as a replayable trace CSV plus the `migsched simulate` command that replays
// it. The figures at the end (workloads, decisions and invariant checks per second) are the
// ones docs/performance.md quotes. scripts/stress.sh drives it.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/sim_flags.h"
#include "io/trace_reader.h"
#include "sim/stress.h"

namespace migsched::cli {
namespace {

struct StressFlags {
  double minutes = 1;
  uint64_t seed = 1;
  int64_t cases = 0;  // 0: until --minutes
  std::string out = "stress-failures";
  StressLimits limits;
};

// "--catalog X --data-dir Y": the global flags a replay needs to load the same catalog.
std::string GlobalArgs(const Context& ctx) {
  std::string out;
  if (!ctx.data_dir.empty()) out += fmt::format("--data-dir {}", ctx.data_dir);
  for (const std::string& c : ctx.extra_catalogs) {
    out += fmt::format("{}--catalog {}", out.empty() ? "" : " ", c);
  }
  return out;
}

// Writes the case's trace and command to `dir`; returns the command.
StatusOr<std::string> WriteFailure(const StressCase& c, const Status& failure,
                                   const std::string& dir, const Context& ctx) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InvalidArgumentError(fmt::format("--out {}: {}", dir, ec.message()));
  const std::string base = (std::filesystem::path(dir) / fmt::format("seed-{}", c.seed)).string();
  const std::string trace = base + ".csv";
  {
    std::ofstream f(trace);
    RETURN_IF_ERROR(WriteTraceCsv(c.jobs, f));
    if (!f) return InvalidArgumentError(fmt::format("cannot write {}", trace));
  }
  const std::string cmd = c.CommandLine(trace, GlobalArgs(ctx));
  std::ofstream f(base + ".txt");
  f << "# migsched stress: seed " << c.seed << "\n# " << failure.ToString() << "\n" << cmd << "\n";
  if (!f) return InvalidArgumentError(fmt::format("cannot write {}.txt", base));
  return cmd;
}

int Run(const StressFlags& f, Context& ctx) {
  auto fail = [&](const std::string& msg) {
    *ctx.err << "migsched stress: " << msg << "\n";
    return 1;
  };
  if (f.limits.max_jobs < f.limits.min_jobs) return fail("--max-jobs must be >= --min-jobs");
  auto catalog = ctx.catalog();
  if (!catalog.ok()) return fail(catalog.status().message());
  std::ostream& out = *ctx.out;
  out << fmt::format(
      "migsched stress: seeds from {}, {} ({} to {} jobs, up to {} GPUs per case)\n", f.seed,
      f.cases > 0 ? fmt::format("{} cases", f.cases) : fmt::format("{:g} minute(s)", f.minutes),
      f.limits.min_jobs, f.limits.max_jobs, f.limits.max_gpus);
  out.flush();
  using Clock = std::chrono::steady_clock;
  const auto begin = Clock::now();
  const auto deadline = begin + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(f.minutes * 60));
  auto last_report = begin;
  StressCounts counts;
  uint64_t seed = f.seed;
  for (int64_t i = 0; f.cases > 0 ? i < f.cases : Clock::now() < deadline; ++i, ++seed) {
    const StressCase c = GenerateStressCase(**catalog, seed, f.limits);
    Status st = RunStressCase(c, &counts);
    if (!st.ok()) {
      out << fmt::format("FAILED: {}\n", st.ToString());
      auto cmd = WriteFailure(c, st, f.out, ctx);
      if (!cmd.ok()) return fail(cmd.status().message());
      out << fmt::format("  replay: {}\n  written to {}/seed-{}.csv and .txt\n", *cmd, f.out, seed);
      return 1;
    }
    if (!ctx.quiet && Clock::now() - last_report > std::chrono::seconds(30)) {
      last_report = Clock::now();
      *ctx.err << fmt::format("migsched stress: {} cases passed (last seed {})\n", counts.workloads,
                              seed);
    }
  }
  const double s = std::chrono::duration<double>(Clock::now() - begin).count();
  const double per = s > 0 ? 1 / s : 0;
  out << fmt::format(
      "migsched stress: no failure: {} workloads (seeds {}..{}, {} jobs, {} decisions, {} moves, "
      "{} invariant checks) in {:.1f} s\n",
      counts.workloads, f.seed, seed - 1, counts.jobs, counts.decisions, counts.migrations,
      counts.invariant_checks, s);
  out << fmt::format(
      "  {:.1f} workloads/s, {:.0f} decisions/s, {:.0f} invariant checks/s (one thread)\n",
      static_cast<double>(counts.workloads) * per, static_cast<double>(counts.decisions) * per,
      static_cast<double>(counts.invariant_checks) * per);
  return 0;
}

}  // namespace

void RegisterStressCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto f = std::make_shared<StressFlags>();
  CLI::App* cmd = app.add_subcommand(
      "stress",
      "Stress the scheduler: generated workloads and settings, invariants checked after every "
      "event; the first failure is written out as a trace plus the command that replays it "
      "(docs/performance.md)");
  cmd->add_option("--minutes", f->minutes, "Run for this many minutes (wall clock)")
      ->check(FiniteNumber("a finite number > 0", [](double v) { return v > 0; }))
      ->capture_default_str();
  cmd->add_option("--seed", f->seed, "Seed of the first case; case i uses seed + i")
      ->check(WholeNumber(0, UINT64_MAX))
      ->capture_default_str();
  cmd->add_option("--cases", f->cases, "Run exactly this many cases instead of --minutes")
      ->check(WholeNumber(1, INT64_MAX));
  cmd->add_option("--out", f->out,
                  "Folder for a failing case's trace (seed-N.csv) and command (seed-N.txt)")
      ->capture_default_str();
  cmd->add_option("--min-jobs", f->limits.min_jobs, "Fewest jobs per case")
      ->check(WholeNumber(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--max-jobs", f->limits.max_jobs, "Most jobs per case")
      ->check(WholeNumber(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--max-gpus", f->limits.max_gpus, "Most GPUs per case")
      ->check(WholeNumber(1, 4096))
      ->capture_default_str();
  cmd->callback([f, &ctx, exit_code] { *exit_code = Run(*f, ctx); });
}

}  // namespace migsched::cli
