"""The native operator hook (op_hook.cpp): built against the program's own
torch the first time it is needed, cached, loaded with ctypes.

Note [Building the operator hook at first use]
torch has no stable C++ ABI across versions, and every torch wheel ships its
headers, so the hook is compiled here, against the torch the program
imported, with the system's C++ compiler ($CXX, else c++, g++, clang++). The
result is cached in ${STREAMSAN_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/streamsan}
under a name keyed by torch's version and folder, the source's hash and the
compiler (its path, size and time): a new torch, a new streamsan or another
compiler builds again, anything else loads the cached file. The build goes
to a temporary name in the cache folder and is renamed into place, under a
lock file, so processes started together (torchrun's workers) build once and
never load half a file. It takes some 10 seconds, said in one line on
stderr. Any failure (no compiler, a build error, a torch without
RecordFunction, a Python without the C functions the frame walk uses) is
returned as one phrase; the caller says it and falls back to the Python
dispatch mode.

Note [Building the allocator tracker]
The caching allocator's trace tracker (Note [The caching allocator's blocks
reach the engine] in op_hook.cpp) needs c10/cuda/CUDACachingAllocator.h,
which includes CUDA's cuda_runtime_api.h; torch's wheels ship torch's
headers but not CUDA's. So the hook is built with the tracker (and linked
with c10_cuda) where CUDA's headers are found: $CUDA_HOME or $CUDA_PATH,
/usr/local/cuda, or the nvidia-cuda-runtime wheel's include folder next to
torch; else, or when that build fails (its log is kept), without it, and
the program is told once that blocks are not tracked and why. No CUDA
header is copied or stubbed: the tracker is compiled against the headers
torch itself was built for, or not at all.
"""
import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "op_hook.cpp")
BUILD_TIMEOUT_S = 600

# c10::DeviceType values (c10/core/DeviceType.h): stable since torch 1.0.
CPU, CUDA = 0, 1
NO_HOST = -1

# c10::CachingDeviceAllocator::TraceEntry::Action values (torch 2.11).
ALLOC, FREE_REQUESTED, FREE_COMPLETED, SEGMENT_ALLOC, SEGMENT_FREE = 0, 1, 2, 3, 4


def cache_dir():
    explicit = os.environ.get("STREAMSAN_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "streamsan")


def _compiler():
    """(path, None) or (None, why)."""
    cxx = os.environ.get("CXX")
    if cxx:
        path = shutil.which(cxx)
        if path is None:
            return None, "the C++ compiler CXX=%s is not there" % cxx
        return path, None
    for name in ("c++", "g++", "clang++"):
        path = shutil.which(name)
        if path:
            return path, None
    return None, "no C++ compiler found (c++, g++, clang++; or set CXX)"


def _key(torch, compiler, source, cuda_include):
    st = os.stat(compiler)
    h = hashlib.sha256()
    for part in (torch.__version__, os.path.dirname(os.path.abspath(torch.__file__)),
                 os.path.realpath(compiler), str(st.st_size), str(st.st_mtime_ns),
                 cuda_include or ""):
        h.update(part.encode("utf-8", "replace") + b"\0")
    h.update(source)
    return h.hexdigest()[:20]


def _torch_paths(torch):
    """(include folders, library folder) of torch, as torch.utils.cpp_extension
    gives them for a CPU extension. That module is not imported: it asks
    for the CUDA devices, which would initialize the driver before the
    program does (and before it forks its DataLoader workers)."""
    root = os.path.dirname(os.path.abspath(torch.__file__))
    include = os.path.join(root, "include")
    return [include, os.path.join(include, "torch", "csrc", "api", "include")], os.path.join(
        root, "lib")


def _cuda_include(torch):
    """(CUDA's include folder for the allocator tracker, None), or (None, why
    not): Note [Building the allocator tracker]."""
    _, libdir = _torch_paths(torch)
    if getattr(getattr(torch, "version", None), "cuda", None) is None:
        return None, "torch %s is built without CUDA" % torch.__version__
    if not os.path.exists(os.path.join(libdir, "libc10_cuda.so")):
        return None, "torch %s has no libc10_cuda.so" % torch.__version__
    candidates = [os.path.join(os.environ[v], "include") for v in ("CUDA_HOME", "CUDA_PATH")
                  if os.environ.get(v)]
    candidates.append("/usr/local/cuda/include")
    site = os.path.dirname(os.path.dirname(os.path.abspath(torch.__file__)))
    candidates += [os.path.join(site, "nvidia", "cuda_runtime", "include"),
                   os.path.join(site, "nvidia", "cu13", "include")]
    for folder in candidates:
        if os.path.exists(os.path.join(folder, "cuda_runtime_api.h")):
            return folder, None
    return None, ("no CUDA headers (cuda_runtime_api.h) found to build the allocator tracker; "
                  "set CUDA_HOME")


def _command(torch, compiler, output, cuda_include=None):
    includes, libdir = _torch_paths(torch)
    abi = int(bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)))
    # NDEBUG as torch's own build: RecordFunction has debug-only members, so
    # without it the hook would read torch's objects with another layout.
    cmd = [compiler, "-std=c++17", "-O2", "-fPIC", "-shared", "-w", "-DNDEBUG",
           "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi]
    cmd += ["-I" + d for d in includes]
    if cuda_include:
        cmd += ["-DSTREAMSAN_ALLOCATOR_TRACKER", "-isystem", cuda_include]
    cmd += [SOURCE, "-o", output, "-L" + libdir, "-Wl,-rpath," + libdir,
            "-ltorch_cpu", "-lc10"] + (["-lc10_cuda"] if cuda_include else []) + ["-ldl"]
    return cmd


def _first_error(text):
    for line in text.splitlines():
        if "error" in line:
            return line.strip()[:200]
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1].strip()[:200] if lines else "no output"


def _failed(target):
    """Why an earlier build of this key failed (its log is kept), or None: a
    build that fails once is not tried at every start."""
    log = target[:-3] + ".log"
    try:
        with open(log) as f:
            first = _first_error(f.read())
    except OSError:
        return None
    return "an earlier build failed: %s (log: %s; remove it to build again)" % (first, log)


def build(torch, say):
    """(path of the built hook, None, why it has no allocator tracker or
    None) or (None, why, None)."""
    compiler, why = _compiler()
    if compiler is None:
        return None, why, None
    try:
        with open(SOURCE, "rb") as f:
            source = f.read()
    except OSError as e:
        return None, "cannot read %s: %s" % (SOURCE, e.strerror), None
    if not os.path.exists(os.path.join(_torch_paths(torch)[0][0], "ATen", "record_function.h")):
        return None, "torch %s ships no ATen/record_function.h" % torch.__version__, None
    folder = cache_dir()
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        return None, "cannot make the cache folder %s: %s" % (folder, e.strerror), None
    cuda_include, no_tracker = _cuda_include(torch)
    said = []

    def say_once(message):  # one "building" line, whichever variant builds
        if not said:
            said.append(message)
            say(message)

    if cuda_include:
        # Note [Building the allocator tracker]: with it where it builds.
        path, why = _build_variant(torch, compiler, source, folder, cuda_include, say_once)
        if path is not None:
            return path, None, None
        no_tracker = "the allocator tracker did not build: " + why
    path, why = _build_variant(torch, compiler, source, folder, None, say_once)
    if path is None:
        return None, why, None
    return path, None, no_tracker


def _build_variant(torch, compiler, source, folder, cuda_include, say):
    """(path, None) or (None, why) of the hook built with the allocator
    tracker against cuda_include, or without it (None)."""
    target = os.path.join(folder, "op_hook-%s.so" % _key(torch, compiler, source, cuda_include))
    if os.path.exists(target):
        return target, None
    failed = _failed(target)
    if failed:
        return None, failed
    import fcntl

    with open(os.path.join(folder, "op_hook.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if os.path.exists(target):  # another process built it meanwhile
            return target, None
        failed = _failed(target)
        if failed:
            return None, failed
        say("building the PyTorch operator hook for torch %s (once)..." % torch.__version__)
        fd, temp = tempfile.mkstemp(prefix=".op_hook-", suffix=".so", dir=folder)
        os.close(fd)
        try:
            try:
                r = subprocess.run(_command(torch, compiler, temp, cuda_include),
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   timeout=BUILD_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                return None, "%s took more than %d s" % (compiler, BUILD_TIMEOUT_S)
            except OSError as e:
                return None, "cannot run %s: %s" % (compiler, e.strerror)
            if r.returncode != 0:
                log = target[:-3] + ".log"
                output = r.stdout.decode("utf-8", "replace")
                try:
                    with open(log, "w") as f:
                        f.write(output)
                except OSError:
                    log = "not kept"
                return None, "%s exited %d: %s (log: %s)" % (
                    os.path.basename(compiler), r.returncode, _first_error(output), log)
            os.replace(temp, target)
            return target, None
        finally:
            if os.path.exists(temp):
                os.unlink(temp)


# The C ABI's entry points the hook calls, in op_hook.cpp's injection_abi order.
ABI_FUNCTIONS = ("active", "frame", "frames", "op_begin", "op_end", "host_access",
                 "block_alloc", "block_free")


class _Abi(ctypes.Structure):
    _fields_ = [(name, ctypes.c_void_p) for name in ABI_FUNCTIONS]


class _Config(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("host_type", ctypes.c_int32),
                ("folded_prefixes", ctypes.c_char_p)]


def _pointer(function):
    return ctypes.cast(function, ctypes.c_void_p).value


class Hook:
    """The loaded hook: init (again, for tests), enable, disable."""

    def __init__(self, path, no_tracker=None):
        self.path = path
        # Why the caching allocator's blocks are not tracked (None: they are,
        # once CUDA is initialized; Note [Building the allocator tracker]).
        self.no_tracker = no_tracker
        self._lib = ctypes.CDLL(path)
        for name in ("streamsan_torch_hook_init", "streamsan_torch_hook_enable"):
            getattr(self._lib, name).restype = ctypes.c_int
        self._lib.streamsan_torch_hook_init.argtypes = [ctypes.POINTER(_Abi),
                                                        ctypes.POINTER(_Config)]
        self._lib.streamsan_torch_hook_error.restype = ctypes.c_char_p
        self._lib.streamsan_torch_hook_disable.restype = None
        self._keep = None

    def _error(self):
        return self._lib.streamsan_torch_hook_error().decode("utf-8", "replace")

    def init(self, lib, folded, device_type=CUDA, host_type=CPU):
        """None, or why the hook cannot run. `lib`: the C ABI's functions."""
        abi = _Abi(*(_pointer(getattr(lib, "streamsan_inject_torch_" + name))
                     for name in ABI_FUNCTIONS))
        prefixes = "\n".join(folded).encode("utf-8", "replace")
        config = _Config(device_type, host_type, prefixes)
        self._keep = (lib, prefixes)  # alive as long as the hook may call them
        if self._lib.streamsan_torch_hook_init(ctypes.byref(abi), ctypes.byref(config)) != 0:
            return self._error()
        return None

    def enable(self):
        if self._lib.streamsan_torch_hook_enable() != 0:
            return self._error()
        return None

    def disable(self):
        self._lib.streamsan_torch_hook_disable()

    def launch_frames(self):
        """f(enter) for Triton's launch hooks (Note [Python frames of launches
        outside operators] in op_hook.cpp), called with the GIL kept."""
        prototype = ctypes.PYFUNCTYPE(None, ctypes.c_int)
        return prototype(("streamsan_torch_hook_launch_frames", self._lib))

    def launch_hooks(self):
        """(enter, exit): builtins for Triton's launch hook chains, which call
        launch_frames(1) and (0) without a Python frame or ctypes between
        (Note [Triton's hooks are builtins] in op_hook.cpp). Raises when this
        Python cannot make them."""
        make = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_int)(
            ("streamsan_torch_hook_launch_hook", self._lib))
        return make(1), make(0)

    def has_tracker(self):
        return self._lib.streamsan_torch_hook_has_tracker() == 1

    def fast_frames(self):
        """'on', 'off' or 'untried': whether the Python stack is walked
        without frame objects (Note [Frames without frame objects])."""
        f = self._lib.streamsan_torch_hook_fast_frames
        f.restype = ctypes.c_int
        return ("untried", "on", "off")[f()]

    def op_frame_counts(self):
        """(hits, misses) of the calling thread's cache of operator frames
        (Note [Operator frames cached per thread])."""
        f = self._lib.streamsan_torch_hook_op_frame_counts
        f.restype = None
        hits, misses = ctypes.c_uint64(), ctypes.c_uint64()
        f(ctypes.byref(hits), ctypes.byref(misses))
        return hits.value, misses.value

    def outputs_from_blocks_for_test(self):
        """Operators' outputs are named by their blocks from now on, as once
        the allocator tracker is attached (Note [Outputs named by their
        blocks]); for good, in this process."""
        f = self._lib.streamsan_torch_hook_outputs_from_blocks_for_test
        f.restype = None
        f()

    def trace_for_test(self, action, address, size, device, stream):
        """Hands the allocator tracker a synthetic TraceEntry (the tests have
        no GPU, so no allocator to attach it to); False without a tracker."""
        f = self._lib.streamsan_torch_hook_trace_for_test
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int32,
                      ctypes.c_uint64]
        return f(action, address, size, device, stream) == 0


def load(torch, say):
    """(Hook, None) or (None, why)."""
    path, why, no_tracker = build(torch, say)
    if path is None:
        return None, why
    try:
        return Hook(path, no_tracker), None
    except (OSError, AttributeError) as e:
        return None, "cannot load %s: %s" % (path, e)
