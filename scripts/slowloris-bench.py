#!/usr/bin/env python3
"""Slowloris benchmark of `migsched serve` (docs/performance.md, "Daemon").

Starts `migsched serve` (fake backend, loopback, a temporary state dir), opens
--connections TCP connections that each send one byte of an endless request
head every --gap-s seconds (and reconnect when the daemon closes them, as an
attacker would), and meanwhile probes GET /healthz (no token) and GET /v1/node
(with the token: what the Slurm and Kubernetes hooks call) every --probe-s
seconds for --duration-s seconds. Prints, per path, how many probes were
answered within 1 s, and p50/p99/max latency; exits 1 when any probe took
longer than --limit-s (default 1 s) or failed.

Usage: scripts/slowloris-bench.py --migsched build/migsched [--connections 1100]
       [--duration-s 30] [--gap-s 1] [--probe-s 0.25] [--limit-s 1]
Needs no GPU. Raises its own and the daemon's open-file limit to fit the
connections (RLIMIT_NOFILE; run as root or with a hard limit high enough).
"""
import argparse
import http.client
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(max(soft, n), hard) if hard != resource.RLIM_INFINITY else max(soft, n)
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return want


def percentile(values, q):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--migsched", required=True)
    ap.add_argument("--connections", type=int, default=1100)
    ap.add_argument("--duration-s", type=float, default=30)
    ap.add_argument("--gap-s", type=float, default=1)
    ap.add_argument("--probe-s", type=float, default=0.25)
    ap.add_argument("--limit-s", type=float, default=1)
    args = ap.parse_args()

    limit = raise_nofile(args.connections * 2 + 256)
    tmp = tempfile.mkdtemp(prefix="migsched-slowloris-")
    os.chmod(tmp, 0o711)  # jobs run under uids of their own (job_uids) and start below it
    state = os.path.join(tmp, "state")
    token = "slowloris-bench-token-0123456789abcdef"
    config = os.path.join(tmp, "config.yaml")
    with open(config, "w") as f:
        f.write(f"listen: 127.0.0.1:0\nstate_dir: {state}\ntoken: {token}\nbackend: fake\n"
                f"gpus: 1xA100-40GB\n")
    daemon = subprocess.Popen([args.migsched, "serve", "--config", config, "--log-level", "warn"],
                              stdout=subprocess.PIPE, stderr=sys.stderr, text=True,
                              preexec_fn=lambda: raise_nofile(args.connections * 2 + 256))
    try:
        line = daemon.stdout.readline()
        if "listening on http://" not in line:
            print(f"the daemon did not start: {line!r}", file=sys.stderr)
            return 2
        host, port = line.strip().rsplit("http://", 1)[1].rsplit(":", 1)
        port = int(port)
        print(f"daemon on {host}:{port}; {args.connections} trickling connections, one byte every "
              f"{args.gap_s} s, for {args.duration_s} s (open-file limit {limit})")

        stop = threading.Event()
        counters = {"connects": 0, "closed_by_daemon": 0}

        def attacker():
            socks = []
            head = b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\nX-Slow: "
            while not stop.is_set():
                while len(socks) < args.connections and not stop.is_set():
                    s = socket.socket()
                    s.setblocking(False)
                    try:
                        s.connect_ex((host, port))
                    except OSError:
                        s.close()
                        break
                    socks.append([s, 0])
                    counters["connects"] += 1
                t0 = time.monotonic()
                alive = []
                for entry in socks:
                    s, sent = entry
                    b = head[sent:sent + 1] if sent < len(head) else b"a"
                    try:
                        if s.send(b) == 1:
                            entry[1] += 1
                        alive.append(entry)
                    except (BlockingIOError, InterruptedError):
                        alive.append(entry)
                    except OSError:
                        counters["closed_by_daemon"] += 1
                        s.close()
                socks = alive
                stop.wait(max(0.0, args.gap_s - (time.monotonic() - t0)))
            for s, _ in socks:
                s.close()

        attack = threading.Thread(target=attacker, daemon=True)
        attack.start()
        time.sleep(min(5.0, args.duration_s / 4))  # let the connections pile up

        results = {"/healthz": [], "/v1/node": []}
        failures = {"/healthz": 0, "/v1/node": 0}
        end = time.monotonic() + args.duration_s
        while time.monotonic() < end:
            for path in results:
                t0 = time.monotonic()
                try:
                    c = http.client.HTTPConnection(host, port, timeout=10)
                    headers = {"Authorization": f"Bearer {token}"} if path != "/healthz" else {}
                    c.request("GET", path, headers=headers)
                    r = c.getresponse()
                    r.read()
                    c.close()
                    if r.status != 200:
                        failures[path] += 1
                    results[path].append(time.monotonic() - t0)
                except OSError:
                    failures[path] += 1
            time.sleep(args.probe_s)
        stop.set()
        attack.join(timeout=10)

        worst = 0.0
        for path, lat in results.items():
            within = sum(1 for x in lat if x <= 1.0)
            worst = max([worst] + lat)
            print(f"{path}: {within} of {len(lat) + failures[path]} probes answered within 1 s; "
                  f"p50 {percentile(lat, 0.5) * 1000:.1f} ms, p99 {percentile(lat, 0.99) * 1000:.1f} "
                  f"ms, max {max(lat, default=float('nan')) * 1000:.1f} ms, {failures[path]} failed")
        print(f"attacker: {counters['connects']} connections opened, "
              f"{counters['closed_by_daemon']} found closed by the daemon")
        ok = worst <= args.limit_s and not any(failures.values())
        print("PASS" if ok else f"FAIL: a probe took longer than {args.limit_s} s or failed")
        return 0 if ok else 1
    finally:
        daemon.terminate()
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()


if __name__ == "__main__":
    sys.exit(main())
