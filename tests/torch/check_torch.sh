#!/usr/bin/env bash
# Runs one PyTorch program under `streamsan run` and checks the verdict:
#   check_torch.sh STREAMSAN PROGRAM.py racy|fixed EXPECTED
# EXPECTED: the diagnostic kinds (comma-separated, any one will do) the racy
# version must be reported with, or "none": no report allowed. A racy
# verdict must also name the program's own Python file (the user's frames,
# issue #9 point 5). Exits 77 (skipped) without python3 + torch + a GPU, or
# when the program itself exits 77 (custom_kernel.py without nvcc).
# STREAMSAN_TEST_TIMEOUT: seconds the program may run (default 280).
set -u
streamsan=$1 program=$2 variant=$3 expected=$4
python=${STREAMSAN_PYTHON:-python3}
"$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
  >/dev/null 2>&1 || { echo "SKIP: no torch with a GPU"; exit 77; }
log=$(mktemp) out=$(mktemp)
trap 'rm -f "$log" "$out"' EXIT
args=()
[[ $variant == fixed ]] && args=(--fixed)
# streamsan forwards the timeout's SIGTERM to the program.
timeout "${STREAMSAN_TEST_TIMEOUT:-280}" "$streamsan" run --format json --log-path "$log" -- \
  "$python" "$program" "${args[@]}" >"$out" 2>&1
status=$?
if [[ $status -eq 124 ]]; then echo "FAIL: timed out"; tail -30 "$out"; exit 1; fi
if [[ $status -eq 77 ]]; then cat "$out"; echo "SKIP"; exit 77; fi
summary=$("$python" - "$log" "$(basename "$program")" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
confirmed = [d for d in report["diagnostics"] if d.get("certainty", "confirmed") == "confirmed"]
kinds = sorted({d["kind"] for d in confirmed})
python_line = any(sys.argv[2] in json.dumps(d) for d in confirmed)
print(len(confirmed), ",".join(kinds) or "-", "yes" if python_line else "no")
PY
) || { echo "FAIL: no readable JSON report (exit status $status)"; cat "$out"; exit 1; }
read -r count kinds python_line <<<"$summary"
echo "verdict: $(basename "$program") $variant exit=$status diagnostics=$count kinds=$kinds python_frame=$python_line"
if [[ $expected == none ]]; then
  if [[ $status -ne 0 || $count -ne 0 ]]; then
    echo "FAIL: no report allowed"; cat "$out"; cat "$log"; exit 1
  fi
else
  found=no
  IFS=, read -ra wanted <<<"$expected"
  for k in "${wanted[@]}"; do [[ ",$kinds," == *",$k,"* ]] && found=yes; done
  if [[ $status -ne 66 || $found != yes ]]; then
    echo "FAIL: expected $expected and exit status 66"; cat "$out"; cat "$log"; exit 1
  fi
  if [[ $python_line != yes ]]; then
    echo "FAIL: the report does not name $(basename "$program")"; cat "$log"; exit 1
  fi
fi
echo PASS
