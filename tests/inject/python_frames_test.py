"""Python frames read in place (Note [Python frames read in place] in
inject/stack/python_frames.h), checked against the interpreter's own
traceback:

    python3 python_frames_test.py PROBE_LIBRARY

PROBE_LIBRARY is tests/inject/python_frames_probe.cpp's. Each case calls the
probe from Python code of another shape (nested functions, a generator, a
method, a thread, code from a string, a recursion deeper than the reader
walks) twice: through
ctypes.CDLL, which releases the GIL for the call as CuPy's and cuda-python's
Cython does, and through ctypes.PyDLL, which keeps it as pybind11 does. The
probe's frames must be this file's frames of traceback.extract_stack(), in
the same order, with the same lines and qualified names. Prints one line per
case and exits 1 on any difference; an interpreter whose frames the library
does not read must say so (`not read: Python X.Y ...`), and then exits 0
with EXPECT_NOT_READ=1 set, 1 otherwise.
"""
import ctypes
import gc
import os
import sys
import threading
import traceback

HERE = os.path.abspath(__file__)


def load(path, kind):
    lib = kind(path)
    lib.probe_python_frames.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.probe_python_frames.restype = ctypes.c_int
    return lib


def expected(f):
    """This file's frames from `f` outward, innermost first, as
    file:line:qualname: what the probe must find."""
    out = []
    while f is not None:
        code = f.f_code
        if os.path.abspath(code.co_filename) == HERE:
            name = getattr(code, "co_qualname", code.co_name)
            out.append("%s:%d:%s" % (code.co_filename, f.f_lineno, name))
        f = f.f_back
    return out


def probe(lib):
    """(the probe's frames, the expected ones): both taken on one line."""
    buf = ctypes.create_string_buffer(1 << 16)
    want = expected(sys._getframe()); n = lib.probe_python_frames(buf, len(buf))  # noqa: E702
    if n < 0:
        raise RuntimeError("probe output cut")
    return buf.value.decode("utf-8"), want


class Checker:
    def __init__(self, libs):
        self.libs = libs
        self.failures = 0

    def check(self, case, shown=None):
        """`shown`: how many innermost frames the probe can show (its 64),
        for a stack deeper than that."""
        for kind, lib in self.libs:
            got, want = probe(lib)
            got = got.splitlines()
            if shown is not None:
                want = want[:shown]
            ok = got == want
            self.failures += not ok
            print("%s %s %s" % ("PASS" if ok else "FAIL", case, kind))
            if not ok:
                print("  got:  %s\n  want: %s" % (got, want))


def nested(checker, depth):
    if depth == 0:
        checker.check("nested")
        return
    nested(checker, depth - 1)


class Model:
    def forward(self, checker):
        checker.check("method")

    @staticmethod
    def static(checker):
        checker.check("staticmethod")


def generator(checker):
    checker.check("generator")
    yield 1


def in_thread(checker):
    t = threading.Thread(target=lambda: checker.check("thread"))
    t.start()
    t.join()


def from_string(checker):
    code = compile("def f(c):\n    c.check('string')\nf(checker)\n", "<probe-string>", "exec")
    exec(code, {"checker": checker})


def redefined(checker):
    """A function compiled again and again, each time with its body on another
    line, under this file's name and with the same name objects: a new code
    object often takes a freed one's address, and must not keep its lines."""
    for shift in range(24):
        source = "\n" * (shift % 6) + "def again(c):\n    c.check('redefined')\n"
        scope = {}
        exec(compile(source, HERE, "exec"), scope)
        scope["again"](checker)
        del scope
        gc.collect()  # the function and its globals form a cycle


def deep(checker, depth):
    """Deeper than the reader walks (256 frames): the innermost are shown,
    and the reader goes on reading for the calls after."""
    if depth == 0:
        checker.check("deep", shown=64)
        return
    deep(checker, depth - 1)


def comprehension(checker):
    return [checker.check("comprehension") for _ in range(1)]


def closed_while_walking(libs):
    """Note [No walk once the interpreter finalizes]: the reader closed while
    another thread walks in a loop; close() returns, and no walk after it
    finds frames."""
    lib = libs[0][1]
    lib.probe_python_frames_close.restype = None
    done = threading.Event()

    def walk():
        while not done.is_set():
            probe(lib)

    t = threading.Thread(target=walk)
    t.start()
    lib.probe_python_frames_close()
    done.set()
    t.join()
    got = [probe(l)[0] for _, l in libs]
    ok = got == ["", ""]
    print("%s closed" % ("PASS" if ok else "FAIL"))
    if not ok:
        print("  got: %r" % (got,))
    return 0 if ok else 1


def main():
    path = sys.argv[1]
    libs = [("nogil", load(path, ctypes.CDLL)), ("gil", load(path, ctypes.PyDLL))]
    first = probe(libs[0][1])[0]
    if first.startswith("not read:"):
        print(first.strip())
        return 0 if os.environ.get("EXPECT_NOT_READ") == "1" else 1
    if os.environ.get("EXPECT_NOT_READ") == "1":
        print("FAIL read, expected not read: %s" % first.strip())
        return 1
    checker = Checker(libs)
    checker.check("main")
    nested(checker, 5)
    Model().forward(checker)
    Model.static(checker)
    list(generator(checker))
    in_thread(checker)
    from_string(checker)
    redefined(checker)
    deep(checker, 400)
    comprehension(checker)
    checker.failures += closed_while_walking(libs)
    print("%d failed" % checker.failures)
    return 1 if checker.failures else 0


if __name__ == "__main__":
    sys.exit(main())
