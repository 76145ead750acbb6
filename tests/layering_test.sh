#!/usr/bin/env bash
# The run's truth stays out of the scheduler and the drivers (io/workload_job.h,
# docs/algorithms.md §9): no source file of core/, sched/, cluster/, daemon/,
# slurm/ or k8s/ (tests excepted) includes io/workload_job.h, directly or through
# the project's own headers. Prints each offending include and exits 1.
#
#   tests/layering_test.sh SRC_DIR
set -euo pipefail
src=${1:?usage: layering_test.sh SRC_DIR}
forbidden="io/workload_job.h"
declare -A memo  # header -> 0 (reaches the forbidden header) | 1 (does not)

reaches() {
  local h=$1 inc
  [[ $h == "$forbidden" ]] && return 0
  if [[ -n ${memo[$h]:-} ]]; then return "${memo[$h]}"; fi
  memo[$h]=1  # also guards against include cycles
  [[ -f $src/$h ]] || return 1
  for inc in $(sed -n 's/^#include "\(.*\)".*/\1/p' "$src/$h"); do
    if reaches "$inc"; then
      memo[$h]=0
      return 0
    fi
  done
  return 1
}

bad=0
checked=0
for dir in core sched cluster daemon slurm k8s; do
  [[ -d $src/$dir ]] || continue
  while IFS= read -r f; do
    rel=${f#"$src"/}
    [[ $rel == *_test.cc ]] && continue
    checked=$((checked + 1))
    for inc in $(sed -n 's/^#include "\(.*\)".*/\1/p' "$f"); do
      if reaches "$inc"; then
        echo "layering: $rel includes $inc, which reaches $forbidden (the run's truth is the simulator's)"
        bad=1
      fi
    done
  done < <(find "$src/$dir" -name '*.h' -o -name '*.cc' | sort)
done
echo "layering: $checked files checked"
exit $bad
