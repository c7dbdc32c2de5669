"""streamsan's sitecustomize: put first on PYTHONPATH by `streamsan run` for
Python programs (Note [Python programs load the PyTorch support] in
cli/run_command.cpp).

It runs the sitecustomize it shadows (the user's or the distribution's) as if
this one were not there, then arms the hook that loads streamsan's PyTorch
support when the program imports torch. Nothing here may disturb the
program: any failure of ours is one line on stderr.
"""
import os
import sys


def _run_shadowed_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    ours = sys.modules.pop("sitecustomize", None)
    saved = list(sys.path)
    try:
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
        try:
            import importlib

            importlib.import_module("sitecustomize")
        except ImportError as e:
            if e.name != "sitecustomize":
                raise
    except Exception as e:  # what site.py does for a broken sitecustomize
        print("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n%s: %s"
              % (type(e).__name__, e), file=sys.stderr)
    finally:
        sys.path[:] = saved
        if "sitecustomize" not in sys.modules and ours is not None:
            sys.modules["sitecustomize"] = ours


_run_shadowed_sitecustomize()


def _tell_streamsan_we_exit():
    """Note [No walk once the interpreter finalizes] (inject/stack/
    python_frames.cpp): atexit callbacks run before the interpreter frees
    its threads' states, so the injection library stops reading them here.
    Only a library the driver already loaded is told (RTLD_NOLOAD: a
    program that never used CUDA loads nothing now)."""
    try:
        import ctypes

        path = os.environ.get("CUDA_INJECTION64_PATH")
        if not path:
            return
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)
        exiting = getattr(lib, "streamsan_inject_python_exiting", None)
        if exiting is not None:
            exiting.restype = None
            exiting.argtypes = []
            exiting()
    except Exception:  # not loaded (OSError), or an older library: nothing to tell
        pass


try:
    import atexit

    atexit.register(_tell_streamsan_we_exit)
except Exception:
    pass

try:
    import streamsan_torch

    streamsan_torch.arm()
except Exception as e:  # never the program's problem
    print("streamsan: the PyTorch support could not be armed (%s: %s); generic capture "
          "continues" % (type(e).__name__, e), file=sys.stderr)
