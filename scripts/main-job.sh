#!/usr/bin/env bash
# The main job: frag-aware against every baseline on (a) the bundled Alibaba
# GPU trace mapped to MIG on 32 A100 40GB GPUs with arrivals regenerated at a
# MEAN offered load of 0.9 (not a steady one: its long pods arrive early, see
# the notes the run prints: the offered load per week and the long pods), the
# same with every pod cut to at most 7 days (--duration-cap), and (b)
# paper-mix on 4 A100 40GB GPUs. The scheduler knows the jobs' time limits
# (--expected-ends limits, the default; the traces have none, so they come from
# the seeded model of user estimates, docs/formats/trace.md). Sets everything
# up first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build -DMIGSCHED_BUILD_TESTS=OFF   # the CLI only; scripts/test.sh builds the tests
policies=frag-aware,first-fit,lb,full,best-fit,driver-default,mfi,static
mkdir -p out
echo "== (a) Alibaba cluster-trace-gpu-v2023 (openb_pod_list_default), 32x A100 40GB, mean offered load 0.9"
build/bin/migsched compare --cluster 32xA100-40GB \
  --workload alibaba:data/traces/alibaba-v2023/openb_pod_list_default.csv \
  --load 0.9 --seed 1 --policies "$policies" --json out/alibaba-compare.json "$@"
echo
echo "== (a') the same, every pod cut to at most 7 days (--duration-cap 604800)"
build/bin/migsched compare --cluster 32xA100-40GB \
  --workload alibaba:data/traces/alibaba-v2023/openb_pod_list_default.csv \
  --load 0.9 --seed 1 --duration-cap 604800 --policies "$policies" \
  --json out/alibaba-capped-compare.json "$@"
echo
echo "== (b) paper-mix (20% PCIe-bound), 4x A100 40GB, offered load 0.9"
build/bin/migsched compare --cluster 4xA100-40GB --workload paper-mix \
  --load 0.9 --seed 1 --policies "$policies" --json out/paper-mix-compare.json "$@"
