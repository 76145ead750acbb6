#!/usr/bin/env python3
"""Empty-GPU time while jobs wait, from a `migsched simulate --jobs-csv` file.

Replays the jobs' arrival, start and end times and integrates, over the
times when some job is waiting, the number of GPUs with no busy compute
slice; also over the times when the oldest waiting job is a gang. A job
counts on the instances it was placed on (the jobs CSV's `instances`; a
migrated job is counted where it started, a small error). Used in
docs/algorithms.md §13 to trace why the look-ahead reservation idled GPUs
on the Alibaba trace:

  migsched simulate --cluster 32xA100-40GB \\
      --workload alibaba:data/traces/alibaba-v2023/openb_pod_list_default.csv \\
      --load 0.9 --seed 1 --policy full --max-skip-seconds 1800 --jobs-csv jobs.csv
  scripts/idle-while-waiting.py jobs.csv 32
"""
import csv
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: idle-while-waiting.py JOBS.csv GPUS")
    rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["outcome"] == "completed"]
    gpus = int(sys.argv[2])
    events = []
    for r in rows:
        events.append((float(r["arrival_s"]), 0, "arrive", r))
        events.append((float(r["start_s"]), 1, "start", r))
        events.append((float(r["end_s"]), 2, "end", r))
    events.sort(key=lambda e: (e[0], e[1]))
    busy = [0] * gpus  # busy compute slices per GPU
    waiting = {}
    last = 0.0
    idle_waiting = idle_gang_head = gang_head = 0.0
    for t, _, kind, r in events:
        dt = t - last
        if dt > 0 and waiting:
            empty = sum(1 for b in busy if b == 0)
            idle_waiting += empty * dt
            head = min(waiting.values(), key=lambda x: (float(x["arrival_s"]), int(x["id"])))
            if len([x for x in head["instances"].split(";") if x]) > 1:
                gang_head += dt
                idle_gang_head += empty * dt
        last = t
        instances = [x for x in r["instances"].split(";") if x]
        if kind == "arrive":
            waiting[r["id"]] = r
        else:
            if kind == "start":
                waiting.pop(r["id"], None)
            for x in instances:
                gpu, profile = x.split(":")
                slices = int(profile.split("g", 1)[0])
                busy[int(gpu)] += slices if kind == "start" else -slices
    day = 86400.0
    print(f"empty-GPU days while some job waits: {idle_waiting / day:.1f}")
    print(f"days the oldest waiting job is a gang: {gang_head / day:.1f} "
          f"(empty-GPU days then: {idle_gang_head / day:.1f})")


if __name__ == "__main__":
    main()
