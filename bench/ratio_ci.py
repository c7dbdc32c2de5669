#!/usr/bin/env python3
"""How sure a ratio of medians is: a bootstrap interval for each
configuration's median over a baseline's, from interleaved runs.

    ratio_ci.py BASELINE [REFERENCE] < samples

Each line of the input is a configuration's label and its runs' times
("native 412.1 398.7 455.0 ..."); "nan" and "fail" runs are left out. For
each configuration it prints the median, the ratio of its median to the
baseline's and a 95% interval of that ratio (percentile bootstrap, each
configuration's runs resampled apart, 4,000 resamples, a fixed seed so that
a table can be made again from its samples). With REFERENCE, a second
ratio and interval against that configuration (a bare subscriber, the
floor of issue #11's "within 5%").

Note [Intervals, not only medians]
On the GPU machine one configuration's runs spread by +-20%, and the
spread is between processes (docs/injection.md, "For whoever works on
streamsan"), so two medians of 5 to 7 runs can differ by 0.2x with
nothing changed. An interval says which ratios the runs can tell apart:
a target is met when the interval lies under it, missed when it lies
over it, and undecided otherwise; more rounds narrow it as 1/sqrt(runs).
"""
import random
import statistics
import sys


def runs_of(line):
    words = line.split()
    values = []
    for word in words[1:]:
        try:
            value = float(word)
        except ValueError:
            continue
        if value == value:  # not nan
            values.append(value)
    return words[0], values


def interval(runs, base, resamples=4000, seed=11):
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        a = statistics.median(rng.choices(runs, k=len(runs)))
        b = statistics.median(rng.choices(base, k=len(base)))
        ratios.append(a / b)
    ratios.sort()
    return ratios[int(0.025 * resamples)], ratios[int(0.975 * resamples) - 1]


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    samples = dict(runs_of(line) for line in sys.stdin if line.split())
    for name in argv[1:]:
        if not samples.get(name):
            print("ratio_ci.py: no runs of %r (have: %s)" % (name, ", ".join(samples) or "none"),
                  file=sys.stderr)
            return 2
    base = samples[argv[1]]
    reference = samples[argv[2]] if len(argv) == 3 else None
    header = "| configuration | runs | median | x %s (95%% interval) |" % argv[1]
    rule = "| --- | ---: | ---: | ---: |"
    if reference is not None:
        header += " x %s (95%% interval) |" % argv[2]
        rule += " ---: |"
    print(header)
    print(rule)
    for name, runs in samples.items():
        if not runs:
            print("| %s | 0 | - | - |%s" % (name, " - |" if reference is not None else ""))
            continue
        row = "| %s | %d | %.1f | %.3f (%.3f-%.3f) |" % (
            (name, len(runs), statistics.median(runs), statistics.median(runs) / statistics.median(base))
            + interval(runs, base))
        if reference is not None:
            row += " %.3f (%.3f-%.3f) |" % (
                (statistics.median(runs) / statistics.median(reference),) + interval(runs, reference))
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
