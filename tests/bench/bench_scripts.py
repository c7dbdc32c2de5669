"""What the tests of bench/'s scripts share: where a script is, running it,
loading it as a module, and reading a row of the Markdown tables they print."""
import importlib.util
import os
import subprocess
import sys

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")


def script(*parts):
    """The path of bench/<parts...>."""
    return os.path.join(BENCH, *parts)


def run(path, *args, stdin=None, cwd=None):
    """Runs the script at `path` with `args` under this Python; never raises
    for its exit status."""
    return subprocess.run([sys.executable, path, *args], input=stdin, cwd=cwd,
                          capture_output=True, text=True, check=False)


def load(path, name):
    """The script at `path` imported as module `name` (its main() not run)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def row(out, name):
    """The table row of `out` whose first cell is `name`."""
    return next(line for line in out.splitlines() if line.startswith("| %s |" % name))
