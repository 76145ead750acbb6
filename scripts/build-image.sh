#!/usr/bin/env bash
# Builds the migsched image without any registry: this machine's build
# (build/bin/migsched, installed with `cmake --install`), the shared libraries
# it loads (from this machine's Debian packages, found with ldd) and the
# dynamic loader, on an empty base (`buildah from scratch`). The layout is
# deploy/container/Containerfile's: /usr/local/bin/migsched,
# /usr/local/share/migsched, user 65532, entrypoint migsched.
#
#   scripts/build-image.sh [BUILD_DIR] [IMAGE]    (defaults: build, localhost/migsched:0.1.0)
#
# Needs buildah (Debian's `buildah`; MIGSCHED_WITH_PODMAN=1 scripts/setup.sh).
# $MIGSCHED_STORAGE_DRIVER (e.g. vfs) is passed to buildah as --storage-driver.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
image=${2:-localhost/migsched:0.1.0}
command -v buildah >/dev/null || { echo "$0: buildah is needed (apt-get install buildah)" >&2; exit 1; }
[ -x "$build_dir/bin/migsched" ] || { echo "$0: no $build_dir/bin/migsched: build first (scripts/setup.sh)" >&2; exit 1; }
storage=()
[ -n "${MIGSCHED_STORAGE_DRIVER:-}" ] && storage=(--storage-driver "$MIGSCHED_STORAGE_DRIVER")

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
cmake --install "$build_dir" --prefix "$root/usr/local" >/dev/null
bin=$root/usr/local/bin/migsched
# The shared libraries and the loader, at their paths on this (Debian 12) machine.
for lib in $(ldd "$bin" | awk '/=> \//{print $3} /^\t\/[^ ]*ld-linux/{print $1}'); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
mkdir -p "$root/etc" "$root/tmp"
chmod 1777 "$root/tmp"
echo "root:x:0:0:root:/root:/sbin/nologin" >"$root/etc/passwd"
echo "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin" >>"$root/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$root/etc/group"

ctr=$(buildah "${storage[@]}" from scratch)
trap 'rm -rf "$root"; buildah "${storage[@]}" rm "$ctr" >/dev/null 2>&1 || true' EXIT
buildah "${storage[@]}" copy "$ctr" "$root" / >/dev/null
buildah "${storage[@]}" config --user 65532:65532 --entrypoint '["migsched"]' --cmd '--help' \
  --label org.opencontainers.image.title=migsched \
  --label org.opencontainers.image.version="$("$bin" --version | awk '{print $2}')" "$ctr"
buildah "${storage[@]}" commit -q "$ctr" "$image" >/dev/null
echo "built $image"
