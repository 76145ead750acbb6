#!/usr/bin/env bash
# Checks this machine's NVIDIA GPUs against migsched's catalog, through migsched's own NVML
# backend (`migsched device-check`; docs/mig-hardware.md "Checking a machine", which documents
# the output and how to add a GPU model from it).
#
#   scripts/device-check.sh [--write] [--gpu N]... [--nvml-library PATH] [--migsched PATH]
#
# Read-only by default: prints the driver, each GPU's model and MIG mode, and compares the
# catalog with every profile and placement NVML reports. With --write it also creates and
# destroys one instance of each profile at each placement, timing each, but only on a GPU whose
# MIG mode is already enabled (no change pending) and that has no GPU instance (so runs
# nothing); the GPU is left as it was found. It never changes the MIG mode and never resets a
# GPU: enabling MIG is the operator's step (sudo nvidia-smi -i N -mig 1).
#
# Lines starting with '#' are comments (nvidia-smi's view when it is installed); every other
# line is a record of `migsched device-check`. Exit status: that of `migsched device-check`
# (0 ok, 1 catalog differences, 2 failed).
set -euo pipefail

migsched=""
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --migsched) migsched="$2"; shift 2 ;;
    --migsched=*) migsched="${1#--migsched=}"; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done

if [[ -z "$migsched" ]]; then
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  if [[ -x "$here/build/bin/migsched" ]]; then
    migsched="$here/build/bin/migsched"
  elif command -v migsched > /dev/null; then
    migsched="$(command -v migsched)"
  else
    echo "device-check.sh: no migsched binary (build it, or pass --migsched PATH)" >&2
    exit 2
  fi
fi

echo "# migsched: $migsched"
# nvidia-smi's own view, read-only queries only (absent on machines without the driver).
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=index,name,driver_version,mig.mode.current,mig.mode.pending \
    --format=csv,noheader 2> /dev/null | sed 's/^/# nvidia-smi: /' || true
else
  echo "# nvidia-smi: not installed"
fi

exec "$migsched" device-check "${args[@]}"
