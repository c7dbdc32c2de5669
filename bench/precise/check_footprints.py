#!/usr/bin/env python3
"""Compares the footprints bench/precise/probe_inject.cpp measured (stderr,
PROBE_PRINT=1) with those footprint_probe expects (stdout).

usage: check_footprints.py EXPECTED_STDOUT MEASURED_STDERR
Prints one line per launch (exact, or what differs) and exits 1 on any
difference."""
import collections
import sys


def merge(intervals):
    out = []
    for b, e in sorted(intervals):
        if out and b <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([b, e])
    return [tuple(x) for x in out]


def main(expected_path, measured_path):
    allocs = {}
    expected = collections.defaultdict(lambda: collections.defaultdict(list))
    kernels = {}
    for line in open(expected_path):
        f = line.split()
        if not f:
            continue
        if f[0] == "alloc":
            allocs[f[1]] = (int(f[2], 16), int(f[3]))
        elif f[0] == "expect":
            launch, kernel, kind, name, b, e = int(f[1]), f[2], f[3], f[4], int(f[5]), int(f[6])
            base = allocs[name][0]
            expected[launch][kind].append((base + b, base + e))
            kernels[launch] = kernel
    measured = collections.defaultdict(lambda: collections.defaultdict(list))
    current = None
    for line in open(measured_path):
        f = line.split()
        if not f:
            continue
        if f[0] == "measured":
            current = int(f[1].split("=")[1]) - 1
            measured[current]["_meta"] = [line.strip()]
        elif current is not None and f[0] in ("read", "write", "atomic") and len(f) == 3:
            measured[current][f[0]].append((int(f[1], 16), int(f[2], 16)))
    failures = 0
    for launch in sorted(expected):
        diffs = []
        for kind in ("read", "write", "atomic"):
            want = merge(expected[launch][kind])
            got = merge(measured[launch][kind])
            if want != got:
                diffs.append(f"{kind}: expected {len(want)} intervals {want[:3]}..., "
                             f"measured {len(got)} {got[:3]}...")
        meta = measured[launch].get("_meta", ["(not measured)"])[0]
        if diffs:
            failures += 1
            print(f"launch {launch} {kernels[launch]}: DIFFERS ({meta})")
            for d in diffs:
                print("   ", d)
        else:
            print(f"launch {launch} {kernels[launch]}: exact ({meta})")
    print(f"{len(expected) - failures} exact, {failures} differ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
