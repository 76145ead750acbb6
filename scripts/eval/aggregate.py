#!/usr/bin/env python3
"""Aggregates the runs of scripts/results.sh into the tables of docs/results.md.

  scripts/eval/aggregate.py OUT_DIR SETS_JSON SET_NAME

Reads OUT_DIR/runs/SETTING.json (`migsched compare --json` with replicas) for every setting of
SET_NAME ("evaluation" or "tuning") in SETS_JSON and writes OUT_DIR/tables.md: per setting, `full`
against the best baseline of that setting (the policy with the lowest mean JCT over the replicas
among every other policy run, the reference excluded), as paired ratios with 95% intervals
(Student's t on the paired differences, replica by replica: every policy sees the same jobs), and
where the fragmentation-free reference ran, the share of the gap between the best baseline and the
reference that `full` closes. Standard library only.
"""
import json
import math
import os
import random
import sys

# Student's t, 97.5% quantile, by degrees of freedom (1.96 beyond 30).
T = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
     2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
     2.052, 2.048, 2.045, 2.042]
REFERENCES = ('frag-free-reference',)  # indicators, never "the best baseline"
FULL = 'full'


def load_models(gpus_dir):
    """The bundled GPU models (data/gpus/*.json), by every name a cluster spec may give them."""
    models = {}
    for f in sorted(os.listdir(gpus_dir)):
        if f.endswith('.json'):
            m = json.load(open(os.path.join(gpus_dir, f)))
            for n in [m['name']] + m.get('short_names', []):
                models[n.lower()] = m
    return models


MODELS = load_models(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'data', 'gpus'))


def full_gpu_profiles(cluster):
    """The full-GPU profile of the targets for a cluster spec (`6xRTX-PRO-6000`,
    `2xA100-40GB,2xH100-80GB`): the profiles that take every compute slice of the cluster's first
    GPU model (per-profile figures of a mixed cluster are keyed by its names), from the GPU facts,
    never from a name's digits (2g.48gb is the whole of an RTX PRO 5000 and half an RTX PRO
    6000). Empty for a model this checkout does not bundle."""
    first = cluster.split(',')[0]
    model = MODELS.get(first.split('x', 1)[1].lower() if 'x' in first else first.lower())
    if model is None:
        return set()
    return {p['name'] for p in model['profiles'] if p['compute_slices'] == model['compute_slices']}


def t975(df):
    return T[df - 1] if df <= len(T) else 1.96


def num(x):
    return x is not None and isinstance(x, (int, float)) and not math.isnan(x)


def paired(a, ref):
    """(mean(a)/mean(ref), half-width of the paired difference / mean(ref), significant)."""
    pairs = [(x, y) for x, y in zip(a, ref) if num(x) and num(y)]
    n = len(pairs)
    if n < 2:
        return None
    ma = sum(x for x, _ in pairs) / n
    mr = sum(y for _, y in pairs) / n
    if mr == 0:
        return None
    d = [x - y for x, y in pairs]
    md = sum(d) / n
    sd = math.sqrt(sum((x - md) ** 2 for x in d) / (n - 1))
    half = t975(n - 1) * sd / math.sqrt(n)
    return (ma / mr, half / abs(mr), abs(md) > half)


def values(res, key):
    return [r.get(key) for r in res['replica_results']]


def mean(v):
    v = [x for x in v if num(x)]
    return sum(v) / len(v) if v else float('nan')


def gap_closed(best, full, ref, resamples=2000, seed=1):
    """The share of the gap best - ref that `full` closes, (mean(best) - mean(full)) /
    (mean(best) - mean(ref)), with a 95% paired percentile-bootstrap interval: replicas are drawn
    with replacement, each one's three values together (every policy saw the same jobs), and the
    share recomputed on each draw (2.5% and 97.5% quantiles). Seeded, so a table is reproducible.
    None where fewer than two replicas have all three values or the gap is under 1% of the best
    baseline's value (no room to close: the share would be noise divided by almost nothing);
    the interval None when a draw's gap is not positive."""
    rows = [(b, f, r) for b, f, r in zip(best, full, ref) if num(b) and num(f) and num(r)]
    n = len(rows)
    if n < 2:
        return None

    def share(sample):
        mb = sum(x[0] for x in sample) / len(sample)
        mf = sum(x[1] for x in sample) / len(sample)
        mr = sum(x[2] for x in sample) / len(sample)
        return (mb - mf) / (mb - mr) if mb - mr > 0 else None

    mb = sum(x[0] for x in rows) / n
    mr = sum(x[2] for x in rows) / n
    if not mb - mr > 0.01 * abs(mb):
        return None
    point = share(rows)
    rng = random.Random(seed)
    draws = []
    for _ in range(resamples):
        g = share([rows[rng.randrange(n)] for _ in range(n)])
        if g is None:
            return (point, None, None)
        draws.append(g)
    draws.sort()
    return (point, draws[int(0.025 * resamples)], draws[int(math.ceil(0.975 * resamples)) - 1])


def fmt_gap(g):
    if g is None:
        return '-'
    point, lo, hi = g
    return f"{point:.0%} (no interval)" if lo is None else f"{point:.0%} ({lo:.0%} to {hi:.0%})"


def fmt_ratio(p):
    if p is None:
        return '-'
    ratio, half, sig = p
    return f"{ratio:.2f} ±{half:.2f}{'*' if sig else ''}"


# The seed paper's claims against static partitioning on an A100 cluster: (label, metric key,
# the claim, how the ratio reads, mode the claim was made in).
CLAIMS = [
    ("mean JCT", 'jct_mean_s', "−35%", 'queue'),
    ("utilisation", 'utilization', "58% → 82% (1.41x)", 'queue'),
    ("peak fragmentation", 'frag_peak', "−40%", 'queue'),
    ("rejections (peak hour in the claim; whole run here)", 'rejected', "15% → 3% (0.2x)",
     'admission'),
    ("jobs per day", 'jobs_per_day', "+42%", 'queue'),
    ("energy efficiency (jobs per kWh)", 'jobs_per_kwh', "+28%", 'queue'),
]
STATIC = 'static'


def claims_table(out, sets):
    """`full` against `static` (the best static layout for the mix) and against the best dynamic
    baseline, on the A100-only settings, per claim: the range of paired ratios over the settings
    (with each setting's 95% half-width), and how many settings are significant."""
    rows = []
    for label, key, claim, mode in CLAIMS:
        vs_static, vs_dyn = [], []
        for s in sets:
            if s['mode'] != mode or 'A100' not in s['cluster'] or 'H100' in s['cluster'] or \
                    'A30' in s['cluster']:
                continue
            path = os.path.join(out, 'runs', s['name'] + '.json')
            if not os.path.exists(path):
                continue
            res = {r['policy']: r for r in json.load(open(path))['results']}
            if FULL not in res:
                continue
            dyn = [p for p in res if p not in (FULL, STATIC) and p not in REFERENCES and
                   not p.startswith('static')]
            if STATIC in res:
                vs_static.append(paired(values(res[FULL], key), values(res[STATIC], key)))
            if dyn:
                ref = min(dyn, key=lambda p: mean(values(res[p], 'jct_mean_s' if mode == 'queue'
                                                           else 'rejected')))
                vs_dyn.append(paired(values(res[FULL], key), values(res[ref], key)))

        def rng(v):
            v = [x for x in v if x is not None]
            if not v:
                return '-'
            lo, hi = min(x[0] for x in v), max(x[0] for x in v)
            sig = sum(1 for x in v if x[2])
            return f"{lo:.2f}-{hi:.2f}x ({sig} of {len(v)} significant)"
        rows.append(f"| {label} | {claim} | {rng(vs_static)} | {rng(vs_dyn)} |")
    return ["## The seed's claims, side by side", "",
            "Ratios `full` / other, paired per replica, over the A100-only settings of this set",
            "(range over settings; * counts the settings whose 95% interval excludes 1).", "",
            "| claim | the seed (vs static partitioning) | `full` vs the best static layout | "
            "`full` vs the best dynamic baseline |", "|---|---|---|---|"] + rows + [""]


def per_profile(res, prof, key):
    return [r.get('per_profile', {}).get(prof, {}).get(key) for r in res['replica_results']]


def targets_table(out, sets):
    """Per setting: the full-GPU profile's p95 wait, the worst single profile's p95 wait
    (profiles whose p95 is at least a minute under either policy), reconfigurations, all paired
    against the same best baseline as the main table."""
    rows = []
    for s in sets:
        path = os.path.join(out, 'runs', s['name'] + '.json')
        if not os.path.exists(path):
            continue
        res = {r['policy']: r for r in json.load(open(path))['results']}
        if FULL not in res:
            continue
        admission = s['mode'] == 'admission'
        baselines = [p for p in res if p != FULL and p not in REFERENCES]
        key = 'rejected_slice_hours' if admission else 'jct_mean_s'
        if not admission:
            fair = [p for p in baselines
                    if mean(values(res[p], 'rejected')) <= mean(values(res[FULL], 'rejected')) + 1e-9]
            baselines = fair or baselines
        best = min(baselines, key=lambda p: mean(values(res[p], key)))
        F, B = res[FULL], res[best]
        profs = sorted(F['replica_results'][0].get('per_profile', {}).keys())
        whole = full_gpu_profiles(s['cluster'])
        full_gpu = [p for p in profs if p in whole]
        big = None
        if full_gpu:
            big = paired(per_profile(F, full_gpu[0], 'wait_p95_s'),
                         per_profile(B, full_gpu[0], 'wait_p95_s'))
        worst, wp = None, '-'
        for p in profs:
            a, b = per_profile(F, p, 'wait_p95_s'), per_profile(B, p, 'wait_p95_s')
            if not (max(mean(a), mean(b)) >= 60):
                continue
            q = paired(a, b)
            if q is not None and (worst is None or q[0] > worst[0]):
                worst, wp = q, p
        reconf = paired(values(F, 'reconfigurations'), values(B, 'reconfigurations'))
        rows.append(f"| {s['name']} | {best} | {fmt_ratio(big)} | {wp} {fmt_ratio(worst)} | "
                    f"{fmt_ratio(reconf)} |")
    return ["## Per profile and reconfigurations", "",
            "Paired against the same best baseline: the full-GPU profile's p95 wait (the profile with",
            "every compute slice of its GPU: 7g on A100 and H100, 4g.24gb on A30), the worst",
            "single profile's p95 wait (among profiles whose p95 is at least a minute), and",
            "reconfigurations (MIG creates + destroys).", "",
            "| setting | best baseline | full-GPU p95 wait | worst profile's p95 wait | reconfigurations |",
            "|---|---|---|---|---|"] + rows + [""]


def main():
    out, sets_path, set_name = sys.argv[1], sys.argv[2], sys.argv[3]
    sets = json.load(open(sets_path))[set_name]
    lines = [f"# Results on the {set_name} set (generated by scripts/results.sh)", "",
             "Each setting: `full` against the best baseline of that setting (lowest mean JCT over",
             "the replicas among the other policies; the fragmentation-free reference excluded),",
             "paired ratio ± 95% half-width, * = significant (the interval excludes 1). Below 1 is",
             "better for `full` everywhere. `gap closed`: (best − full) / (best − reference) of mean",
             "JCT (queue mode) or of rejected slice-hours (admission mode), where the reference ran",
             "and the gap is at least 1% of the best baseline's value ('-' otherwise); in brackets its",
             "95% interval, a paired bootstrap over the replicas ('no interval' where in some draws",
             "the reference is not below the best baseline: the share is then undefined).",
             ""]
    head = ("| setting | mode | replicas | best baseline | mean JCT | mean wait | p95 wait | "
            "rejected jobs | rejected slice-h | migrations/accepted job | gap closed |")
    lines += [head, "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    summary = {'better': [], 'worse': [], 'level': []}
    for s in sets:
        path = os.path.join(out, 'runs', s['name'] + '.json')
        if not os.path.exists(path):
            lines.append(f"| {s['name']} | {s['mode']} | - | not run | | | | | | | |")
            continue
        data = json.load(open(path))
        res = {r['policy']: r for r in data['results']}
        if FULL not in res:
            continue
        baselines = [p for p in res if p != FULL and p not in REFERENCES]
        if not baselines:
            continue
        admission = s['mode'] == 'admission'
        key = 'rejected_slice_hours' if admission else 'jct_mean_s'
        if admission and not all(num(mean(values(res[p], key))) for p in baselines):
            key = 'rejected'
        if not admission:
            # A run that turned away more jobs than `full` has its times over fewer jobs: not
            # comparable (compare marks it so), never "the best baseline".
            fair = [p for p in baselines
                    if mean(values(res[p], 'rejected')) <= mean(values(res[FULL], 'rejected')) + 1e-9]
            baselines = fair or baselines
        best = min(baselines, key=lambda p: mean(values(res[p], key)))
        full, ref = res[FULL], res[best]
        jct = paired(values(full, 'jct_mean_s'), values(ref, 'jct_mean_s'))
        wait = paired(values(full, 'wait_mean_s'), values(ref, 'wait_mean_s'))
        p95 = paired(values(full, 'wait_p95_s'), values(ref, 'wait_p95_s'))
        rej = paired(values(full, 'rejected'), values(ref, 'rejected'))
        rsh = paired(values(full, 'rejected_slice_hours'), values(ref, 'rejected_slice_hours'))
        acc = [(r.get('migrations') or 0) / max(1, (r.get('jobs_total') or 0) - (r.get('rejected') or 0))
               for r in full['replica_results']]
        gap = '-'
        for name in REFERENCES:
            if name in res:
                # A gap under 1% of the best baseline's value is no room to close (gap_closed):
                # the share would be noise divided by almost nothing (+109584% on the Alibaba
                # window).
                gap = fmt_gap(gap_closed(values(ref, key), values(full, key),
                                         values(res[name], key)))
        main_fig = rsh if admission else jct
        if main_fig is not None:
            (summary['better'] if main_fig[2] and main_fig[0] < 1 else
             summary['worse'] if main_fig[2] else summary['level']).append(s['name'])
        lines.append(f"| {s['name']} | {s['mode']} | {data.get('replicas', len(full['replica_results']))}"
                     f" | {best} | {fmt_ratio(jct)} | {fmt_ratio(wait)} | {fmt_ratio(p95)} | "
                     f"{fmt_ratio(rej)} | {fmt_ratio(rsh)} | {mean(acc):.3f} | {gap} |")
    lines += ["", f"Main figure (mean JCT in queue mode, rejected slice-hours in admission mode):",
              f"significantly better in {len(summary['better'])} ({', '.join(summary['better']) or '-'}),"
              f" significantly worse in {len(summary['worse'])} ({', '.join(summary['worse']) or '-'}),"
              f" level in {len(summary['level'])}.", ""]
    lines += targets_table(out, sets)
    lines += claims_table(out, sets)
    with open(os.path.join(out, 'tables.md'), 'w') as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == '__main__':
    main()
