#!/usr/bin/env bash
# Reproduces docs/results.md, the whole page: it only runs the two scripts
# that make its figures, in order.
#
#   scripts/results.sh       # about 6 minutes on 2 cores (5 min 36 s measured)
#
#   1. scripts/replicated-results.sh: sections 1-6 (`full` and its large-job
#      mechanisms against the best baseline, 10 paired replicas per setting;
#      the knob's trade curve and the p95-by-load plot, docs/img/) into
#      out/replicated/;
#   2. scripts/joint-results.sh: section 7 (joint placement of waiting jobs)
#      into out/joint/.
#
# Environment: MIGSCHED (the binary; default build/bin/migsched, built with
# scripts/setup.sh when missing) and what each script takes (REPLICAS,
# THREADS, SETTINGS, TABLES_ONLY=1; SEEDS, JOBS): see their headers. The
# earlier single-run studies this script used to run are summarised in
# docs/results.md section 8.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${MIGSCHED:-build/bin/migsched}
if [ ! -x "$bin" ]; then
  scripts/setup.sh build -DMIGSCHED_BUILD_TESTS=OFF
  bin=build/bin/migsched
fi
MIGSCHED=$bin scripts/replicated-results.sh >/dev/null
MIGSCHED=$bin scripts/joint-results.sh >/dev/null
echo "results.sh: tables in out/replicated/tables.md and out/joint/tables.md" >&2
