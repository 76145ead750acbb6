#!/usr/bin/env python3
"""Writes the single-profile tuning traces (README.md here). Deterministic: python3 make.py."""
import math
import random


def write(path, n, profile, median_s, sigma, lo_s, hi_s, seed, limits):
    rng = random.Random(seed)
    with open(path, "w") as f:
        f.write("id,arrival_s,profile,count,duration_s,time_limit_s,migratable\n")
        t = 0.0
        for i in range(n):
            t += rng.expovariate(1 / 60.0)  # replaced by --load's Poisson arrivals
            d = min(hi_s, max(lo_s, median_s * math.exp(rng.gauss(0, sigma))))
            kind = rng.choices(["checkpoint", "restart", "none"], [0.5, 0.2, 0.3])[0]
            limit = ""
            if limits:  # a user's estimate: 1.2-5x the run time, rounded up to 15 min
                limit = str(math.ceil(d * rng.uniform(1.2, 5.0) / 900) * 900)
            f.write(f"s{i},{t:.1f},{profile},1,{round(d)},{limit},{kind}\n")


def write_default_limit(path, n, seed):
    """A partition's default time limit on every job (users never set one), run times by size."""
    rng = random.Random(seed)
    # profile, share, median run time (s): larger instances run longer jobs
    mix = [("1g.5gb", 0.35, 300), ("2g.10gb", 0.25, 600), ("3g.20gb", 0.20, 1200),
           ("4g.20gb", 0.10, 2400), ("7g.40gb", 0.10, 5400)]
    with open(path, "w") as f:
        f.write("id,arrival_s,profile,count,duration_s,time_limit_s,migratable\n")
        t = 0.0
        for i in range(n):
            t += rng.expovariate(1 / 60.0)  # replaced by --load's Poisson arrivals
            profile, _, median_s = rng.choices(mix, [m[1] for m in mix])[0]
            d = min(6 * 3600, max(30, median_s * math.exp(rng.gauss(0, 1.0))))
            kind = rng.choices(["checkpoint", "restart", "none"], [0.5, 0.2, 0.3])[0]
            f.write(f"d{i},{t:.1f},{profile},1,{round(d)},{8 * 3600},{kind}\n")


def write_services_batch(path, n, seed):
    """Long services that can never leave their GPU beside batch jobs that can."""
    rng = random.Random(seed)
    # batch: profile, share, median run time (s)
    mix = [("1g.5gb", 0.30, 600), ("2g.10gb", 0.25, 900), ("3g.20gb", 0.20, 1800),
           ("4g.20gb", 0.13, 2700), ("7g.40gb", 0.12, 3600)]
    with open(path, "w") as f:
        f.write("id,arrival_s,profile,count,duration_s,time_limit_s,migratable,latency_sensitive\n")
        t = 0.0
        for i in range(n):
            t += rng.expovariate(1 / 60.0)  # replaced by --load's Poisson arrivals
            if rng.random() < 0.04:
                # a service: 12 h to 3 days, no limit, latency-sensitive or never movable
                profile = rng.choices(["1g.5gb", "2g.10gb", "3g.20gb"], [0.5, 0.35, 0.15])[0]
                d = rng.uniform(12 * 3600, 72 * 3600)
                ls = rng.random() < 0.5
                kind = "restart" if ls else "none"
                f.write(f"v{i},{t:.1f},{profile},1,{round(d)},,{kind},{'true' if ls else ''}\n")
                continue
            profile, _, median_s = rng.choices(mix, [m[1] for m in mix])[0]
            d = min(8 * 3600, max(60, median_s * math.exp(rng.gauss(0, 0.8))))
            kind = rng.choices(["checkpoint", "restart", "none"], [0.6, 0.3, 0.1])[0]
            limit = math.ceil(d * rng.uniform(1.2, 5.0) / 900) * 900
            f.write(f"b{i},{t:.1f},{profile},1,{round(d)},{limit},{kind},\n")


write("single-3g.csv", 500, "3g.20gb", 45 * 60, 0.9, 300, 8 * 3600, 11, limits=False)
write("single-2g-limits.csv", 400, "2g.20gb", 30 * 60, 1.0, 120, 12 * 3600, 12, limits=True)
write_default_limit("default-limit.csv", 800, 13)
write_services_batch("services-batch.csv", 1000, 14)
