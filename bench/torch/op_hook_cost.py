"""The operator hook's own cost per operator, on the CPU, without streamsan:
small in-place and out-of-place operators on CPU tensors with no hook, with
the native hook (op_hook.cpp) and with the Python dispatch mode, both
calling a C library whose entry points do nothing but count op_begin
(built here with the C compiler). CPU operators take the host-access path in both hooks (the
operator's spans, its pseudo-frame, the user's frames, one call), which is
the work of a CUDA operator less the second call.

    python3 bench/torch/op_hook_cost.py [ROUNDS]

Prints, per configuration, the median over ROUNDS (default 5) runs in fresh
processes of microseconds per operator; the hooks walk the Python stack once
per operator, so the operators also run 8 frames deeper (a training loop
under nn.Module calls is deeper still), in frames kept across operators or
made anew for each (as nn.Module calls make them); native_fast walks the
stack without frame objects (STREAMSAN_TORCH_FAST_FRAMES=1).
"""
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.join(HERE, "..", "..", "python")
NOOP_ABI = r"""
#include <stddef.h>
#include <stdint.h>
int streamsan_inject_torch_active(void) { return 1; }
void streamsan_inject_torch_frame(uint32_t id, const char* f, const char* file, uint32_t l) {}
void streamsan_inject_torch_frames(const uint32_t* ids, size_t n) {}
unsigned long ops_begun;  /* op_hook_instructions.py reports it */
void streamsan_inject_torch_op_begin(const uint64_t* s, size_t n, const uint32_t* f, size_t nf,
                                     uint32_t flags) { ++ops_begun; }
void streamsan_inject_torch_op_end(const uint64_t* s, size_t n) {}
void streamsan_inject_torch_host_access(const uint64_t* s, size_t n, const char* label,
                                        const uint32_t* f, size_t nf) {}
void streamsan_inject_torch_block_alloc(uint64_t address, uint64_t size, int32_t device,
                                        uint64_t stream) {}
void streamsan_inject_torch_block_free(uint64_t address) {}
"""
CHILD = r"""
import ctypes, os, sys, time
sys.path.insert(0, sys.argv[3])
import torch
torch.set_num_threads(1)
from streamsan_torch import _support
config, lib_path = sys.argv[1], sys.argv[2]
lib = ctypes.CDLL(lib_path)
vp, sz, u32 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32
lib.streamsan_inject_torch_frame.argtypes = [u32, ctypes.c_char_p, ctypes.c_char_p, u32]
lib.streamsan_inject_torch_op_begin.argtypes = [vp, sz, vp, sz, u32]
lib.streamsan_inject_torch_op_end.argtypes = [vp, sz]
lib.streamsan_inject_torch_host_access.argtypes = [vp, sz, ctypes.c_char_p, vp, sz]
if config.endswith("_fast"):  # Note [Frames without frame objects]
    os.environ["STREAMSAN_TORCH_FAST_FRAMES"] = "1"
    config = config[:-len("_fast")]
if config != "none":
    os.environ["STREAMSAN_TORCH_HOOK"] = config
    _support.install(torch, lib)
    assert (_support.install.hook is not None) == (config == "native")
a, b = torch.ones(64), torch.ones(64)

def step(n):
    for _ in range(n):
        a.add_(b)
        a.mul_(b)
        c = a + b

def nested(depth, n):
    # A training loop's stack: the loop, nn.Module's __call__ and forward.
    return step(n) if depth == 0 else nested(depth - 1, n)

def fresh(depth):
    # Each round of operators through calls made for it, as nn.Module calls
    # make new frames at every operator (Note [Frames without frame
    # objects]); as deep as nested() at the same depth.
    return step(1) if depth == 0 else fresh(depth - 1)

def user(n):
    if sys.argv[5] == "fresh":
        for _ in range(n):
            fresh(int(sys.argv[4]))
    else:
        nested(int(sys.argv[4]), n)

user(1000)
t = time.perf_counter()
user(10000)
print("%.3f" % ((time.perf_counter() - t) / 30000 * 1e6))
"""


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "noop_abi.c")
        lib = os.path.join(tmp, "noop_abi.so")
        with open(src, "w") as f:
            f.write(NOOP_ABI)
        subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", src, "-o", lib],
                       check=True)
        # (hook, frames between user() and the operators, whether they are
        # new at every operator)
        configs = [("none", 0, "kept"), ("native", 0, "kept"), ("python", 0, "kept"),
                   ("none", 8, "kept"), ("native", 8, "kept"), ("none", 8, "fresh"),
                   ("native", 8, "fresh"), ("native_fast", 8, "fresh")]
        times = {c: [] for c in configs}
        for r in range(rounds):
            for c in configs:
                out = subprocess.run([sys.executable, "-c", CHILD, c[0], lib, PYDIR, str(c[1]),
                                      c[2]],
                                     capture_output=True, text=True, timeout=600)
                if out.returncode != 0:
                    sys.exit("%s failed:\n%s" % (c, out.stderr[-2000:]))
                times[c].append(float(out.stdout.split()[-1]))
        print("| configuration | stack | us/op (median of %d) | added us/op | runs |" % rounds)
        print("| --- | ---: | ---: | ---: | --- |")
        for c in configs:
            base = statistics.median(times[("none", c[1], c[2])])
            m = statistics.median(times[c])
            print("| %s | %d frames deeper%s | %.2f | %.2f | %s |" % (
                c[0], c[1], ", new at every operator" if c[2] == "fresh" else "", m, m - base,
                ", ".join("%.2f" % v for v in times[c])))


if __name__ == "__main__":
    main()
