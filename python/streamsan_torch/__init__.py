"""streamsan's PyTorch support.

Loaded into `streamsan run -- python ...` programs by streamsan's
sitecustomize (python/sitecustomize.py). When the program imports torch, it
tells the injection library, through the C ABI of
inject/session/torch_entry.cpp:

- each ATen operator's tensor spans, read or written as the schema says, so
  the kernels the operator launches get exact footprints (Note [Operators
  narrow kernel footprints] in inject/model/cuda_model_ops.cpp);
- the user's Python frames at each operator (torch's and the standard
  library's folded), which reports show instead of C++ frames (Note
  [Interpreter frames] in inject/capture/call_sites.h);
- host accesses of tensors by CPU operators, .numpy() and .tolist(), so a
  host read of a pinned tensor that a non_blocking copy still fills is seen.

The operator hook is native (op_hook.cpp, compiled against the program's
torch at first use by _native_hook.py) where it can be, else a Python
TorchDispatchMode (_support.py). A torch without the hooks used here gets one
line naming what is missing; the generic capture goes on. No exception of
ours reaches the program.
"""
import importlib.util
import os
import sys

__all__ = ["arm", "activate", "status"]

_state = {"armed": False, "active": False, "why": None}


def _say(message):
    try:
        sys.stderr.write("streamsan: " + message + "\n")
    except Exception:
        pass


class _ActivateAfterExec:
    """Loader wrapper: runs torch's own loader, then activate()."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        activate(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _TorchImportHook:
    """A meta-path finder that only watches for the top-level `torch`."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        _disarm()
        try:
            spec = importlib.util.find_spec("torch")
        except Exception:
            return None
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _ActivateAfterExec(spec.loader)
        return spec

    # Python < 3.4 protocol, never used, keeps linters calm.
    def find_module(self, name, path=None):
        return None


_hook = _TorchImportHook()


def _disarm():
    try:
        sys.meta_path.remove(_hook)
    except ValueError:
        pass


def arm():
    """Loads the support when torch is imported (at once if it already is)."""
    if _state["armed"]:
        return
    _state["armed"] = True
    if os.environ.get("STREAMSAN_TORCH", "1") in ("0", "off", "no"):
        return
    if "torch" in sys.modules:
        activate(sys.modules["torch"])
        return
    sys.meta_path.insert(0, _hook)


def activate(torch):
    """Installs the support into an imported torch; never raises."""
    if _state["active"]:
        return
    try:
        from . import _native

        lib, why = _native.load()
        if lib is None:
            if why:
                _say(why)
            return
        from . import _support

        missing = _support.missing_hooks(torch)
        if missing:
            _state["why"] = missing
            _say("PyTorch %s lacks %s: no tensor footprints or Python frames; the generic "
                 "capture continues" % (getattr(torch, "__version__", "?"), missing))
            return
        _support.install(torch, lib)
        _state["active"] = True
    except Exception as e:
        _state["why"] = "%s: %s" % (type(e).__name__, e)
        _say("the PyTorch support failed to start (%s); the generic capture continues"
             % _state["why"])


def status():
    """(active, why not) for tests and curious users."""
    return _state["active"], _state["why"]
