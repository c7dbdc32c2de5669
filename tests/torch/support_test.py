"""The PyTorch support's Python side, without torch: a stand-in torch module
(just what the support touches) and the real injection library.

    support_test.py BUILD/python LIBSTREAMSAN_INJECT.so STREAMSAN
"""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

PYDIR, LIB, STREAMSAN = sys.argv[1:4]
del sys.argv[1:4]
# The Python dispatch mode is what these tests drive (the stand-in torch
# could not build the native hook; op_hook_test.py tests that one).
os.environ["STREAMSAN_TORCH_HOOK"] = "python"

FAKE_TORCH = textwrap.dedent('''
    __version__ = "0.0-standin"
    __file__ = __file__
    strided = "strided"

    class _Device:
        def __init__(self, kind):
            self.type = kind

    class Tensor:
        def __init__(self, ptr, shape, stride=None, itemsize=4, device="cuda", dtype="torch.float32"):
            self.ptr, self.shape, self.itemsize = ptr, tuple(shape), itemsize
            if stride is None:
                stride, acc = [], 1
                for s in reversed(self.shape):
                    stride.insert(0, acc)
                    acc *= s
            self._stride = tuple(stride)
            self.device, self.dtype, self.layout = _Device(device), dtype, strided
        @property
        def is_cuda(self):
            return self.device.type == "cuda"
        @property
        def is_cpu(self):
            return self.device.type == "cpu"
        def numel(self):
            n = 1
            for s in self.shape:
                n *= s
            return n
        def element_size(self):
            return self.itemsize
        def stride(self):
            return self._stride
        def data_ptr(self):
            if self.ptr is None:
                raise RuntimeError("no storage")
            return self.ptr
        def is_contiguous(self):
            acc = 1
            for s, st in reversed(list(zip(self.shape, self._stride))):
                if s != 1 and st != acc:
                    return False
                acc *= s
            return True
        def tolist(self):
            return [0.0] * self.numel()

    class _Alias:
        def __init__(self, write):
            self.is_write = write

    class _Arg:
        def __init__(self, name, write=None, kwarg_only=False):
            self.name, self.kwarg_only = name, kwarg_only
            self.alias_info = None if write is None else _Alias(write)

    class _Schema:
        def __init__(self, name, overload, args, returns):
            self.name, self.overload_name = name, overload
            self.arguments, self.returns = args, returns

    class _Op:
        def __init__(self, schema, fn):
            self._schema, self.fn = schema, fn
        def __call__(self, *args, **kwargs):
            return self.fn(*args, **kwargs)

    class _Namespace:
        pass

    class _Cuda:
        class Stream:
            def __new__(cls, device=None, priority=0, **kwargs):
                return object.__new__(cls)

    cuda = _Cuda()
    ops = _Namespace()
    ops.aten = _Namespace()
    ops.aten.add_ = _Namespace()
    ops.aten.add_.Tensor = _Op(_Schema("aten::add_", "Tensor",
        [_Arg("self", True), _Arg("other"), _Arg("alpha", kwarg_only=True)], [_Arg("", True)]),
        lambda a, b, alpha=1: a)
    ops.aten.mul = _Namespace()
    ops.aten.mul.Tensor = _Op(_Schema("aten::mul", "Tensor", [_Arg("self"), _Arg("other")],
        [_Arg("")]), lambda a, b: Tensor(0x9000, a.shape))
    ops.aten.zeros_like = _Op(_Schema("aten::zeros_like", "", [_Arg("self")], [_Arg("")]),
        lambda a: Tensor(0x7000, a.shape))
    ops.aten.slice = _Op(_Schema("aten::slice", "Tensor", [_Arg("self", False)],
        [_Arg("", False)]), lambda a: a)
    ops.aten.sum = _Op(_Schema("aten::sum", "", [_Arg("self")], [_Arg("")]),
        lambda a: Tensor(0x100, (), device="cpu"))
    def _boom(a):
        raise ValueError("the user's own error")
    ops.aten.boom = _Op(_Schema("aten::boom", "", [_Arg("self")], [_Arg("")]), _boom)
''')

DISPATCH = textwrap.dedent('''
    class TorchDispatchMode:
        entered = []
        def __enter__(self):
            TorchDispatchMode.entered.append(self)
            return self
        def __exit__(self, *a):
            TorchDispatchMode.entered.remove(self)
''')


def make_torch(root, with_dispatch=True):
    pkg = os.path.join(root, "torch")
    os.makedirs(os.path.join(pkg, "utils"), exist_ok=True)
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write(FAKE_TORCH)
    with open(os.path.join(pkg, "utils", "__init__.py"), "w") as f:
        f.write("")
    if with_dispatch:
        with open(os.path.join(pkg, "utils", "_python_dispatch.py"), "w") as f:
            f.write(DISPATCH)


def run_under_streamsan(script, pythonpath, extra_env=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = pythonpath
    env.pop("STREAMSAN_OPTIONS", None)
    env.update(extra_env or {})
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(textwrap.dedent(script))
    try:
        return subprocess.run([STREAMSAN, "run", "--injection-library", LIB, "--", sys.executable,
                               f.name], env=env, capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(f.name)


class TheInterpreterExits(unittest.TestCase):
    """Note [No walk once the interpreter finalizes]: sitecustomize's atexit
    callback tells a library the driver loaded, and loads none."""

    def load_sitecustomize(self):
        import importlib.util
        spec = importlib.util.spec_from_file_location(
            "streamsan_sitecustomize_under_test", os.path.join(PYDIR, "sitecustomize.py"))
        module = importlib.util.module_from_spec(spec)
        saved = sys.modules.get("sitecustomize")
        try:
            spec.loader.exec_module(module)
        finally:
            if saved is not None:
                sys.modules["sitecustomize"] = saved
        return module

    def test_a_loaded_library_is_told(self):
        site = self.load_sitecustomize()
        calls = []

        class Function:  # as ctypes's: restype and argtypes can be set
            def __call__(self):
                calls.append(("exiting",))

        class Library:
            def __init__(self, path, mode):
                calls.append(("open", path, mode))
                self.streamsan_inject_python_exiting = Function()

        import ctypes
        real = ctypes.CDLL
        saved = os.environ.get("CUDA_INJECTION64_PATH")
        os.environ["CUDA_INJECTION64_PATH"] = "/the/library.so"
        ctypes.CDLL = Library
        try:
            site._tell_streamsan_we_exit()
        finally:
            ctypes.CDLL = real
            if saved is None:
                os.environ.pop("CUDA_INJECTION64_PATH")
            else:
                os.environ["CUDA_INJECTION64_PATH"] = saved
        self.assertEqual(calls, [("open", "/the/library.so", os.RTLD_NOLOAD | os.RTLD_GLOBAL),
                                 ("exiting",)])

    def test_a_library_not_loaded_stays_unloaded(self):
        site = self.load_sitecustomize()
        saved = os.environ.get("CUDA_INJECTION64_PATH")
        os.environ["CUDA_INJECTION64_PATH"] = LIB
        try:
            site._tell_streamsan_we_exit()  # no error, nothing loaded
        finally:
            if saved is None:
                os.environ.pop("CUDA_INJECTION64_PATH")
            else:
                os.environ["CUDA_INJECTION64_PATH"] = saved
        with open("/proc/self/maps") as maps:
            mapped = maps.read()
        if os.path.realpath(LIB) not in mapped:  # an earlier test of this process may load it
            self.assertNotIn(os.path.basename(LIB), mapped)

    def test_the_real_library_takes_the_call_without_a_session(self):
        import ctypes
        lib = ctypes.CDLL(LIB)
        lib.streamsan_inject_python_exiting.restype = None
        lib.streamsan_inject_python_exiting()  # no CUDA, no session: a no-op


class ZeroSetUp(unittest.TestCase):
    def test_torch_import_activates_and_user_sitecustomize_still_runs(self):
        with tempfile.TemporaryDirectory() as root:
            make_torch(root)
            user = os.path.join(root, "user")
            os.makedirs(user)
            with open(os.path.join(user, "sitecustomize.py"), "w") as f:
                f.write("import builtins\nbuiltins.USER_SITECUSTOMIZE = True\n")
            r = run_under_streamsan('''
                import builtins, sys
                assert getattr(builtins, "USER_SITECUSTOMIZE", False), "user sitecustomize lost"
                assert "streamsan_torch" in sys.modules
                assert "torch" not in sys.modules
                import torch
                import streamsan_torch
                print("status", streamsan_torch.status())
                from torch.utils._python_dispatch import TorchDispatchMode
                print("modes", len(TorchDispatchMode.entered))
            ''', root + os.pathsep + user)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("status (True, None)", r.stdout)
            self.assertIn("modes 1", r.stdout)
            self.assertIn("streamsan: the program made no CUDA calls", r.stderr)

    def test_a_torch_without_the_hooks_gets_one_line_and_runs_on(self):
        with tempfile.TemporaryDirectory() as root:
            make_torch(root, with_dispatch=False)
            r = run_under_streamsan('''
                import torch
                print("still running")
            ''', root)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("still running", r.stdout)
            lines = [l for l in r.stderr.splitlines() if "lacks" in l]
            self.assertEqual(lines, ["streamsan: PyTorch 0.0-standin lacks "
                                     "torch.utils._python_dispatch.TorchDispatchMode: no tensor "
                                     "footprints or Python frames; the generic capture continues"])

    def test_no_python_leaves_pythonpath_alone(self):
        r = subprocess.run([STREAMSAN, "run", "--no-python", "--injection-library", LIB, "--",
                            sys.executable, "-c", "import sys; print('streamsan_torch' in "
                            "sys.modules)"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.stdout.strip(), "False")

    def test_a_python_shebang_script_is_detected(self):
        with tempfile.TemporaryDirectory() as root:
            script = os.path.join(root, "train")
            with open(script, "w") as f:
                f.write("#!/usr/bin/env python3\nimport sys\nprint('streamsan_torch' in "
                        "sys.modules)\n")
            os.chmod(script, 0o755)
            r = subprocess.run([STREAMSAN, "run", "--injection-library", LIB, "--", script],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.stdout.strip(), "True", r.stderr)


class FakeLib:
    """The C ABI, recorded."""

    def __init__(self, active=1):
        self.calls = []
        self._active = active

    def streamsan_inject_torch_active(self):
        return self._active

    def streamsan_inject_torch_frame(self, fid, function, file, line):
        self.calls.append(("frame", fid, function.decode(), os.path.basename(file.decode()), line))

    def streamsan_inject_torch_op_begin(self, spans, n, frames, nframes, flags):
        self.calls.append(("begin", self._read(spans, 3 * n, "Q"), self._read(frames, nframes, "I"),
                           flags))

    def streamsan_inject_torch_op_end(self, spans, n):
        self.calls.append(("end", self._read(spans, 3 * n, "Q")))

    def streamsan_inject_torch_frames(self, frames, nframes):
        self.calls.append(("frames", self._read(frames, nframes, "I")))

    def streamsan_inject_torch_host_access(self, spans, n, label, frames, nframes):
        self.calls.append(("host", self._read(spans, 3 * n, "Q"), label.decode()))

    @staticmethod
    def _read(address, count, code):
        import ctypes
        if not address or not count:
            return []
        kind = ctypes.c_uint64 if code == "Q" else ctypes.c_uint32
        return list((kind * count).from_address(address))


class Support(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp()
        make_torch(cls.root)
        sys.path.insert(0, cls.root)
        sys.path.insert(0, PYDIR)
        import torch
        from streamsan_torch import _support
        cls.torch, cls.support = torch, _support

    def mode(self, lib):
        s = self.support
        s._torch, s._Tensor, s._lib = self.torch, self.torch.Tensor, lib
        s._broken[0], s._active[0] = False, False
        frames = s._Frames(self.torch, lib)
        return s._make_mode(self.torch, lib, frames)()

    def test_abi_of_the_real_library(self):
        os.environ["CUDA_INJECTION64_PATH"] = LIB
        from streamsan_torch import _native
        lib, why = _native.load()
        self.assertIsNone(why)
        self.assertEqual(lib.streamsan_inject_torch_active(), 0)  # no CUDA: no session
        lib.streamsan_inject_torch_op_begin(None, 0, None, 0, 0)  # no-ops, no crash
        lib.streamsan_inject_torch_op_end(None, 0)
        lib.streamsan_inject_torch_block_alloc(0x7f0000000000, 512, 0, 0)
        lib.streamsan_inject_torch_block_free(0x7f0000000000)

    def test_triton_hooks_are_left_out_where_the_library_reads_frames(self):
        # Note [Triton launches without hooks]: this interpreter's frames are
        # readable (3.8 to 3.15) unless STREAMSAN_OPTIONS says otherwise.
        os.environ["CUDA_INJECTION64_PATH"] = LIB
        from streamsan_torch import _native
        lib, _ = _native.load()
        readable = (3, 8) <= sys.version_info[:2] <= (3, 15)
        saved = os.environ.pop("STREAMSAN_OPTIONS", None)
        try:
            self.assertEqual(self.support._library_reads_python_frames(lib), readable)
            os.environ["STREAMSAN_OPTIONS"] = "python_frames=0"
            self.assertFalse(self.support._library_reads_python_frames(lib))
            os.environ["STREAMSAN_OPTIONS"] = "stack_depth=0"
            self.assertFalse(self.support._library_reads_python_frames(lib))
            # (A bad option is 0 too, caught inside the library; not tried
            # here: under the ASan build's preloaded runtime an exception
            # thrown in a library that ctypes loaded trips ASan's
            # __cxa_throw interceptor, libstdc++ having come after it.)
        finally:
            os.environ.pop("STREAMSAN_OPTIONS", None)
            if saved is not None:
                os.environ["STREAMSAN_OPTIONS"] = saved
        # A library without the entry point (an older one, the fake): hooks.
        self.assertFalse(self.support._library_reads_python_frames(FakeLib()))

    def test_in_place_op_spans_follow_the_schema(self):
        t = self.torch
        lib = FakeLib()
        a = t.Tensor(0x1000, (4, 8))
        b = t.Tensor(0x2000, (4, 8))
        self.mode(lib).__torch_dispatch__(t.ops.aten.add_.Tensor, (), (a, b), {"alpha": 2})
        begin = [c for c in lib.calls if c[0] == "begin"][0]
        self.assertEqual(begin[1], [0x1000, 128, 3, 0x2000, 128, 1])
        self.assertEqual(begin[3], 0)  # returns an alias: nothing to wait for
        op = [c for c in lib.calls if c[0] == "frame" and c[1] == begin[2][0]][0]
        self.assertEqual(op[2], "aten::add_.Tensor(float32[4, 8], float32[4, 8])")
        # The innermost user frame is this test, by file and line.
        user = [c for c in lib.calls if c[0] == "frame" and c[3] == "support_test.py"]
        self.assertTrue(user and user[0][1] in begin[2], lib.calls)
        self.assertEqual(lib.calls[-1], ("end", []))

    def test_python_dash_c_frames_are_the_users(self):
        t = self.torch
        lib = FakeLib()
        mode = self.mode(lib)
        a = t.Tensor(0x1000, (2, 2))
        # As with `python -c`, nothing but code without a file is the user's:
        # a thread (whose other frames are threading.py's, folded) runs it.
        scope = {"mode": mode, "t": t, "a": a}
        exec(compile("def main():\n"
                     "    mode.__torch_dispatch__(t.ops.aten.mul.Tensor, (), (a, a), {})\n",
                     "<string>", "exec"), scope)
        import threading
        thread = threading.Thread(target=scope["main"])
        thread.start()
        thread.join()
        begin = [c for c in lib.calls if c[0] == "begin"][0]
        named = {c[1]: c for c in lib.calls if c[0] == "frame"}
        self.assertEqual([named[fid][2:] for fid in begin[2][1:]], [("main", "<string>", 2)])

    def test_frames_of_torch_are_skipped_and_the_callers_are_kept(self):
        t = self.torch
        lib = FakeLib()
        mode = self.mode(lib)
        a = t.Tensor(0x1000, (2, 2))
        # A function whose file lies inside torch's folder (an nn.Module call
        # wrapper), called from this test: only the test's frame is the user's.
        module_py = os.path.join(os.path.dirname(t.__file__), "nn", "modules", "module.py")
        scope = {"mode": mode, "t": t, "a": a}
        exec(compile("def forward():\n"
                     "    mode.__torch_dispatch__(t.ops.aten.mul.Tensor, (), (a, a), {})\n",
                     module_py, "exec"), scope)
        for _ in range(2):  # the second walk skips the folded code at once
            scope["forward"]()
        begins = [c for c in lib.calls if c[0] == "begin"]
        self.assertEqual(len(begins), 2)
        named = {c[1]: c for c in lib.calls if c[0] == "frame"}
        for begin in begins:
            files = [named[fid][3] for fid in begin[2][1:]]
            self.assertNotIn("module.py", files)
            self.assertEqual(files[0], "support_test.py", files)
        self.assertEqual(begins[0][2][1:], begins[1][2][1:])

    # Inductor's generated modules are torch's code: folded, wherever
    # TORCHINDUCTOR_CACHE_DIR puts them (else /tmp/torchinductor_$USER).
    def test_inductors_generated_modules_are_folded(self):
        saved = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = "/work/inductor-cache"
        try:
            self.assertIn("/work/inductor-cache/", self.support._folded_prefixes(self.torch))
            del os.environ["TORCHINDUCTOR_CACHE_DIR"]
            self.assertTrue([p for p in self.support._folded_prefixes(self.torch)
                             if os.path.basename(p.rstrip("/")).startswith("torchinductor_")])
        finally:
            if saved is not None:
                os.environ["TORCHINDUCTOR_CACHE_DIR"] = saved
            else:
                os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)

    # Note [Code without a file behind a file] (op_hook.cpp): code compiled
    # from a string by a library (Inductor's launchers) is dropped when the
    # user's frames hold a real file; `python -c` code alone stays (above).
    def test_code_without_a_file_is_dropped_behind_a_real_file(self):
        t = self.torch
        lib = FakeLib()
        mode = self.mode(lib)
        a = t.Tensor(0x1000, (2, 2))
        line = sys._getframe().f_lineno + 1
        exec(compile("mode.__torch_dispatch__(t.ops.aten.mul.Tensor, (), (a, a), {})",
                     "<string>", "exec"), {"mode": mode, "t": t, "a": a})
        begin = [c for c in lib.calls if c[0] == "begin"][0]
        named = {c[1]: c for c in lib.calls if c[0] == "frame"}
        users = [named[fid][3:] for fid in begin[2][1:]]
        self.assertEqual(users[0], ("support_test.py", line), users)
        self.assertNotIn("<string>", [u[0] for u in users])

    # Note [Frames by offset]: frames found again by their instruction
    # offset keep their own lines; two sites on one line are one frame.
    def test_call_sites_found_again_keep_their_lines(self):
        t = self.torch
        lib = FakeLib()
        mode = self.mode(lib)
        a = t.Tensor(0x1000, (2, 2))
        scope = {"mode": mode, "t": t, "a": a}
        exec(compile("def step():\n"
                     "    mode.__torch_dispatch__(t.ops.aten.mul.Tensor, (), (a, a), {}); "
                     "mode.__torch_dispatch__(t.ops.aten.mul.Tensor, (), (a, a), {})\n"
                     "    mode.__torch_dispatch__(t.ops.aten.mul.Tensor, (), (a, a), {})\n",
                     os.path.join(tempfile.gettempdir(), "sites.py"), "exec"), scope)
        for _ in range(2):
            scope["step"]()
        begins = [c for c in lib.calls if c[0] == "begin"]
        self.assertEqual(len(begins), 6)
        named = {c[1]: c for c in lib.calls if c[0] == "frame"}
        lines = [named[b[2][1]][4] for b in begins]
        self.assertEqual(lines, [2, 2, 3] * 2)
        self.assertEqual(len({b[2][1] for b in begins}), 2)

    def test_fresh_outputs_are_named_at_the_end(self):
        t = self.torch
        lib = FakeLib()
        a = t.Tensor(0x1000, (2, 2))
        self.mode(lib).__torch_dispatch__(t.ops.aten.mul.Tensor, (), (a, a), {})
        begin = [c for c in lib.calls if c[0] == "begin"][0]
        self.assertEqual(begin[3], 1)
        self.assertEqual(lib.calls[-1], ("end", [0x9000, 16, 2]))

    def test_like_operators_read_no_data(self):
        t = self.torch
        lib = FakeLib()
        self.mode(lib).__torch_dispatch__(t.ops.aten.zeros_like, (), (t.Tensor(0x1000, (4,)),), {})
        begin = [c for c in lib.calls if c[0] == "begin"][0]
        self.assertEqual(begin[1], [])
        self.assertEqual(lib.calls[-1], ("end", [0x7000, 16, 2]))

    # Note [Strided views are told as runs] (op_hook.cpp; op_hook_test.py
    # checks that the hook and this fallback agree on real tensors).
    def collector(self):
        self.support._torch = self.torch
        return self.support._Collector()

    def test_a_strided_view_is_told_as_its_runs(self):
        t = self.torch
        c = self.collector()
        col = t.Tensor(0x1000, (8, 2), stride=(16, 1))  # two columns of an 8x16 matrix
        c.add(col, 1)
        expected = []
        for row in range(8):
            expected += [0x1000 + 64 * row, 8, 1]
        self.assertEqual(list(c.cuda), expected)

    def test_a_dense_permutation_is_one_span_and_merged_dims_one_run(self):
        t = self.torch
        c = self.collector()
        c.add(t.Tensor(0x1000, (8, 4), stride=(1, 8)), 2)  # the transpose of a 4x8 matrix
        # Rows 1-2 of each 4x8 matrix of a 2x4x8 tensor: one run of 16 each.
        c.add(t.Tensor(0x2000 + 32, (2, 2, 8), stride=(32, 8, 1)), 3)
        self.assertEqual(list(c.cuda), [0x1000, 128, 2, 0x2020, 64, 3, 0x20a0, 64, 3])

    def test_beyond_sixteen_runs_the_hull_is_flagged(self):
        t = self.torch
        c = self.collector()
        c.add(t.Tensor(0x1000, (17, 2), stride=(16, 1)), 3)
        self.assertEqual(list(c.cuda), [0x1000, 4 * (16 * 16 + 2), 3 | 0x100])
        c = self.collector()
        c.add(t.Tensor(0x1000, (16, 2), stride=(16, 1)), 3)
        self.assertEqual(len(c.cuda), 3 * 16)

    def test_views_and_inactive_sessions_cost_nothing(self):
        t = self.torch
        lib = FakeLib()
        self.mode(lib).__torch_dispatch__(t.ops.aten.slice, (), (t.Tensor(0x1000, (4,)),), {})
        self.assertEqual([c for c in lib.calls if c[0] != "frame"], [])
        lib = FakeLib(active=0)
        self.mode(lib).__torch_dispatch__(t.ops.aten.mul.Tensor, (), (t.Tensor(1, (4,)),) * 2, {})
        self.assertEqual(lib.calls, [])

    def test_cpu_operator_is_a_host_access(self):
        t = self.torch
        lib = FakeLib()
        pinned = t.Tensor(0x5000, (16,), device="cpu")
        self.mode(lib).__torch_dispatch__(t.ops.aten.sum, (), (pinned,), {})
        self.assertEqual(lib.calls[-1], ("host", [0x5000, 64, 1], "aten::sum on the CPU"))

    def test_the_users_exception_passes_through_and_the_op_ends(self):
        t = self.torch
        lib = FakeLib()
        with self.assertRaisesRegex(ValueError, "the user's own error"):
            self.mode(lib).__torch_dispatch__(t.ops.aten.boom, (), (t.Tensor(1, (4,)),), {})
        self.assertEqual(lib.calls[-1], ("end", []))
        self.assertFalse(self.support._broken[0])

    def test_lazy_tracking_starts_at_the_first_side_stream(self):
        t = self.torch
        from torch.utils._python_dispatch import TorchDispatchMode
        os.environ["STREAMSAN_TORCH"] = "lazy"
        try:
            before = len(TorchDispatchMode.entered)
            self.support.install(t, FakeLib())
            self.assertEqual(len(TorchDispatchMode.entered), before)
            t.cuda.Stream(stream_id=3, device_index=0, device_type=1)  # current_stream()
            self.assertEqual(len(TorchDispatchMode.entered), before)
            t.cuda.Stream()
            self.assertEqual(len(TorchDispatchMode.entered), before + 1)
            t.cuda.Stream()
            self.assertEqual(len(TorchDispatchMode.entered), before + 1)
        finally:
            del os.environ["STREAMSAN_TORCH"]
            for m in list(TorchDispatchMode.entered):
                m.__exit__()

    def test_tensors_without_storage_are_skipped(self):
        t = self.torch
        lib = FakeLib()
        fake = t.Tensor(None, (4,))  # data_ptr raises (a fake or wrapper tensor)
        real = t.Tensor(0x3000, (4,))
        out = self.mode(lib).__torch_dispatch__(t.ops.aten.add_.Tensor, (), (fake, real), {})
        self.assertIs(out, fake)
        self.assertFalse(self.support._broken[0])
        begin = [c for c in lib.calls if c[0] == "begin"][0]
        self.assertEqual(begin[1], [0x3000, 16, 1])

    def test_our_error_never_reaches_the_program(self):
        t = self.torch
        lib = FakeLib()
        broken = t.Tensor(0x1000, (4,))
        broken.numel = None  # the support's call fails with a TypeError
        out = self.mode(lib).__torch_dispatch__(t.ops.aten.add_.Tensor, (), (broken, broken), {})
        self.assertIs(out, broken)
        self.assertTrue(self.support._broken[0])


# Triton's knobs.HookChain: add() once, called with the launch metadata.
# Compiled as a file of triton's folder beside torch's (folded, as the real
# one is), so that the innermost user frame is the launching line.
_HOOK_CHAIN = """
class HookChain:
    def __init__(self):
        self.calls = []

    def add(self, func):
        if func not in self.calls:
            self.calls.append(func)

    def __call__(self, *args):
        for call in self.calls:
            call(*args)
"""


def _stand_in_triton(with_hooks=True):
    import types
    import torch
    site = os.path.dirname(os.path.dirname(os.path.abspath(torch.__file__)))
    scope = {}
    exec(compile(_HOOK_CHAIN, os.path.join(site, "triton", "knobs.py"), "exec"), scope)
    _HookChain = scope["HookChain"]
    triton = types.ModuleType("triton")
    triton.__version__ = "0.0-standin"
    if with_hooks:
        runtime = types.SimpleNamespace(launch_enter_hook=_HookChain(),
                                        launch_exit_hook=_HookChain())
        triton.knobs = types.SimpleNamespace(runtime=runtime)
    return triton


# Note [Python frames of launches outside operators] (op_hook.cpp): Triton's
# launch hooks hand the user's frames to the library for the launch.
class LaunchFrames(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        Support.setUpClass.__func__(cls)

    def set_frames(self, lib):
        frames = self.support._Frames(self.torch, lib)
        return self.support._python_launch_frames(lib, frames)

    def test_a_launch_has_the_users_frames_until_it_ends(self):
        lib = FakeLib()
        triton = _stand_in_triton()
        self.support._hook_triton(
            triton, self.support._guarded_launch_hooks(self.set_frames(lib)))
        triton.knobs.runtime.launch_enter_hook({"name": "kernel"})  # this line launches
        entered = [c for c in lib.calls if c[0] == "frames"]
        self.assertEqual(len(entered), 1)
        named = {c[1]: c for c in lib.calls if c[0] == "frame"}
        self.assertTrue(entered[0][1], lib.calls)
        innermost = named[entered[0][1][0]]
        self.assertEqual(innermost[2:4], ("LaunchFrames.test_a_launch_has_the_users_frames_until_"
                                          "it_ends", "support_test.py"))
        triton.knobs.runtime.launch_exit_hook({"name": "kernel"})
        self.assertEqual(lib.calls[-1], ("frames", []))

    def test_a_triton_without_launch_hooks_is_said_once_and_runs(self):
        said = []
        original = self.support._say
        self.support._say = said.append
        try:
            self.support._hook_triton(_stand_in_triton(with_hooks=False), (None, None))
        finally:
            self.support._say = original
        self.assertEqual(len(said), 1)
        self.assertIn("no knobs.runtime launch hooks", said[0])

    def test_an_error_of_ours_in_a_launch_hook_never_reaches_the_program(self):
        triton = _stand_in_triton()
        self.support._broken[0] = False
        calls = []

        def broken(enter):
            calls.append(enter)
            raise ValueError("ours")

        self.support._hook_triton(triton, self.support._guarded_launch_hooks(broken))
        triton.knobs.runtime.launch_enter_hook({})  # no exception
        self.assertTrue(self.support._broken[0])
        # From then on the hooks pass through.
        triton.knobs.runtime.launch_exit_hook({})
        triton.knobs.runtime.launch_enter_hook({})
        self.assertEqual(calls, [1])
        self.support._broken[0] = False

    # Note [Triton's hooks are builtins] (op_hook.cpp): the native hook's
    # own functions go into the chains; where it cannot make them, guarded
    # closures around its ctypes entry do, and that is said.
    def test_the_native_hooks_builtins_go_into_the_chains_else_closures(self):
        made = (len, abs)  # any two builtins

        class Native:
            def __init__(self, fail):
                self.fail, self.told = fail, []

            def launch_hooks(self):
                if self.fail:
                    raise ValueError("PyObject is NULL")
                return made

            def launch_frames(self):
                return self.told.append

        self.assertIs(self.support._launch_hooks(Native(False), None, None), made)
        said = []
        original = self.support._say
        self.support._say = said.append
        self.support._broken[0] = False
        try:
            native = Native(True)
            enter, exit_ = self.support._launch_hooks(native, None, None)
        finally:
            self.support._say = original
        self.assertEqual(len(said), 1)
        self.assertIn("go through Python (ValueError: PyObject is NULL)", said[0])
        enter({"name": "kernel"})
        exit_(metadata={"name": "kernel"})
        self.assertEqual(native.told, [1, 0])

    def test_triton_imported_later_is_hooked_once_it_is(self):
        folder = tempfile.mkdtemp()
        with open(os.path.join(folder, "triton.py"), "w") as f:
            f.write("import types\n"
                    "class _Chain:\n"
                    "    def __init__(self): self.calls = []\n"
                    "    def add(self, f): self.calls.append(f)\n"
                    "knobs = types.SimpleNamespace(runtime=types.SimpleNamespace(\n"
                    "    launch_enter_hook=_Chain(), launch_exit_hook=_Chain()))\n")
        sys.path.insert(0, folder)
        sys.modules.pop("triton", None)
        try:
            self.support._install_launch_frames((lambda *_: None, lambda *_: None))
            import triton
            self.assertEqual(len(triton.knobs.runtime.launch_enter_hook.calls), 1)
            self.assertEqual(len(triton.knobs.runtime.launch_exit_hook.calls), 1)
        finally:
            sys.path.remove(folder)
            sys.modules.pop("triton", None)


if __name__ == "__main__":
    unittest.main(verbosity=2)
