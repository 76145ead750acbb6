#!/usr/bin/env python3
# Reference values for src/core/rng_test.cc, computed independently of the C++ code.
# Run: python3 tests/data/reference/rng_reference.py (the other references import its RNG).
# Independent Python re-implementation of SplitMix64 (Steele, Lea, Flood 2014; Vigna's splitmix64.c)
# and xoshiro256** 1.0 (Blackman & Vigna, xoshiro256starstar.c).
import math
M=(1<<64)-1
GOLD=0x9E3779B97F4A7C15
def splitmix(seed):
    s=seed
    while True:
        s=(s+0x9E3779B97F4A7C15)&M
        z=s
        z=((z^(z>>30))*0xBF58476D1CE4E5B9)&M
        z=((z^(z>>27))*0x94D049BB133111EB)&M
        yield z^(z>>31)
def rotl(x,k): return ((x<<k)|(x>>(64-k)))&M
def xoshiro(seed):
    g=splitmix(seed); s=[next(g) for _ in range(4)]
    while True:
        r=(rotl((s[1]*5)&M,7)*9)&M
        t=(s[1]<<17)&M
        s[2]^=s[0]; s[3]^=s[1]; s[1]^=s[2]; s[0]^=s[3]; s[2]^=t; s[3]=rotl(s[3],45)
        yield r
def u01(g): return (next(g)>>11)*2.0**-53
def expo(g, mean): return -mean*math.log(1-u01(g))
def derive(seed, stream): return next(splitmix((seed+stream*GOLD)&M))

if __name__ == '__main__':
    for seed in (0,1234567):
        g=splitmix(seed); print('splitmix',seed,[next(g) for _ in range(5)])
    for seed in (0,42):
        g=xoshiro(seed); print('xoshiro',seed,[next(g) for _ in range(5)])
    # Uniform01 = (x>>11)*2^-53 for xoshiro seed 42
    g=xoshiro(42); print('u01', [repr((next(g)>>11)*2.0**-53) for _ in range(3)])
    g=xoshiro(42); print('uniformint 1..6', [next(g)%6+1 for _ in range(5)])
    import math
    g=xoshiro(42); print('exp mean 10', [repr(-10*math.log(1-(next(g)>>11)*2.0**-53)) for _ in range(3)])
    g=xoshiro(42)
    out=[]
    for _ in range(5):
        u=(next(g)>>11)*2.0**-53; r=u*4; c=0
        for i,w in enumerate([1,2,1]):
            c+=w
            if r<c: out.append(i); break
    print('choice', out)
