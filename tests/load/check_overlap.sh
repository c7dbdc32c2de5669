#!/usr/bin/env bash
# Issue #12, item 5: streamsan adds no synchronization. Runs overlap (two
# unordered kernels on two streams) natively and under `streamsan run`, and
# fails unless both runs overlap the kernels by at least MIN (0..1) and
# streamsan reports nothing.
#   check_overlap.sh STREAMSAN PROBE OVERLAP_PROGRAM [MIN]
# Exits 77 (skipped) without a GPU.
set -u
streamsan=$1 probe=$2 program=$3 min=${4:-0.8}
"$probe" >/dev/null || exit 77
native=$("$program") || { echo "FAIL: native run"; exit 1; }
sanitized=$("$streamsan" run -- "$program") || { echo "FAIL: under streamsan (exit $?)"; exit 1; }
echo "native:    $native"
echo "sanitized: $sanitized"
ratio() { sed -n 's/.*overlap=\([-0-9.]*\).*/\1/p' <<<"$1"; }
python3 - "$(ratio "$native")" "$(ratio "$sanitized")" "$min" <<'PY' || exit 1
import sys
native, sanitized, least = map(float, sys.argv[1:])
for name, value in (("native", native), ("sanitized", sanitized)):
    if value < least:
        sys.exit(f"FAIL: the {name} run overlapped the kernels by {value:.2f} (< {least})")
print("PASS")
PY
