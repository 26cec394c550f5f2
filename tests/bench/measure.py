#!/usr/bin/env python3
"""Whole-process figures of issue 10 (docs/performance.md): medians over RUNS runs of wall time,
CPU time (user + sys, from wait4's rusage, microsecond resolution) and peak resident memory.
Not a test. Usage: tests/bench/measure.py [build folder] [runs]   (default: build 20)"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

build = sys.argv[1] if len(sys.argv) > 1 else "build"
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
calc = os.path.join(build, "calc")

COMMANDS = [
    "state --model qwen3-8b --length 8192",
    "check scenarios",
    "request --model qwen3-8b --prompt 8 --generate 1000000",
    "request --model deepseek-v4.1-flash --prompt 8 --generate 1000000",
    "sweep --model deepseek-v4.1-flash --lengths 1:1000000:+1 --format csv",
]


def once(args):
    """Runs calc once under GNU time; returns (wall s, cpu s, peak KiB). Wall and CPU come from
    wait4 (microseconds; GNU time's own share is well under a millisecond); the peak from GNU
    time's %M, since a forked child's ru_maxrss starts at this Python's resident size."""
    with open(os.devnull, "wb") as null, tempfile.NamedTemporaryFile("r") as peak:
        start = time.perf_counter()
        p = subprocess.Popen(["/usr/bin/time", "-f", "%M %x", "-o", peak.name, calc] + args,
                             stdout=null, stderr=null)
        _, _, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - start
        kib, code = peak.read().split()[-2:]
    if int(code) not in (0, 1):
        sys.exit(f"measure.py: calc {' '.join(args)} failed")
    return wall, usage.ru_utime + usage.ru_stime, int(kib)


def main():
    ldd = subprocess.run(["ldd", calc], capture_output=True, text=True).stdout
    cuda = sum("cuda" in line or "cublas" in line for line in ldd.splitlines())
    load = open("/proc/loadavg").read().split()[:3]
    print(f"calc: {calc} ({os.cpu_count()} cores, load {' '.join(load)}), "
          f"{cuda} CUDA libraries linked, medians of {runs} runs")
    for line in COMMANDS:
        args = line.split()
        samples = [once(args) for _ in range(runs)]
        wall = statistics.median(s[0] for s in samples) * 1e3
        cpu = statistics.median(s[1] for s in samples) * 1e3
        peak = statistics.median(s[2] for s in samples) / 1024
        print(f"calc {line:<68} wall {wall:8.1f} ms  cpu {cpu:8.1f} ms  peak {peak:6.1f} MiB")


main()
