#!/usr/bin/env bash
# Issue #12, item 3: the program dies after a race; the report is still
# written, and the exit status is the program's death (128 + signal), not
# streamsan's "reports found" (66).
#   check_crash_safety.sh STREAMSAN PROBE CRASH_AFTER_RACE
# Exits 77 (skipped) without a GPU.
set -u
streamsan=$1 probe=$2 program=$3
"$probe" >/dev/null || exit 77
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for case in "segfault 139" "abort 134" "throw 134" "exit 66"; do
  read -r how expected <<<"$case"
  "$streamsan" run --format json --log-path "$tmp/report.json" --record "$tmp/run.trace" \
    -- "$program" "$how" >"$tmp/out" 2>"$tmp/err"
  status=$?
  races=$(python3 -c 'import json,sys; print(sum(d["kind"] == "stream-race" for d in json.load(open(sys.argv[1]))["diagnostics"]))' "$tmp/report.json" 2>/dev/null || echo none)
  "$streamsan" analyze "$tmp/run.trace" >/dev/null 2>&1
  analyzed=$?
  echo "$how: exit $status (expected $expected), stream races in the report: $races, analyze of the trace: exit $analyzed"
  [[ $status -eq $expected && $races == 1 && $analyzed -eq 66 ]] || { fail=1; tail -5 "$tmp/err"; }
done
[[ $fail -eq 0 ]] && echo PASS
exit $fail
