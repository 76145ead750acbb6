#!/usr/bin/env bash
# The figures of docs/results.md: every policy on every setting of the evaluation set
# (scripts/eval/sets.json, fixed before any tuning; the tuning set is where defaults were
# chosen), REPLICAS paired replicas per setting (default 30; replica r uses the setting's seed
# + r), the scheduler told what a real one knows (the default --expected-ends: time limits,
# not durations), then the paired tables (scripts/eval/aggregate.py).
#
#   scripts/results.sh                      # the evaluation set
#   SET=tuning scripts/results.sh           # the tuning set (where defaults may be chosen)
#   SET=holdout scripts/results.sh          # the holdout set (added 2026-12-05; never tuned on)
#   SET=models scripts/results.sh           # GPU models no other set has (added 2026-12-05)
#   SET=probe scripts/results.sh            # cluster scenarios no other set has (added 2026-12-06)
#   SET=grid REPLICAS=10 scripts/results.sh  # 6 clusters x every workload x 3 loads (added 2026-12-07)
#   SET=grid-admission scripts/results.sh   # the grid's clusters in admission mode (added 2026-12-07)
#   SETTINGS="e-churn-a100x6-l0.9" scripts/results.sh   # some settings only
#   REPLICAS=3 scripts/results.sh           # quicker, wider intervals
#   TABLES_ONLY=1 scripts/results.sh        # re-aggregate the runs already there
#
# Writes out/results/SET/runs/SETTING.json (compare --json) and out/results/SET/tables.md.
# Environment: MIGSCHED (the binary; default build/bin/migsched, built with scripts/setup.sh
# when missing), SET, SETTINGS, REPLICAS, THREADS (default 2), POLICIES (comma-separated; default
# every baseline, `full` and the fragmentation-free reference), EXTRA (more compare flags for
# every run, e.g. "--expected-ends known" for the oracle reference), NICE (default 10).
# The earlier studies of `full`'s mechanisms on the tuning settings are
# scripts/replicated-results.sh and scripts/joint-results.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${MIGSCHED:-build/bin/migsched}
if [ ! -x "$bin" ]; then
  scripts/setup.sh build -DMIGSCHED_BUILD_TESTS=OFF
  bin=build/bin/migsched
fi
command -v python3 >/dev/null || { echo "results.sh: needs python3" >&2; exit 1; }
set_name=${SET:-evaluation}
replicas=${REPLICAS:-30}
threads=${THREADS:-2}
policies=${POLICIES:-first-fit,best-fit,driver-default,mfi,largest-free-run,static,full,frag-free-reference}
out=out/results/$set_name
mkdir -p "$out/runs"

if [ "${TABLES_ONLY:-0}" != "1" ]; then
  # NAME<TAB>flags of each setting of the set.
  python3 - scripts/eval/sets.json "$set_name" > "$out/settings.tsv" <<'EOF'
import json, sys
for s in json.load(open(sys.argv[1]))[sys.argv[2]]:
    flags = f"--cluster {s['cluster']} --workload {s['workload']} --load {s['load']} --seed {s['seed']}"
    if 'jobs' in s: flags += f" --jobs {s['jobs']}"
    if s['mode'] == 'admission': flags += " --max-wait 0"
    if s.get('extra'): flags += " " + s['extra']
    print(f"{s['name']}\t{flags}")
EOF
  while IFS=$'\t' read -r name flags; do
    if [ -n "${SETTINGS:-}" ] && ! [[ " $SETTINGS " == *" $name "* ]]; then continue; fi
    start=$(date +%s)
    # shellcheck disable=SC2086
    nice -n "${NICE:-10}" "$bin" --quiet compare $flags --replicas "$replicas" \
      --threads "$threads" --policies "$policies" ${EXTRA:-} --json "$out/runs/$name.json" \
      >/dev/null
    echo "results.sh: $name ($(($(date +%s) - start)) s)" >&2
  done < "$out/settings.tsv"
fi
python3 scripts/eval/aggregate.py "$out" scripts/eval/sets.json "$set_name" >/dev/null
echo "results.sh: tables in $out/tables.md" >&2
