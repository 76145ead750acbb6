#!/usr/bin/env bash
# The daemon's figures of docs/performance.md ("Daemon"): builds migsched and
# the daemon benchmarks (Release) and runs, each RUNS times, the submission
# load test with keep-alive connections and with a new connection per
# request, /healthz under 64 idle connections and 64 log followers, and then
# the kill -9 harness (two settings). Every output, with the load average
# before and after each run, goes to $MIGSCHED_BENCH_DIR/results/daemon.txt.
#
# Usage: scripts/bench-daemon.sh [all|load|kill9]   (default all)
# Environment: MIGSCHED_BENCH_DIR (default build-bench; an existing build dir
# keeps its own settings, so make it a Release one), MIGSCHED_JOBS (build
# jobs, default 2), RUNS (default 3), ROUNDS (kill -9 rounds, default 100).
# Needs: cmake, ninja, g++ and the project's build dependencies (no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
dir=${MIGSCHED_BENCH_DIR:-build-bench}
runs=${RUNS:-3}
rounds=${ROUNDS:-100}
out=$dir/results
mkdir -p "$out"
log=$out/daemon.txt

if [[ -f $dir/CMakeCache.txt ]]; then
  # An existing build dir (e.g. MIGSCHED_BENCH_DIR=build) keeps its settings.
  cmake -S . -B "$dir" -DMIGSCHED_BUILD_BENCH=ON >/dev/null
else
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMIGSCHED_BUILD_TESTS=OFF \
    -DMIGSCHED_BUILD_BENCH=ON >/dev/null
fi
cmake --build "$dir" -j "${MIGSCHED_JOBS:-2}" --target migsched daemon_load_bench daemon_kill9_bench

# run TITLE BINARY ARGS...: one run, its output and the load average around it.
run() {
  local title=$1 bin=$2
  shift 2
  {
    echo "== $title: $bin $*"
    echo "loadavg before: $(cat /proc/loadavg)"
    "$dir/bin/$bin" --migsched "$dir/bin/migsched" "$@"
    echo "loadavg after:  $(cat /proc/loadavg)"
  } 2>&1 | tee -a "$log"
}

{
  echo "date: $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "nproc: $(nproc), cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
} | tee "$log"

case $what in
  all | load)
    for i in $(seq "$runs"); do run "submit, keep-alive ($i)" daemon_load_bench --jobs 10000 --clients 8; done
    for i in $(seq "$runs"); do
      run "submit, a new connection per request ($i)" daemon_load_bench --jobs 10000 --clients 8 \
        --connections new
    done
    for i in $(seq "$runs"); do run "healthz ($i)" daemon_load_bench --mode healthz --requests 5000; done
    ;;&
  all | kill9)
    run "kill -9, 30-400 ms" daemon_kill9_bench --rounds "$rounds" --seed 1 --min-ms 30 --max-ms 400
    run "kill -9, 10-150 ms" daemon_kill9_bench --rounds "$rounds" --seed 2 --min-ms 10 --max-ms 150
    ;;&
  all | load | kill9) ;;
  *)
    echo "usage: scripts/bench-daemon.sh [all|load|kill9]" >&2
    exit 2
    ;;
esac
echo "wrote $log"
