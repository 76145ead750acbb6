#!/usr/bin/env bash
# The benchmarks of docs/performance.md: builds build-bench (Release, Google
# Benchmark), runs fragcost_bench, decision_bench and simulation_bench (each
# simulation case in a process of its own, so that its peak RSS is its own),
# writes their JSON output, the load average before and after each run, the
# decision-latency table (Markdown) and the plot docs/img/decision-latency.png
# (gnuplot, from the JSON).
#
# queue_bench (joint placement of waiting jobs against one at a time) and its
# table: scripts/bench.sh queue.
#
# Usage: scripts/bench.sh [all|fragcost|decision|simulation|queue|plot]   (default all)
# Environment: MIGSCHED_BENCH_DIR (default build-bench), MIGSCHED_JOBS (build
# jobs, default 2), MIGSCHED_BENCH_NICE (niceness of the runs, default 0; the
# figures in docs/performance.md used -10 as root on a shared machine).
# Needs: cmake, ninja, g++, libbenchmark-dev, jq, gnuplot (gnuplot-nox).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
dir=${MIGSCHED_BENCH_DIR:-build-bench}
out=$dir/results
nice_level=${MIGSCHED_BENCH_NICE:-0}
mkdir -p "$out" docs/img

build() {
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMIGSCHED_BUILD_TESTS=OFF \
    -DMIGSCHED_BUILD_BENCH=ON >/dev/null
  nice -n 10 cmake --build "$dir" -j "${MIGSCHED_JOBS:-2}" \
    --target fragcost_bench decision_bench simulation_bench queue_bench
}

# run NAME BINARY ARGS...: one benchmark process, JSON to $out/NAME.json, the
# load average before and after appended to $out/loadavg.txt.
run() {
  local name=$1 bin=$2
  shift 2
  echo "$name before: $(cat /proc/loadavg)" >>"$out/loadavg.txt"
  nice -n "$nice_level" "$dir/bin/$bin" --benchmark_out="$out/$name.json" \
    --benchmark_out_format=json "$@"
  echo "$name after:  $(cat /proc/loadavg)" >>"$out/loadavg.txt"
}

machine() {
  {
    echo "date: $(date -u +%FT%TZ)"
    echo "nproc: $(nproc)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "compiler: $(c++ --version | head -1)"
  } >"$out/machine.txt"
  cat "$out/machine.txt"
}

# The decision rows as TSV: gpus util naive mean_us p99_us groups util_reached
# cpu_us (Google Benchmark's CPU time per iteration: the timed region only).
decision_tsv() {
  jq -r '.benchmarks[] | select(.name | startswith("BM_Decision/"))
    | (.name | split("/")) as $p
    | [($p[1] | split(":")[1]), ($p[2] | split(":")[1]), ($p[3] | split(":")[1]),
       .mean_us, .p99_us, .groups, .util, .cpu_time] | @tsv' "$out/decision.json"
}

decision_table() {
  local tsv=$out/decision.tsv
  decision_tsv >"$tsv"
  {
    echo "| GPUs | target util | util reached | groups | fast mean | fast p99 | fast CPU | naive mean | naive p99 | naive CPU | naive/fast (mean) | naive/fast (p99) |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    awk -F'\t' '
      $3 == 0 { key = $1 "/" $2; order[++n] = key; gpus[key] = $1; util[key] = $2;
                fm[key] = $4; fp[key] = $5; groups[key] = $6; reached[key] = $7; fc[key] = $8 }
      $3 == 1 { key = $1 "/" $2; nm[key] = $4; np[key] = $5; nc[key] = $8 }
      END {
        for (i = 1; i <= n; ++i) {
          k = order[i]
          printf "| %s | %d%% | %.1f%% | %d | %.2f | %.2f | %.2f | %.1f | %.1f | %.1f | %.1f× | %.1f× |\n",
            gpus[k], util[k], 100 * reached[k], groups[k], fm[k], fp[k], fc[k], nm[k], np[k], nc[k],
            nm[k] / fm[k], np[k] / fp[k]
        }
      }' "$tsv"
  } >"$out/decision-table.md"
  # Decision cost at 100,000 GPUs against 1,000 GPUs (fast path, target <= 2x).
  awk -F'\t' '$3 == 0 && $1 == 1000 { m1[$2] = $4; p1[$2] = $5 }
              $3 == 0 && $1 == 100000 { m2[$2] = $4; p2[$2] = $5 }
              END { for (u in m1) printf "util %d%%: 100k/1k mean %.2fx, p99 %.2fx\n",
                    u, m2[u] / m1[u], p2[u] / p1[u] }' "$tsv" | sort >"$out/decision-100k-vs-1k.txt"
  cat "$out/decision-table.md" "$out/decision-100k-vs-1k.txt"
}

# Joint placement against one job at a time (queue_bench): one row per
# benchmark, cluster size, utilisation and setting.
queue_table() {
  {
    echo "| case | GPUs | target util | joint | decision mean µs | decision p99 µs | scan p99 µs | jobs started / scan | searches / scan | joint starts / scan |"
    echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"
    jq -r '.benchmarks[] | (.name | split("/")) as $p
      | [(if ($p[0] | test("Freed")) then "GPU freed, 4 jobs" else "8 random jobs" end),
         ($p[1] | split(":")[1]), ($p[2] | split(":")[1]),
         (if ($p[3] | split(":")[1]) == "1" then "on" else "off" end),
         (.decision_mean_us * 100 | round / 100), (.decision_p99_us * 100 | round / 100),
         (.scan_p99_us * 10 | round / 10), ((.started // 0) * 100 | round / 100),
         (.searches * 100 | round / 100), (.joint_starts * 100 | round / 100)]
      | "| " + (map(tostring) | join(" | ")) + " |"' "$out/queue.json"
  } >"$out/queue-table.md"
  cat "$out/queue-table.md"
}

plot() {
  decision_table
  local tsv=$out/decision.tsv
  for u in 30 70 95; do
    awk -F'\t' -v u="$u" '$2 == u && $3 == 0 { print $1, $4, $5 }' "$tsv" >"$out/fast-$u.dat"
    awk -F'\t' -v u="$u" '$2 == u && $3 == 1 { print $1, $4, $5 }' "$tsv" >"$out/naive-$u.dat"
  done
  gnuplot <<EOF
set terminal pngcairo size 1500,520 font "sans,10"
set output "docs/img/decision-latency.png"
set multiplot layout 1,3 title "migsched decision latency (one arrival, frag-aware, mixed A100/H100/H200; wall-clock µs; $(nproc) vCPU $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'))"
set logscale xy
set xlabel "GPUs in the cluster"
set ylabel "µs per decision"
set grid
set key top left
set xrange [3:150000]
do for [u in "30 70 95"] {
  set title sprintf("utilisation %s%%", u)
  plot sprintf("$out/fast-%s.dat", u) using 1:2 with linespoints lw 2 pt 7 title "fast mean", \
       sprintf("$out/fast-%s.dat", u) using 1:3 with linespoints lw 2 pt 5 dt 2 title "fast p99", \
       sprintf("$out/naive-%s.dat", u) using 1:2 with linespoints lw 2 pt 7 title "naive mean", \
       sprintf("$out/naive-%s.dat", u) using 1:3 with linespoints lw 2 pt 5 dt 2 title "naive p99"
}
unset multiplot
EOF
  echo "wrote docs/img/decision-latency.png"
}

case $what in
  all | fragcost | decision | simulation | queue) build && machine ;;
esac
case $what in
  all | fragcost) run fragcost fragcost_bench ;;&
  all | decision) run decision decision_bench && plot ;;&
  all | simulation)
    for f in "jobs:10000/gpus:100/" "jobs:100000/gpus:1000/" "jobs:1000000/gpus:10000/frag_aware:0" \
      "jobs:1000000/gpus:10000/frag_aware:1"; do
      name=simulation-$(echo "$f" | tr -c 'a-z0-9\n' '-' | sed 's/-*$//')
      run "$name" simulation_bench --benchmark_filter="$f"
    done
    ;;&
  all | queue) run queue queue_bench && queue_table ;;&
  plot) plot ;;
  all | fragcost | decision | simulation | queue) ;;
  *)
    echo "usage: scripts/bench.sh [all|fragcost|decision|simulation|queue|plot]" >&2
    exit 2
    ;;
esac
