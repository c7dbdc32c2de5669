#!/usr/bin/env bash
# Runs one PyTorch program under `streamsan run` and checks the verdict:
#   check_torch.sh STREAMSAN PROGRAM.py racy|fixed EXPECTED [LAUNCHER]
# LAUNCHER is how the program is started, as people start it:
#   python (default)  python3 PROGRAM.py [--fixed]
#   torchrun[:N]      torchrun --standalone --nproc-per-node N PROGRAM.py
#                     [--fixed] (N defaults to 1; skipped with fewer GPUs)
#   pytest            python3 -m pytest PROGRAM.py -k racy|fixed
# torchrun and pytest are looked for next to the interpreter, then on PATH;
# without them the test is skipped (77).
# EXPECTED: the diagnostic kinds (comma-separated, any one will do) the racy
# version must be reported with, or "none": no report allowed. A racy
# verdict must also name the program's own Python file in the stack of one
# of its two accesses (the user's frames, issue #9 point 5). Exits 77
# (skipped) without python3 + torch + a GPU, or
# when the program itself exits 77 (custom_kernel.py without nvcc).
# STREAMSAN_TEST_TIMEOUT: seconds the program may run (default 280).
# STREAMSAN_CHECK_FRAMEWORK=NAME: a Python program of another framework
# (tests/frameworks: CuPy, JAX) that exits 77 itself without it: no torch
# is needed. A racy verdict names the program's file all the same: the
# library reads the interpreter's frames at every CUDA call (Note [Python
# frames read in place] in inject/stack/python_frames.h).
set -u
streamsan=$1 program=$2 variant=$3 expected=$4 launcher=${5:-python}
python=${STREAMSAN_PYTHON:-python3}
framework=${STREAMSAN_CHECK_FRAMEWORK:-}
if [[ -z $framework ]]; then
  "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
    >/dev/null 2>&1 || { echo "SKIP: no torch with a GPU"; exit 77; }
fi
fixed_args=()
[[ $variant == fixed ]] && fixed_args=(--fixed)
case $launcher in
  python) command=("$python" "$program" "${fixed_args[@]}") ;;
  torchrun|torchrun:*)
    ranks=${launcher#torchrun}; ranks=${ranks#:}; ranks=${ranks:-1}
    torchrun=$(dirname "$(command -v "$python")")/torchrun
    [[ -x $torchrun ]] || torchrun=$(command -v torchrun) ||
      { echo "SKIP: no torchrun"; exit 77; }
    gpus=$("$python" -c 'import torch; print(torch.cuda.device_count())')
    (( gpus >= ranks )) || { echo "SKIP: $ranks ranks need $ranks GPUs, $gpus found"; exit 77; }
    # The command as people type it: the torchrun script itself, whose
    # name (and shebang) `streamsan run` recognizes as Python.
    command=("$torchrun" --standalone --nproc-per-node "$ranks" "$program" "${fixed_args[@]}") ;;
  pytest)
    "$python" -c 'import pytest' >/dev/null 2>&1 || { echo "SKIP: no pytest"; exit 77; }
    command=("$python" -m pytest -q -p no:cacheprovider "$program" -k "$variant") ;;
  *) echo "check_torch.sh: unknown launcher '$launcher' (python, torchrun[:N], pytest)" >&2; exit 2 ;;
esac
# One JSON report per process that used CUDA (torchrun's ranks each write
# their own), summed.
logs=$(mktemp -d) out=$(mktemp)
trap 'rm -rf "$logs" "$out"' EXIT
# streamsan forwards the timeout's SIGTERM to the program.
timeout "${STREAMSAN_TEST_TIMEOUT:-280}" "$streamsan" run --format json --log-path "$logs/report.%p.json" -- \
  "${command[@]}" >"$out" 2>&1
status=$?
if [[ $status -eq 124 ]]; then echo "FAIL: timed out"; tail -30 "$out"; exit 1; fi
if [[ $status -eq 77 ]]; then cat "$out"; echo "SKIP"; exit 77; fi
summary=$("$python" - "$logs" "$(basename "$program")" <<'PY'
import glob, json, os, sys
paths = sorted(glob.glob(os.path.join(sys.argv[1], "report.*.json")))
if not paths:
    sys.exit("no report file")
diagnostics = [d for p in paths for d in json.load(open(p))["diagnostics"]]
confirmed = [d for d in diagnostics if d.get("certainty", "confirmed") == "confirmed"]
kinds = sorted({d["kind"] for d in confirmed})
# The user's line must be at an access (the current or the previous one),
# not only where the memory was allocated.
python_line = any(sys.argv[2] in json.dumps([d.get("current"), d.get("previous")])
                  for d in confirmed)
print(len(confirmed), ",".join(kinds) or "-", "yes" if python_line else "no")
PY
) || { echo "FAIL: no readable JSON report (exit status $status)"; cat "$out"; exit 1; }
read -r count kinds python_line <<<"$summary"
echo "verdict: $(basename "$program") $variant exit=$status diagnostics=$count kinds=$kinds python_frame=$python_line"
if [[ $expected == none ]]; then
  if [[ $status -ne 0 || $count -ne 0 ]]; then
    echo "FAIL: no report allowed"; cat "$out"; cat "$logs"/*; exit 1
  fi
else
  found=no
  IFS=, read -ra wanted <<<"$expected"
  for k in "${wanted[@]}"; do [[ ",$kinds," == *",$k,"* ]] && found=yes; done
  if [[ $status -ne 66 || $found != yes ]]; then
    echo "FAIL: expected $expected and exit status 66"; cat "$out"; cat "$logs"/*; exit 1
  fi
  if [[ $python_line != yes ]]; then
    echo "FAIL: the report does not name $(basename "$program")"; cat "$logs"/*; exit 1
  fi
fi
echo PASS
