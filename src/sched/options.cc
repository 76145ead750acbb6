#include "sched/options.h"

#include <fmt/format.h>

#include <cmath>

#include "sched/metrics.h"

namespace migsched {

std::string_view FragObjectiveName(FragObjective o) {
  return o == FragObjective::kPost ? "post" : "delta";
}

StatusOr<FragObjective> ParseFragObjective(std::string_view s) {
  if (s == "delta") return FragObjective::kDelta;
  if (s == "post") return FragObjective::kPost;
  return InvalidArgumentError(fmt::format("frag objective '{}' is not one of delta, post", s));
}

std::string_view ReservationModeName(ReservationMode m) {
  return m == ReservationMode::kConservative ? "conservative" : "easy";
}

std::string_view DefragPassesName(DefragPasses p) {
  switch (p) {
    case DefragPasses::kOff:
      return "off";
    case DefragPasses::kWhileWaiting:
      return "while-waiting";
    case DefragPasses::kAlways:
      return "always";
  }
  return "while-waiting";
}

std::string_view QueueOrderName(QueueOrder o) {
  return o == QueueOrder::kResponseRatio ? "response-ratio" : "fifo";
}

StatusOr<ReservationMode> ParseReservationMode(std::string_view s) {
  if (s == "easy") return ReservationMode::kEasy;
  if (s == "conservative") return ReservationMode::kConservative;
  return InvalidArgumentError(fmt::format("reservation '{}' is not one of easy, conservative", s));
}

std::string_view EvacuationScopeName(EvacuationScope s) {
  switch (s) {
    case EvacuationScope::kOff:
      return "off";
    case EvacuationScope::kHead:
      return "head";
    case EvacuationScope::kQueue:
      return "queue";
  }
  return "?";
}

StatusOr<EvacuationScope> ParseEvacuationScope(std::string_view s) {
  if (s == "off") return EvacuationScope::kOff;
  if (s == "head") return EvacuationScope::kHead;
  if (s == "queue") return EvacuationScope::kQueue;
  return InvalidArgumentError(fmt::format("evacuation '{}' is not one of off, head, queue", s));
}

namespace {

// "NAME must be RULE, got V" unless `ok`.
Status Check(bool ok, std::string_view name, std::string_view rule, double v) {
  if (ok) return Status();
  return InvalidArgumentError(fmt::format("{} must be {}, got {}", name, rule, v));
}

// §5 queue options and §6 migration knobs.
Status ValidateQueueAndMigration(const SchedulerOptions& o) {
  RETURN_IF_ERROR(Check(std::isfinite(o.max_skip_seconds), "max_skip_seconds (--max-skip-seconds)",
                        "finite (< 0 turns the starvation guard off)", o.max_skip_seconds));
  RETURN_IF_ERROR(Check(std::isfinite(o.overtake_guard), "overtake_guard (--overtake-guard)",
                        "finite (< 0 turns the guard off)", o.overtake_guard));
  RETURN_IF_ERROR(
      Check(o.limit_power == kLimitPowerLearned ||
                (std::isfinite(o.limit_power) && o.limit_power >= 0 && o.limit_power <= 1),
            "limit_power (--limit-power)", "in [0, 1] or learned (-1)", o.limit_power));
  if (o.reservation_depth < 1) {
    return InvalidArgumentError(fmt::format(
        "reservation_depth (--reservation-depth) must be >= 1, got {}", o.reservation_depth));
  }
  RETURN_IF_ERROR(Check(std::isfinite(o.reservation_slack) && o.reservation_slack >= 0,
                        "reservation_slack (--reservation-slack)", "finite and >= 0",
                        o.reservation_slack));
  RETURN_IF_ERROR(
      Check(std::isfinite(o.reservation_horizon_s), "reservation_horizon_s (--reservation-horizon)",
            "finite (< 0: a reservation for any expected start)", o.reservation_horizon_s));
  RETURN_IF_ERROR(Check(std::isfinite(o.reservation_ageing) && o.reservation_ageing >= 0,
                        "reservation_ageing (--reservation-ageing)", "finite and >= 0",
                        o.reservation_ageing));
  RETURN_IF_ERROR(Check(std::isfinite(o.evacuation_min_wait_s) && o.evacuation_min_wait_s >= 0,
                        "evacuation_min_wait_s (--evacuation-min-wait)", "finite and >= 0",
                        o.evacuation_min_wait_s));
  if (o.evacuation_min_slices < 0) {
    return InvalidArgumentError(
        fmt::format("evacuation_min_slices (--evacuation-min-slices) must be >= 0, got {}",
                    o.evacuation_min_slices));
  }
  RETURN_IF_ERROR(Check(std::isfinite(o.max_wait_s), "max_wait_s (--max-wait)",
                        "finite (< 0: no limit)", o.max_wait_s));
  RETURN_IF_ERROR(Check(std::isfinite(o.idle_ttl_s), "idle_ttl_s (--idle-ttl)",
                        "finite (< 0: keep idle instances until their space is needed)",
                        o.idle_ttl_s));
  const SchedulerOptions::Migration& g = o.migration;
  RETURN_IF_ERROR(Check(std::isfinite(g.defrag_interval_s) && g.defrag_interval_s >= 0,
                        "defrag_interval_s (--defrag-interval)",
                        "finite and >= 0 (0 turns the periodic pass off)", g.defrag_interval_s));
  if (g.max_moves_per_pass < 0) {
    return InvalidArgumentError(fmt::format(
        "max_moves_per_pass (--max-moves-per-pass) must be >= 0, got {}", g.max_moves_per_pass));
  }
  RETURN_IF_ERROR(Check(std::isfinite(g.admission_move_budget),
                        "admission_move_budget (--admission-move-budget)",
                        "finite (< 0: unbounded)", g.admission_move_budget));
  RETURN_IF_ERROR(Check(std::isfinite(g.cooldown_s) && g.cooldown_s >= 0,
                        "cooldown_s (--migration-cooldown)", "finite and >= 0", g.cooldown_s));
  RETURN_IF_ERROR(Check(std::isfinite(g.fixed_s) && g.fixed_s >= 0, "fixed_s (--migration-fixed-s)",
                        "finite and >= 0", g.fixed_s));
  RETURN_IF_ERROR(Check(std::isfinite(g.gbps) && g.gbps > 0, "gbps (--migration-gbps)",
                        "finite and > 0", g.gbps));
  RETURN_IF_ERROR(Check(std::isfinite(g.switch_s) && g.switch_s >= 0, "switch_s (--switch-s)",
                        "finite and >= 0", g.switch_s));
  RETURN_IF_ERROR(Check(std::isfinite(g.checkpoint_interval_s) && g.checkpoint_interval_s > 0,
                        "checkpoint_interval_s (--checkpoint-interval)", "finite and > 0",
                        g.checkpoint_interval_s));
  return Status();
}

}  // namespace

Status SchedulerOptions::Validate() const {
  if (!std::isfinite(threshold) || threshold < 0 || threshold > 1) {
    return InvalidArgumentError(fmt::format("threshold must be in [0, 1], got {}", threshold));
  }
  if (static_layout.empty()) return InvalidArgumentError("static layout name is empty");
  RETURN_IF_ERROR(ParseMetric(metric).status());
  if (demand_window < 1) {
    return InvalidArgumentError(
        fmt::format("demand window must be >= 1 jobs, got {}", demand_window));
  }
  if (reserve_full < 0) {
    return InvalidArgumentError(
        fmt::format("reserve-full must be >= 0 GPUs, got {}", reserve_full));
  }
  RETURN_IF_ERROR(ValidateQueueAndMigration(*this));
  return Status();
}

}  // namespace migsched
