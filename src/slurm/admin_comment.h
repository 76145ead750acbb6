// What migsched writes into a Slurm job's AdminComment (settable by the
// administrator only, readable by the job's user: `scontrol show job`,
// `squeue --json`), and reads back. Every text starts with "migsched: ".
//
//   migsched: bound n1=MIG-a|0|3g.20gb|4 n2=MIG-b|1|7g.40gb|0,MIG-c|1|1g.5gb|0
//       the prolog bound the job: per node its instances as
//       MIG-UUID|GPU index|profile|start (the task prolog reads it)
//   migsched: bind failed (attempt 2 of 3): <reason>
//       the prolog failed; Slurm requeues the job
//   migsched: held: <reason>
//       the job was held (scontrol hold) and will not run until released
//   migsched: requeued to open room for slurm:9 (7g.40gb on n2 GPU 1)
//       a migration in flight: this job was requeued for job 9
//   migsched: waiting: <reason>      why the job does not start now
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_SLURM_ADMIN_COMMENT_H_
#define MIGSCHED_SLURM_ADMIN_COMMENT_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "nodeapi/api_types.h"

namespace migsched::slurm {

inline constexpr std::string_view kCommentPrefix = "migsched: ";

struct BoundInstance {
  std::string mig_uuid;
  PlacementRef placement;
  bool operator==(const BoundInstance&) const = default;
};
using Binding = std::map<std::string, std::vector<BoundInstance>>;  // node -> instances

std::string FormatBound(const Binding& binding);
// The binding in `text` (an AdminComment, possibly followed by other
// `scontrol -o` words, which end it); nullopt if it is not a binding.
// kInvalidArgument for a binding word that does not parse.
StatusOr<std::optional<Binding>> ParseBound(std::string_view text);

std::string FormatBindFailure(int attempt, int max_attempts, std::string_view reason);
// The attempt number of a bind failure in `text`, 0 if none.
int ParseBindAttempt(std::string_view text);

std::string FormatHeld(std::string_view reason);
bool IsHeldByMigsched(std::string_view text);

std::string FormatRequeuedFor(std::string_view for_job, std::string_view where);
// The job key a migration in flight is for ("slurm:9"), or nullopt.
std::optional<std::string> ParseRequeuedFor(std::string_view text);

std::string FormatWaiting(std::string_view reason);

// AdminComment values are limited by us to this many bytes (Slurm stores
// longer ones, but they clutter `scontrol show job`); longer reasons are cut
// with "...".
inline constexpr size_t kMaxCommentBytes = 1000;
std::string Truncate(std::string text);

}  // namespace migsched::slurm

#endif  // MIGSCHED_SLURM_ADMIN_COMMENT_H_
