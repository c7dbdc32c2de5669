#!/usr/bin/env python3
"""bench/profile/critical_share.py: our share of the critical path."""
import gzip
import os
import tempfile
import unittest

import bench_scripts
from bench_scripts import row

SCRIPT = bench_scripts.script("profile", "critical_share.py")
OURS = "/x/libstreamsan_inject.so+0x10"
CUDA = "/x/libcuda.so.1+0x20"
SAN = "/x/libsanitizer-public.so+0x30"
APP = "/x/app+0x40"
TORCH = "/x/libtorch_cpu.so+0x1005"


def pcs(lines):
    return "# samples %d taken %d\n# thread 1 app\n" % (len(lines), len(lines)) + "\n".join(lines) + "\n"


def run(folder, *args):
    return bench_scripts.run(SCRIPT, *args, cwd=folder)


class CriticalShare(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def write(self, run, lines, name="pcs.100"):
        os.makedirs(os.path.join(self.root, run), exist_ok=True)
        with open(os.path.join(self.root, run, name), "w") as f:
            f.write(pcs(lines))

    def test_program_threads_count_and_ours_do_not(self):
        # main: 10 samples, 2 in our code and 1 in the subscriber alone;
        # a program thread it waits for: 1 in our code; our engine thread:
        # all its samples ours, so left out.
        main = ["main %s %s %s" % (APP, OURS, CUDA)] * 2 + ["main %s %s" % (CUDA, SAN)] + \
               ["main %s %s" % (APP, APP)] * 7
        worker = ["tid:7 %s %s" % (OURS, APP)] + ["tid:7 %s" % APP] * 3
        engine = ["tid:8 %s" % OURS] * 20
        # The subscriber's own thread (CUPTI keeps one): left out too.
        subscriber = ["tid:9 %s %s" % (SAN, APP)] * 30
        self.write("run", main + worker + engine + subscriber)
        # A smaller file in the same folder (the launcher's) is not read.
        self.write("run", ["main %s" % APP], name="pcs.99")
        out = run(self.root, "run")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(row(out.stdout, "run"), "| run | 10 | 30.0% | 10.0% | 40.0% | 1.667 | 2 |")

    def test_symbols_name_record_function_frames(self):
        symbols = os.path.join(self.root, "symbols")
        os.makedirs(symbols)
        with gzip.open(os.path.join(symbols, "libtorch_cpu.so.nm.gz"), "wt") as f:
            f.write("0000000000001000 T _ZN2at14RecordFunction17runStartCallbacksEv\n"
                    "0000000000002000 T _ZN2at5emptyEv\n")
        self.write("run", ["main %s %s" % (APP, TORCH)] + ["main %s" % APP] * 3)
        out = run(self.root, "run", "--symbols", symbols)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(row(out.stdout, "run"), "| run | 4 | 0.0% | 0.0% | 25.0% | 25.0% | 1.333 | 0 |")

    def test_a_run_without_main_thread_samples_says_so(self):
        self.write("run", ["tid:7 %s" % APP])
        out = run(self.root, "run")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("| run | no main-thread samples |", out.stdout)

    def test_a_missing_run_or_library_is_an_error_naming_it(self):
        out = run(self.root, "nowhere")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("nowhere: no such file or folder", out.stderr)
        self.write("run", ["main %s" % APP])
        out = run(self.root, "run", "--library", "missing.so")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("--library missing.so: no such file", out.stderr)

    def test_a_folder_without_samples_is_an_error(self):
        os.makedirs(os.path.join(self.root, "empty"))
        out = run(self.root, "empty")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("no pcs.* file in empty", out.stderr)


class Steps(unittest.TestCase):
    """--library's split of our samples into the steps of a call."""

    def setUp(self):
        self.module = bench_scripts.load(SCRIPT, "critical_share")

    def test_the_first_name_that_says_a_step_wins_walking_outward(self):
        chain = ["std::vector<unsigned long>::size",
                 "streamsan::precise::footprint_resolver::on_record",
                 "streamsan::injection::cuda_model::kernel_launched"]
        self.assertEqual(self.module.step_of(chain), "record path")
        self.assertEqual(self.module.step_of(chain[2:]), "model")

    def test_a_chain_that_names_no_step_is_other(self):
        self.assertEqual(self.module.step_of(["std::_Rb_tree_increment"]), "other")
        self.assertEqual(self.module.step_of([]), "other")


if __name__ == "__main__":
    unittest.main()
