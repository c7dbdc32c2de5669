"""The training loop of issue #9 point 8, timed in-process:

    python3 mlp_bench.py [ITERATIONS] [WARMUP]

A 3-layer MLP (Linear 256 -> 256, ReLU between), batch 64, MSE loss, SGD;
WARMUP iterations (default 30) are run first, then ITERATIONS (default 300)
are timed between two torch.cuda.synchronize() calls. Prints one line:
`mlp_ms <milliseconds of the timed iterations>`. With MLP_REPEATS=K (default
1) the ITERATIONS are timed K times in a row, each between two
synchronizes; a line `mlp_ms_each` gives every time, and `mlp_ms` their
median: one slow stretch of a noisy machine then moves one repeat, not the
run. The same program runs
natively, under `streamsan run` and under CSAN (TORCH_CUDA_SANITIZER=1):
overhead.sh compares them side by side. With PCSAMPLE_ON_SIGNAL=1 the
process sends itself SIGUSR1 before the timed iterations and SIGUSR2 after
them, for bench/profile/pc_sampler.cpp to sample that region only.

With MLP_ALTERNATE=K (only under `streamsan run` with the native operator
hook) the timed blocks of ITERATIONS alternate between the operator hook
enabled and disabled, K rounds of two blocks, the order turning each round
(on off, off on, ...); it prints `mlp_alt_on_ms_each`, `mlp_alt_off_ms_each`
and `mlp_alt_ratio <median of the rounds' on/off ratios> min <r> max <r>`
(Note [The hook priced inside one process]). With MLP_ALTERNATE_WHAT=pause
(and STREAMSAN_BENCH_PAUSE=1) the blocks alternate between kernel launches
modelled and paused instead (Note [Launches paused for a benchmark] in
inject/sanitizer_api/sanitizer_source.cpp): the price of our launch path
on this loop, the operator hook as the run has it in both kinds of block.
With MLP_ALTERNATE_WHAT=all (and STREAMSAN_BENCH_PAUSE=1) the blocks
alternate between everything on (the operator hook, the driver's launch
callbacks) and both off, the launches then unseen (Note [Launches unseen for
a benchmark] in inject/sanitizer_api/sanitizer_source.cpp): streamsan's
price against the loop without it, in one process, less what stays on in
both (the caching allocator's block tracking, the callbacks of calls other
than launches, the synchronize that ends each block).
With MLP_ALTERNATE_WHAT=unsubscribed (and STREAMSAN_BENCH_PAUSE=1) the
blocks alternate between everything on and the operator hook (if the run
has one: STREAMSAN_TORCH=0 has none) off with the Compute Sanitizer API
subscription dropped (Note [The subscription dropped
for a benchmark] in inject/sanitizer_api/sanitizer_source.cpp): every CUDA
call of an "off" block goes unseen, as without streamsan, so the ratio is
streamsan's whole price on this loop in one process but for what stays
(torch's side of the caching allocator's tracker, whose blocks the library
then ignores: Note [Blocks unseen while the subscription is dropped] in
inject/model/cuda_model_blocks.cpp; the loaded library's idle threads).
With MLP_ALTERNATE_WHAT=csan (natively, without `streamsan run`) the blocks
alternate between PyTorch's CUDA sanitizer enabled and disabled
(torch.cuda._sanitizer's enable and disable; Note [CSAN priced inside one
process]): CSAN's price on this loop measured the way streamsan's is.
With MLP_PAUSED=1 (and STREAMSAN_BENCH_PAUSE=1) every timed launch is
paused: a profile of that run is the floor a profile of the modelled loop
is read against (bench/torch/profile-mlp.sh, PROF_RUNS).
"""
import ctypes
import os
import signal
import statistics
import sys
import time

import torch

# Note [The hook priced inside one process]
# Wall-clock ratios between processes on the GPU machine spread by 20 to 30%
# (docs/pytorch.md, Overhead), more than the operator hook's price over the
# generic capture. Enabling and disabling the hook between two blocks of
# iterations is sound (the lazy mode enables it mid-process; disabled, the
# operators' kernels get the generic footprints again, and the caching
# allocator's tracker is not the hook's callback), so one process can time
# the two side by side: what differs between its blocks is the hook alone,
# and a slow process slows both. Each round's ratio pairs two neighbouring
# blocks; the order turns each round so that a drift in time favours
# neither.


def timed_block(step, iterations):
    """Runs `iterations` steps from a synchronized device and waits for
    them: (milliseconds, the last step's loss)."""
    start = time.perf_counter()
    for _ in range(iterations):
        loss = step()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1000.0, loss


def env_count(name, default, minimum):
    """The whole number >= `minimum` in environment variable `name`, else
    exits with an error naming it."""
    text = os.environ.get(name, str(default))
    try:
        value = int(text)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        print("mlp_bench: %s=%s: expected a whole number >= %d" % (name, text, minimum),
              file=sys.stderr)
        sys.exit(2)
    return value


def _operator_hook():
    """The native operator hook streamsan installed, or None."""
    support = sys.modules.get("streamsan_torch._support")
    install = getattr(support, "install", None)
    return getattr(install, "hook", None)


class _LaunchPause:
    """The injection library's launch pause as a switch: enable() models
    launches, disable() pauses them; each returns None or a problem."""

    def __init__(self, control):
        self._control = control

    def enable(self):
        return None if self._control(0) == 1 else "the pause was refused"

    def disable(self):
        return None if self._control(1) == 1 else "the pause was refused"


def _library_control(name):
    """The benchmark control `name` of the streamsan library this process
    runs under, or None."""
    path = os.environ.get("CUDA_INJECTION64_PATH", "")
    if not path:
        return None
    try:
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        control = getattr(lib, name)
    except (OSError, AttributeError):
        return None
    control.argtypes = [ctypes.c_int]
    control.restype = ctypes.c_int
    return control


def _launch_pause():
    """The pause of the streamsan library this process runs under, or None."""
    control = _library_control("streamsan_inject_bench_pause_launches")
    return None if control is None else _LaunchPause(control)


class _HookAndControl:
    """The operator hook (where the run has one) and a control of the
    library as one switch: on, the control first and then the hook; off,
    the hook first. `refused_on` and `refused_off` say a refused control."""

    def __init__(self, hook, control, refused_on, refused_off):
        self._hook = hook
        self._control = control
        self._refused = {1: refused_on, 0: refused_off}

    def _set(self, on):
        return None if self._control(on) == 1 else self._refused[on]

    def enable(self):
        problem = self._set(1)
        if problem or self._hook is None:
            return problem
        return self._hook.enable()

    def disable(self):
        problem = None if self._hook is None else self._hook.disable()
        return problem or self._set(0)


def _everything():
    """The operator hook and the driver's launch callbacks (Note [Launches
    unseen for a benchmark]), or None."""
    hook = _operator_hook()
    control = _library_control("streamsan_inject_bench_launch_callbacks")
    if hook is None or control is None:
        return None
    return _HookAndControl(hook, control, "the launch callbacks could not be switched on",
                           "the launch callbacks could not be switched off")


def _unsubscribed_switch(hook, subscribed):
    """`hook` (None: the run has none) and the Sanitizer API subscription
    (Note [The subscription dropped for a benchmark]) as one switch."""
    return _HookAndControl(hook, subscribed, "the subscription could not be taken again",
                           "the subscription could not be dropped")


def _unsubscribed():
    control = _library_control("streamsan_inject_bench_subscribed")
    return None if control is None else _unsubscribed_switch(_operator_hook(), control)


# Note [CSAN priced inside one process]
# #9 compares streamsan's price with CSAN's. Between processes the GPU
# machine's ratios spread by 20 to 30%, so streamsan's is taken inside one
# process (the "unsubscribed" blocks above); CSAN's is taken the same way,
# in a process of its own without streamsan, by entering and leaving its
# dispatch mode between blocks. Leaving it is not quite native: the GPU
# trace callbacks CSAN registered when it was first enabled stay (torch has
# no call that removes them), so its "off" blocks still pay for those, and
# the ratio is a lower bound on CSAN's price: it can only flatter CSAN.


class _Csan:
    """PyTorch's CUDA sanitizer as a switch (enable() and disable() return
    None or a problem), or a problem when this torch cannot turn it off."""

    def __init__(self, sanitizer):
        self._sanitizer = sanitizer

    def enable(self):
        if not self._sanitizer.enabled:
            self._sanitizer.enable()
        return None

    def disable(self):
        if self._sanitizer.enabled:
            self._sanitizer.disable()
        return None


def _csan():
    try:
        from torch.cuda import _sanitizer
    except ImportError:
        return None
    sanitizer = getattr(_sanitizer, "cuda_sanitizer", None)
    if sanitizer is None or not callable(getattr(sanitizer, "disable", None)):
        return None
    return _Csan(sanitizer)


def alternate_blocks(hook, run_block, rounds):
    """Times `rounds` pairs of blocks, hook on and off, the order turning
    each round. `run_block()` runs one block and returns its milliseconds.
    Returns ({True: on times, False: off times}, each round's on/off ratio);
    raises RuntimeError when the hook cannot be enabled. Leaves it enabled."""
    times = {True: [], False: []}
    ratios = []
    for r in range(rounds):
        block = {}
        for on in ((True, False) if r % 2 == 0 else (False, True)):
            problem = hook.enable() if on else hook.disable()
            if problem:
                raise RuntimeError("enabling the operator hook failed: %s" % problem)
            block[on] = run_block()
            times[on].append(block[on])
        ratios.append(block[True] / block[False])
    hook.enable()
    return times, ratios


def _alternate(step, iterations, rounds):
    what = os.environ.get("MLP_ALTERNATE_WHAT", "hook")
    switches = {"hook": _operator_hook, "pause": _launch_pause, "all": _everything,
                "unsubscribed": _unsubscribed, "csan": _csan}
    if what not in switches:
        print("mlp_bench: MLP_ALTERNATE_WHAT=%s: expected hook, pause, all, unsubscribed or csan" % what,
              file=sys.stderr)
        sys.exit(2)
    hook = switches[what]()
    if hook is None:
        needs = {"hook": "the native operator hook (STREAMSAN_TORCH_HOOK=native)",
                 "pause": "the launch pause (STREAMSAN_BENCH_PAUSE=1)",
                 "all": "the native operator hook and STREAMSAN_BENCH_PAUSE=1",
                 "unsubscribed": "STREAMSAN_BENCH_PAUSE=1"}.get(what)
        if needs is None:
            print("mlp_bench: MLP_ALTERNATE_WHAT=csan needs torch.cuda._sanitizer with "
                  "enable() and disable() (torch %s has none)" % torch.__version__, file=sys.stderr)
        else:
            print("mlp_bench: MLP_ALTERNATE needs `streamsan run` with %s; none is there" % needs,
                  file=sys.stderr)
        sys.exit(2)
    last = [None]

    def run_block():
        ms, last[0] = timed_block(step, iterations)
        return ms

    try:
        times, ratios = alternate_blocks(hook, run_block, rounds)
    except RuntimeError as e:
        print("mlp_bench: %s" % e, file=sys.stderr)
        sys.exit(2)
    print("mlp_alt_on_ms_each " + " ".join("%.3f" % t for t in times[True]))
    print("mlp_alt_off_ms_each " + " ".join("%.3f" % t for t in times[False]))
    print("mlp_alt_ratio %.4f min %.4f max %.4f" % (statistics.median(ratios), min(ratios),
                                                      max(ratios)))
    print("mlp_ms %.3f loss %.6f" % (statistics.median(times[True]), float(last[0])))


def main():
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    warmup = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 256)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.MSELoss()
    x = torch.randn(64, 256, device="cuda")
    y = torch.randn(64, 256, device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    alternate = env_count("MLP_ALTERNATE", 0, 0)
    if alternate > 0:
        _alternate(step, iterations, alternate)
        return
    if env_count("MLP_PAUSED", 0, 0) > 0:
        # Every timed launch paused (Note [Launches paused for a benchmark]):
        # the floor that a profile of the modelled loop is read against.
        pause = _launch_pause()
        problem = "no launch pause (STREAMSAN_BENCH_PAUSE=1)" if pause is None else pause.disable()
        if problem:
            print("mlp_bench: MLP_PAUSED: %s" % problem, file=sys.stderr)
            sys.exit(2)
    sampled = os.environ.get("PCSAMPLE_ON_SIGNAL") == "1"
    if sampled:
        os.kill(os.getpid(), signal.SIGUSR1)
    times = []
    for _ in range(env_count("MLP_REPEATS", 1, 1)):
        ms, loss = timed_block(step, iterations)
        times.append(ms)
    if sampled:
        os.kill(os.getpid(), signal.SIGUSR2)
    if len(times) > 1:
        print("mlp_ms_each " + " ".join("%.3f" % t for t in times))
    print("mlp_ms %.3f loss %.6f" % (statistics.median(times), float(loss)))


if __name__ == "__main__":
    main()
