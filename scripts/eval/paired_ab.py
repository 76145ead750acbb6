#!/usr/bin/env python3
"""Paired A/B of one policy between two runs of scripts/results.sh (e.g. a default on and off).

  scripts/eval/paired_ab.py DIR_A DIR_B [POLICY] [METRIC ...]

DIR_A and DIR_B are two copies of out/results/SET/runs (the same settings and seeds, one option
changed). For each setting and metric: B/A as the mean over replicas of B's value over the mean
of A's, with the 95% half-width of the paired per-replica difference (Student's t) expressed as
a ratio, and * when the interval excludes 1 (docs/results.md, "How these figures are made").
"""
import glob
import json
import math
import os
import statistics
import sys

# Two-sided 95% Student's t quantiles by degrees of freedom (1..30); normal beyond.
T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
       2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
       2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def replicas(path, policy):
    with open(path) as f:
        for r in json.load(f)["results"]:
            if r["policy"] == policy:
                return r["replica_results"]
    raise SystemExit(f"{path}: no policy {policy}")


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    a_dir, b_dir = sys.argv[1], sys.argv[2]
    policy = sys.argv[3] if len(sys.argv) > 3 else "full"
    metrics = sys.argv[4:] or ["jct_mean_s", "wait_p95_s", "reconfigurations",
                               "rejected_slice_hours"]
    print("| setting | " + " | ".join(f"{m} B/A" for m in metrics) + " |")
    print("|---" * (len(metrics) + 1) + "|")
    for a_path in sorted(glob.glob(os.path.join(a_dir, "*.json"))):
        name = os.path.basename(a_path)[:-5]
        b_path = os.path.join(b_dir, name + ".json")
        if not os.path.exists(b_path):
            continue
        a, b = replicas(a_path, policy), replicas(b_path, policy)
        cells = []
        for m in metrics:
            xa = [r.get(m, 0) for r in a]
            xb = [r.get(m, 0) for r in b]
            mean_a = statistics.mean(xa)
            if len(xa) != len(xb) or mean_a == 0:
                cells.append("-")
                continue
            d = [y - x for x, y in zip(xa, xb)]
            n = len(d)
            half = (T95[n - 2] if n - 1 <= len(T95) else 1.96) * statistics.stdev(d) / math.sqrt(n) \
                if n > 1 else float("inf")
            ratio = statistics.mean(xb) / mean_a
            sig = "*" if abs(statistics.mean(d)) > half else ""
            cells.append(f"{ratio:.2f} ±{half / mean_a:.2f}{sig}")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
