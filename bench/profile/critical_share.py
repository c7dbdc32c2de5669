#!/usr/bin/env python3
"""Our share of a program's critical path, from wall-clock samples of every
thread (bench/profile/pc_sampler.cpp with PCSAMPLE_CLOCK=wall-all):

  critical_share.py PCS_FILE_OR_DIR... [--symbols DIR] [--label TEXT]

Why: the GPU machine's timings of one configuration differ by 20-30%
between processes (docs/injection.md, "Noise"), so a ratio of two wall
times needs tens of rounds to place a 10% overhead. The share of the
samples that fall in streamsan's code is measured inside one process,
where that noise moves every category alike. Note [Critical share] below
says what it counts and what it misses.

For each run (a pcs file; for a folder, its largest pcs file: the
program's, not the launcher's) it prints, per category, the samples of the
program's threads in that category as a percentage of the main thread's
samples, and the estimate 1 / (1 - total):
  ours      a frame in libstreamsan_inject.so or the operator hook (op_hook-*.so)
  capture   a frame in the capture API's library (libsanitizer-public.so,
            libcupti.so) and none of ours: the subscriber's own price
  recordfn  with --symbols, a frame in a function whose name holds
            "RecordFunction" (torch's operator callbacks, which the
            operator hook turns on; also present natively, for autograd)
--symbols DIR holds `nm -D --defined-only LIB | gzip > DIR/LIB.nm.gz` for
the libraries to name (libtorch_cpu.so ...), made where they are.

With --library LOCAL_SO (the build's libstreamsan_inject.so, the same build
as the one sampled: another build's addresses name other functions), a
second table splits the samples in our code by the innermost function of
that library in each that names a step (addr2line, inlined frames
included, walking outward) into the steps of a call: the stack capture, the record's way to
the engine, the access inference, the source's launch bookkeeping, the rest
of the model, the dispatch; samples only in the operator hook are its own.

Note [Critical share]
The program's threads are every thread but the tools': a thread other than
main with at least 90% of its samples in our code or in the capture library
is one of streamsan's (the engine, the decoding thread) or the subscriber's
own (CUPTI keeps a thread of its own whose samples all fall in libcupti:
counted, a bare CUPTI subscriber came out at over 200% of the main thread)
and runs beside the program, not in its way. Samples of the other
threads count where they fall in a category: the MLP loop's main thread
waits for autograd's thread during backward, so that thread's work is on
the critical path. Where program threads run at the same time instead, the
sum over-counts (an upper bound). It misses what our presence costs
outside our frames: caches our code evicts, the driver's work for the
subscription that runs in its own frames, and CPU our threads take from
the program's on a busy machine. So it is a floor for the overhead, to
read beside the wall-clock ratios, not instead of them.
"""
import argparse
import bisect
import collections
import gzip
import os
import re
import subprocess
import sys

OURS = ("libstreamsan_inject.so", "op_hook-")
CAPTURE = ("libsanitizer-public.so", "libcupti.so")


def load_symbols(folder):
    tables = {}
    for name in os.listdir(folder):
        if not name.endswith(".nm.gz"):
            continue
        rows = []
        with gzip.open(os.path.join(folder, name), "rt") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[1] in "TtWw":
                    rows.append((int(parts[0], 16), parts[2]))
        rows.sort()
        tables[name[: -len(".nm.gz")]] = ([r[0] for r in rows], [r[1] for r in rows])
    return tables


def call_offset(frame, leaf):
    """The offset in its object of frame "OBJECT+0xOFFSET": for a return
    address (not a leaf), the call before it, which is what it was in."""
    return int(frame.rpartition("+")[2], 16) - (0 if leaf else 1)


def symbol(tables, frame, leaf):
    table = tables.get(os.path.basename(frame.rpartition("+")[0]))
    if table is None:
        return None
    i = bisect.bisect_right(table[0], call_offset(frame, leaf)) - 1
    return table[1][i] if i >= 0 else None


# The steps of a call, by the names in the innermost function of our
# library that a sample is in (its inline chain, innermost first); the
# first that matches wins.
STEPS = [
    ("stack", r"capture_stack|unwinder|step_to_caller|rule_for|resume_from_cached_path|"
              r"read_back|api_context::here"),
    ("record path", r"emit_with_stack|deliver_locked|footprint_resolver|queued_sink|"
                    r"intern_stack|recorder::"),
    ("inference", r"infer_accesses|allocation_map|fold_accesses|any_word_into|"
                  r"launch_may_race|object_accesses"),
    ("source bookkeeping", r"on_launch_entry|release_launching|hold_launching|add_pending_work|"
                           r"decide|launch_tracker|unpatch"),
    ("model", r"cuda_model::|_handlers|driver_launch|runtime_launch"),
    ("dispatch", r"dispatch|api_dispatcher|decode_|outcome_of|on_api|on_callback|trampoline"),
]


def step_of(chain):
    for name in chain:
        for step, pattern in STEPS:
            if re.search(pattern, name):
                return step
    return "other"


def inline_chains(library, offsets):
    """{offset: [function, ...] innermost first} from addr2line -a -i -f -C."""
    chains = {}
    if not offsets:
        return chains
    out = subprocess.run(["addr2line", "-a", "-i", "-f", "-C", "-e", library] +
                         [hex(o) for o in sorted(offsets)],
                         capture_output=True, text=True, check=False).stdout.splitlines()
    current = None
    lines = iter(out)
    for line in lines:
        if line.startswith("0x"):
            current = int(line, 16)
            chains[current] = []
        elif current is not None:
            # The name without its parameters; "(anonymous namespace)" is
            # part of the name.
            name = line.replace("(anonymous namespace)", "{anonymous}")
            chains[current].append(name.split("(")[0])
            next(lines, None)  # its file:line
    return chains


def ours_offset(frame, leaf):
    return call_offset(frame, leaf) if "libstreamsan_inject.so" in frame else None


def steps(ours, library):
    """The steps of `ours` (the program's samples in our code), counted."""
    # Each sample's frames in our library, innermost first: the step is the
    # first name that says one, walking outward through them.
    walks = [[o for i, f in enumerate(frames) if (o := ours_offset(f, i <= 1)) is not None]
             for frames in ours]
    chains = inline_chains(library, {o for w in walks for o in w})
    return collections.Counter(
        "operator hook" if not w else step_of([n for o in w for n in chains.get(o, [])])
        for w in walks)


def read_threads(path):
    threads = collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            parts = line.split()
            threads[parts[0]].append(parts[1:])
    return threads


def category(frames, tables):
    if any(any(o in f for o in OURS) for f in frames):
        return "ours"
    # frames[0] is the interrupted PC and frames[1] usually repeats it.
    if tables and any("RecordFunction" in (symbol(tables, f, i <= 1) or "")
                      for i, f in enumerate(frames)):
        return "recordfn"
    if any(any(c in f for c in CAPTURE) for f in frames):
        return "capture"
    return None


class run_samples:
    """One run's samples, read once: the main thread's count, the program's
    threads' samples with their categories (Note [Critical share]: a thread
    with at least 90% of its samples in our code or the capture library is
    a tool's and left out), and how many threads were the tools'."""

    def __init__(self, path, tables):
        threads = read_threads(path)
        self.main = len(threads.get("main", []))
        self.program = []  # (frames, category or None)
        self.tool_threads = 0
        for name, samples in threads.items():
            cats = [category(s, tables) for s in samples]
            tool = cats.count("ours") + cats.count("capture")
            if name != "main" and tool >= 0.9 * len(cats):
                self.tool_threads += 1
                continue
            self.program.extend(zip(samples, cats))

    def counts(self):
        return collections.Counter(c for _, c in self.program if c)

    def ours(self):
        return [frames for frames, c in self.program if c == "ours"]


def pcs_file(arg):
    if not os.path.exists(arg):
        sys.exit(f"critical_share.py: {arg}: no such file or folder")
    if os.path.isdir(arg):
        files = [os.path.join(arg, f) for f in os.listdir(arg) if f.startswith("pcs.")]
        if not files:
            sys.exit(f"critical_share.py: no pcs.* file in {arg}")
        return max(files, key=os.path.getsize)
    return arg


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--symbols")
    parser.add_argument("--library")
    args = parser.parse_args()
    if args.library and not os.path.isfile(args.library):
        sys.exit(f"critical_share.py: --library {args.library}: no such file")
    tables = load_symbols(args.symbols) if args.symbols else {}
    runs = [(os.path.basename(run.rstrip("/")), run_samples(pcs_file(run), tables))
            for run in args.runs]
    print_shares(runs, ["ours", "capture"] + (["recordfn"] if tables else []))
    if args.library:
        print_steps(runs, args.library)


def print_shares(runs, cats):
    print("| folder or file | main samples | " + " | ".join(cats) + " | total | 1/(1-total) | tool threads |")
    print("| --- | ---: | " + " | ".join("---:" for _ in cats) + " | ---: | ---: | ---: |")
    for name, run in runs:
        if run.main == 0:
            print(f"| {name} | no main-thread samples |")
            continue
        counts = run.counts()
        total = sum(counts[c] for c in cats) / run.main
        cells = " | ".join("%.1f%%" % (100.0 * counts[c] / run.main) for c in cats)
        print("| %s | %d | %s | %.1f%% | %.3f | %d |" % (
            name, run.main, cells, 100.0 * total,
            1.0 / (1.0 - total) if total < 1 else float("inf"), run.tool_threads))


def print_steps(runs, library):
    names = [step for step, _ in STEPS] + ["other", "operator hook"]
    print()
    print("| folder or file | " + " | ".join(names) + " |")
    print("| --- | " + " | ".join("---:" for _ in names) + " |")
    for name, run in runs:
        if run.main == 0:
            continue
        counts = steps(run.ours(), library)
        print("| %s | %s |" % (name, " | ".join("%.1f%%" % (100.0 * counts[c] / run.main)
                                               for c in names)))


if __name__ == "__main__":
    main()
