"""The native operator hook's instructions per training step, step by step
(Note [The hook priced step by step] in op_hook.cpp), counted by callgrind:

    python3 bench/torch/op_hook_instructions.py [ITERATIONS]

Timing the hook on a shared machine moves by more than the hook costs (the
GPU machine's MLP loop spreads by +-20% inside one process), so this counts
what the timing cannot resolve: callgrind's instructions on the program's
thread for ITERATIONS (default 20) training steps of a small MLP on the CPU
(the MLP of mlp_bench.py at width 32, batch 8: the same operators, nesting
and autograd), after 10 steps of warm-up, for each STREAMSAN_TORCH_HOOK_STEPS
and without the hook. The hook is told that CPU tensors are the device's,
so operators take the CUDA operators' path (spans, frames, op_begin and
op_end); the library's entry points do nothing (bench/injection's
BM_ModelledOperator counts those). Needs valgrind and its headers.

Prints per configuration: instructions per step, the step's instructions
above the configuration before it, and the operators told to the library
per step. CONFIGS (a space-separated list) picks and orders configurations;
a configuration with the suffix `+blocks` also names the operators' outputs
by their blocks, as the hook does once the allocator tracker is attached
(Note [Outputs named by their blocks]; no allocator here, so the hook is
told so): `calls+blocks` against `calls` prices the boxed results.
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.join(HERE, "..", "..", "python")
sys.path.insert(0, HERE)
from op_hook_cost import NOOP_ABI  # noqa: E402  (entry points that only count op_begin)

COUNTING_ABI = NOOP_ABI + r"""
#include <valgrind/callgrind.h>
void counted_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void counted_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS_AT("counted"); }
"""

CHILD = r"""
import ctypes, os, sys
sys.path.insert(0, sys.argv[3])
import torch
torch.set_num_threads(1)
config, lib_path, iterations = sys.argv[1], sys.argv[2], int(sys.argv[4])
lib = ctypes.CDLL(lib_path)
blocks = config.endswith("+blocks")
config = config[:-len("+blocks")] if blocks else config
if config != "none":
    from streamsan_torch import _native_hook
    hook, why = _native_hook.load(torch, lambda m: print("streamsan: " + m, file=sys.stderr))
    assert hook is not None, why
    if config != "all":
        os.environ["STREAMSAN_TORCH_HOOK_STEPS"] = config
    # CPU tensors are the device's: operators take the CUDA path.
    why = hook.init(lib, [os.path.dirname(torch.__file__)], device_type=_native_hook.CPU,
                    host_type=-1)
    assert why is None, why
    assert hook.enable() is None
    if blocks:
        hook.outputs_from_blocks_for_test()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32),
                            torch.nn.ReLU(), torch.nn.Linear(32, 32))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.MSELoss()
x, y = torch.randn(8, 32), torch.randn(8, 32)

def step():
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()

for _ in range(10):
    step()
ops = ctypes.c_ulong.in_dll(lib, "ops_begun")
before = ops.value
lib.counted_start()
for _ in range(iterations):
    step()
lib.counted_stop()
print("ops_begun", ops.value - before)
"""

# Each configuration adds one step to the one before it.
# By default with +blocks: the hook as it runs on a GPU, where the allocator
# tracker is attached (Note [Outputs named by their blocks]).
CONFIGS = os.environ.get(
    "CONFIGS", "none callback+blocks boxing+blocks spans+blocks frames+blocks calls+blocks").split()


def instructions(out_file):
    # A dump's "summary:" is the run's so far (0 before the first dump);
    # its "totals:" are the dump's own.
    with open(out_file) as f:
        for line in f:
            if line.startswith("totals:"):
                return int(line.split()[1])
    raise RuntimeError("no totals in " + out_file)


def main():
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    with tempfile.TemporaryDirectory() as tmp:
        src, lib = os.path.join(tmp, "abi.c"), os.path.join(tmp, "abi.so")
        with open(src, "w") as f:
            f.write(COUNTING_ABI)
        subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", src, "-o", lib],
                       check=True)
        rows, previous = [], None
        for config in CONFIGS:
            out = os.path.join(tmp, "callgrind.%s" % config)
            run = subprocess.run(
                ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                 "--callgrind-out-file=" + out + ".%p", sys.executable, "-c", CHILD, config, lib,
                 PYDIR, str(iterations)], capture_output=True, text=True, timeout=3600)
            if run.returncode != 0:
                sys.exit("%s failed:\n%s" % (config, run.stderr[-3000:]))
            ops = int(re.search(r"ops_begun (\d+)", run.stdout).group(1)) // iterations
            dumps = [os.path.join(tmp, n) for n in os.listdir(tmp)
                     if n.startswith("callgrind.%s." % config)]
            total = sum(instructions(d) for d in dumps) // iterations
            rows.append((config, total, None if previous is None else total - previous, ops))
            previous = total
        print("| configuration | instructions per step | the step's own | operators told |")
        print("| --- | ---: | ---: | ---: |")
        for config, total, own, ops in rows:
            print("| %s | %d | %s | %d |" % (config, total, "-" if own is None else "%+d" % own,
                                          ops))


if __name__ == "__main__":
    main()
