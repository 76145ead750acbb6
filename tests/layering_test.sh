#!/usr/bin/env bash
# A layering rule: no source file (tests excepted) of the given folders
# includes a forbidden header, directly or through the project's own headers.
# Prints each offending include and exits 1.
#
#   tests/layering_test.sh SRC_DIR [FORBIDDEN WHY DIR...]
#
# FORBIDDEN is one header, or a folder ending in "/" (every header in it);
# WHY is the rule's reason, printed with each offence. The default rule: the
# run's truth stays out of the scheduler and the drivers (io/workload_job.h,
# docs/algorithms.md §9): core/, sched/, nodeapi/, cluster/, daemon/, slurm/ and
# k8s/ never include io/workload_job.h.
set -euo pipefail
src=${1:?usage: layering_test.sh SRC_DIR [FORBIDDEN WHY DIR...]}
forbidden=${2:-io/workload_job.h}
why=${3:-the run\'s truth is the simulator\'s}
if [[ $# -gt 3 ]]; then
  dirs=("${@:4}")
else
  dirs=(core sched nodeapi cluster daemon slurm k8s)
fi
declare -A memo  # header -> 0 (reaches the forbidden header) | 1 (does not)

reaches() {
  local h=$1 inc
  [[ $h == "$forbidden" ]] && return 0
  [[ $forbidden == */ && $h == "$forbidden"* ]] && return 0
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
for dir in "${dirs[@]}"; do
  [[ -d $src/$dir ]] || continue
  while IFS= read -r f; do
    rel=${f#"$src"/}
    [[ $rel == *_test.cc ]] && continue
    checked=$((checked + 1))
    for inc in $(sed -n 's/^#include "\(.*\)".*/\1/p' "$f"); do
      if reaches "$inc"; then
        echo "layering: $rel includes $inc, which reaches $forbidden ($why)"
        bad=1
      fi
    done
  done < <(find "$src/$dir" -name '*.h' -o -name '*.cc' | sort)
done
echo "layering: $checked files checked"
exit $bad
