#!/usr/bin/env bash
# On a GPU: the report of a racy CUDA example under `streamsan run` starts at
# the program's frames (Note [Stacks start at the user]): the launch is
# folded into "launch of KERNEL<<<…>>> from main at FILE.cu:LINE", no stack
# line starts with a CUDA runtime frame, nvcc stub or libc entry frame, the
# SUMMARY names FILE.cu:LINE in main, and a Fix: line follows. Exits 77
# (skipped) without a GPU.
#   gpu_stacks_test.sh STREAMSAN PROBE PROGRAM SOURCE_NAME
set -u
streamsan=$1 probe=$2 program=$3 source=$4
"$probe" >/dev/null || exit 77
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$streamsan" run --format text --log-path "$log" -- "$program" >/dev/null
status=$?
fail() { echo "FAIL: $1"; cat "$log"; exit 1; }
[[ $status -eq 66 ]] || fail "exit status $status, expected 66"
grep -qE "^    #0 launch of [A-Za-z_0-9]+<<<…>>> from main at .*${source}:[0-9]+$" "$log" ||
  fail "no folded launch line from main at ${source}"
if grep -qE "^    #[0-9]+ (cudaLaunchKernel|__device_stub__|cudaError cudaLaunchKernel|__libc_start|_start)" "$log"; then
  fail "a CUDA, stub or libc frame is shown"
fi
grep -qE "^SUMMARY: streamsan: [a-z-]+ \([a-z-]+\) .*${source}:[0-9]+ in main$" "$log" ||
  fail "the SUMMARY does not name ${source}:LINE in main"
grep -q "^  Fix: " "$log" || fail "no Fix: line"
echo PASS
