// SimOptions: the knobs of the discrete-event simulator (§4 step 5, §8, §9 of
// docs/algorithms.md). Each field has a default and its source; Validate()
// runs once, before a simulation.
//
// Thread-safety: plain values (the callbacks are called from the simulating
// thread only).
#ifndef MIGSCHED_SIM_SIM_OPTIONS_H_
#define MIGSCHED_SIM_SIM_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "sim/knowledge.h"
#include "sim/reconfig_latency.h"

namespace migsched {

// §9: the two evaluation modes.
enum class SimMode {
  kOnline,  // "online": arrivals and completions on a virtual clock
  kFill,    // "fill": FGD's method, jobs placed without departing until a load target
};
std::string_view SimModeName(SimMode mode);
StatusOr<SimMode> ParseSimMode(std::string_view s);  // "online" | "fill"

// What the progress callback is told.
struct SimProgress {
  // Online: jobs finished (completed + rejected) / jobs in the workload.
  // Fill: requested compute slices so far / the target (fill_target × cluster).
  int64_t done = 0;
  int64_t total = 0;
  double sim_time_s = 0;  // virtual time of the last event (online); 0 in fill mode
};

// SimOptions::stall_event_times of the checked runs (stress, --self-check): far more event
// times than a case of at most a few hundred jobs needs between two job events (its periodic
// passes are skipped while idle), and reached in seconds by a run that would never end.
inline constexpr int64_t kCheckedStallEventTimes = 1'000'000;

struct SimOptions {
  SimMode mode = SimMode::kOnline;

  // Cost of one MIG create or destroy, milliseconds (§4 step 5: default 23 ms).
  // Operations on one GPU are serialised; operations on different GPUs overlap.
  // >= 0, finite.
  double reconfig_ms = 23;
  // Online mode: the latencies as distributions instead (sim/reconfig_latency.h,
  // `--reconfig-latency`): when set, each create and each destroy takes a draw of its
  // distribution from a stream seeded by reconfig_seed (the drivers pass the run's --seed, so
  // replica r draws with its own seed), and reconfig_ms is not used. Both fixed at one value:
  // exactly the run of reconfig_ms at that value (nothing is drawn). nullptr: reconfig_ms.
  std::shared_ptr<const ReconfigLatency> reconfig_latency;
  uint64_t reconfig_seed = 0;

  // Fill mode: stop once the requested compute slices reach this share of the
  // cluster's compute slices (§9: "e.g. 130%"). > 0, at most 100.
  double fill_target = 1.3;

  // §8 PCIe contention between the running jobs of one GPU. false: every job
  // progresses at rate 1.
  bool contention = true;

  // Online mode: what the scheduler may know of run times (sim/knowledge.h,
  // `--expected-ends limits|known|unknown`). limits (the default): each job's time limit is
  // its duration and a running job's expected end is its start + limit (none without a limit);
  // known: an ORACLE kept as a reference only (the exact duration and expected ends, capped at
  // the limit); unknown: neither, so that the look-ahead reservation's backfill rule (a) and its
  // slack (§13) never apply and the migration planner and evacuation see every running job as
  // never ending. In every mode jobs run for their real durations, and a job still running at its
  // time limit is ended there (outcome timeout).
  Knowledge knowledge = Knowledge::kLimits;

  // Online mode: give every job without a time limit one drawn from the model of user runtime
  // estimates (sim/user_estimates.h) with this seed, before the run. false: such jobs have no
  // limit (`--user-estimates none`). The drivers derive the seed from the run's --seed.
  bool user_estimates = false;
  uint64_t user_estimate_seed = 0;

  // Keep per-job records and the timeline in the result (memory grows with
  // jobs and events: turn off for very large runs; metrics are unaffected).
  bool record_jobs = true;
  bool record_timeline = true;

  // Online mode: record the cluster's instances (SimResult::snapshots, for
  // the report's slot maps) as they stand at each of these virtual times
  // (seconds, finite, >= 0; any order): after every event at or before the
  // time. A time past the last event gets the final state.
  std::vector<double> snapshot_times;
  // Online mode: also record them at the fragmentation peak: the first event
  // time after which the cluster's fragmentation rate is at its highest of
  // the run (Metrics::frag_peak). Appended after the snapshot_times ones.
  bool snapshot_peak_frag = false;

  // Tests/debugging (`--self-check`, the stress harness sim/stress.h): after every event time,
  // re-check every GPU's invariants, that every busy instance belongs to a job placed there (or
  // is the target of its move), that every placed job holds exactly `count` distinct instances
  // and the scheduler lists each of them (no instance held twice), that a job has a move in
  // flight exactly when the simulator began one and did not end it (one move in flight per job,
  // from one of its instances to a target held for it), and the simulator's running totals
  // against a full re-sum (O(GPUs + instances) per event). A violation aborts the run with
  // kInternal; a second move begun for a job is kInternal at once.
  bool self_check = false;
  // Online mode: when > 0, a run in which this many event times in a row pass with no job
  // arriving, starting, ending or reaching its time limit ends with kInternal naming the span
  // and the queued jobs (a livelock: moves or ticks repeating while no job gets anywhere). 0:
  // off (the default: a legitimate run may have long stretches of moves). `migsched stress` and
  // `migsched simulate --self-check` (the replay of a stress failure) set it to
  // kCheckedStallEventTimes, so that a case that would run forever is reported, written out and
  // replayed like any other failure instead of hanging.
  int64_t stall_event_times = 0;

  // Called at most about every `progress_interval_s` of wall-clock time (the
  // clock is read every 1024 event times), and once at the end. May be empty.
  std::function<void(const SimProgress&)> progress;
  double progress_interval_s = 0.5;  // > 0

  // Wall clock for the scheduler's decision time (§9) and the progress
  // throttle; nullptr means SteadyClock(). Must outlive the run.
  Clock* clock = nullptr;

  // kInvalidArgument naming the field when out of range.
  Status Validate() const;

  // The checks of a `migsched stress` case and of its replay (`simulate --self-check`), one
  // setting for both: self_check on and stall_event_times = kCheckedStallEventTimes.
  void TurnOnChecks();
};

}  // namespace migsched

#endif  // MIGSCHED_SIM_SIM_OPTIONS_H_
