// Slurm hostlist expressions: "n[1-3,7],gpu[01-04]x,login" <-> a list of
// host names, in the syntax slurm.conf, squeue and scontrol write them
// (Slurm's `scontrol show hostnames` / `scontrol show hostlist`).
//
// Syntax accepted: comma-separated items; an item is a name with zero or more
// bracket groups, each a comma-separated list of numbers or ranges "a-b"
// (a <= b). A range whose first number has leading zeros ("01-04") keeps that
// width ("01", "02", ...). Several groups in one item expand as a cartesian
// product, left to right ("r[1-2]n[1-2]" = r1n1, r1n2, r2n1, r2n2).
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_SLURM_HOSTLIST_H_
#define MIGSCHED_SLURM_HOSTLIST_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace migsched::slurm {

// Expands `expr` into host names, in the order written, duplicates kept.
// kInvalidArgument naming the position and the problem: an empty item, an
// unbalanced bracket, a range that is not a number, a descending range, or
// more than `max_hosts` names (a guard against "n[1-999999999]").
StatusOr<std::vector<std::string>> ExpandHostlist(std::string_view expr,
                                                  size_t max_hosts = 1'000'000);

// The shortest expression Slurm writes for `hosts` in this order: runs of
// consecutive numbers with the same prefix, suffix and width are merged into
// one bracket group ("n1,n2,n3,n5" -> "n[1-3,5]"); names without a trailing
// number stay as they are. Expanding the result gives `hosts` back.
std::string CompressHostlist(const std::vector<std::string>& hosts);

}  // namespace migsched::slurm

#endif  // MIGSCHED_SLURM_HOSTLIST_H_
