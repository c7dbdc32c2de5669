#!/usr/bin/env python3
"""bench/torch/mlp_bench.py: the blocks timed with the operator hook on and
off inside one process (Note [The hook priced inside one process])."""
import contextlib
import io
import os
import sys
import types
import unittest

import bench_scripts

SCRIPT = bench_scripts.script("torch", "mlp_bench.py")


def load_bench():
    # The bench imports torch at its top; the blocks' logic needs none of it.
    sys.modules.setdefault("torch", types.ModuleType("torch"))
    return bench_scripts.load(SCRIPT, "mlp_bench")


class FakeHook:
    """Records the states it is put in; the block's time depends on them."""

    def __init__(self, fail_enable=None):
        self.on = False
        self.states = []
        self.fail_enable = fail_enable

    def enable(self):
        if self.fail_enable:
            return self.fail_enable
        self.on = True
        self.states.append("on")
        return None

    def disable(self):
        self.on = False
        self.states.append("off")


class AlternateBlocks(unittest.TestCase):
    def setUp(self):
        self.bench = load_bench()

    def test_order_turns_each_round_and_the_hook_ends_enabled(self):
        hook = FakeHook()
        self.bench.alternate_blocks(hook, lambda: 1.0, 3)
        self.assertEqual(hook.states, ["on", "off", "off", "on", "on", "off", "on"])
        self.assertTrue(hook.on)

    def test_each_block_is_timed_in_the_state_it_was_run_in(self):
        hook = FakeHook()
        # A drift: every block takes 1 ms longer than the one before.
        clock = [0.0]

        def run_block():
            clock[0] += 1.0
            return clock[0] * 10.0 + (130.0 if hook.on else 100.0)

        times, ratios = self.bench.alternate_blocks(hook, run_block, 2)
        self.assertEqual(times[True], [140.0, 170.0])
        self.assertEqual(times[False], [120.0, 130.0])
        self.assertEqual(ratios, [140.0 / 120.0, 170.0 / 130.0])

    def test_a_hook_that_cannot_be_enabled_is_an_error_naming_why(self):
        with self.assertRaisesRegex(RuntimeError, "enabling the operator hook failed: no init"):
            self.bench.alternate_blocks(FakeHook(fail_enable="no init"), lambda: 1.0, 1)

    def test_without_streamsan_there_is_no_hook(self):
        sys.modules.pop("streamsan_torch._support", None)
        self.assertIsNone(self.bench._operator_hook())


class Unsubscribed(unittest.TestCase):
    """MLP_ALTERNATE_WHAT=unsubscribed: the hook and the subscription as one
    switch (Note [The subscription dropped for a benchmark])."""

    def setUp(self):
        self.bench = load_bench()
        self.calls = []

    def control(self, answer=1):
        def subscribed(on):
            self.calls.append("subscribe" if on else "unsubscribe")
            return answer
        return subscribed

    def test_the_hook_goes_off_before_the_subscription_and_on_after_it(self):
        hook = FakeHook()
        switch = self.bench._unsubscribed_switch(hook, self.control())
        self.assertIsNone(switch.disable())
        self.assertIsNone(switch.enable())
        self.assertEqual(self.calls, ["unsubscribe", "subscribe"])
        self.assertEqual(hook.states, ["off", "on"])

    def test_without_a_hook_only_the_subscription_switches(self):
        switch = self.bench._unsubscribed_switch(None, self.control())
        self.assertIsNone(switch.disable())
        self.assertIsNone(switch.enable())
        self.assertEqual(self.calls, ["unsubscribe", "subscribe"])

    def test_a_refused_switch_says_which(self):
        switch = self.bench._unsubscribed_switch(FakeHook(), self.control(answer=0))
        self.assertEqual(switch.disable(), "the subscription could not be dropped")
        self.assertEqual(switch.enable(), "the subscription could not be taken again")

    def test_without_streamsan_there_is_no_switch(self):
        saved = os.environ.pop("CUDA_INJECTION64_PATH", None)
        try:
            self.assertIsNone(self.bench._unsubscribed())
        finally:
            if saved is not None:
                os.environ["CUDA_INJECTION64_PATH"] = saved


class FakeSanitizer:
    """torch.cuda._sanitizer.cuda_sanitizer: enable() enters CSAN's mode
    once more each time it is called, so the switch must not call it twice."""

    def __init__(self):
        self.enabled = False
        self.calls = []

    def enable(self):
        self.calls.append("enable")
        self.enabled = True

    def disable(self):
        self.calls.append("disable")
        self.enabled = False


class Csan(unittest.TestCase):
    """MLP_ALTERNATE_WHAT=csan: PyTorch's CUDA sanitizer on and off inside one
    process (Note [CSAN priced inside one process])."""

    def setUp(self):
        self.bench = load_bench()
        self.saved = {name: sys.modules.get(name) for name in ("torch.cuda", "torch.cuda._sanitizer")}

    def tearDown(self):
        for name, module in self.saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module

    def install(self, sanitizer):
        cuda = types.ModuleType("torch.cuda")
        if sanitizer is not None:
            cuda._sanitizer = types.ModuleType("torch.cuda._sanitizer")
            cuda._sanitizer.cuda_sanitizer = sanitizer
            sys.modules["torch.cuda._sanitizer"] = cuda._sanitizer
        sys.modules["torch.cuda"] = cuda

    def test_the_switch_enters_and_leaves_the_mode_once_each(self):
        sanitizer = FakeSanitizer()
        self.install(sanitizer)
        switch = self.bench._csan()
        self.assertIsNotNone(switch)
        self.bench.alternate_blocks(switch, lambda: 1.0, 2)
        # on off | off on, then left on: no second enable while enabled.
        self.assertEqual(sanitizer.calls, ["enable", "disable", "enable"])
        self.assertTrue(sanitizer.enabled)

    def test_a_torch_whose_sanitizer_cannot_be_disabled_has_no_switch(self):
        sanitizer = FakeSanitizer()
        sanitizer.disable = None
        self.install(sanitizer)
        self.assertIsNone(self.bench._csan())

    def test_a_torch_without_the_sanitizer_has_no_switch(self):
        self.install(None)
        self.assertIsNone(self.bench._csan())


class EnvCount(unittest.TestCase):
    def setUp(self):
        self.bench = load_bench()
        self.saved = os.environ.pop("MLP_TEST_COUNT", None)

    def tearDown(self):
        os.environ.pop("MLP_TEST_COUNT", None)
        if self.saved is not None:
            os.environ["MLP_TEST_COUNT"] = self.saved

    def test_unset_gives_the_default_and_a_number_itself(self):
        self.assertEqual(self.bench.env_count("MLP_TEST_COUNT", 3, 1), 3)
        os.environ["MLP_TEST_COUNT"] = "8"
        self.assertEqual(self.bench.env_count("MLP_TEST_COUNT", 3, 1), 8)

    def test_a_value_that_is_no_count_is_an_error_naming_it(self):
        for bad in ("eight", "0"):
            os.environ["MLP_TEST_COUNT"] = bad
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as exit_:
                self.bench.env_count("MLP_TEST_COUNT", 3, 1)
            self.assertEqual(exit_.exception.code, 2)
            self.assertIn("MLP_TEST_COUNT=%s: expected a whole number >= 1" % bad, err.getvalue())


if __name__ == "__main__":
    unittest.main()
