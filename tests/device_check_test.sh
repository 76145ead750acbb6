#!/usr/bin/env bash
# ctest device_check_script: scripts/device-check.sh through `migsched device-check` against the
# fake libnvidia-ml (tests/fake_nvml) with tests/data/fake_nvml/device_check.json: GPU 0 an empty
# A100 40GB with MIG enabled (written to), GPU 1 one with a 3g.20gb instance (left alone), GPU 2
# with MIG disabled (read only). Expected values by hand from docs/mig-hardware.md §2.2: the A100
# 40GB has 7 + 7 + 4 + 3 + 2 + 1 + 1 = 25 placements over its 7 profiles.
#   device_check_test.sh SCRIPT MIGSCHED FAKE_LIBRARY CONFIG
set -uo pipefail
script="$1" migsched="$2" lib="$3" config="$4"
export MIGSCHED_FAKE_NVML_CONFIG="$config"

fail() { echo "FAIL: $1"; echo "---- output ----"; echo "$out"; exit 1; }
check() { grep -qE -- "$1" <<< "$out" || fail "no line matches: $1"; }
absent() { ! grep -qE -- "$1" <<< "$out" || fail "a line matches: $1"; }

# Read-only: nothing is created.
out="$("$script" --migsched "$migsched" --nvml-library "$lib")"
rc=$?
[[ $rc -eq 0 ]] || fail "read-only run exited $rc, want 0"
check '^device-check format=1 mode=read-only$'
check '^driver version=570\.00\.fake library=.*libnvidia-ml-fake\.so$'
check '^gpu index=0 name="NVIDIA A100-SXM4-40GB" uuid=GPU-[0-9a-f-]+ memory_mib=40960 mig=enabled pending_change=no catalog="A100 40GB"$'
check '^profile gpu=0 index=0x0 id=19 slices=1 instances=7 memory_mib=4864 placements=0:1,1:1,2:1,3:1,4:1,5:1,6:1 catalog=1g\.5gb catalog_memory_mib=4864$'
check '^profile gpu=0 index=0x4 id=0 slices=7 instances=1 memory_mib=40192 placements=0:8 catalog=7g\.40gb catalog_memory_mib=40192$'
check '^write gpu=0 result=skipped reason="read-only \(no --write\)"$'
absent '^create '
check '^summary gpus=3 differences=0 writes=0 write_failures=0 result=ok$'

# --write: GPU 0 only, every profile at every placement, left as found.
out="$("$script" --migsched "$migsched" --nvml-library "$lib" --write)"
rc=$?
[[ $rc -eq 0 ]] || fail "write run exited $rc, want 0"
check '^device-check format=1 mode=write$'
n=$(grep -cE '^create gpu=0 id=[0-9]+ profile=[^ ]+ placement=[0-9]+:[0-9]+ result=ok create_ms=[0-9.]+ destroy_ms=[0-9.]+ gi=[0-9]+ mig_uuid=MIG-' <<< "$out")
[[ $n -eq 25 ]] || fail "$n successful creates on GPU 0, want 25"
check '^create gpu=0 id=9 profile=3g\.20gb placement=4:4 result=ok '
check '^create gpu=0 id=20 profile=1g\.5gb\+me placement=6:1 result=ok '
absent '^create gpu=[12] '
check '^instance gpu=1 gi=1 profile_id=9 placement=4:4 mig_uuid=MIG-'
check '^write gpu=1 result=skipped reason="1 GPU instance\(s\) exist: the GPU may be in use"$'
check '^gpu index=2 .* mig=disabled pending_change=no '
check '^write gpu=2 result=skipped reason="MIG mode is not enabled \(migsched never changes it\)"$'
check '^restored gpu=0 result=yes instances_left=0$'
check '^summary gpus=3 differences=0 writes=25 write_failures=0 result=ok$'

# A library that cannot be loaded: exit 2 with an error record.
out="$("$script" --migsched "$migsched" --nvml-library /nonexistent/libnvidia-ml.so.1 2> /dev/null)"
rc=$?
[[ $rc -eq 2 ]] || fail "missing library: exit $rc, want 2"
check '^error what=open-nvml message="cannot load /nonexistent/libnvidia-ml\.so\.1: '
echo "device-check script: all checks passed"
