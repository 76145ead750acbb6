#!/usr/bin/env bash
# The long run of the scheduler stress harness (docs/performance.md, "Stress harness"): builds
# the migsched binary (Release) and runs `migsched stress` for --minutes from --seed. The seed is
# printed first; the first failing case stops the run (exit 1) and is written to --out as a
# trace CSV (seed-N.csv) plus the exact `migsched simulate --self-check ...` command that
# replays it (seed-N.txt). At the end: workloads, decisions and invariant checks per second.
#
# Usage: scripts/stress.sh [--minutes M] [--seed S] [--out DIR] [other `migsched stress` flags]
#   --minutes  wall-clock minutes (default 10)
#   --seed     first seed (default: drawn from the clock, printed)
#   --out      folder for a failing case (default stress-failures)
# Environment: MIGSCHED_BUILD_DIR (default build), MIGSCHED_JOBS (build jobs, default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=10
seed=$(( $(date +%s%N) % 1000000000 ))
out=stress-failures
rest=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --minutes) minutes=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) rest+=("$1"); shift ;;
  esac
done
dir=${MIGSCHED_BUILD_DIR:-build}
if [[ ! -f $dir/build.ninja ]]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
nice -n 10 cmake --build "$dir" -j "${MIGSCHED_JOBS:-2}" --target migsched >/dev/null
echo "stress: seed $seed, $minutes minute(s), failures to $out/ (load average $(cut -d' ' -f1-3 /proc/loadavg))"
"$dir/bin/migsched" stress --minutes "$minutes" --seed "$seed" --out "$out" "${rest[@]+"${rest[@]}"}"
