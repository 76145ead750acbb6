#!/usr/bin/env python3
# Independent re-implementation of the churn generator as documented in
# src/sim/churn.h, for the expected values in src/sim/churn_test.cc (default
# options, seed 1, 4 GPUs, A100 40GB). The RNG is rng_reference.py's. Run: python3 churn_reference.py
import math
from rng_reference import derive, expo, u01, xoshiro
def loguni(lo, hi, u): return min(hi, max(lo, math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))))

classes = [(1, 0.35), (2, 0.25), (3, 0.2), (4, 0.1), (7, 0.1)]
seed, n, gpus, load, pcie_share, spread = 1, 500, 4, 0.9, 0.2, 0.5
g = xoshiro(seed)
w = [wt * (1 - spread + 2 * spread * u01(g)) for _, wt in classes]
jobs = []
for i in range(n):
    r = u01(g) * sum(w)
    c, k = 0, 0
    for k, x in enumerate(w):
        c += x
        if r < c: break
    pcie = u01(g) < pcie_share
    big = next(g) % 2 == 1
    long_ = u01(g) < 0.25
    u = u01(g)
    ls = u01(g) < 0.1
    m = u01(g)
    mig = "none" if m < 0.1 else ("restart" if m < 0.2 else "checkpoint")
    d = loguni(1800, 14400, u) if long_ else loguni(120, 1800, u)
    kind = "resnet" if not pcie else ("bloom7b1" if big else "bloom560m")
    jobs.append(dict(name="ch-%04d" % (i + 1), cs=classes[k][0], kind=kind, dur=d, ls=ls, mig=mig))
G = sum(j["cs"] / 7 * j["dur"] for j in jobs) / n / (load * gpus)
cm, bm, f = 3600.0, 900.0, 3.0
calm = G * (cm + f * bm) / (cm + bm)
ga = xoshiro(derive(seed, 1))
burst, t = False, 0.0
end = expo(ga, cm)
jobs[0]["arrival"] = 0.0
for j in jobs[1:]:
    while True:
        nxt = t + expo(ga, calm / f if burst else calm)
        if nxt <= end:
            t = nxt
            break
        t = end
        burst = not burst
        end = t + expo(ga, bm if burst else cm)
    j["arrival"] = t
print("weights", [repr(x) for x in w])
print("G", repr(G))
for j in jobs[:4]:
    print(j["name"], j["cs"], j["kind"], repr(j["dur"]), j["ls"], j["mig"], repr(j["arrival"]))
print(jobs[-1]["name"], repr(jobs[-1]["arrival"]))
