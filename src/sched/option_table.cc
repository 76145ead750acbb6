#include "sched/option_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>

#include "core/text.h"
#include "sched/full_policy.h"
#include "sched/metrics.h"

namespace migsched {
namespace {

using Spec = SchedulerOptionSpec;
template <typename T>
using Field = T& (*)(SchedulerOptions&);

// The field's value in `o` (the accessors take a mutable options: read a copy).
template <typename T>
T Read(Field<T> field, const SchedulerOptions& o) {
  SchedulerOptions copy = o;
  return field(copy);
}

// A finite number (not nan, inf, or out of double's range like 1e400) for which `ok` holds.
Spec Number(std::string name, std::string rule, std::function<bool(double)> ok, Field<double> field,
            std::string help, bool ExplicitOptions::*given = nullptr) {
  Spec s;
  s.name = std::move(name);
  s.kind = OptionKind::kNumber;
  s.rule = std::move(rule);
  s.help = std::move(help);
  s.given = given;
  const std::string rule_copy = s.rule;
  s.set = [rule_copy, ok, field](std::string_view text, SchedulerOptions* o) -> Status {
    double v = 0;
    const char* end = text.data() + text.size();
    auto [p, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec != std::errc() || p != end || !std::isfinite(v) || !ok(v)) {
      return InvalidArgumentError(fmt::format("must be {}, got '{}'", rule_copy, text));
    }
    field(*o) = v;
    return Status();
  };
  s.get = [field](const SchedulerOptions& o) { return fmt::format("{}", Read(field, o)); };
  return s;
}

// A decimal integer in [min, max].
Spec Integer(std::string name, int min, int max, Field<int> field, std::string help,
             bool ExplicitOptions::*given = nullptr) {
  Spec s;
  s.name = std::move(name);
  s.kind = OptionKind::kInteger;
  s.rule = fmt::format("an integer in {}..{}", min, max);
  s.help = std::move(help);
  s.given = given;
  const std::string rule = s.rule;
  s.set = [rule, min, max, field](std::string_view text, SchedulerOptions* o) -> Status {
    int64_t v = 0;
    const char* begin = text.data();
    const char* end = begin + text.size();
    if (!text.empty() && text[0] == '+') ++begin;
    auto [p, ec] = std::from_chars(begin, end, v);
    if (text.empty() || ec != std::errc() || p != end || v < min || v > max) {
      return InvalidArgumentError(fmt::format("must be {}, got '{}'", rule, text));
    }
    field(*o) = static_cast<int>(v);
    return Status();
  };
  s.get = [field](const SchedulerOptions& o) { return fmt::format("{}", Read(field, o)); };
  return s;
}

Spec Bool(std::string name, Field<bool> field, std::string help,
          bool ExplicitOptions::*given = nullptr) {
  Spec s;
  s.name = std::move(name);
  s.kind = OptionKind::kBool;
  // Every spelling set() takes, in any case (on and off are the ones get() writes; YAML 1.1 writes
  // True/TRUE, a user may type ON).
  s.rule = "on/off, true/false or yes/no";
  s.help = std::move(help);
  s.given = given;
  const std::string rule = s.rule;
  s.set = [rule, field](std::string_view text, SchedulerOptions* o) -> Status {
    const std::optional<bool> v = OnOffWord(text);
    if (!v) return InvalidArgumentError(fmt::format("must be {}, got '{}'", rule, text));
    field(*o) = *v;
    return Status();
  };
  s.get = [field](const SchedulerOptions& o) { return std::string(Read(field, o) ? "on" : "off"); };
  return s;
}

// One of `choices`; `to` stores the index of the one given, `from` reads it back.
Spec Choice(std::string name, std::vector<std::string> choices,
            std::function<void(size_t, SchedulerOptions*)> to,
            std::function<size_t(const SchedulerOptions&)> from, std::string help,
            bool ExplicitOptions::*given = nullptr) {
  Spec s;
  s.name = std::move(name);
  s.kind = OptionKind::kChoice;
  s.rule = fmt::format("one of {}", fmt::join(choices, ", "));
  s.help = std::move(help);
  s.choices = choices;
  s.given = given;
  const std::string rule = s.rule;
  s.set = [rule, choices, to](std::string_view text, SchedulerOptions* o) -> Status {
    auto it = std::find(choices.begin(), choices.end(), text);
    if (it == choices.end()) {
      return InvalidArgumentError(fmt::format("must be {}, got '{}'", rule, text));
    }
    to(static_cast<size_t>(it - choices.begin()), o);
    return Status();
  };
  s.get = [choices, from](const SchedulerOptions& o) { return choices.at(from(o)); };
  return s;
}

// The values of an enum field by name.
template <typename T>
Spec Enum(std::string name, std::vector<std::pair<std::string, T>> values, Field<T> field,
          std::string help, bool ExplicitOptions::*given = nullptr) {
  std::vector<std::string> names;
  for (const auto& [n, v] : values) names.push_back(n);
  return Choice(
      std::move(name), std::move(names),
      [values, field](size_t i, SchedulerOptions* o) { field(*o) = values[i].second; },
      [values, field](const SchedulerOptions& o) -> size_t {
        const T v = Read(field, o);
        for (size_t i = 0; i < values.size(); ++i) {
          if (values[i].second == v) return i;
        }
        return 0;
      },
      std::move(help), given);
}

// Two values of a bool field as a choice ("before-scan" = true).
Spec Pair(std::string name, std::string off, std::string on, Field<bool> field, std::string help,
          bool ExplicitOptions::*given) {
  return Choice(
      std::move(name), {std::move(off), std::move(on)},
      [field](size_t i, SchedulerOptions* o) { field(*o) = i == 1; },
      [field](const SchedulerOptions& o) -> size_t { return Read(field, o) ? 1 : 0; },
      std::move(help), given);
}

const auto kAny = [](double) { return true; };
const auto kNonNegative = [](double v) { return v >= 0; };
const auto kPositive = [](double v) { return v > 0; };

// `s` with negative_is_off set.
Spec OffWhenNegative(Spec s) {
  s.negative_is_off = true;
  return s;
}

std::vector<Spec> BuildTable() {
  using O = SchedulerOptions;
  using E = ExplicitOptions;
  std::vector<Spec> t;
  t.push_back(Number(
      "threshold", "a number in [0, 1]", [](double v) { return v >= 0 && v <= 1; },
      [](O& o) -> double& { return o.threshold; },
      fmt::format("Lazy/busy threshold t (§3) (full: {:g}, no split, unless its defrag passes are "
                  "on)",
                  kFullDefaultThreshold),
      &E::threshold));
  const std::vector<std::string> metrics = MetricNames();
  t.push_back(Choice(
      "metric", metrics, [metrics](size_t i, O* o) { o->metric = metrics[i]; },
      [metrics](const O& o) -> size_t {
        auto it = std::find(metrics.begin(), metrics.end(), o.metric);
        return it == metrics.end() ? 0 : static_cast<size_t>(it - metrics.begin());
      },
      fmt::format("Fragmentation metric the policies score by (§2) (mfi always uses "
                  "blocked-placements; full defaults to {}, docs/results.md)",
                  kFullDefaultMetric),
      &E::metric));
  t.push_back(Integer(
      "demand-window", 1, INT_MAX, [](O& o) -> int& { return o.demand_window; },
      "demand-weighted: arrivals in the sliding window giving each profile's share; the "
      "simulator seeds it with the first N jobs of the workload (also the window of "
      "--evacuation-keeps-room)"));
  t.push_back(Integer(
      "reserve-full", 0, INT_MAX, [](O& o) -> int& { return o.reserve_full; },
      "Full-size reserve (§4 step 7): keep N GPUs able to host the largest profile unless "
      "nothing else fits (0 = off)",
      &E::reserve_full));
  t.push_back(Bool(
      "reuse-first", [](O& o) -> bool& { return o.reuse_first; },
      fmt::format("Reuse an idle instance of exactly the requested profile on any GPU, lazy or "
                  "busy, before the lazy/busy split would create one on a lazy GPU (§4 step 2; "
                  "lb+frag and full; default: {} for full, off otherwise)",
                  kFullDefaultReuseFirst ? "on" : "off"),
      &E::reuse_first));
  t.push_back(Bool(
      "anchored-together", [](O& o) -> bool& { return o.anchored_together; },
      fmt::format(
          "Place a job that can never leave its GPU (migratable none, or latency-sensitive) "
          "on a GPU that already runs such a job whenever one has room, so the other GPUs "
          "stay ones evacuation can drain (§4 step 2; lb+frag and full; default: {} for "
          "full, off otherwise)",
          kFullDefaultAnchoredTogether ? "on" : "off"),
      &E::anchored_together));
  t.push_back(Bool(
      "joint-placement", [](O& o) -> bool& { return o.joint_placement; },
      "Place the jobs waiting at a decision point jointly (§12): a job that does not fit on its "
      "own starts with those placed before it when some placement of all exists (default: on "
      "for lb+frag and full, off for the baselines)",
      &E::joint_placement));
  t.push_back(Enum<FragObjective>(
      "frag-objective", {{"delta", FragObjective::kDelta}, {"post", FragObjective::kPost}},
      [](O& o) -> FragObjective& { return o.frag_objective; },
      "delta: minimum FragCost change; post: minimum FragCost after placing (§4)"));
  {
    Spec s;
    s.name = "static-layout";
    s.kind = OptionKind::kString;
    s.rule = "a layout name";
    s.help =
        "Layout the static policies create on every GPU: a name of the catalog's static_layouts "
        "(static-all-balanced: all-balanced), or best-for-mix (static's default: per cluster, "
        "the layouts that serve the workload's profile mix best, known in advance; simulator "
        "only)";
    s.given = &E::static_layout;
    s.set = [](std::string_view text, O* o) -> Status {
      if (text.empty()) {
        return InvalidArgumentError("must be a layout name, got ''");
      }
      o->static_layout = std::string(text);
      return Status();
    };
    s.get = [](const O& o) { return o.static_layout; };
    t.push_back(std::move(s));
  }
  // §5 queue options, §13 reservation and evacuation.
  t.push_back(Enum<QueueOrder>(
      "queue-order", {{"fifo", QueueOrder::kFifo}, {"response-ratio", QueueOrder::kResponseRatio}},
      [](O& o) -> QueueOrder& { return o.queue_order; },
      fmt::format("The order in which waiting jobs are tried (§5): fifo (arrival order, with "
                  "backfill) or response-ratio ((wait + time limit) / time limit, highest first; a "
                  "job without a time limit counts as {:g} s; default: {} for full, fifo "
                  "otherwise; the Slurm controller keeps Slurm's priority order)",
                  kUnknownLimitForOrderS, QueueOrderName(kFullDefaultQueueOrder)),
      &E::queue_order));
  t.push_back(OffWhenNegative(Number(
      "overtake-guard", "a finite number", kAny, [](O& o) -> double& { return o.overtake_guard; },
      fmt::format("Overtaking guard (§5, with --queue-order response-ratio): a waiting job that "
                  "has waited more than this many times the median wait of the waiting jobs of "
                  "its request (same profile and count) is not passed by a later one of them; "
                  "0 = arrival order within each request; < 0 = off (the default of every "
                  "policy; docs/results.md \"Overtaking among equal requests\")"),
      &E::overtake_guard)));
  {
    Spec s;
    s.name = "limit-power";
    s.kind = OptionKind::kNumber;
    s.rule = "a number in [0, 1] or learned";
    s.help =
        "Limits weighed by what they predict (§5, with --queue-order response-ratio): the "
        "waiting jobs of one request (same profile and count) take the places the ratio gave "
        "them by wait / limit^P, highest first: 1 = the ratio's own order, 0 = arrival order "
        "within each request, learned = P fitted on the jobs that ended (the slope of log run "
        "time on log limit; full's default, 1 otherwise); jobs of different requests keep the "
        "ratio's order, except that with learned each limit also counts for what the jobs of its "
        "request ran for theirs (run times learned per request) (docs/results.md \"Limits "
        "weighed by what they predict\", \"Run times learned per request\")";
    s.given = &E::limit_power;
    s.set = [](std::string_view text, O* o) -> Status {
      if (text == "learned") {
        o->limit_power = kLimitPowerLearned;
        return Status();
      }
      double v = 0;
      const char* end = text.data() + text.size();
      auto [p, ec] = std::from_chars(text.data(), end, v);
      if (text.empty() || ec != std::errc() || p != end || !std::isfinite(v) || v < 0 || v > 1) {
        return InvalidArgumentError(
            fmt::format("must be a number in [0, 1] or learned, got '{}'", text));
      }
      o->limit_power = v + 0.0;  // -0 is 0
      return Status();
    };
    s.get = [](const O& o) {
      return o.limit_power == kLimitPowerLearned ? std::string("learned")
                                                 : fmt::format("{}", o.limit_power);
    };
    t.push_back(std::move(s));
  }
  t.push_back(OffWhenNegative(Number(
      "max-skip-seconds", "a finite number", kAny,
      [](O& o) -> double& { return o.max_skip_seconds; },
      fmt::format("Look-ahead reservation (§5 starvation guard, §13): once a waiting job has "
                  "waited longer, it reserves the placement that frees soonest; < 0 = off (full "
                  "defaults to {:g}, docs/results.md)",
                  kFullDefaultMaxSkipSeconds),
      &E::max_skip_seconds)));
  t.push_back(Enum<ReservationMode>(
      "reservation",
      {{"easy", ReservationMode::kEasy}, {"conservative", ReservationMode::kConservative}},
      [](O& o) -> ReservationMode& { return o.reservation; },
      "Look-ahead reservation (§13, with max-skip-seconds): easy (the head of the queue only) "
      "or conservative (each of the first reservation-depth overdue waiting jobs)",
      &E::reservation));
  t.push_back(Integer(
      "reservation-depth", 1, INT_MAX, [](O& o) -> int& { return o.reservation_depth; },
      "Conservative reservation: how many waiting jobs may hold reservations"));
  t.push_back(Number(
      "reservation-slack", "a finite number >= 0", kNonNegative,
      [](O& o) -> double& { return o.reservation_slack; },
      fmt::format("Reservation slack F (§13, with max-skip-seconds): a job may backfill onto a "
                  "reserved GPU if it ends by the reserved job's expected start plus F x that "
                  "job's time limit; 0 = strict; larger F favours small jobs over large ones (full "
                  "defaults to {:g}; a job without a time limit backfills only beside the reserved "
                  "placement)",
                  kFullDefaultReservationSlack),
      &E::reservation_slack));
  t.push_back(OffWhenNegative(Number(
      "reservation-horizon", "a finite number", kAny,
      [](O& o) -> double& { return o.reservation_horizon_s; },
      fmt::format("Reservation horizon H (§13, with max-skip-seconds): an overdue job reserves "
                  "placements only when its expected start is at most H seconds away, so no GPU "
                  "is held back for a start predicted far ahead from time limits; < 0 = any "
                  "start (full defaults to {:g})",
                  kFullDefaultReservationHorizonS),
      &E::reservation_horizon)));
  t.push_back(Number(
      "reservation-ageing", "a finite number >= 0", kNonNegative,
      [](O& o) -> double& { return o.reservation_ageing; },
      "Reservation ageing a (§13, with reservation-horizon): a job that has waited W seconds "
      "reserves placements expected to free up to max(H, a x W) away, so that no job waits "
      "for ever beyond the horizon; 0 = off (the default, full's too)",
      &E::reservation_ageing));
  t.push_back(Bool(
      "reservation-keep", [](O& o) -> bool& { return o.reservation_keep; },
      fmt::format("Reservation keeping (§13, with max-skip-seconds and --reservation easy): the "
                  "job given the look-ahead reservation keeps it in later scans while it waits "
                  "and its reservation can be made, instead of each scan's first overdue job "
                  "that does not fit reserving; default: {} for full, off otherwise",
                  kFullDefaultReservationKeep ? "on" : "off"),
      &E::reservation_keep));
  t.push_back(Bool(
      "reservation-oldest", [](O& o) -> bool& { return o.reservation_oldest; },
      fmt::format("Reservation for the job that has waited longest (§13, with max-skip-seconds "
                  "and --reservation easy): the overdue job queued first is given the "
                  "look-ahead reservation when it can be made, instead of the first overdue job "
                  "in queue order that does not fit; default: {} for full, off otherwise",
                  kFullDefaultReservationOldest ? "on" : "off"),
      &E::reservation_oldest));
  t.push_back(Pair(
      "reservation-unknown-ends", "strict", "skip",
      [](O& o) -> bool& { return o.reservation_needs_ends; },
      "Reservation (§13) for a job whose reserved placement frees at an unknown time (a blocking "
      "job without an expected end or time limit): strict (reserve it anyway, a strict "
      "starvation guard) or skip (no reservation; full's default, docs/results.md)",
      &E::reservation_unknown_ends));
  t.push_back(Enum<EvacuationScope>(
      "evacuation",
      {{"off", EvacuationScope::kOff},
       {"head", EvacuationScope::kHead},
       {"queue", EvacuationScope::kQueue}},
      [](O& o) -> EvacuationScope& { return o.evacuation; },
      "Evacuation (§13, with --migration on): move running jobs to open a placement for a "
      "waiting job now: off, head (the head of the queue) or queue (any waiting job) (full "
      "defaults to queue, docs/results.md)",
      &E::evacuation));
  t.push_back(Number(
      "evacuation-min-wait", "a finite number >= 0", kNonNegative,
      [](O& o) -> double& { return o.evacuation_min_wait_s; },
      "Evacuate only for jobs that have waited at least this many seconds",
      &E::evacuation_min_wait));
  t.push_back(Integer(
      "evacuation-min-slices", 0, INT_MAX, [](O& o) -> int& { return o.evacuation_min_slices; },
      "Evacuate only for jobs asking for at least this many compute slices",
      &E::evacuation_min_slices));
  t.push_back(Pair(
      "evacuation-when", "before-backfill", "after-backfill",
      [](O& o) -> bool& { return o.evacuation_after_backfill; },
      "Evacuate at the waiting job's turn in the queue scan, before later jobs "
      "backfill (before-backfill), or after the scan with the room backfill left "
      "(after-backfill)",
      &E::evacuation_when));
  t.push_back(Bool(
      "evacuation-keeps-room", [](O& o) -> bool& { return o.evacuation_keeps_room; },
      fmt::format("Room kept for small jobs (§13): evacuate only where, if some GPU has a free "
                  "placement of the smallest size among the last --demand-window arrivals, "
                  "some GPU still has one after the moves (except for a job that would "
                  "otherwise be turned away or has waited past --max-skip-seconds); default: {} "
                  "for full, off otherwise",
                  kFullDefaultEvacuationKeepsRoom ? "on" : "off"),
      &E::evacuation_keeps_room));
  t.push_back(Pair(
      "migration-order", "after-scan", "before-scan",
      [](O& o) -> bool& { return o.migrate_before_scan; },
      "At an instant with a completion, run the migration pass after the queue scan "
      "(after-scan) or before it (before-scan) (§13, with --migration on)",
      &E::migration_order));
  t.push_back(OffWhenNegative(Number(
      "max-wait", "a finite number", kAny, [](O& o) -> double& { return o.max_wait_s; },
      "Reject a queued job once its wait reaches this many seconds (§5); < 0 = no limit")));
  t.push_back(OffWhenNegative(Number(
      "idle-ttl", "a finite number", kAny, [](O& o) -> double& { return o.idle_ttl_s; },
      "Destroy an idle instance unused for this many seconds; < 0 = keep it until its space is "
      "needed")));
  // §6 migration.
  t.push_back(Bool(
      "migration", [](O& o) -> bool& { return o.migration.enabled; },
      fmt::format("The migration planner (§6: completion, periodic and fragmented passes) and "
                  "the evacuations of §13: make-before-break moves of running jobs (default: {} "
                  "for full, off otherwise; not with static or static-all-balanced, which never "
                  "reconfigure)",
                  kFullDefaultMigration ? "on" : "off"),
      &E::migration));
  t.push_back(Number(
      "defrag-interval", "a finite number >= 0", kNonNegative,
      [](O& o) -> double& { return o.migration.defrag_interval_s; },
      "Seconds between periodic migration passes (§6, with --migration on); 0 = "
      "off"));
  t.push_back(Integer(
      "max-moves-per-pass", 0, INT_MAX, [](O& o) -> int& { return o.migration.max_moves_per_pass; },
      "Intra-GPU moves per pass and GPU (§6)"));
  t.push_back(Number(
      "migration-cooldown", "a finite number >= 0", kNonNegative,
      [](O& o) -> double& { return o.migration.cooldown_s; },
      "A job moves at most once per this many seconds (§6)"));
  t.push_back(Number(
      "migration-fixed-s", "a finite number >= 0", kNonNegative,
      [](O& o) -> double& { return o.migration.fixed_s; },
      "Fixed part of a state copy, seconds: copy = fixed + memory_gb / gbps (§6)"));
  t.push_back(Number(
      "migration-gbps", "a finite number > 0", kPositive,
      [](O& o) -> double& { return o.migration.gbps; }, "State copy bandwidth, GB/s (§6)"));
  t.push_back(Number(
      "switch-s", "a finite number >= 0", kNonNegative,
      [](O& o) -> double& { return o.migration.switch_s; },
      "Pause at a move's switch-over, seconds: the only time a moved job stops "
      "(§6)"));
  t.push_back(Enum<DefragPasses>(
      "defrag-passes",
      {{"off", DefragPasses::kOff},
       {"while-waiting", DefragPasses::kWhileWaiting},
       {"always", DefragPasses::kAlways}},
      [](O& o) -> DefragPasses& { return o.migration.passes; },
      fmt::format("When the completion and periodic migration passes (§6) run: off (never: every "
                  "move is then asked for by a waiting job, an evacuation or a move aimed at an "
                  "arrival's fragmented room), while-waiting (only while some job waits) or "
                  "always (also with nothing waiting: a move then gains nothing now and costs its "
                  "pause and a restart job's work since its last checkpoint); default: {} for "
                  "full, while-waiting otherwise (§13)",
                  DefragPassesName(kFullDefaultDefragPasses)),
      &E::defrag_passes));
  t.push_back(Number(
      "admission-move-budget", "a finite number", kAny,
      [](O& o) -> double& { return o.migration.admission_move_budget; },
      "Where jobs can be turned away (--max-wait >= 0), moves per job started: a move begins only "
      "while the moves so far stay within this many per started job (§13); < 0 = unbounded"));
  t.push_back(Number(
      "checkpoint-interval", "a finite number > 0", kPositive,
      [](O& o) -> double& { return o.migration.checkpoint_interval_s; },
      "Seconds between checkpoints of `restart` jobs; a move loses the progress "
      "since the last one (§6)"));
  return t;
}

}  // namespace

Status SchedulerOptionSpec::Apply(std::string_view text, SchedulerOptions* o,
                                  ExplicitOptions* explicit_set) const {
  RETURN_IF_ERROR(set(text, o));
  if (given != nullptr && explicit_set != nullptr) explicit_set->*given = true;
  return Status();
}

const std::vector<SchedulerOptionSpec>& SchedulerOptionTable() {
  static const std::vector<SchedulerOptionSpec>* table =
      new std::vector<SchedulerOptionSpec>(BuildTable());
  return *table;
}

const SchedulerOptionSpec* FindSchedulerOption(std::string_view name) {
  std::string kebab(name);
  std::replace(kebab.begin(), kebab.end(), '_', '-');
  for (const SchedulerOptionSpec& s : SchedulerOptionTable()) {
    if (s.name == kebab) return &s;
  }
  return nullptr;
}

const std::vector<std::string>& RenamedSchedulerOptionNames() {
  static const std::vector<std::string> names = {"speculative-moves"};
  return names;
}

std::optional<std::string> RenamedSchedulerOption(std::string_view old_name) {
  std::string kebab(old_name);
  std::replace(kebab.begin(), kebab.end(), '_', '-');
  if (kebab == "speculative-moves") {
    return std::string("speculative-moves is now defrag-passes (on: always, off: while-waiting)");
  }
  return std::nullopt;
}

std::string SchedulerOptionNames() {
  std::string out;
  for (const SchedulerOptionSpec& s : SchedulerOptionTable()) {
    out += (out.empty() ? "" : ", ") + s.name;
  }
  return out;
}

bool SameTableOptions(const SchedulerOptions& a, const SchedulerOptions& b) {
  for (const SchedulerOptionSpec& s : SchedulerOptionTable()) {
    if (s.get(a) != s.get(b)) return false;
  }
  return true;
}

}  // namespace migsched
