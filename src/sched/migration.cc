#include "sched/migration.h"

#include <fmt/format.h>

namespace migsched {

std::string_view MigrationTriggerName(MigrationTrigger t) {
  switch (t) {
    case MigrationTrigger::kCompletion:
      return "completion";
    case MigrationTrigger::kTick:
      return "tick";
    case MigrationTrigger::kFragmented:
      return "fragmented";
  }
  return "?";
}

void MoveBook::Started(JobId id, double now_s) {
  checkpoint_origin_s_[id] = now_s;
  ++jobs_started_;
}

void MoveBook::Ended(JobId id) {
  checkpoint_origin_s_.erase(id);
  restarted_.erase(id);
  in_flight_.erase(id);
  last_move_s_.erase(id);
}

const MigrationMove* MoveBook::InFlight(JobId id) const {
  auto it = in_flight_.find(id);
  return it == in_flight_.end() ? nullptr : &it->second;
}

bool MoveBook::Begin(const MigrationMove& mv, double now_s) {
  if (!in_flight_.emplace(mv.job, mv).second) return false;
  last_move_s_[mv.job] = now_s;
  ++moves_begun_;
  return true;
}

StatusOr<MigrationMove> MoveBook::Finish(JobId id, double now_s, bool restarted) {
  auto it = in_flight_.find(id);
  if (it == in_flight_.end()) return NotFoundError(fmt::format("job {} has no move in flight", id));
  const MigrationMove mv = it->second;
  in_flight_.erase(it);
  if (restarted) {
    checkpoint_origin_s_[id] = now_s;  // a restarted job checkpoints from now
    restarted_.insert(id);
  }
  return mv;
}

StatusOr<MigrationMove> MoveBook::Abandon(JobId id) {
  auto it = in_flight_.find(id);
  if (it == in_flight_.end()) return NotFoundError(fmt::format("job {} has no move in flight", id));
  const MigrationMove mv = it->second;
  in_flight_.erase(it);
  return mv;
}

bool MoveBook::CoolingDown(JobId id, double now_s, double cooldown_s) const {
  auto last = last_move_s_.find(id);
  return last != last_move_s_.end() && now_s - last->second < cooldown_s;
}

std::optional<double> MoveBook::SinceCheckpointOrigin(JobId id, double now_s) const {
  auto o = checkpoint_origin_s_.find(id);
  if (o == checkpoint_origin_s_.end()) return std::nullopt;
  return now_s - o->second;
}

bool MoveBook::RestartedSinceCheckpoint(JobId id, double now_s,
                                        double checkpoint_interval_s) const {
  if (!restarted_.count(id)) return false;
  const std::optional<double> since = SinceCheckpointOrigin(id, now_s);
  return since && *since < checkpoint_interval_s;
}

bool MoveBook::BudgetAllows(int64_t moves, double budget) const {
  if (budget < 0) return true;
  return static_cast<double>(moves_begun_ + moves) <=
         budget * static_cast<double>(jobs_started_ + 1);
}

}  // namespace migsched
