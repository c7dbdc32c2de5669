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


class _AfterExec:
    """Loader wrapper: runs the module's own loader, then `then(module)`."""

    def __init__(self, loader, then):
        self._loader, self._then = loader, then

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._then(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _AfterImport:
    """A meta-path finder that watches for one top-level module and runs
    `then(module)` once it is imported (torch here; triton for _support's
    launch frames). It takes itself off sys.meta_path at that import;
    `then` must not raise."""

    def __init__(self, name, then):
        self._name, self._then = name, then

    def find_spec(self, name, path=None, target=None):
        if name != self._name:
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:  # someone else took us out: still hook this import
            pass
        try:
            spec = importlib.util.find_spec(name)
        except Exception:
            return None
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _AfterExec(spec.loader, self._then)
        return spec

    # Python < 3.4 protocol, never used, keeps linters calm.
    def find_module(self, name, path=None):
        return None


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
    sys.meta_path.insert(0, _AfterImport("torch", activate))


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
