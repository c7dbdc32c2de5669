"""The operator hook: the native one (op_hook.cpp, a RecordFunction callback,
_native_hook.py builds it) or, where it cannot be built, a TorchDispatchMode
that reports each ATen operator's tensor spans and the user's Python frames
to the injection library; and the host accesses of CPU tensors.

STREAMSAN_TORCH_HOOK selects: `auto` (the default: native, else the Python
mode, saying why in one line), `python` (the Python mode), `native` (native
or no operator hook: for measuring). Note [Which operator hook by default]
says why.

The Python mode is cheap by construction: one dict lookup for the
operator's plan (modes per argument, from its schema, made once), a few
metadata calls per tensor, one dict lookup per Python frame (frames are
defined once per (code, line)), and two ctypes calls per operator that
touches a CUDA tensor.
"""
import ctypes
import functools
import os
import sys
import sysconfig
import threading
from array import array

from . import _AfterImport, _say

READ, WRITE, READ_WRITE = 1, 2, 3
METADATA = 0  # the operator reads the tensor's shape only: no span
# Note [A span flagged as a hull] in inject/session/torch_entry.cpp: the span
# covers bytes the tensor does not hold; the library takes it as inferred.
HULL = 0x100
# Note [Strided views are told as runs] in op_hook.cpp: the same rule here.
MAX_RUNS = 16
MAX_RUN_DIMS = 16
MAX_FRAMES = 16

_lib = None
_torch = None
_Tensor = None
_broken = [False]
_active = [False]


def missing_hooks(torch):
    """What this torch lacks for the support, as one phrase; '' when nothing."""
    try:
        from torch.utils._python_dispatch import TorchDispatchMode  # noqa: F401
    except Exception:
        return "torch.utils._python_dispatch.TorchDispatchMode"
    if not hasattr(torch, "Tensor") or not hasattr(torch.Tensor, "data_ptr"):
        return "torch.Tensor.data_ptr"
    try:
        schema = torch.ops.aten.add_.Tensor._schema
        schema.arguments[0].alias_info.is_write
    except Exception:
        return "operator schemas (OpOverload._schema with alias_info)"
    return ""


def _fail(e):
    """An error of ours: said once; the operator hook passes through from now on."""
    if not _broken[0]:
        _broken[0] = True
        sys.stderr.write("streamsan: the PyTorch support stopped after an internal error "
                         "(%s: %s); the generic capture continues\n" % (type(e).__name__, e))


# ---- Python frames (Note [Interpreter frames] in inject/capture/call_sites.h) ----

def _folded_prefixes(torch):
    dirs = {os.path.dirname(os.path.abspath(__file__))}
    dirs.add(os.path.dirname(os.path.abspath(torch.__file__)))
    for key in ("stdlib", "platstdlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            dirs.add(os.path.abspath(p))
    # Where torch's helper packages live (functorch, torchgen) is site-packages,
    # which also holds the user's libraries: only torch's own are folded.
    site = os.path.dirname(os.path.dirname(os.path.abspath(torch.__file__)))
    for name in ("functorch", "torchgen", "triton"):
        dirs.add(os.path.join(site, name))
    # Inductor's generated modules (torch's code, written for this run).
    dirs.add(os.path.abspath(_inductor_cache_dir()))
    return tuple(sorted(d + os.sep for d in dirs))


def _inductor_cache_dir():
    """Where Inductor writes its generated modules (its cache_dir() rule)."""
    configured = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if configured:
        return configured
    import getpass
    import tempfile
    try:
        user = getpass.getuser()
    except Exception:  # no user name: Inductor's own fallback is the same
        user = "unknown"
    return os.path.join(tempfile.gettempdir(), "torchinductor_" + user.replace(os.sep, "_"))


def _drop_generated(frames, first, is_pseudo):
    """Note [Code without a file behind a file] (op_hook.cpp): frames of
    code compiled from a string are dropped when a frame of a real file is
    among the user's frames; alone (`python -c`) they stay."""
    tail = frames[first:]
    if any(not is_pseudo(f) for f in tail) and any(is_pseudo(f) for f in tail):
        kept = [f for f in tail if not is_pseudo(f)]
        del frames[first:]
        frames.extend(kept)


class _Frames:
    def __init__(self, torch, lib):
        self._lib = lib
        self._ids = {}      # (code, line) -> id, of the user's frames only
        self._by_offset = {}  # (code, f_lasti) -> id, the same frames
        # code -> whether its file is folded: most frames above an operator
        # are torch's own (nn.Module calls, dispatch wrappers), and this
        # skips them without a line number or a (code, line) key.
        self._folded_code = {}
        self._ops = {}      # operator description -> id
        self._next = 1
        self._lock = threading.Lock()
        self._folded = _folded_prefixes(torch)
        self._pseudo = set()  # ids of frames of code without a file (<string>)

    def _new_id(self):
        with self._lock:
            i = self._next
            self._next += 1
        return i

    def _is_folded(self, code):
        name = code.co_filename
        # The interpreter's own code (<frozen runpy>) and library folders are
        # folded; `python -c` (<string>), <stdin> and notebook cells are the
        # user's.
        folded = name.startswith(("<frozen", "<built-in")) or name.startswith(self._folded)
        self._folded_code[code] = folded
        return folded

    def _define(self, code, line):
        """Names a frame of the user's (stack() has skipped the folded ones)."""
        name = code.co_filename
        fid = self._new_id()
        function = getattr(code, "co_qualname", code.co_name)
        path = name if name.startswith("<") else os.path.abspath(name)
        self._lib.streamsan_inject_torch_frame(
            fid, function.encode("utf-8", "replace"), path.encode("utf-8", "replace"), line)
        self._ids[(code, line)] = fid
        if name.startswith("<"):
            self._pseudo.add(fid)
        return fid

    def op_frame(self, plan, shapes):
        """The operator's pseudo-frame: its name, dtypes and shapes."""
        key = (plan, tuple(shapes))
        fid = self._ops.get(key)
        if fid is None:
            fid = self._new_id()
            self._lib.streamsan_inject_torch_frame(
                fid, _describe(plan, shapes).encode("utf-8", "replace"), b"", 0)
            self._ops[key] = fid
        return fid

    def stack(self, out, depth):
        """Appends the user's frames, innermost first, from sys._getframe(depth)."""
        try:
            f = sys._getframe(depth + 1)
        except ValueError:
            return
        first = len(out)
        try:
            self._walk(f, out)
        finally:
            _drop_generated(out, first, self._pseudo.__contains__)

    def _walk(self, f, out):
        ids = self._ids
        by_offset = self._by_offset
        folded_code = self._folded_code
        n = 0
        while f is not None:
            code = f.f_code
            folded = folded_code.get(code)
            if folded is None:
                folded = self._is_folded(code)
            if folded:
                f = f.f_back
                continue
            # By (code, instruction offset) first: f_lineno reads the code's
            # line table from its start (Note [Frames by offset] in
            # op_hook.cpp).
            at = (code, f.f_lasti)
            fid = by_offset.get(at)
            if fid is None:
                line = f.f_lineno
                fid = ids.get((code, line))
                if fid is None:
                    fid = self._define(code, line)
                by_offset[at] = fid
            out.append(fid)
            n += 1
            if n >= MAX_FRAMES:
                return
            f = f.f_back


# ---- operator plans ----

class _Plan:
    __slots__ = ("name", "positional", "keyword", "fresh_returns", "flags", "view")

    def __init__(self, func):
        schema = func._schema
        self.name = schema.name + ("." + schema.overload_name if schema.overload_name else "")
        self.positional = []
        self.keyword = {}
        # *_like and new_* operators read only their argument's metadata
        # (shape, dtype, device): no span, or each kernel they launch (a fill)
        # would also "read" it.
        base = schema.name.split("::")[-1]
        metadata_only = base.endswith("_like") or base.startswith("new_")
        for arg in schema.arguments:
            mode = READ_WRITE if _written(arg) else (METADATA if metadata_only else READ)
            if not arg.kwarg_only:
                self.positional.append(mode)
            self.keyword[arg.name] = mode
        # Returns without alias information are new tensors the op wrote.
        self.fresh_returns = [r.alias_info is None for r in schema.returns]
        # op_begin flag 1: new tensors come back (the launches wait for them).
        self.flags = 1 if any(self.fresh_returns) else 0
        # A view (returns an alias it does not write, writes nothing) reads
        # no data: neither a launch nor a host access comes of it.
        writes = any(m == READ_WRITE for m in self.positional) or any(
            m == READ_WRITE for m in self.keyword.values())
        self.view = (not writes and bool(schema.returns) and all(
            r.alias_info is not None and not r.alias_info.is_write for r in schema.returns))


def _written(arg):
    """`Tensor(a!)`, also inside a list (`Tensor(a!)[]`, foreach operators)."""
    info = arg.alias_info
    if info is not None and info.is_write:
        return True
    try:
        return "!" in str(arg)
    except Exception:
        return False


def _dtype_name(dtype):
    s = str(dtype)
    return s[6:] if s.startswith("torch.") else s


class _Collector:
    """The spans of one operator's tensors."""
    __slots__ = ("cuda", "cpu", "shapes")

    def __init__(self):
        self.cuda = array("Q")
        self.cpu = array("Q")
        self.shapes = []

    def add(self, t, mode):
        if t.layout is not _torch.strided:
            return
        if t.is_cuda:
            out = self.cuda
        elif t.is_cpu:
            out = self.cpu
        else:
            return
        n = t.numel()
        if len(self.shapes) < 4:
            self.shapes.append((t.dtype, t.shape))
        if n == 0:
            return
        try:
            ptr = t.data_ptr()
        except Exception:  # no storage (fake, meta-like or wrapper subclasses)
            return
        size = t.element_size()
        if t.is_contiguous():
            out.append(ptr)
            out.append(size * n)
            out.append(mode)
        else:
            strided_spans(out, ptr, size, t.shape, t.stride(), mode)

    def add_value(self, value, mode):
        if mode == METADATA:
            return
        if isinstance(value, _Tensor):
            self.add(value, mode)
        elif isinstance(value, (list, tuple)):
            for v in value:
                if isinstance(v, _Tensor):
                    self.add(v, mode)


def strided_spans(out, address, element, sizes, strides, mode):
    """Appends the spans of a non-contiguous tensor whose first element is at
    `address`: its runs, or its hull flagged HULL (Note [Strided views are
    told as runs] in op_hook.cpp, which this follows step by step)."""
    extent = 0
    for s, st in zip(sizes, strides):
        if s > 1:
            extent += (s - 1) * abs(st)
    hull = element * (extent + 1)
    dims = []
    for s, st in zip(sizes, strides):
        if s <= 1 or st == 0:
            continue
        if st < 0 or len(dims) == MAX_RUN_DIMS:
            out.extend((address, hull, mode | HULL))
            return
        dims.append((s, st))
    dims.sort(key=lambda d: -d[1])  # stable, as the hook's insertion sort
    run = 1
    while dims and dims[-1][1] == run:
        run *= dims.pop()[0]
    outer = []
    runs = 1
    for s, st in dims:
        if outer and outer[-1][1] == s * st:
            outer[-1] = (outer[-1][0] * s, st)
        else:
            outer.append((s, st))
        runs *= s
        if runs > MAX_RUNS:
            out.extend((address, hull, mode | HULL))
            return
    starts = [0]
    for s, st in outer:
        starts = [o + i * st for o in starts for i in range(s)]
    starts.sort()
    begin, end = starts[0], starts[0] + run
    for o in starts[1:]:
        if o > end:
            out.extend((address + begin * element, (end - begin) * element, mode))
            begin = o
        end = max(end, o + run)
    out.extend((address + begin * element, (end - begin) * element, mode))


def _describe(plan, shapes):
    parts = ["%s[%s]" % (_dtype_name(d), ", ".join(str(x) for x in s)) for d, s in shapes]
    return "%s(%s)" % (plan.name, ", ".join(parts))


def _output_spans(plan, out):
    c = _Collector()
    if isinstance(out, (list, tuple)):
        for i, v in enumerate(out):
            if i >= len(plan.fresh_returns) or plan.fresh_returns[i]:
                c.add_value(v, WRITE)
    elif plan.fresh_returns and plan.fresh_returns[0]:
        c.add_value(out, WRITE)
    return c.cuda


def _address(a):
    return a.buffer_info()[0] if len(a) else None


def _make_mode(torch, lib, frames):
    from torch.utils._python_dispatch import TorchDispatchMode

    plans = {}
    op_begin = lib.streamsan_inject_torch_op_begin
    op_end = lib.streamsan_inject_torch_op_end
    host_access = lib.streamsan_inject_torch_host_access
    is_active = lib.streamsan_inject_torch_active

    class StreamsanDispatchMode(TorchDispatchMode):
        """Tells streamsan each operator's tensors (never changes results)."""

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if _broken[0]:
                return func(*args, **kwargs)
            began = False
            plan = None
            try:
                began, plan = _before(func, args, kwargs)
            except Exception as e:  # ours: the operator runs as if we were not here
                _fail(e)
            if not began:
                return func(*args, **kwargs)
            out = None
            try:
                out = func(*args, **kwargs)
                return out
            finally:
                try:
                    spans = _output_spans(plan, out) if out is not None else array("Q")
                    op_end(_address(spans), len(spans) // 3)
                except Exception as e:
                    op_end(None, 0)
                    _fail(e)

    def _before(func, args, kwargs):
        """Tells streamsan about the operator; True when op_end must follow."""
        plan = plans.get(func)
        if plan is None:
            plan = plans[func] = _Plan(func)
        if plan.view:
            return False, plan
        c = _Collector()
        positional = plan.positional
        for i, a in enumerate(args):
            c.add_value(a, positional[i] if i < len(positional) else READ)
        for k, a in kwargs.items():
            c.add_value(a, plan.keyword.get(k, READ))
        if not _active[0]:
            _active[0] = bool(is_active())
            if not _active[0]:
                return False, plan  # CUDA not initialized: nothing to tell yet
        if c.cuda or (not c.cpu and not c.shapes):
            # A CUDA operator, or a factory (outputs only).
            ids = array("I")
            ids.append(frames.op_frame(plan, c.shapes))
            frames.stack(ids, 2)
            op_begin(_address(c.cuda), len(c.cuda) // 3, _address(ids), len(ids), plan.flags)
            return True, plan
        if c.cpu:
            # A CPU operator: the host touches its tensors now.
            ids = array("I")
            ids.append(frames.op_frame(plan, c.shapes))
            frames.stack(ids, 2)
            host_access(_address(c.cpu), len(c.cpu) // 3, plan.name.encode() + b" on the CPU",
                        _address(ids), len(ids))
        return False, plan

    return StreamsanDispatchMode


def _wrap_host_read(torch, lib, frames, name):
    original = getattr(torch.Tensor, name, None)
    if original is None:
        return
    host_access = lib.streamsan_inject_torch_host_access
    label = ("Tensor.%s()" % name).encode()

    @functools.wraps(original)
    def wrapper(self, *args, **kwargs):
        if not _active[0] and not _broken[0]:
            try:
                _active[0] = bool(lib.streamsan_inject_torch_active())
            except Exception as e:
                _fail(e)
        if _active[0] and not _broken[0]:
            try:
                if self.is_cpu:
                    c = _Collector()
                    c.add(self, READ)
                    if c.cpu:
                        ids = array("I")
                        frames.stack(ids, 1)
                        host_access(_address(c.cpu), 1, label, _address(ids), len(ids))
            except Exception as e:
                _fail(e)
        return original(self, *args, **kwargs)

    setattr(torch.Tensor, name, wrapper)


# Note [Lazy operator tracking]
# STREAMSAN_TORCH=lazy trades the first operators' precision for speed: the
# operator hook starts (the native callback is enabled, or the dispatch mode
# entered) only when the program first shows concurrency that footprints
# matter for: a new or external CUDA stream (graph capture makes one too) or
# a non_blocking copy. Until then every operator ran on one stream and every
# copy synchronized with the host, and kernels keep their generic,
# measured-on-demand footprints and native frames. The native callback,
# once enabled, sees every thread at once; the mode only the thread that
# triggered it (and autograd's, which inherit it). A program that never
# does any of this (a single-stream training loop) pays nothing per
# operator. Operators before the trigger that race with later ones are still
# seen, through the generic footprints (measured on their first launch per
# stream when the Compute Sanitizer API is there), without Python frames.

def _wrap_trigger(owner, name, enter, should=None):
    original = owner.__dict__.get(name)
    if original is None:
        return
    function = original.__func__ if isinstance(original, staticmethod) else original

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if should is None or should(args, kwargs):
            enter()
        return function(*args, **kwargs)

    setattr(owner, name, staticmethod(wrapper) if isinstance(original, staticmethod)
            or name == "__new__" else wrapper)


def _install_lazy(torch, enter):
    stream = torch.cuda.Stream
    # Stream(stream_id=...) wraps an existing stream (current_stream()).
    _wrap_trigger(stream, "__new__", enter, lambda a, k: "stream_id" not in k)
    external = getattr(torch.cuda, "ExternalStream", None)
    if external is not None and "__new__" in external.__dict__:
        _wrap_trigger(external, "__new__", enter)
    tensor = torch.Tensor
    # (pin_memory() is left alone: DataLoader pins on its own thread, which
    # is not where the mode is needed; the non_blocking copy that follows
    # triggers.)
    # copy_(src, non_blocking), to(..., non_blocking=True), cuda(device, non_blocking).
    _wrap_method(tensor, "copy_", enter,
                 lambda a, k: bool(k.get("non_blocking")) or (len(a) > 1 and a[1] is True))
    for name in ("to", "cuda", "cpu"):
        _wrap_method(tensor, name, enter, lambda a, k: bool(k.get("non_blocking")))


def _wrap_method(owner, name, enter, should):
    original = getattr(owner, name, None)
    if original is None:
        return

    @functools.wraps(original)
    def call(self, *args, **kwargs):
        if should(args, kwargs):
            enter()
        return original(self, *args, **kwargs)

    setattr(owner, name, call)


# ---- Python frames of kernels launched outside operators ----
# Note [Python frames of launches outside operators] in op_hook.cpp: Triton
# (and Inductor's launchers, which take Triton's hooks) call
# knobs.runtime.launch_enter_hook and launch_exit_hook around every launch,
# with the GIL held; `set_frames(1)` there hands the user's frames to the
# library for the launch, `set_frames(0)` clears them. Registered when
# triton is imported (at once if it already is).

def _python_launch_frames(lib, frames):
    """set_frames(enter) for the Python dispatch mode: its own walk. Unlike
    the native hook's it does not know whether an operator is running: a
    Triton launch inside one clears the operator's frames for the rest of
    it (its later launches keep their native frames)."""
    def set_frames(enter):
        if not enter:
            lib.streamsan_inject_torch_frames(None, 0)
            return
        ids = array("I")
        frames.stack(ids, 1)
        lib.streamsan_inject_torch_frames(_address(ids), len(ids))
    return set_frames


def _guarded_launch_hooks(set_frames):
    """(enter, exit) closures calling set_frames(1) and (0); an error of ours
    is _fail's, and after one they pass through."""
    def on_enter(*_, **__):
        if _broken[0]:
            return
        try:
            set_frames(1)
        except Exception as e:  # never the program's
            _fail(e)

    def on_exit(*_, **__):
        if _broken[0]:
            return
        try:
            set_frames(0)
        except Exception as e:
            _fail(e)

    return on_enter, on_exit


def _launch_hooks(hook, lib, frames):
    """What Triton's chains get: the native hook's builtins (Note [Triton's
    hooks are builtins] in op_hook.cpp), else guarded closures."""
    if hook is None:
        return _guarded_launch_hooks(_python_launch_frames(lib, frames))
    try:
        return hook.launch_hooks()
    except Exception as e:
        _say("Triton's launch hooks go through Python (%s: %s)" % (type(e).__name__, e))
        return _guarded_launch_hooks(hook.launch_frames())


def _hook_triton(triton, hooks):
    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    enter_chain = getattr(runtime, "launch_enter_hook", None)
    exit_chain = getattr(runtime, "launch_exit_hook", None)
    if not hasattr(enter_chain, "add") or not hasattr(exit_chain, "add"):
        _say("triton %s has no knobs.runtime launch hooks: reports of its kernels show no "
             "Python frames" % getattr(triton, "__version__", "?"))
        return
    enter_chain.add(hooks[0])
    exit_chain.add(hooks[1])
    _hook_triton.hooks = hooks


# Note [Triton launches without hooks]
# Where the injection library reads the interpreter's frames itself at every
# CUDA call outside operators (Note [Python frames read in place] in
# inject/stack/python_frames.h: CPython 3.8 to 3.15, python_frames=1),
# Triton's launches outside operators get the user's Python lines from it,
# and the hooks would only cost: on an H200 (triton_hooks_bench.py, 6 pairs
# of 2,000 launches) the support's hooks made a Triton launch loop 1.03 to
# 1.07 times slower than the same loop with the library reading the frames.
# They are then left out of Triton's chains. Older libraries lack the
# entry point: hooks as before.

def _library_reads_python_frames(lib):
    reads = getattr(lib, "streamsan_inject_reads_python_frames", None)
    if reads is None:
        return False
    reads.restype = ctypes.c_int
    reads.argtypes = []
    return reads() == 1


def _install_launch_frames(hooks):
    def hook(triton):
        try:
            _hook_triton(triton, hooks)
        except Exception as e:  # never the program's
            _fail(e)

    if "triton" in sys.modules:
        hook(sys.modules["triton"])
    else:
        sys.meta_path.insert(0, _AfterImport("triton", hook))


_HOOK_CHOICES = ("auto", "native", "python")

# Note [Which operator hook by default]
# `auto`: the native hook (op_hook.cpp) where it builds, else the Python
# dispatch mode with one line saying why. The native hook costs +0.78 us an
# operator against +11.6 us for the dispatch mode (CPU), and took the same
# verdicts on the GPU: the torch suite's 34 runs passed with it on an H200
# (torch 2.11.0+cu130, bench/torch/torch-gpu.sh, 2026-11-28), with the
# caching allocator's blocks tracked. `python` keeps the dispatch mode.
_DEFAULT_HOOK = "auto"


def _native_enter(torch, lib):
    """enter() of the native hook, or (None, why it cannot run)."""
    from . import _native_hook

    hook, why = _native_hook.load(torch, _say)
    if hook is not None:
        why = hook.init(lib, _folded_prefixes(torch))
    if why:
        return None, why
    if hook.no_tracker:
        # Note [Building the allocator tracker]: said once, the hook runs.
        _say("PyTorch's caching allocator blocks are not tracked (%s); reuse races are reported "
             "on the segments" % hook.no_tracker)
    import atexit

    # Before the interpreter is finalized: operators of threads that outlive
    # it must not walk its frames.
    atexit.register(hook.disable)
    install.hook = hook
    entered = [False]

    def enter():
        if not entered[0]:
            entered[0] = True
            problem = hook.enable()
            if problem:
                _say("the native PyTorch operator hook could not be enabled (%s); the generic "
                     "capture continues" % problem)

    return enter, None


def _python_enter(torch, lib, frames):
    mode = _make_mode(torch, lib, frames)()
    install.mode = mode
    entered = [False]

    def enter():
        # Entered for good on this thread; autograd's worker threads inherit
        # it with the rest of the thread-local state.
        if not entered[0]:
            entered[0] = True
            mode.__enter__()

    return enter


def install(torch, lib):
    global _lib, _torch, _Tensor
    _lib, _torch, _Tensor = lib, torch, torch.Tensor
    frames = _Frames(torch, lib)
    install.hook = install.mode = None
    choice = os.environ.get("STREAMSAN_TORCH_HOOK", _DEFAULT_HOOK) or _DEFAULT_HOOK
    if choice not in _HOOK_CHOICES:
        _say("STREAMSAN_TORCH_HOOK=%s is none of %s; using %s" % (choice, ", ".join(
            _HOOK_CHOICES), _DEFAULT_HOOK))
        choice = _DEFAULT_HOOK
    enter = None
    if choice != "python":
        try:
            enter, why = _native_enter(torch, lib)
        except Exception as e:  # a cache folder we may not write, ...: never the program's
            enter, why = None, "%s: %s" % (type(e).__name__, e)
        if enter is None and choice == "native":
            _say("the native PyTorch operator hook is not available (%s); "
                 "STREAMSAN_TORCH_HOOK=native: no operator hook, the generic capture continues"
                 % why)
        elif enter is None:
            _say("the native PyTorch operator hook is not available (%s); using the Python "
                 "dispatch mode (slower)" % why)
            enter = _python_enter(torch, lib, frames)
    else:
        enter = _python_enter(torch, lib, frames)
    for name in ("numpy", "tolist"):
        _wrap_host_read(torch, lib, frames, name)
    if enter is None:
        return
    if not _library_reads_python_frames(lib):
        _install_launch_frames(_launch_hooks(install.hook, lib, frames))
    if os.environ.get("STREAMSAN_TORCH", "1") == "lazy":
        _install_lazy(torch, enter)
    else:
        enter()
