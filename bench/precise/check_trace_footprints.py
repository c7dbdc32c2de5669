#!/usr/bin/env python3
"""Compares the kernel footprints a `streamsan run --precise --record` trace
holds (as `streamsan dump` prints it) with those footprint_probe expects.

usage: check_trace_footprints.py EXPECTED_STDOUT DUMP_JSONL
Prints one line per launch and exits 1 on any difference or any footprint
that is not measured."""
import collections
import json
import sys

KIND_OF_MODE = {"read": ["read"], "write": ["write"], "read_write": ["read", "write"],
                "atomic": ["atomic"], "read_atomic": ["read", "atomic"],
                "write_atomic": ["write", "atomic"], "read_write_atomic": ["read", "write", "atomic"]}


def merge(intervals):
    out = []
    for b, e in sorted(intervals):
        if out and b <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([b, e])
    return [tuple(x) for x in out]


def main(expected_path, dump_path):
    bases = {}
    expected = collections.defaultdict(lambda: collections.defaultdict(list))
    kernels = {}
    for line in open(expected_path):
        f = line.split()
        if f and f[0] == "alloc":
            bases[f[1]] = int(f[2], 16)
        elif f and f[0] == "expect":
            launch, kernel, kind, name, b, e = int(f[1]), f[2], f[3], f[4], int(f[5]), int(f[6])
            expected[launch][kind].append((bases[name] + b, bases[name] + e))
            kernels[launch] = kernel
    alloc_base = {}
    launches = []
    for line in open(dump_path):
        r = json.loads(line)
        if r["kind"] == "alloc_record":
            alloc_base[r["alloc"]] = int(r["address"], 16)
        elif r["kind"] == "kernel_launch":
            got = collections.defaultdict(list)
            origins = set()
            for a in r["accesses"]:
                base = alloc_base.get(a["range"]["alloc"])
                if base is None:
                    continue
                b = base + a["range"]["offset"]
                for k in KIND_OF_MODE[a["mode"]]:
                    got[k].append((b, b + a["range"]["size"]))
                origins.add(a["origin"])
            launches.append((r["kernel"], got, origins))
    failures = 0
    for i in sorted(expected):
        if i >= len(launches):
            print(f"launch {i} {kernels[i]}: MISSING from the trace")
            failures += 1
            continue
        name, got, origins = launches[i]
        diffs = [k for k in ("read", "write", "atomic")
                 if merge(expected[i][k]) != merge(got[k])]
        if origins - {"measured"}:
            diffs.append("origins " + ",".join(sorted(origins)))
        if diffs:
            failures += 1
            print(f"launch {i} {kernels[i]} ({name}): DIFFERS in " + ", ".join(diffs))
        else:
            print(f"launch {i} {kernels[i]} ({name}): exact, measured")
    print(f"{len(expected) - failures} exact, {failures} differ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
