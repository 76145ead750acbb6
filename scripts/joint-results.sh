#!/usr/bin/env bash
# Reproduces the section "Joint placement of waiting jobs" of docs/results.md:
# `lb+frag` and `full` with --joint-placement on and off, paired (same seed,
# same jobs and arrivals), on paper-mix (500 jobs, one 4x A100 40GB node) at
# offered load 0.7, 0.9 and 1.1, 20% and 60% PCIe-bound, and on the same 20%
# workloads with arrivals gathered into planning rounds of 300 s (every job
# arriving in (k-1)*300, k*300] is released at k*300, as a controller that
# plans every 300 s sees them). Writes one JSON per run under out/joint/runs/
# and the tables (mean and 95% confidence interval of the paired difference
# on - off) to out/joint/tables.md and out/joint/summary.csv.
#
#   scripts/joint-results.sh                # 30 seeds (about 20 s on 2 cores)
#   SEEDS="1 2 3" scripts/joint-results.sh  # fewer
#
# Environment: MIGSCHED (the binary; default build/bin/migsched, built with
# scripts/setup.sh when missing), SEEDS (default 1..30), JOBS (parallel runs,
# default 2), TABLES_ONLY=1 (only re-aggregate out/joint/runs/).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${MIGSCHED:-build/bin/migsched}
if [ ! -x "$bin" ]; then
  scripts/setup.sh build -DMIGSCHED_BUILD_TESTS=OFF
  bin=build/bin/migsched
fi
command -v python3 >/dev/null || { echo "joint-results.sh: needs python3" >&2; exit 1; }
seeds=${SEEDS:-$(seq -s " " 1 30)}
jobs=${JOBS:-2}
out=out/joint
[ "${TABLES_ONLY:-0}" = "1" ] || rm -rf "$out/runs" "$out/traces"
mkdir -p "$out/runs" "$out/traces"

base="--cluster 4xA100-40GB --workload paper-mix --jobs 500"
cmds=$(mktemp)
trap 'rm -f "$cmds"' EXIT
for load in 0.7 0.9 1.1; do
  for seed in $seeds; do
    for share in 0.2 0.6; do
      name="pm${share#0.}0-l$load"
      for policy in lb+frag full; do
        for joint in on off; do
          echo "$bin --quiet simulate $base --pcie-share $share --load $load --seed $seed" \
            "--policy $policy --joint-placement $joint" \
            "--json $out/runs/${name}__${policy}__${joint}__s${seed}.json >/dev/null" >>"$cmds"
        done
      done
    done
    # Planning rounds: the same jobs, arrivals rounded up to the next 300 s.
    name="pm20-l$load-r300"
    trace="$out/traces/${name}__s${seed}.csv"
    if [ "${TABLES_ONLY:-0}" != "1" ]; then
      "$bin" --quiet simulate $base --pcie-share 0.2 --load "$load" --seed "$seed" \
        --policy first-fit --export-workload "$trace.raw" >/dev/null
      python3 - "$trace.raw" "$trace" 300 <<'PY'
import csv, math, sys
src, dst, period = sys.argv[1], sys.argv[2], float(sys.argv[3])
with open(src) as f:
    rows = list(csv.DictReader(f))
with open(dst, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    for r in rows:
        r["arrival_s"] = repr(math.ceil(float(r["arrival_s"]) / period) * period)
        w.writerow(r)
PY
    fi
    for policy in lb+frag full; do
      for joint in on off; do
        echo "$bin --quiet simulate --cluster 4xA100-40GB --workload $trace --policy $policy" \
          "--joint-placement $joint --json $out/runs/${name}__${policy}__${joint}__s${seed}.json" \
          ">/dev/null" >>"$cmds"
      done
    done
  done
done
if [ "${TABLES_ONLY:-0}" != "1" ]; then
  echo "joint-results.sh: $(wc -l <"$cmds") runs, $jobs at a time" >&2
  xargs -P "$jobs" -I{} -d '\n' bash -c '{} || { echo "joint-results.sh: failed: {}" >&2; exit 255; }' <"$cmds"
fi

python3 - "$out" <<'PY'
# Paired differences (joint on - off, same seed) of mean wait, mean JCT and the
# 7g.40gb p95 wait: mean over seeds and the 95% confidence interval of that
# mean (Student's t, n - 1 degrees of freedom); "yes" when the interval
# excludes 0.
import collections, csv, glob, json, math, os, statistics, sys

out = sys.argv[1]
runs = collections.defaultdict(dict)  # (setting, policy, joint) -> seed -> metrics
for path in glob.glob(os.path.join(out, "runs", "*.json")):
    setting, policy, joint, seed = os.path.basename(path)[:-5].split("__")
    with open(path) as f:
        runs[(setting, policy, joint)][int(seed[1:])] = json.load(f)
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042]

def ci(diffs):
    n = len(diffs)
    m = statistics.mean(diffs)
    if n < 2:
        return m, float("nan")
    t = T975[n - 2] if n - 2 < len(T975) else 1.96
    return m, t * statistics.stdev(diffs) / math.sqrt(n)

def p95_7g(d):
    x = d.get("per_profile", {}).get("7g.40gb")
    return x["wait_p95_s"] if x and x.get("completed", 0) else None

metrics = [("mean wait", lambda d: d["wait_mean_s"] / 60, "min"),
           ("mean JCT", lambda d: d["jct_mean_s"] / 60, "min"),
           ("7g.40gb p95 wait", lambda d: None if p95_7g(d) is None else p95_7g(d) / 60, "min")]
order = lambda s: (s.endswith("r300"), s)
settings = sorted({s for s, _, _ in runs}, key=order)
rows, csv_rows = [], []
for s in settings:
    for policy in ("lb+frag", "full"):
        on, off = runs.get((s, policy, "on"), {}), runs.get((s, policy, "off"), {})
        seeds = sorted(set(on) & set(off))
        if not seeds:
            continue
        starts = statistics.mean(on[k].get("joint_starts", 0) for k in seeds)
        cells = [s, policy, str(len(seeds)), f"{starts:.1f}"]
        for name, fn, unit in metrics:
            pairs = [(fn(on[k]), fn(off[k])) for k in seeds]
            pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
            if not pairs:
                cells += ["-", "-"]
                continue
            base = statistics.mean(b for _, b in pairs)
            m, h = ci([a - b for a, b in pairs])
            sig = "yes" if not math.isnan(h) and (m - h > 0 or m + h < 0) else "no"
            rel = 100 * m / base if base else float("nan")
            cells += [f"{base:.1f}", f"{m:+.2f} ±{h:.2f} ({rel:+.1f}%) {sig}"]
            csv_rows.append({"setting": s, "policy": policy, "metric": name, "unit": unit,
                             "seeds": len(pairs), "off_mean": base, "diff_mean": m,
                             "ci95_half": h, "significant": sig, "joint_starts_mean": starts})
        rows.append(cells)
head = ["setting", "policy", "seeds", "joint starts / run", "mean wait off (min)",
        "Δ mean wait, on - off (min)", "mean JCT off (min)", "Δ mean JCT (min)",
        "7g p95 wait off (min)", "Δ 7g p95 wait (min)"]
md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
md += ["| " + " | ".join(r) + " |" for r in rows]
with open(os.path.join(out, "tables.md"), "w") as f:
    f.write("\n".join(md) + "\n")
with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(csv_rows[0].keys()))
    w.writeheader()
    w.writerows(csv_rows)
print("\n".join(md))
PY
