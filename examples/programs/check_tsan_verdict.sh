#!/usr/bin/env bash
# Runs one ThreadSanitizer bridge example (docs/tsan-bridge.md) under
# `streamsan run` and checks the verdict:
#   check_tsan_verdict.sh STREAMSAN PROBE PROGRAM EXPECTED
# EXPECTED is "race" for a racy version: ThreadSanitizer must report a data
# race in which one side is device work (a streamsan stream or host function
# fiber), and the program's TSan exit status (66) must come through; "none"
# for a fixed version: no ThreadSanitizer report, no streamsan report, exit
# status 0. Either way streamsan must say that ThreadSanitizer checked the
# host accesses (the bridge was on). Exits 77 (skipped) without a GPU.
set -u
streamsan=$1 probe=$2 program=$3 expected=$4
"$probe" >/dev/null || exit 77
log=$(mktemp) err=$(mktemp)
trap 'rm -f "$log" "$err"' EXIT
# Every report, whatever TSan already printed for the same stacks.
export TSAN_OPTIONS="${TSAN_OPTIONS:-} halt_on_error=0 exitcode=66"
"$streamsan" run --format json --log-path "$log" -- "$program" 2>"$err"
status=$?
races=$(grep -c '^WARNING: ThreadSanitizer: data race' "$err")
device_side=$(grep -cE "Thread T[0-9]+ 'streamsan (stream#|host function)" "$err")
count=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["diagnostics"]))' "$log" 2>/dev/null || echo "?")
echo "verdict: exit=$status tsan_races=$races device_fibers_named=$device_side streamsan_diagnostics=$count"
fail() { echo "FAIL: $1"; cat "$err"; cat "$log"; exit 1; }
grep -q "ThreadSanitizer checked the program's host accesses" "$err" ||
  fail "the ThreadSanitizer bridge was not on"
if [[ $expected == none ]]; then
  [[ $races -eq 0 ]] || fail "the fixed version must get no ThreadSanitizer report"
  [[ $count == 0 && $status -eq 0 ]] || fail "the fixed version must get no report and exit 0"
else
  [[ $races -ge 1 && $device_side -ge 1 ]] ||
    fail "expected a ThreadSanitizer data race against a streamsan stream or host function"
  [[ $status -eq 66 ]] || fail "expected exit status 66"
fi
echo PASS
