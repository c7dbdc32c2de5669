#!/usr/bin/env python3
"""Sums the samples of bench/profile/pc_sampler.cpp by function.

  fold.py PCS_FILE [--map REMOTE_DIR=LOCAL_DIR ...] [--top N] [--callers] [--stacks]

Each address "object+offset" is symbolized with addr2line when --map
rewrites its folder to one here that holds the same binary; other objects
(libcuda, the Sanitizer API's library) count as the object alone. Prints,
for the main thread and the others apart, the share of samples per
function of the interrupted PC, and with --callers the first frame of ours
below a driver or library frame (where our code called into them).
With --stacks it prints instead the snapshot a SIGTERM took
(PCSAMPLE_ON_TERM=1): every thread's whole stack, innermost first, which
is where a hung program's threads wait.
"""
import argparse
import collections
import os
import subprocess
import sys


def symbolize(objects_offsets, maps, outer):
    names = {}
    by_object = collections.defaultdict(set)
    for obj, off in objects_offsets:
        by_object[obj].add(off)
    for obj, offs in by_object.items():
        local = None  # only what --map names: other objects differ here
        for remote, here in maps:
            if obj.startswith(remote):
                local = here + obj[len(remote):]
        base = os.path.basename(obj)
        if local is None or not os.path.exists(local):
            for off in offs:
                names[(obj, off)] = base
            continue
        offs = sorted(offs)
        # -i lists the inline chain innermost first; the last is the
        # function the code was inlined into, which is what a caller frame
        # means. A marker address splits the answers per offset.
        args = []
        for off in offs:
            args += [hex(off), "0x0"]
        result = subprocess.run(["addr2line", "-f", "-C", "-i", "-e", local] + args,
                                capture_output=True, text=True)
        lines = result.stdout.splitlines()
        groups, current = [], []
        i = 0
        while i + 1 < len(lines):
            fn, where = lines[i], lines[i + 1]
            i += 2
            if where.startswith("??:") and fn == "??" and current:
                groups.append(current)
                current = []
                continue
            current.append(fn)
        for off, chain in zip(offs, groups):
            fn = chain[-1] if outer else chain[0]
            names[(obj, off)] = base + (":" + fn[:110] if fn != "??" else "")
    return names


def parse(path):
    samples = []
    for number, line in enumerate(open(path), 1):
        if line.startswith("#") or not line.strip():
            continue
        words = line.split()
        if words[0] not in ("main", "other") and not words[0].startswith("snap:"):
            sys.exit(f"{path}:{number}: a sample starts with main, other or snap:TID, not {words[0]!r}")
        frames = []
        for w in words[1:]:
            obj, plus, off = w.rpartition("+0x")
            try:
                frames.append((obj, int(off, 16)))
            except ValueError:
                plus = ""
            if not plus:
                sys.exit(f"{path}:{number}: {w!r} is not OBJECT+0xOFFSET")
        samples.append((words[0], frames))
    return samples


def main():
    p = argparse.ArgumentParser()
    p.add_argument("pcs")
    p.add_argument("--map", action="append", default=[])
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--callers", action="store_true")
    p.add_argument("--stacks", action="store_true")
    a = p.parse_args()
    maps = [tuple(m.split("=", 1)) for m in a.map]
    samples = parse(a.pcs)
    frames = {f for _, fs in samples for f in fs}
    names = symbolize(frames, maps, outer=False)
    callers = symbolize(frames, maps, outer=True)
    if a.stacks:
        print_stacks(samples, names, callers)
        return
    for thread in ("main", "other"):
        mine = [fs for t, fs in samples if t == thread and fs]
        if not mine:
            continue
        print(f"== {thread} thread: {len(mine)} samples")
        by_object = collections.Counter(os.path.basename(fs[0][0]) for fs in mine)
        for obj, n in by_object.most_common(8):
            print(f"  {100.0 * n / len(mine):5.1f}%  {obj}")
        print("  -- by function")
        by_fn = collections.Counter(names[fs[0]] for fs in mine)
        for fn, n in by_fn.most_common(a.top):
            print(f"  {100.0 * n / len(mine):5.1f}%  {fn}")
        if a.callers:
            print("  -- inclusive, by function (any frame)")
            incl = collections.Counter()
            for fs in mine:
                for fn in {names[fs[0]]} | {callers[f] for f in fs[1:]}:
                    incl[fn] += 1
            for fn, n in incl.most_common(a.top):
                print(f"  {100.0 * n / len(mine):5.1f}%  {fn}")


def print_stacks(samples, names, callers):
    snaps = [(t, fs) for t, fs in samples if t.startswith("snap:")]
    if not snaps:
        sys.exit("no snapshot in this file: was the program ended by SIGTERM with PCSAMPLE_ON_TERM=1?")
    for thread, fs in snaps:
        print(f"== thread {thread[5:]}")
        for i, f in enumerate(fs):
            print(f"  #{i:<2} {(names if i == 0 else callers)[f]}")


if __name__ == "__main__":
    main()
