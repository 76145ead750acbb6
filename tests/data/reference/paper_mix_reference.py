#!/usr/bin/env python3
# Independent re-implementation of the paper-mix generator as documented in
# src/sim/paper_mix.h, for the expected values in src/sim/paper_mix_test.cc.
# Uses the RNG reference of rng_reference.py. Run: python3 paper_mix_reference.py
import math
from rng_reference import derive, u01, xoshiro

profiles = [("1g.5gb", 0.25, 1), ("1g.10gb", 0.1, 1), ("2g.10gb", 0.25, 2), ("3g.20gb", 0.2, 3),
            ("4g.20gb", 0.1, 4), ("7g.40gb", 0.1, 7)]
seed, n, gpus, load, pcie_share = 1, 200, 4, 0.9, 0.2
g = xoshiro(seed)
jobs = []
for i in range(n):
    r = u01(g) * sum(w for _, w, _ in profiles)
    c = 0
    for name, w, cs in profiles:
        c += w
        if r < c: break
    pcie = u01(g) < pcie_share
    big = next(g) % 2 == 1
    d = math.exp(math.log(300) + u01(g) * (math.log(3600) - math.log(300)))
    ls = u01(g) < 0.0
    kind = "resnet" if not pcie else ("bloom7b1" if big else "bloom560m")
    jobs.append(dict(name="pm-%04d" % (i + 1), profile=name, cs=cs, kind=kind, dur=d))
G = sum(j["cs"] / 7 * j["dur"] for j in jobs) / n / (load * gpus)
ga = xoshiro(derive(seed, 1)); t = 0
for i, j in enumerate(jobs):
    if i > 0: t += -G * math.log(1 - u01(ga))
    j["arrival"] = t
print("G", repr(G))
for j in jobs[:3]:
    print(j["name"], j["profile"], j["kind"], repr(j["dur"]), repr(j["arrival"]))
