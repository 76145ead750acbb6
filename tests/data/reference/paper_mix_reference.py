#!/usr/bin/env python3
# Independent re-implementation of the paper-mix generator as documented in
# src/sim/paper_mix.h, for the expected values in src/sim/paper_mix_test.cc.
# Uses the RNG reference of rng_reference.py. Run: python3 paper_mix_reference.py
import math
M = (1 << 64) - 1
GOLD = 0x9E3779B97F4A7C15
def splitmix(seed):
    s = seed
    while True:
        s = (s + GOLD) & M
        z = s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
        yield z ^ (z >> 31)
def rotl(x, k): return ((x << k) | (x >> (64 - k))) & M
def xoshiro(seed):
    g = splitmix(seed); s = [next(g) for _ in range(4)]
    while True:
        r = (rotl((s[1] * 5) & M, 7) * 9) & M
        t = (s[1] << 17) & M
        s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45)
        yield r
def u01(g): return (next(g) >> 11) * 2.0**-53
def derive(seed, stream): return next(splitmix((seed + stream * GOLD) & M))

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
