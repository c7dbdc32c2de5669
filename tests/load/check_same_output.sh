#!/usr/bin/env bash
# Issue #12, item 5: a program prints the same under `streamsan run` as
# natively. Runs each PROGRAM both ways and compares standard output (the
# report goes to a file, so stderr is the program's alone and compared too).
#   check_same_output.sh STREAMSAN PROBE PROGRAM...
# Exits 77 (skipped) without a GPU.
set -u
streamsan=$1 probe=$2
shift 2
"$probe" >/dev/null || exit 77
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for program in "$@"; do
  name=$(basename "$program")
  "$program" >"$tmp/native.out" 2>"$tmp/native.err"
  native_status=$?
  "$streamsan" run --error-exitcode 0 --log-path "$tmp/report.txt" -- "$program" \
    >"$tmp/sanitized.out" 2>"$tmp/sanitized.err"
  status=$?
  if [[ $status -ne $native_status ]]; then
    echo "FAIL: $name: exit $status under streamsan, $native_status natively"; fail=1
  elif ! cmp -s "$tmp/native.out" "$tmp/sanitized.out"; then
    echo "FAIL: $name: standard output differs"; diff "$tmp/native.out" "$tmp/sanitized.out" | head
    fail=1
  elif ! cmp -s "$tmp/native.err" "$tmp/sanitized.err"; then
    echo "FAIL: $name: standard error differs"; diff "$tmp/native.err" "$tmp/sanitized.err" | head
    fail=1
  else
    echo "same: $name ($(wc -l <"$tmp/native.out") lines)"
  fi
done
[[ $fail -eq 0 ]] && echo PASS
exit $fail
