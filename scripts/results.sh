#!/usr/bin/env bash
# Reproduces every table of docs/results.md: runs `migsched simulate` and
# `migsched sweep` over the settings below, writes one JSON per run under
# out/results/runs/ and the aggregated tables (out/results/summary.csv,
# out/results/per_profile.csv, out/results/threshold.csv, out/results/tables.md)
# with the Python (standard library only) at the end of this script.
#
#   scripts/results.sh                 # everything (about 3 minutes on 2 cores)
#   SEEDS="1 2 3" scripts/results.sh   # fewer paper-mix seeds
#
# Environment: MIGSCHED (the binary; default build/bin/migsched, built with
# scripts/setup.sh when missing), SEEDS (paper-mix seeds, default 1..10),
# ALIBABA_SEEDS (default 1 2 3), JOBS (parallel runs, default 2), TABLES_ONLY=1
# (only re-aggregate the runs already in out/results/runs/).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${MIGSCHED:-build/bin/migsched}
if [ ! -x "$bin" ]; then
  scripts/setup.sh build -DMIGSCHED_BUILD_TESTS=OFF
  bin=build/bin/migsched
fi
command -v python3 >/dev/null || { echo "results.sh: needs python3 (apt-get install python3)" >&2; exit 1; }
seeds=${SEEDS:-"1 2 3 4 5 6 7 8 9 10"}
alibaba_seeds=${ALIBABA_SEEDS:-"1 2 3"}
jobs=${JOBS:-2}
out=out/results
[ "${TABLES_ONLY:-0}" = "1" ] || rm -rf "$out/runs"
mkdir -p "$out/runs"

# Settings: NAME|simulate flags. paper-mix: 500 jobs on one 4x A100 40GB node,
# 20% or 60% PCIe-bound, offered load 0.8 (below saturation) or 1.2 (saturated).
# Alibaba: the main job's setting (32x A100 40GB, offered load 0.9).
alibaba=alibaba:data/traces/alibaba-v2023/openb_pod_list_default.csv
settings=(
  "pm20-l0.8|--cluster 4xA100-40GB --workload paper-mix --jobs 500 --pcie-share 0.2 --load 0.8"
  "pm20-l1.2|--cluster 4xA100-40GB --workload paper-mix --jobs 500 --pcie-share 0.2 --load 1.2"
  "pm60-l0.8|--cluster 4xA100-40GB --workload paper-mix --jobs 500 --pcie-share 0.6 --load 0.8"
  "pm60-l1.2|--cluster 4xA100-40GB --workload paper-mix --jobs 500 --pcie-share 0.6 --load 1.2"
  "alibaba-l0.9|--cluster 32xA100-40GB --workload $alibaba --load 0.9"
)

# Variants: LABEL|POLICY|extra flags. `full` is run with its defaults (the
# demand-weighted metric, sched/full_policy.h); `full-fragcost` is `full` as it
# was before (FragCost), the reference of the remedies. The starvation guard
# is 1800 s unless the label says otherwise.
variants=(
  "first-fit|first-fit|"
  "lb|lb|"
  "lb+frag|lb+frag|"
  "full|full|"
  "best-fit|best-fit|"
  "driver-default|driver-default|"
  "mfi|mfi|"
  "static|static|"
  "full-fragcost|full|--metric fragcost"
  "full-fragcost-noperiodic|full|--metric fragcost --defrag-interval 0"
  "full-noperiodic|full|--defrag-interval 0"
  "lb+frag+dw|lb+frag|--metric demand-weighted"
  "full-fragcost+reserve|full|--metric fragcost --reserve-full 1"
  "full-fragcost+guard|full|--metric fragcost --max-skip-seconds 1800"
  "full-fragcost+reserve+guard|full|--metric fragcost --reserve-full 1 --max-skip-seconds 1800"
  "full+reserve|full|--reserve-full 1"
  "full+guard|full|--max-skip-seconds 1800"
  "full+reserve+guard|full|--reserve-full 1 --max-skip-seconds 1800"
  "full+guard600|full|--max-skip-seconds 600"
  "full+guard3600|full|--max-skip-seconds 3600"
  "full+guard7200|full|--max-skip-seconds 7200"
  "lb+frag+dw+reserve+guard|lb+frag|--metric demand-weighted --reserve-full 1 --max-skip-seconds 1800"
  "first-fit+guard|first-fit|--max-skip-seconds 1800"
  "best-fit+guard|best-fit|--max-skip-seconds 1800"
)

# One command line per run (simulate), run $jobs at a time.
cmds=$(mktemp)
trap 'rm -f "$cmds"' EXIT
for s in "${settings[@]}"; do
  name=${s%%|*}
  flags=${s#*|}
  run_seeds=$seeds
  [[ $name == alibaba* ]] && run_seeds=$alibaba_seeds
  for seed in $run_seeds; do
    for v in "${variants[@]}"; do
      IFS='|' read -r label policy extra <<<"$v"
      echo "nice -n 5 $bin --quiet simulate $flags --seed $seed --policy $policy $extra" \
        "--json $out/runs/sim__${name}__${label}__s${seed}.json >/dev/null" >>"$cmds"
    done
    # The best threshold (§3): `full` (its defaults) and lb+frag over t = 0..1.
    for policy in full lb+frag; do
      echo "nice -n 5 $bin --quiet sweep $flags --seed $seed --policy $policy --threads 1" \
        "--param threshold=0:1:0.1 --json $out/runs/sweep__${name}__${policy}__s${seed}.json" \
        ">/dev/null" >>"$cmds"
    done
  done
done
if [ "${TABLES_ONLY:-0}" != "1" ]; then
  echo "results.sh: $(wc -l <"$cmds") runs, $jobs at a time" >&2
  xargs -P "$jobs" -I{} -d '\n' bash -c '{} || { echo "results.sh: failed: {}" >&2; exit 255; }' <"$cmds"
fi
python3 - "$out" <<'PY'
# Aggregates out/results/runs/*.json into CSVs and the Markdown tables of docs/results.md.
# Spread: "mean ±sd" over seeds (sample standard deviation); changes against a reference are
# computed per seed (same jobs and arrivals) and then averaged.
import collections, csv, glob, json, os, statistics, sys

out = sys.argv[1]
runs = collections.defaultdict(dict)   # (setting, label) -> seed -> metrics
sweeps = collections.defaultdict(dict)  # (setting, policy) -> seed -> sweep json
for path in glob.glob(os.path.join(out, "runs", "*.json")):
    kind, setting, label, seed = os.path.basename(path)[:-5].split("__")
    with open(path) as f:
        d = json.load(f)
    (runs if kind == "sim" else sweeps)[(setting, label)][int(seed[1:])] = d
settings = sorted({s for s, _ in runs}, key=lambda s: (s.startswith("alibaba"), s))
FULL_GPU = {"7g.40gb"}

def mean(v): return statistics.mean(v) if v else float("nan")
def sd(v): return statistics.stdev(v) if len(v) > 1 else 0.0
def pm(v, fmt="{:.1f}"): return (fmt + " ±" + fmt).format(mean(v), sd(v)) if v else "-"
def pp(d, prof, key):
    x = d.get("per_profile", {}).get(prof)
    return None if x is None or x.get("completed", 0) == 0 else x[key]
def vals(setting, label, fn):
    return [fn(d) for _, d in sorted(runs[(setting, label)].items()) if fn(d) is not None]
def change(setting, label, ref, fn):  # per-seed % change of fn against `ref`
    a, b = runs[(setting, label)], runs[(setting, ref)]
    return [100 * (fn(a[s]) / fn(b[s]) - 1) for s in sorted(a) if s in b and fn(b[s])]
def is_ali(s): return s.startswith("alibaba")
def hours(s): return s / 3600
def jct_unit(s): return (lambda x: x / 3600, "h") if is_ali(s) else (lambda x: x / 60, "min")
def small_wait(d):  # worst p95 wait over the profiles of at most 2 compute slices
    v = [pp(d, p, "wait_p95_s") for p in ("1g.5gb", "1g.10gb", "2g.10gb")]
    v = [x for x in v if x is not None]
    return max(v) if v else None

md = []
def table(title, head, rows, note=None):
    md.append(f"\n### {title}\n")
    if note: md.append(note + "\n")
    md.append("| " + " | ".join(head) + " |")
    md.append("|" + "|".join("---" for _ in head) + "|")
    for r in rows: md.append("| " + " | ".join(str(c) for c in r) + " |")

# ---- summary.csv: every (setting, variant), the main metrics, mean and sd over seeds.
keys = ["makespan_s", "jct_mean_s", "jct_p95_s", "wait_mean_s", "wait_p95_s", "utilization",
        "frag_mean", "frag_peak", "reconfigurations", "reuses", "migrations", "rejected",
        "jobs_completed", "energy_kwh"]
with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["setting", "variant", "seeds"] + [k + s for k in keys for s in ("_mean", "_sd")])
    for (setting, label), by_seed in sorted(runs.items()):
        row = [setting, label, len(by_seed)]
        for k in keys:
            v = [d[k] for d in by_seed.values() if d.get(k) is not None]
            row += [mean(v), sd(v)]
        w.writerow(row)
with open(os.path.join(out, "per_profile.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["setting", "variant", "profile", "seeds", "jobs_mean", "jct_mean_s_mean",
                "jct_mean_s_sd", "wait_mean_s_mean", "wait_p95_s_mean", "wait_p95_s_sd"])
    for (setting, label), by_seed in sorted(runs.items()):
        profs = sorted({p for d in by_seed.values() for p in d["per_profile"]})
        for p in profs:
            j = vals(setting, label, lambda d: pp(d, p, "jct_mean_s"))
            wm = vals(setting, label, lambda d: pp(d, p, "wait_mean_s"))
            w95 = vals(setting, label, lambda d: pp(d, p, "wait_p95_s"))
            n = vals(setting, label, lambda d: d["per_profile"].get(p, {}).get("jobs"))
            w.writerow([setting, label, p, len(j), mean(n), mean(j), sd(j), mean(wm), mean(w95),
                        sd(w95)])

# ---- Table 1: the ladder and the baselines against first-fit and the best baseline.
ladder = ["first-fit", "lb", "lb+frag", "full-fragcost", "full", "best-fit", "driver-default",
          "mfi", "static"]
baselines = ["first-fit", "best-fit", "driver-default", "mfi"]
for s in settings:
    seeds = len(runs[(s, "first-fit")])
    best = min(baselines, key=lambda b: mean(vals(s, b, lambda d: d["jct_mean_s"])))
    conv, unit = jct_unit(s)
    rows = []
    for label in ladder:
        if (s, label) not in runs: continue
        mk = vals(s, label, lambda d: d["makespan_s"])
        rows.append([f"`{label}`",
                     pm([m / 3600 for m in mk]) if not is_ali(s) else pm([m / 86400 for m in mk], "{:.2f}"),
                     pm(change(s, label, "first-fit", lambda d: d["makespan_s"])),
                     pm([conv(x) for x in vals(s, label, lambda d: d["jct_mean_s"])]),
                     pm(change(s, label, "first-fit", lambda d: d["jct_mean_s"])),
                     pm(change(s, label, best, lambda d: d["jct_mean_s"])),
                     pm([100 * x for x in vals(s, label, lambda d: d["utilization"])]),
                     pm(vals(s, label, lambda d: d["frag_mean"]), "{:.3f}"),
                     pm(vals(s, label, lambda d: d["frag_peak"]), "{:.2f}"),
                     f'{mean(vals(s, label, lambda d: d["reconfigurations"])):.0f}',
                     f'{mean(vals(s, label, lambda d: d["migrations"])):.0f}',
                     f'{mean(vals(s, label, lambda d: d["rejected"])):.0f}'])
    table(f"Ladder and baselines: {s} ({seeds} seeds)",
          ["policy", "makespan " + ("(d)" if is_ali(s) else "(h)"), "Δ makespan vs first-fit %",
           f"mean JCT ({unit})", "Δ JCT vs first-fit %", f"Δ JCT vs best baseline ({best}) %",
           "util %", "frag mean", "frag peak", "reconfigs", "migrations", "rejected"], rows)

# ---- Table 2: mean JCT and p95 wait per profile.
per_profile_variants = ["first-fit", "best-fit", "lb+frag", "full-fragcost", "full",
                        "full+guard", "static"]
for s in settings:
    conv, unit = jct_unit(s)
    profs = sorted({p for (ss, _), b in runs.items() if ss == s for d in b.values()
                    for p in d["per_profile"]},
                   key=lambda p: (int(p.split("x")[0]) if "x" in p else 1, int(p.split("g")[0].split("x")[-1]), p))
    rows = []
    for label in per_profile_variants:
        if (s, label) not in runs: continue
        row = [f"`{label}`"]
        for p in profs:
            j = vals(s, label, lambda d: pp(d, p, "jct_mean_s"))
            w = vals(s, label, lambda d: pp(d, p, "wait_p95_s"))
            row.append(f"{mean([conv(x) for x in j]):.0f} / {mean([conv(x) for x in w]):.0f}" if j else "-")
        rows.append(row)
    share = {p: mean(vals(s, "first-fit", lambda d: d["per_profile"].get(p, {}).get("jobs"))) for p in profs}
    table(f"Per profile: {s}: mean JCT / p95 wait ({unit}), mean over seeds",
          ["policy"] + [f"{p} ({share[p]:.0f} jobs)" for p in profs], rows)

# ---- Table 3: remedies for the full-GPU gap, against `full-fragcost` (full without remedies).
remedies = ["lb+frag", "full-fragcost", "full-fragcost+reserve", "full-fragcost+guard",
            "full-fragcost+reserve+guard", "full", "full+reserve", "full+guard",
            "full+reserve+guard", "full+guard600", "full+guard3600", "full+guard7200",
            "lb+frag+dw+reserve+guard", "first-fit+guard", "best-fit+guard"]
def big_wait(s):
    prof = "8x7g.40gb" if is_ali(s) else "7g.40gb"
    return prof, (lambda d: pp(d, prof, "wait_p95_s"))
crit = collections.defaultdict(dict)
for s in settings:
    conv, unit = jct_unit(s)
    prof, bw = big_wait(s)
    w7 = lambda d: pp(d, "7g.40gb", "wait_p95_s")
    rows = []
    for label in remedies:
        if (s, label) not in runs: continue
        dj = change(s, label, "full-fragcost", lambda d: d["jct_mean_s"])
        d7 = change(s, label, "full-fragcost", w7)
        # The criterion's 7g change: ratio of the seed means (p95 waits are too noisy per seed).
        ref7 = mean(vals(s, "full-fragcost", w7))
        crit[label][s] = (mean(dj), 100 * (mean(vals(s, label, w7)) / ref7 - 1) if ref7 else 0.0,
                          mean(change(s, label, "first-fit", lambda d: d["jct_mean_s"])))
        row = [f"`{label}`", pm([conv(x) for x in vals(s, label, lambda d: d["jct_mean_s"])]),
               pm(dj), pm(change(s, label, "first-fit", lambda d: d["jct_mean_s"])),
               pm([conv(x) for x in vals(s, label, lambda d: pp(d, "7g.40gb", "jct_mean_s"))]),
               pm([conv(x) for x in vals(s, label, w7)]), pm(d7),
               pm([conv(x) for x in vals(s, label, small_wait)])]
        if is_ali(s): row.append(pm([conv(x) for x in vals(s, label, bw)]))
        rows.append(row)
    head = ["variant", f"mean JCT ({unit})", "Δ JCT vs full-fragcost %", "Δ JCT vs first-fit %",
            f"7g mean JCT ({unit})", f"7g p95 wait ({unit})", "Δ 7g p95 wait %",
            f"1g/2g worst p95 wait ({unit})"]
    if is_ali(s): head.append(f"8x7g p95 wait ({unit})")
    table(f"Remedies for the full-GPU gap: {s}", head, rows)

# ---- Criterion: lowest mean ΔJCT over the settings among the variants of `full` whose 7g p95
# wait rises by at most 10% in every setting (against full-fragcost).
rows = []
for label in remedies:
    if not label.startswith("full") or label not in crit: continue
    c = crit[label]
    ok = all(d7 <= 10 for _, d7, _ in c.values())
    rows.append([f"`{label}`", f"{mean([dj for dj, _, _ in c.values()]):+.1f}",
                 f"{max(dj for dj, _, _ in c.values()):+.1f}",
                 f"{mean([df for _, _, df in c.values()]):+.1f}",
                 " / ".join(f"{d7:+.0f}" for _, d7, _ in c.values()), "yes" if ok else "no"])
table("Choosing the default of `full`",
      ["variant", "mean Δ JCT over the settings %", "worst Δ JCT %", "mean Δ JCT vs first-fit %",
       "Δ 7g p95 wait per setting % (" + " / ".join(settings) + ")", "7g p95 wait within +10%"],
      rows, "Δ against `full-fragcost` (full without remedies); JCT changes per seed then "
      "averaged over seeds and settings; the 7g p95 wait change is the ratio of the seed means.")

# ---- Table 4: the periodic pass.
rows = []
for s in settings:
    for label in ["full-fragcost", "full-fragcost-noperiodic", "full", "full-noperiodic"]:
        if (s, label) not in runs: continue
        conv, unit = jct_unit(s)
        rows.append([s, f"`{label}`", pm(vals(s, label, lambda d: d["frag_mean"]), "{:.3f}"),
                     pm(vals(s, label, lambda d: d["frag_peak"]), "{:.2f}"),
                     pm(vals(s, label, lambda d: d["migrations"]), "{:.0f}"),
                     pm(vals(s, label, lambda d: d["reconfigurations"]), "{:.0f}"),
                     pm([conv(x) for x in vals(s, label, lambda d: d["jct_mean_s"])]) + " " + unit])
table("The periodic pass (--defrag-interval 300 vs 0)",
      ["setting", "variant", "frag mean", "frag peak", "migrations", "reconfigs", "mean JCT"], rows)

# ---- Table 5: threshold sweeps.
with open(os.path.join(out, "threshold.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["setting", "policy", "threshold", "seeds", "jct_mean_s", "wait_p95_7g_s",
                "frag_mean", "utilization", "migrations"])
    for (s, policy), by_seed in sorted(sweeps.items()):
        ts = next(iter(by_seed.values()))["values"]
        rows = []
        for i, t in enumerate(ts):
            rs = [d["results"][i] for d in by_seed.values()]
            conv, unit = jct_unit(s)
            j = [r["jct_mean_s"] for r in rs]
            w7 = [pp(r, "7g.40gb", "wait_p95_s") for r in rs]
            w7 = [x for x in w7 if x is not None]
            fr = [r["frag_mean"] for r in rs]
            u = [r["utilization"] for r in rs]
            mg = [r["migrations"] for r in rs]
            w.writerow([s, policy, t, len(rs), mean(j), mean(w7), mean(fr), mean(u), mean(mg)])
            rows.append([f"{t:g}", pm([conv(x) for x in j]), pm([conv(x) for x in w7]),
                         pm(fr, "{:.3f}"), f"{100 * mean(u):.1f}", f"{mean(mg):.0f}"])
        table(f"Threshold: `{policy}` on {s} ({len(by_seed)} seeds)",
              ["t", f"mean JCT ({unit})", f"7g p95 wait ({unit})", "frag mean", "util %",
               "migrations"], rows)

for policy in ("full", "lb+frag"):
    rows = []
    ss = [s for s in settings if (s, policy) in sweeps]
    if not ss: continue
    ts = next(iter(sweeps[(ss[0], policy)].values()))["values"]
    ref = ts.index(0.4) if 0.4 in ts else None
    for i, t in enumerate(ts):
        row = [f"{t:g}"]
        for s in ss:
            by_seed = sweeps[(s, policy)]
            ch = [100 * (d["results"][i]["jct_mean_s"] / d["results"][ref]["jct_mean_s"] - 1)
                  for d in by_seed.values()] if ref is not None else []
            fr = mean([d["results"][i]["frag_mean"] for d in by_seed.values()])
            row.append(f"{pm(ch)} ({fr:.3f})")
        rows.append(row)
    table(f"Threshold summary: `{policy}`, Δ mean JCT vs t = 0.4 % (frag mean)", ["t"] + ss, rows,
          "On a 7-slice GPU, t in (2/7, 3/7] (0.3 and 0.4) and (4/7, 5/7] (0.6, 0.7) give the same "
          "lazy/busy split.")

with open(os.path.join(out, "tables.md"), "w") as f:
    f.write("# Tables of docs/results.md (generated by scripts/results.sh)\n")
    f.write("\n".join(md) + "\n")
PY
echo "results.sh: tables in $out/tables.md" >&2
