#!/usr/bin/env bash
# The whole test suite: sets up, builds with -Werror, runs every test; then
# builds again with AddressSanitizer + UndefinedBehaviorSanitizer and runs
# every layer's unit tests under them.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${MIGSCHED_JOBS:-$(nproc)}
# The HTML report's test renders it in headless Chromium: install it too.
export MIGSCHED_WITH_BROWSER=${MIGSCHED_WITH_BROWSER:-1}
# The daemon's /metrics test checks the exposition with promtool (Debian's prometheus).
export MIGSCHED_WITH_PROMTOOL=${MIGSCHED_WITH_PROMTOOL:-1}

# The layers' unit-test executables compile as unity builds (CMakeLists.txt, MIGSCHED_UNITY_TESTS):
# the same tests in about a third of their compile time; the libraries and programs do not.
scripts/setup.sh build -DMIGSCHED_WERROR=ON -DMIGSCHED_BUILD_TESTS=ON -DMIGSCHED_UNITY_TESTS=ON
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== tests under AddressSanitizer + UndefinedBehaviorSanitizer" >&2
# The unit tests of every layer; the end-to-end tests (processes, real Slurm, test servers) ran
# above in the normal build: under the sanitizers they took half of this pass's time (DEVELOPERS.md).
# A unity build (16 sources per compile): the same tests, about a fifth of the compile time.
scripts/setup.sh build-asan -DMIGSCHED_WERROR=ON -DMIGSCHED_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" -DMIGSCHED_BUILD_E2E_TESTS=OFF \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"
