#!/usr/bin/env python3
"""`full` against the best baseline on one workload family at several time scales.

  scripts/eval/time_scales.py CLUSTER WORKLOAD LOAD JOBS SCALES REPLICAS [compare flags...]
  e.g. scripts/eval/time_scales.py 4xA100-40GB churn 0.9 600 0.1,1,10 20

Replica r (seeds 1..REPLICAS) generates the workload with `migsched simulate --export-workload`,
then for each factor f of SCALES multiplies its arrival times and run times (and time limits, where
the trace has any) by f, and runs `migsched compare` on that trace with `full` and the baselines.
The time limits the scheduler knows are drawn by the model of user estimates (its round values and
its 24 h maximum do not scale: a site's users at another time scale), from the replica's seed. A
scheduler whose rules hold at every time scale keeps its gains; one tuned to one scale does not.
Prints one line per scale: the best baseline (lowest mean JCT over the replicas), then `full`'s
paired ratios to it (95% interval, * = significant): mean JCT, the 7g.40gb/7g.80gb p95 wait, the
worst single profile's p95 wait (profiles whose p95 is at least f minutes under either policy),
reconfigurations, and the limit power learned (mean over the replicas). Standard library only;
MIGSCHED (default build/bin/migsched); files in a temporary folder.
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aggregate import fmt_ratio, full_gpu_profiles, mean, paired  # noqa: E402

POLICIES = 'full,first-fit,best-fit,driver-default,mfi,largest-free-run'


def main():
    if len(sys.argv) < 7:
        sys.exit(__doc__)
    cluster, workload, load, jobs = sys.argv[1:5]
    scales = [float(x) for x in sys.argv[5].split(',')]
    replicas = int(sys.argv[6])
    extra = sys.argv[7:]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    binary = os.environ.get('MIGSCHED', os.path.join(root, 'build', 'bin', 'migsched'))
    runs = {f: {} for f in scales}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(1, replicas + 1):
            base = os.path.join(tmp, f'w{seed}.csv')
            subprocess.run([binary, '-q', 'simulate', '--cluster', cluster, '--workload', workload,
                            '--load', load, '--seed', str(seed), '--jobs', jobs, '--policy',
                            'first-fit', '--export-workload', base],
                           stdout=subprocess.DEVNULL, check=True)
            with open(base) as f:
                rows = list(csv.DictReader(f))
            for f in scales:
                scaled = os.path.join(tmp, f'w{seed}-x{f}.csv')
                with open(scaled, 'w', newline='') as out:
                    w = csv.DictWriter(out, fieldnames=list(rows[0].keys()))
                    w.writeheader()
                    for r in rows:
                        r = dict(r)
                        for key in ('arrival_s', 'duration_s', 'time_limit_s'):
                            if r.get(key):
                                r[key] = repr(float(r[key]) * f)
                        w.writerow(r)
                result = os.path.join(tmp, 'out.json')
                subprocess.run([binary, '-q', 'compare', '--cluster', cluster, '--workload', scaled,
                                '--policies', POLICIES, '--threads', '2', '--seed', str(seed),
                                '--json', result] + extra, stdout=subprocess.DEVNULL, check=True)
                with open(result) as res:
                    for r in json.load(res)['results']:
                        runs[f].setdefault(r['policy'], []).append(r)
    for f in scales:
        by = runs[f]
        best = min((p for p in by if p != 'full'),
                   key=lambda p: mean([r['jct_mean_s'] for r in by[p]]))
        full, ref = by['full'], by[best]

        def p95(rs, prof):
            return [r['per_profile'].get(prof, {}).get('wait_p95_s') for r in rs]

        profiles = sorted(full[0]['per_profile'].keys())
        big = next((p for p in profiles if p in full_gpu_profiles(cluster)), None)
        worst, worst_name = None, '-'
        for p in profiles:
            a, b = p95(full, p), p95(ref, p)
            if not max(mean(a), mean(b)) >= 60 * f:
                continue
            q = paired(a, b)
            if q is not None and (worst is None or q[0] > worst[0]):
                worst, worst_name = q, p
        print(f"x{f:g}: best {best}; mean JCT {fmt_ratio(paired([r['jct_mean_s'] for r in full], [r['jct_mean_s'] for r in ref]))}; "
              f"{big or '7g'} p95 {fmt_ratio(paired(p95(full, big), p95(ref, big)) if big else None)}; "
              f"worst {worst_name} {fmt_ratio(worst)}; reconfigurations "
              f"{fmt_ratio(paired([r['reconfigurations'] for r in full], [r['reconfigurations'] for r in ref]))}; "
              f"limit power {mean([r['limit_power'] for r in full]):.2f}")


if __name__ == '__main__':
    main()
