"""What the PyTorch support's Triton launch hooks cost (Note [Python frames
of launches outside operators] in python/streamsan_torch/op_hook.cpp),
priced inside one process:

    streamsan run -- python3 triton_hooks_bench.py [LAUNCHES] [ROUNDS]

Two launch-bound loops of LAUNCHES calls (default 2000): a tiny Triton
kernel launched directly, and a torch.compile'd elementwise function (one
Inductor kernel a call). Each is timed in ROUNDS (default 8) pairs of
blocks, the support's hooks in Triton's launch chains and taken out, the
order turning each round, as mlp_bench.py's MLP_ALTERNATE does. Prints per
loop `triton_hooks_<loop>_on_ms_each`, `..._off_ms_each` and
`triton_hooks_<loop>_ratio <median on/off> min <r> max <r>`.

The function is compiled with the hooks in place, as under streamsan, so
both kinds of block use the same launcher: this prices the hooks' calls
and walks, not the launcher Inductor picks when no hook is set (torch
2.11's static launcher checks for launch hooks; compare with a run under
STREAMSAN_TORCH=0 for that).

TRITON_HOOK_SETS (default "ours noop") picks the pairs priced, each in
its own alternating blocks with the others out of the chains: `ours`, the
support's hooks; `noop`, two Python functions that do nothing, which
price what Triton itself spends once any hook is set (its launch metadata
and the chains' calls), the floor under `ours`.
Exits 77 without torch, triton or a GPU, and 2 when no hooks are there
(not under `streamsan run`, or the support did not start). Where the
injection library reads the Python frames itself the support installs no
hooks (Note [Triton launches without hooks] in _support.py): run it with
STREAMSAN_OPTIONS=python_frames=0 to price them; its blocks without the
hooks then keep native frames (the option holds for the whole process).
The hooks against the library's reading were priced at 9343608, which
still installed them (docs/pytorch.md).
"""
import os
import statistics
import sys
import time

try:
    import torch
    import triton
    import triton.language as tl
except ImportError as e:
    print("triton_hooks_bench: %s" % e)
    sys.exit(77)
if not torch.cuda.is_available():
    print("triton_hooks_bench: no GPU")
    sys.exit(77)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mlp_bench import alternate_blocks  # noqa: E402


@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1.0, mask=mask)


@torch.compile
def scale(x):
    return x * 2.0 + 1.0


class _Hooks:
    """enable()/disable() of the support's hooks in Triton's chains."""

    def __init__(self, on_enter, on_exit):
        self._runtime = triton.knobs.runtime
        self._hooks = (on_enter, on_exit)

    def __str__(self):
        return " ".join(type(h).__name__ for h in self._hooks)

    def enable(self):
        self._runtime.launch_enter_hook.add(self._hooks[0])
        self._runtime.launch_exit_hook.add(self._hooks[1])

    def disable(self):
        self._runtime.launch_enter_hook.remove(self._hooks[0])
        self._runtime.launch_exit_hook.remove(self._hooks[1])


def _support_hooks():
    support = sys.modules.get("streamsan_torch._support")
    hooks = getattr(getattr(support, "_hook_triton", None), "hooks", None)
    return _Hooks(*hooks) if hooks else None


def _nothing(*_, **__):
    pass


def _nothing_either(*_, **__):
    pass


def _timed(call, launches):
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(launches):
        call()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1000.0


def main():
    launches = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    hooks = _support_hooks()
    if hooks is None:
        print("triton_hooks_bench: no streamsan Triton hooks in this process (run it under "
              "`streamsan run`; where the library reads the Python frames itself, the support "
              "installs none: STREAMSAN_OPTIONS=python_frames=0 puts them back)", file=sys.stderr)
        sys.exit(2)
    sets = {"ours": hooks, "noop": _Hooks(_nothing, _nothing_either)}
    chosen = os.environ.get("TRITON_HOOK_SETS", "ours noop").split()
    unknown = [c for c in chosen if c not in sets]
    if unknown:
        print("triton_hooks_bench: TRITON_HOOK_SETS: unknown %s (ours, noop)" % unknown,
              file=sys.stderr)
        sys.exit(2)
    x = torch.zeros(1024, device="cuda")
    loops = {
        "kernel": lambda: add_one[(1,)](x, x.numel(), BLOCK=1024),
        "compiled": lambda: scale(x),
    }
    for name, call in loops.items():
        hooks.enable()
        _timed(call, 50)  # compiled (with the hooks in place) and warm
        hooks.disable()
        for which in chosen:
            pair = sets[which]
            times, ratios = alternate_blocks(pair, lambda: _timed(call, launches), rounds)
            pair.disable()
            label = name if which == "ours" else "%s_%s" % (name, which)
            print("triton_hooks_%s_hooks %s" % (label, pair))
            print("triton_hooks_%s_on_ms_each %s" % (
                label, " ".join("%.3f" % t for t in times[True])))
            print("triton_hooks_%s_off_ms_each %s" % (
                label, " ".join("%.3f" % t for t in times[False])))
            print("triton_hooks_%s_ratio %.4f min %.4f max %.4f" % (
                label, statistics.median(ratios), min(ratios), max(ratios)))
    hooks.enable()


if __name__ == "__main__":
    main()
