#!/usr/bin/env bash
# Installs what migsched needs on Debian 12 (apt-get, only the packages that
# are missing), then configures and builds it.
#
#   scripts/setup.sh [BUILD_DIR] [extra cmake args...]
#
# BUILD_DIR defaults to build/. Environment: MIGSCHED_JOBS (parallel build
# jobs, default: number of cores); MIGSCHED_WITH_BROWSER=1 also installs
# Debian's `chromium`, which only the HTML report's test needs (it renders the
# report headless; without chromium that test is skipped, saying so);
# MIGSCHED_WITH_PROMTOOL=1 also installs Debian's `prometheus`, whose
# `promtool check metrics` the daemon's /metrics test runs;
# MIGSCHED_WITH_KUBECTL=1 also installs Debian's `kubernetes-client` where no
# kubectl is installed, whose `kubectl kustomize` renders deploy/kubernetes/ in
# the manifests' test (without kubectl that test is skipped, saying so);
# MIGSCHED_WITH_PODMAN=1 also installs Debian's `podman` and `buildah`, for
# scripts/build-image.sh and the image's opt-in test (MIGSCHED_IMAGE_TEST=1).
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${1:-build}
shift || true

packages=(cmake ninja-build g++ pkg-config libgtest-dev libgmock-dev nlohmann-json3-dev
          libcli11-dev libfmt-dev libcpp-httplib-dev libyaml-cpp-dev libsqlite3-dev sqlite3
          libspdlog-dev libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
          libssl-dev openssl
          # Google Benchmark: bench/ (scripts/bench.sh); its sources compile in the tests.
          libbenchmark-dev
          # curl: docs/kubernetes.md's "Try it on one machine", run by its test.
          curl
          # Slurm's own daemons and commands, and munge, for the Slurm tests (docs/slurm.md).
          slurm-wlm munge)
if [ "${MIGSCHED_WITH_BROWSER:-0}" = "1" ]; then
  packages+=(chromium)
fi
if [ "${MIGSCHED_WITH_PROMTOOL:-0}" = "1" ]; then
  packages+=(prometheus)
fi
if [ "${MIGSCHED_WITH_KUBECTL:-0}" = "1" ] && ! command -v kubectl >/dev/null 2>&1; then
  packages+=(kubernetes-client)
fi
if [ "${MIGSCHED_WITH_PODMAN:-0}" = "1" ]; then
  packages+=(podman buildah)
fi
# npm, for the test-only manifest validator (tests/data/k8s/validate): Debian's
# nodejs and npm where no npm is installed.
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# The validator's npm packages (pinned in its package-lock.json), once.
if [ ! -d tests/data/k8s/validate/node_modules ]; then
  echo "setup: installing the manifest validator's npm packages" >&2
  (cd tests/data/k8s/validate && npm ci --no-audit --no-fund --loglevel=error >&2)
fi

jobs=${MIGSCHED_JOBS:-$(nproc)}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >&2
cmake --build "$build_dir" -j "$jobs" >&2
