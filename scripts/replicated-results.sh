#!/usr/bin/env bash
# Replicated, paired comparison of `full` and its large-job mechanisms
# (docs/algorithms.md §13) against the best baseline, on the settings of
# docs/results.md: churn workloads on 4 and 8 A100 40GB at offered load 0.7,
# 0.9, 1.1, 1.3 with 20% and 60% PCIe-bound jobs, a mixed cluster, and the
# Alibaba trace. Every setting runs REPLICAS replicas (default 10; replica r
# uses seed 1 + r, §9 "Replicas"); every variant sees the same replicas, so the
# aggregation pairs them replica by replica. This is the whole of
# docs/results.md (scripts/results.sh runs it).
#
#   scripts/replicated-results.sh                  # everything (about 5 minutes on 2 cores)
#   REPLICAS=20 scripts/replicated-results.sh
#   SETTINGS="c4-p20-l0.9" scripts/replicated-results.sh   # some settings only
#   VARIANTS="base slack1 slack1-unknown" scripts/replicated-results.sh   # some variants only
#   TABLES_ONLY=1 scripts/replicated-results.sh    # re-aggregate and re-plot the runs there
#
# Writes out/replicated/runs/SETTING.VARIANT.json (compare --json),
# out/replicated/tables.md (every figure of docs/results.md: the paired ratios
# with 95% intervals, the targets, the knob's curve), out/replicated/knob.csv
# and out/replicated/p95-by-load.csv (the plots' data; python3, standard
# library only), and, where gnuplot is installed (Debian: gnuplot-nox; only
# this script needs it, so scripts/setup.sh does not install it), the plots
# docs/img/knob-trade-curve.png and docs/img/p95-wait-by-load.png.
# Environment: MIGSCHED (the binary, default build/bin/migsched), REPLICAS,
# THREADS (default 2), SETTINGS, VARIANTS (names as below; `base` is the
# reference every table needs), TABLES_ONLY=1, NICE (niceness of the runs,
# default 10).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${MIGSCHED:-build/bin/migsched}
[ -x "$bin" ] || { echo "replicated-results.sh: build $bin first (scripts/setup.sh build)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "replicated-results.sh: needs python3" >&2; exit 1; }
replicas=${REPLICAS:-10}
threads=${THREADS:-2}
out=out/replicated
mkdir -p "$out/runs"

# NAME|compare flags of the setting.
alibaba=alibaba:data/traces/alibaba-v2023/openb_pod_list_default.csv
all_settings=()
for gpus in 4 8; do
  for pcie in 20 60; do
    for load in 0.7 0.9 1.1 1.3; do
      all_settings+=("c$gpus-p$pcie-l$load|--cluster ${gpus}xA100-40GB --workload churn --jobs $((gpus * 100)) --pcie-share 0.$pcie --load $load")
    done
  done
done
all_settings+=("mixed-l0.9|--cluster 2xA100-40GB,1xH100-80GB,1xH200 --workload churn --jobs 400 --load 0.9")
all_settings+=("mixed-l1.1|--cluster 2xA100-40GB,1xH100-80GB,1xH200 --workload churn --jobs 400 --load 1.1")
all_settings+=("alibaba-l0.9|--cluster 32xA100-40GB --workload $alibaba --load 0.9")

# VARIANT|policies|extra flags. `base` holds the baselines and `full` without
# the large-job mechanisms; the others are `full` with one mechanism (or two)
# on. Every mechanism is given explicitly (off: --evacuation off,
# --max-skip-seconds -1 --reservation-slack 0, the global defaults, which the
# baselines have too), so that the variants stay what they are named whatever
# `full`'s own defaults are (today: those of `slack1`, sched/full_policy.h).
# `evacq` is --evacuation queue; `guard` the strict look-ahead reservation
# (EASY, slack 0); `slackF` is the knob of §13: the look-ahead reservation
# (--max-skip-seconds 1800) on top of `evacq`, with --reservation-slack F;
# `slack1-unknown` and `evacq-unknown` are `slack1` (`full`'s defaults: a
# reservation of unknown start is skipped) and `evacq` with --expected-ends
# unknown: the scheduler told no durations or expected ends, as the daemon
# without time limits (the baselines use neither); `strict-unknown` is
# `slack1-unknown` with --reservation-unknown-ends strict: the reservation
# made anyway.
knob_values=(0 0.25 0.5 1 2 4)
off="--evacuation off --max-skip-seconds -1 --reservation-slack 0"
variants=(
  "base|first-fit,best-fit,driver-default,mfi,full|$off"
  "evac|full|--evacuation head --max-skip-seconds -1"
  "evacq|full|--evacuation queue --max-skip-seconds -1"
  "evacq-after|full|--evacuation queue --max-skip-seconds -1 --evacuation-when after-backfill"
  "guard|full|--evacuation off --max-skip-seconds 1800 --reservation-slack 0"
  "before-scan|full|$off --migration-order before-scan"
)
for f in "${knob_values[@]}"; do
  variants+=("slack$f|full|--evacuation queue --max-skip-seconds 1800 --reservation-slack $f")
done
variants+=("slack1-unknown|full|--evacuation queue --max-skip-seconds 1800 --reservation-slack 1 --expected-ends unknown")
variants+=("evacq-unknown|full|--evacuation queue --max-skip-seconds -1 --expected-ends unknown")
variants+=("strict-unknown|full|--evacuation queue --max-skip-seconds 1800 --reservation-slack 1 --reservation-unknown-ends strict --expected-ends unknown")

if [ "${TABLES_ONLY:-0}" != "1" ]; then
  for s in "${all_settings[@]}"; do
    name=${s%%|*}
    flags=${s#*|}
    if [ -n "${SETTINGS:-}" ] && ! [[ " $SETTINGS " == *" $name "* ]]; then continue; fi
    for v in "${variants[@]}"; do
      vname=${v%%|*}
      if [ -n "${VARIANTS:-}" ] && ! [[ " $VARIANTS " == *" $vname "* ]]; then continue; fi
      rest=${v#*|}
      policies=${rest%%|*}
      extra=${rest#*|}
      # shellcheck disable=SC2086
      nice -n "${NICE:-10}" "$bin" --quiet compare $flags --seed 1 --replicas "$replicas" \
        --threads "$threads" --policies "$policies" $extra --json "$out/runs/$name.$vname.json" \
        >/dev/null
      echo "ran $name $vname" >&2
    done
  done
fi

python3 - "$out" "${knob_values[*]}" <<'EOF'
import glob, json, math, os, sys

out = sys.argv[1]
KNOB = sys.argv[2].split()
# Student's t, 97.5% quantile, by degrees of freedom (1.96 beyond 30).
T = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
     2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
     2.052, 2.048, 2.045, 2.042]
def t975(df): return T[df - 1] if df <= len(T) else 1.96

def paired(a, ref):
    """mean(a)/mean(ref) with the half-width of the paired difference / mean(ref)."""
    pairs = [(x, y) for x, y in zip(a, ref) if x is not None and y is not None
             and not math.isnan(x) and not math.isnan(y)]
    n = len(pairs)
    if n < 2: return None
    ma = sum(x for x, _ in pairs) / n
    mr = sum(y for _, y in pairs) / n
    d = [x - y for x, y in pairs]
    md = sum(d) / n
    sd = math.sqrt(sum((x - md) ** 2 for x in d) / (n - 1))
    half = t975(n - 1) * sd / math.sqrt(n)
    if mr == 0: return None
    return (ma / mr, half / abs(mr), abs(md) > half)

def values(res, key, profile=None):
    v = []
    for r in res['replica_results']:
        if profile is None:
            v.append(r.get(key))
        else:
            p = r.get('per_profile', {}).get(profile)
            v.append(None if p is None else p.get(key))
    return v

VARIANTS = (['evac', 'evacq', 'evacq-after', 'guard', 'before-scan'] + ['slack' + f for f in KNOB]
            + ['slack1-unknown', 'evacq-unknown', 'strict-unknown'])
BASELINES = ('first-fit', 'best-fit', 'driver-default', 'mfi')

def fmt(p):
    if p is None: return '-'
    ratio, half, sig = p
    return f"{ratio:.2f} ±{half:.2f}{'*' if sig else ''}"

def load_of(s): return float(s.rsplit('-l', 1)[1])

def groups(profiles):
    # Single-instance 7g and 4g, and the small profiles (1g-3g); gangs ("2x7g...") aside.
    single = [p for p in profiles if 'x' not in p.split('.')[0]]
    return ([p for p in single if p.startswith('7g')], [p for p in single if p.startswith('4g')],
            [p for p in single if p[:2] in ('1g', '2g', '3g')])

settings = sorted(os.path.basename(f)[:-len(".base.json")]
                  for f in glob.glob(f"{out}/runs/*.base.json"))
data = {}  # setting -> (best baseline name, ref result, {label: result})
for s in settings:
    base = json.load(open(f"{out}/runs/{s}.base.json"))
    res = {r['policy']: r for r in base['results']}
    best = min((p for p in BASELINES if p in res), key=lambda p: res[p]['jct_mean_s'])
    runs = {'full': res['full']}
    for v in VARIANTS:
        f = f"{out}/runs/{s}.{v}.json"
        if os.path.exists(f): runs[v] = json.load(open(f))['results'][0]
    data[s] = (best, res[best], runs, res)

def figures(s, r):
    """Paired ratios of result r to the setting's best baseline."""
    best, ref, _, _ = data[s]
    big7, big4, small = groups(list(ref['per_profile'].keys()))
    fig = {'jct': paired(values(r, 'jct_mean_s'), values(ref, 'jct_mean_s')),
           'wait': paired(values(r, 'wait_mean_s'), values(ref, 'wait_mean_s')),
           '7g': paired(values(r, 'wait_p95_s', big7[0]), values(ref, 'wait_p95_s', big7[0]))
                 if big7 else None,
           '4g': paired(values(r, 'wait_p95_s', big4[0]), values(ref, 'wait_p95_s', big4[0]))
                 if big4 else None,
           'small': None, 'small_profile': '-'}
    def mean(v):
        v = [x for x in v if x is not None]
        return sum(v) / len(v) if v else 0
    for p in small:
        # A p95 wait under a minute under both is the instance's creation (tens of ms), not
        # queueing: its ratio means nothing (the Alibaba trace's small pods).
        if max(mean(values(r, 'wait_p95_s', p)), mean(values(ref, 'wait_p95_s', p))) < 60:
            continue
        q = paired(values(r, 'wait_p95_s', p), values(ref, 'wait_p95_s', p))
        if q and (fig['small'] is None or q[0] > fig['small'][0]):
            fig['small'], fig['small_profile'] = q, p
    return fig

lines = ["# Replicated results (generated by scripts/replicated-results.sh)", "",
         "Paired ratio to the best baseline of the setting (lowest mean JCT over the replicas), mean",
         "over replicas ± 95% half-width; * = significant (the interval excludes 1). Variants:",
         "`evacq` = `--evacuation queue`, `slackF` = `evacq` + `--max-skip-seconds 1800",
         "--reservation-slack F`; `slack1` is `full`'s defaults.", ""]
head = ("| setting | best baseline | variant | mean JCT | mean wait | 7g p95 wait | 4g p95 wait | "
        "1g-3g p95 wait (worst) | evacuations |")
lines += [head, "|" + "---|" * 9]
for s in settings:
    best, ref, runs, _ = data[s]
    for label, r in runs.items():
        f = figures(s, r)
        ev = r.get('evacuations')
        cells = [fmt(f['jct']), fmt(f['wait']), fmt(f['7g']), fmt(f['4g']),
                 f"{fmt(f['small'])} ({f['small_profile']})" if f['small'] else '-',
                 f"{ev:.1f}" if isinstance(ev, (int, float)) else '-']
        name = 'full' if label == 'full' else 'full ' + label
        lines.append(f"| {s} | {best} | {name} | " + " | ".join(cells) + " |")

# Each variant against `full` with its defaults (the ablation: what each mechanism adds).
lines += ["", "## Ablation: each variant against `full` with its defaults", "",
          "| setting | variant | mean JCT | mean wait | 7g p95 wait | 4g p95 wait |",
          "|" + "---|" * 6]
for s in settings:
    _, _, runs, _ = data[s]
    ref = runs['full']
    big7, big4, _ = groups(list(ref['per_profile'].keys()))
    for v in VARIANTS:
        if v not in runs: continue
        r = runs[v]
        cells = [fmt(paired(values(r, k), values(ref, k))) for k in ('jct_mean_s', 'wait_mean_s')]
        for group in (big7, big4):
            cells.append(fmt(paired(values(r, 'wait_p95_s', group[0]),
                                    values(ref, 'wait_p95_s', group[0]))) if group else '-')
        lines.append(f"| {s} | full {v} | " + " | ".join(cells) + " |")

# Targets of docs/results.md, for the new `full` and each knob value.
def target_rows(label):
    rows = []
    for s in settings:
        _, _, runs, _ = data[s]
        if label not in runs: continue
        f = figures(s, runs[label])
        sat = load_of(s) >= 1
        checks = []
        def le(key, bound):
            q = f[key]
            return '-' if q is None else ('met' if round(q[0], 2) <= bound else 'not met')
        checks = [le('jct', 1.0), le('7g', 1.1 if sat else 0.6), le('4g', 1.1 if sat else 0.8),
                  le('small', 1.1 if sat else 1.2), '-' if sat else le('wait', 0.7),
                  'yes' if f['jct'] and f['jct'][2] and f['jct'][0] > 1 else 'no']
        rows.append(f"| {s} | " + " | ".join(
            f"{fmt(f[k])} {c}" for k, c in zip(('jct', '7g', '4g', 'small', 'wait'), checks[:5]))
            + f" | {checks[5]} |")
    return rows
def count_rows(label):
    # Per target: settings where it is met (point estimate within the bound, to 2 decimals) /
    # settings with the figure; below saturation (load <= 0.9) and at saturation (>= 1.1).
    out = []
    for sat in (False, True):
        cells = []
        spec = (('jct', 1.0), ('7g', 1.1 if sat else 0.6), ('4g', 1.1 if sat else 0.8),
                ('small', 1.1 if sat else 1.2), ('wait', None if sat else 0.7))
        for key, bound in spec:
            if bound is None:
                cells.append('-')
                continue
            got = [figures(s, data[s][2][label])[key] for s in settings
                   if label in data[s][2] and (load_of(s) >= 1) == sat]
            got = [g for g in got if g is not None]
            if not got:
                cells.append('-')
                continue
            met = sum(1 for g in got if round(g[0], 2) <= bound)
            lo, hi = min(g[0] for g in got), max(g[0] for g in got)
            cells.append(f"{met}/{len(got)} ({lo:.2f}-{hi:.2f})")
        worse = [s for s in settings if label in data[s][2] and (load_of(s) >= 1) == sat
                 and (lambda j: j[2] and j[0] > 1)(figures(s, data[s][2][label])['jct'])]
        name = 'full' if label == 'full' else 'full ' + label
        out.append(f"| `{name}` | {'≥ 1.1' if sat else '≤ 0.9'} | " + " | ".join(cells)
                   + f" | {', '.join(worse) or 'none'} |")
    return out
lines += ["", "## Targets met, by variant", "",
          "Settings where the paired ratio's point estimate is within the target (to 2 decimals) / "
          "settings; in brackets the range of the ratio. Targets: load ≤ 0.9: mean JCT ≤ 1.0, "
          "7g ≤ 0.6, 4g ≤ 0.8, worst 1g-3g ≤ 1.2, mean wait ≤ 0.7; load ≥ 1.1: mean JCT ≤ 1.0, "
          "every p95 wait ≤ 1.1.", "",
          "| variant | load | mean JCT | 7g p95 wait | 4g p95 wait | worst 1g-3g p95 wait | mean wait "
          "| significantly worse on mean JCT |", "|" + "---|" * 8]
for label in (['full', 'evacq', 'guard'] + ['slack' + f for f in KNOB]
              + ['slack1-unknown', 'evacq-unknown', 'strict-unknown']):
    if any(label in data[s][2] for s in settings): lines += count_rows(label)
for label in (['evacq'] + ['slack' + f for f in KNOB]
              + ['slack1-unknown', 'evacq-unknown', 'strict-unknown']):
    lines += ["", f"## Targets: `full {label}` against the best baseline", "",
              "Bounds: load ≤ 0.9: mean JCT ≤ 1.0, 7g ≤ 0.6, 4g ≤ 0.8, small ≤ 1.2, mean wait ≤ 0.7; "
              "load ≥ 1.1: mean JCT ≤ 1.0, every p95 wait ≤ 1.1.", "",
              "| setting | mean JCT | 7g p95 wait | 4g p95 wait | worst 1g-3g p95 wait | mean wait | "
              "significantly worse on mean JCT |", "|" + "---|" * 7]
    lines += target_rows(label)

# The knob (§13 --reservation-slack): its trade curve on the saturated churn settings.
sat = [s for s in settings if s.startswith('c') and load_of(s) >= 1]
knob_rows = []  # (F label, setting, figures)
for s in sat:
    _, _, runs, _ = data[s]
    for f in KNOB + ['off']:
        label = 'evacq' if f == 'off' else 'slack' + f
        if label in runs: knob_rows.append((f, s, figures(s, runs[label])))
with open(f"{out}/knob.csv", "w") as fh:
    fh.write("slack,setting,jct,small_p95,small_profile,p95_7g,p95_4g\n")
    for f, s, g in knob_rows:
        fh.write(f"{f},{s},{g['jct'][0]:.4f},{g['small'][0]:.4f},{g['small_profile']},"
                 f"{g['7g'][0]:.4f},{g['4g'][0]:.4f}\n")
lines += ["", "## The knob: `--reservation-slack F` on the saturated churn settings", "",
          "`full --evacuation queue --max-skip-seconds 1800 --reservation-slack F`; F = off: no "
          "reservation (`evacq`). Mean over the saturated churn settings ("
          + ", ".join(sat) + ") of the paired ratios to each setting's best baseline; in brackets "
          "the range over the settings; n* = settings where the ratio is significant.", "",
          "| F | mean JCT | worst 1g-3g p95 wait | 7g p95 wait | 4g p95 wait |", "|---|---|---|---|---|"]
for f in KNOB + ['off']:
    rows = [g for ff, _, g in knob_rows if ff == f]
    if not rows: continue
    def agg(key):
        v = [g[key][0] for g in rows]
        n = sum(1 for g in rows if g[key][2])
        return f"{sum(v) / len(v):.2f} [{min(v):.2f}-{max(v):.2f}] ({n}*)"
    lines.append(f"| {f} | {agg('jct')} | {agg('small')} | {agg('7g')} | {agg('4g')} |")

# Per-profile p95 wait (minutes) against load, `full` (its defaults: `slack1`) and the best
# baseline.
with open(f"{out}/p95-by-load.csv", "w") as fh:
    fh.write("group,load,who,policy,profile,p95_min\n")
    for s in settings:
        if not s.startswith('c'): continue
        best, ref, runs, _ = data[s]
        grp = s.rsplit('-l', 1)[0]
        for who, r, pol in (('best', ref, best), ('full', runs.get('slack1'), 'full')):
            if r is None: continue
            for p in sorted(r['per_profile']):
                v = [x for x in values(r, 'wait_p95_s', p) if x is not None]
                if v: fh.write(f"{grp},{load_of(s)},{who},{pol},{p},{sum(v) / len(v) / 60:.3f}\n")

open(f"{out}/tables.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF

if [ -n "${VARIANTS:-}" ]; then
  echo "replicated-results.sh: VARIANTS given: plots skipped (they need every variant)" >&2
elif command -v gnuplot >/dev/null; then
  mkdir -p docs/img
  python3 - "$out" <<'EOF'
# Splits the plots' CSVs into gnuplot data blocks (one file per series).
import collections, csv, os, sys
out = sys.argv[1]
rows = list(csv.DictReader(open(f"{out}/knob.csv")))
order = [r['slack'] for r in rows if r['setting'] == rows[0]['setting']]
with open(f"{out}/knob-mean.dat", "w") as fh:
    for f in order:
        rs = [r for r in rows if r['slack'] == f]
        m = lambda k: sum(float(r[k]) for r in rs) / len(rs)
        fh.write(f"{f} {m('small_p95'):.4f} {m('p95_7g'):.4f} {m('p95_4g'):.4f}\n")
with open(f"{out}/knob-settings.dat", "w") as fh:
    for s in sorted({r['setting'] for r in rows}):
        fh.write(f"# {s}\n")
        for r in rows:
            if r['setting'] == s: fh.write(f"{r['slack']} {r['small_p95']} {r['p95_7g']} {r['p95_4g']}\n")
        fh.write("\n\n")
rows = list(csv.DictReader(open(f"{out}/p95-by-load.csv")))
for grp in sorted({r['group'] for r in rows}):
    with open(f"{out}/p95-{grp}.dat", "w") as fh:
        for who in ('full', 'best'):
            for prof in sorted({r['profile'] for r in rows}, key=lambda p: int(p.split('g')[0])):
                fh.write(f"# {who} {prof}\n")
                for r in sorted((r for r in rows if r['group'] == grp and r['who'] == who
                                 and r['profile'] == prof), key=lambda r: float(r['load'])):
                    fh.write(f"{r['load']} {r['p95_min']}\n")
                fh.write("\n\n")
EOF
  sat_names=$(awk -F, 'NR > 1 { print $2 }' "$out/knob.csv" | sort -u | tr '\n' ' ')
  nsat=$(echo "$sat_names" | wc -w)
  gnuplot <<GP
set terminal pngcairo size 1300,560 font "sans,10"
set output "docs/img/knob-trade-curve.png"
set multiplot layout 1,2 title "The knob --reservation-slack F (full --evacuation queue --max-skip-seconds 1800), saturated churn settings (load 1.1, 1.3; 4 and 8 A100 40GB; 10 paired replicas)"
set grid
set xlabel "worst 1g-3g p95 wait / best baseline's"
set ylabel "large-profile p95 wait / best baseline's"
set key top right
set title "mean over the $nsat settings (labels: F; off = no reservation)"
plot "$out/knob-mean.dat" using 2:3 with linespoints lw 2 pt 7 title "7g.40gb", \
     "" using 2:3:1 with labels offset 1.2,0.6 notitle, \
     "" using 2:4 with linespoints lw 2 pt 5 dt 2 title "4g.20gb", \
     "" using 2:4:1 with labels offset -1.5,0.6 notitle, \
     1 with lines lc rgb "gray" dt 3 notitle
set title "7g.40gb, each setting (F = 0 … 4, off)"
plot for [i=0:$((nsat - 1))] "$out/knob-settings.dat" index i using 2:3 with linespoints pt 7 ps 0.6 title word("$sat_names", i + 1)
unset multiplot
GP
  groups=$(awk -F, 'NR > 1 { print $1 }' "$out/p95-by-load.csv" | sort -u | tr '\n' ' ')
  profiles=$(awk -F, 'NR > 1 { print $5 }' "$out/p95-by-load.csv" | sort -u | sort -n | tr '\n' ' ')
  nprof=$(echo "$profiles" | wc -w)
  gnuplot <<GP
set terminal pngcairo size 1400,1000 font "sans,10"
set output "docs/img/p95-wait-by-load.png"
set multiplot layout 2,2 title "p95 wait per profile against offered load: full with its defaults (solid) and the best baseline of each setting (dashed); churn, 10 replicas"
set grid
set logscale y
set xlabel "offered load"
set ylabel "p95 wait (min, mean over replicas)"
set xtics (0.7, 0.9, 1.1, 1.3)
set key bottom right
do for [g in "$groups"] {
  set title g
  plot for [i=0:$((nprof - 1))] sprintf("$out/p95-%s.dat", g) index i using 1:2 with linespoints lw 2 pt 7 lc i+1 title word("$profiles", i + 1), \
       for [i=$nprof:$((2 * nprof - 1))] sprintf("$out/p95-%s.dat", g) index i using 1:2 with linespoints lw 1 pt 4 dt 2 lc i-$((nprof - 1)) notitle
}
unset multiplot
GP
  echo "replicated-results.sh: wrote docs/img/knob-trade-curve.png and docs/img/p95-wait-by-load.png" >&2
else
  echo "replicated-results.sh: gnuplot not installed (apt-get install gnuplot-nox): plots skipped" >&2
fi
