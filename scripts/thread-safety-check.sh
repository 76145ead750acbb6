#!/usr/bin/env bash
# Clang's thread-safety analysis over the daemon (DEVELOPERS.md "Thread-safety annotations"):
# configures a separate build dir with clang++ and -Wthread-safety, warnings as errors, no tests,
# and builds only the daemon library (migsched_daemon, and the layers it links). Exits non-zero
# on any warning, e.g. a member guarded by the state lock read without it (src/daemon/state_lock.h).
#
# Usage: scripts/thread-safety-check.sh
# Environment: MIGSCHED_TSA_BUILD_DIR (default build-tsa), MIGSCHED_JOBS (build jobs, default 2),
#              CXX (default clang++).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${MIGSCHED_TSA_BUILD_DIR:-build-tsa}
cxx=${CXX:-clang++}
if ! command -v "$cxx" >/dev/null; then
  echo "thread-safety-check: $cxx not found (install clang)" >&2
  exit 2
fi
if [[ ! -f $dir/build.ninja ]]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Debug \
    -DMIGSCHED_WERROR=ON -DMIGSCHED_BUILD_TESTS=OFF -DCMAKE_CXX_FLAGS="-Wthread-safety" >/dev/null
fi
cmake --build "$dir" --target migsched_daemon -j "${MIGSCHED_JOBS:-2}"
echo "thread-safety-check: no warnings"
