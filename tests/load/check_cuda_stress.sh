#!/usr/bin/env bash
# The GPU load test (issue #12, item 4): runs cuda_stress natively and under
# `streamsan run --record`, and checks that
#   - it ends (no deadlock) within the time limit,
#   - streamsan reports nothing and the exit status is the program's (0),
#   - the trace holds exactly the launches, event records and event waits
#     the program counted (no record lost or duplicated),
#   - streamsan adds at most MAX_EXTRA_MB to the program's peak RSS.
#   check_cuda_stress.sh STREAMSAN PROBE PROGRAM MAX_EXTRA_MB [PROGRAM ARGS...]
# Exits 77 (skipped) without a GPU.
set -u
streamsan=$1 probe=$2 program=$3 max_extra_mb=$4
shift 4
"$probe" >/dev/null || exit 77
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

counts() {  # the program's own line: key=value ...
  grep '^cuda_stress: launches=' "$1" | sed 's/^cuda_stress: //'
}

if ! timeout 1200 "$program" "$@" >"$tmp/native.out" 2>&1; then
  echo "FAIL: the native run failed"; cat "$tmp/native.out"; exit 1
fi
echo "native:    $(counts "$tmp/native.out")"

start=$(date +%s)
timeout 1800 "$streamsan" run --record "$tmp/run.trace" --format json --log-path "$tmp/report.json" \
  -- "$program" "$@" >"$tmp/sanitized.out" 2>"$tmp/sanitized.err"
status=$?
echo "sanitized: $(counts "$tmp/sanitized.out") (exit $status, $(( $(date +%s) - start )) s)"
if [[ $status -eq 124 ]]; then echo "FAIL: no end after 1800 s (deadlock?)"; exit 1; fi
if [[ $status -ne 0 ]]; then
  echo "FAIL: exit status $status, expected 0"; tail -20 "$tmp/sanitized.err"; exit 1
fi

declare -A made
for kv in $(counts "$tmp/sanitized.out"); do made[${kv%%=*}]=${kv#*=}; done
native_rss=$(counts "$tmp/native.out" | sed 's/.*peak_rss_kb=//')

"$streamsan" dump "$tmp/run.trace" | python3 -c '
import sys
counts = {}
for line in sys.stdin:  # millions of lines: find the member, do not parse
    at = line.index("\"kind\":\"") + 8
    kind = line[at:line.index("\"", at)]
    counts[kind] = counts.get(kind, 0) + 1
print(counts.get("kernel_launch", 0), counts.get("event_record", 0), counts.get("event_wait", 0))
' >"$tmp/logged" || { echo "FAIL: streamsan dump could not read the trace"; exit 1; }
read -r logged_launches logged_records logged_waits <"$tmp/logged"
diagnostics=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["diagnostics"]))' \
  "$tmp/report.json")
extra_mb=$(( (made[peak_rss_kb] - native_rss) / 1024 ))
echo "logged:    launches=$logged_launches event_records=$logged_records event_waits=$logged_waits"
echo "reports:   $diagnostics; peak RSS $((native_rss / 1024)) MB native, +$extra_mb MB under streamsan (bound +$max_extra_mb MB)"

fail=0
[[ $logged_launches -eq ${made[launches]} ]] || { echo "FAIL: kernel_launch records differ"; fail=1; }
[[ $logged_records -eq ${made[event_records]} ]] || { echo "FAIL: event_record records differ"; fail=1; }
[[ $logged_waits -eq ${made[event_waits]} ]] || { echo "FAIL: event_wait records differ"; fail=1; }
[[ $diagnostics -eq 0 ]] || { echo "FAIL: false reports"; cat "$tmp/report.json"; fail=1; }
[[ ${made[wrong_values]} -eq 0 ]] || { echo "FAIL: wrong values under streamsan"; fail=1; }
[[ $extra_mb -le $max_extra_mb ]] || { echo "FAIL: memory over the bound"; fail=1; }
[[ $fail -eq 0 ]] && echo PASS
exit $fail
