#!/usr/bin/env python3
"""Paired comparison of two results.sh runs of one set: default latency (A) vs field (B).

  latency_compare.py DIR_A DIR_B SETS_JSON SET

Per setting and policy: mean of metric under A and B, paired difference B - A over replicas
(replica r has the same jobs in both), 95% half-width (Student's t), significance. And the
difference of `full` - first-fit between B and A (does the gap change), paired per replica.
"""
import json, math, os, sys

T = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
     2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
     2.052, 2.048, 2.045, 2.042]

def t975(df): return T[df - 1] if df <= len(T) else 1.96

def stats(d):
    n = len(d)
    m = sum(d) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in d) / (n - 1)) if n > 1 else float('nan')
    h = t975(n - 1) * sd / math.sqrt(n)
    return m, h, abs(m) > h

def load(d, name):
    p = os.path.join(d, 'runs', name + '.json')
    return {r['policy']: r for r in json.load(open(p))['results']}

a_dir, b_dir, sets_json, set_name = sys.argv[1:5]
keys = sys.argv[5].split(',') if len(sys.argv) > 5 else ['jct_mean_s', 'wait_mean_s']
sets = json.load(open(sets_json))[set_name]
for key in keys:
    print(f"\n## {key}: field - default (paired per replica), relative to the default mean")
    print("| setting | first-fit: default -> field | full: default -> field | full/first-fit default | full/first-fit field | change of (full - first-fit) |")
    print("|---|---|---|---|---|---|")
    for s in sets:
        try:
            A, B = load(a_dir, s['name']), load(b_dir, s['name'])
        except FileNotFoundError:
            continue
        k = key
        if s['mode'] == 'admission' and key == 'jct_mean_s':
            pass
        cells = []
        for pol in ('first-fit', 'full'):
            va = [r[k] for r in A[pol]['replica_results']]
            vb = [r[k] for r in B[pol]['replica_results']]
            ma = sum(va) / len(va)
            m, h, sig = stats([y - x for x, y in zip(va, vb)])
            if ma == 0:
                cells.append(f"{ma:.4g} -> {sum(vb)/len(vb):.4g} ({m:+.3g} ±{h:.3g}{'*' if sig else ''})")
            else:
                cells.append(f"{ma:.4g} -> {sum(vb)/len(vb):.4g} ({100*m/ma:+.2f}% ±{100*h/ma:.2f}{'*' if sig else ''})")
        fa = [r[k] for r in A['full']['replica_results']]; ga = [r[k] for r in A['first-fit']['replica_results']]
        fb = [r[k] for r in B['full']['replica_results']]; gb = [r[k] for r in B['first-fit']['replica_results']]
        ra = sum(fa) / sum(ga) if sum(ga) else float('nan'); rb = sum(fb) / sum(gb) if sum(gb) else float('nan')
        dd = [(f2 - g2) - (f1 - g1) for f1, g1, f2, g2 in zip(fa, ga, fb, gb)]
        m, h, sig = stats(dd)
        base = sum(ga) / len(ga)
        chg = f"{100*m/base:+.2f}% ±{100*h/base:.2f}" if base else f"{m:+.3g} ±{h:.3g}"
        cells += [f"{ra:.3f}", f"{rb:.3f}", chg + ('*' if sig else '')]
        print(f"| {s['name']} | " + " | ".join(cells) + " |")
