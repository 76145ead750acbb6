#!/usr/bin/env bash
# Time from `sbatch` to the job's first command, through the migsched
# controller and against the same cluster with static GRES and no controller
# (docs/performance.md "Cluster controller"). Root; starts and stops its own
# local clusters (deploy/slurm/local-cluster.sh).
#
#   bench/controller_latency.sh [JOBS] [MODE...]    MODE: static | controller (default both)
#
# Each job (one at a time, the next when the previous has ended) writes the
# wall-clock time it started at; latency = that time - the time just before
# sbatch. Profiles cycle 1g.5gb, 3g.20gb, 7g.40gb, 2g.10gb. Prints one line per
# mode: n, mean with its 95% confidence interval (normal), min, p50, p90, max
# in seconds; the latencies stay in /tmp/migsched-latency-*/latencies.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
jobs=${1:-20}
shift || true
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(static controller)
profiles=(1g.5gb 3g.20gb 7g.40gb 2g.10gb)

for mode in "${modes[@]}"; do
  dir=$(mktemp -d /tmp/migsched-latency-XXXXXX)
  args=()
  [ "$mode" = static ] && args=(--static)
  "$repo/deploy/slurm/local-cluster.sh" up "$dir" "${args[@]}" >/dev/null 2>&1 ||
    { echo "$mode: local cluster did not come up (see $dir/log)" >&2; exit 1; }
  (
    . "$dir/env"
    cd "$dir"
    for ((i = 0; i < jobs; i++)); do
      p=${profiles[$((i % ${#profiles[@]}))]}
      t0=$(date +%s.%N)
      id=$(sbatch --parsable -p mig --gres="mig:$p:1" -o /dev/null \
        --wrap "date +%s.%N > $dir/start-$i")
      for ((k = 0; k < 600; k++)); do
        [ -s "$dir/start-$i" ] && ! squeue -h -j "$id" -o %i 2>/dev/null | grep -q . && break
        sleep 0.05
      done
      [ -s "$dir/start-$i" ] || { echo "$mode: job $id did not start in 30 s" >&2; exit 1; }
      echo "$(cat "$dir/start-$i") - $t0" | bc
    done
  ) >"$dir/latencies.txt"
  "$repo/deploy/slurm/local-cluster.sh" down "$dir" >/dev/null 2>&1
  sort -n "$dir/latencies.txt" | awk -v mode="$mode" '
    { v[NR] = $1; s += $1; q += $1 * $1 }
    END {
      p50 = v[int((NR + 1) * 0.5)]; p90 = v[int(NR * 0.9 + 0.5)]
      m = s / NR; sd = NR > 1 ? sqrt((q - NR * m * m) / (NR - 1)) : 0
      printf "%-10s n=%d mean=%.3f (95%% CI +-%.3f) min=%.3f p50=%.3f p90=%.3f max=%.3f s\n",
        mode, NR, m, 1.96 * sd / sqrt(NR), v[1], p50, p90, v[NR]
    }'
done
