#!/usr/bin/env python3
# Independent re-implementation of the churn generator as documented in
# src/sim/churn.h, for the expected values in src/sim/churn_test.cc (default
# options, seed 1, 4 GPUs, A100 40GB). The RNG is the reference of
# paper_mix_reference.py. Run: python3 churn_reference.py
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
def expo(g, mean): return -mean * math.log(1 - u01(g))
def derive(seed, stream): return next(splitmix((seed + stream * GOLD) & M))
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
