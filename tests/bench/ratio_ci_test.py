#!/usr/bin/env python3
"""bench/ratio_ci.py: the ratios and intervals the overhead tables print."""
import unittest

import bench_scripts
from bench_scripts import row

SCRIPT = bench_scripts.script("ratio_ci.py")


def run(stdin, *args):
    return bench_scripts.run(SCRIPT, *args, stdin=stdin)


class RatioCi(unittest.TestCase):
    def test_identical_runs_give_one_and_a_point_interval(self):
        out = run("native 10 10 10\nsame 10 10 10\n", "native")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(row(out.stdout, "same"), "| same | 3 | 10.0 | 1.000 (1.000-1.000) |")

    def test_ratio_of_medians_and_an_interval_around_it(self):
        out = run("native 100 102 98 101 99\nslow 150 153 147 151 149\n", "native")
        cells = row(out.stdout, "slow").split("|")
        self.assertEqual(cells[3].strip(), "150.0")
        ratio, rest = cells[4].split(" (")
        low, high = (float(v) for v in rest.rstrip(") ").split("-"))
        self.assertEqual(ratio.strip(), "1.500")
        self.assertLess(low, 1.5)
        self.assertGreater(high, 1.5)
        self.assertGreater(low, 1.4)
        self.assertLess(high, 1.6)

    def test_failed_and_nan_runs_are_left_out(self):
        out = run("native 10 10\nx 20 fail nan 20\n", "native")
        self.assertEqual(row(out.stdout, "x"), "| x | 2 | 20.0 | 2.000 (2.000-2.000) |")

    def test_second_column_against_a_reference(self):
        out = run("native 10 10\nbare 20 20\nx 22 22\n", "native", "bare")
        self.assertEqual(row(out.stdout, "x"), "| x | 2 | 22.0 | 2.200 (2.200-2.200) | 1.100 (1.100-1.100) |")

    def test_a_missing_baseline_is_named(self):
        out = run("native 10\n", "bare")
        self.assertEqual(out.returncode, 2)
        self.assertIn("no runs of 'bare' (have: native)", out.stderr)


if __name__ == "__main__":
    unittest.main()
