#!/usr/bin/env bash
# Everything the injection work needs a GPU for, in one go (the device
# machine is scarce): the verdict of every example under `streamsan run`
# and the overhead table. Expects the layout that stage-carry.sh makes;
# logs go to $OUT (or ./gpu-out).
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/gpu-out}
mkdir -p "$out"
exec > >(tee "$out/gpu-run.log") 2>&1
streamsan=$here/bin/streamsan

echo "== machine"
nvidia-smi -L 2>&1 | head -4
ls /usr/local/cuda/lib64/libcupti.so* /usr/local/cuda/lib64/libnvrtc.so* 2>&1 | head -6
if [[ ! -e /usr/local/cuda/lib64/libcupti.so.13 ]]; then
  echo "using the carried CUPTI"
  export LD_LIBRARY_PATH=$here/cupti${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

echo "== one full text report (cross_stream_raw_racy), records on stderr"
STREAMSAN_DEBUG=2 timeout 120 "$streamsan" run -- "$here/examples/cross_stream_raw_racy" \
  2>"$out/records.jsonl"
echo "exit status $?"
grep -v '^{' "$out/records.jsonl"
echo "records: $(grep -c '^{' "$out/records.jsonl")"
grep '^{' "$out/records.jsonl" | grep -v -e string_define -e stack_define | head -60

echo "== options"
ex=$here/examples
tmp=$(mktemp -d)
timeout 120 "$streamsan" run --halt-on-error -- "$ex/expired_event_racy" >"$tmp/halt.out" 2>&1
echo "halt_on_error: exit $? (program output lines after the report: $(grep -c '^sum' "$tmp/halt.out"))"
timeout 120 "$streamsan" run --record "$tmp/raw.trace" --format sarif --log-path "$tmp/report-%p.sarif" \
  -- "$ex/cross_stream_raw_racy" >/dev/null 2>&1
echo "record + sarif + log_path: exit $?, files: $(ls "$tmp" | tr '\n' ' ')"
timeout 60 "$streamsan" analyze "$tmp/raw.trace" >"$tmp/analyze.out" 2>&1
echo "analyze of the recorded trace: exit $?"; grep -E '^(WARNING|SUMMARY|streamsan: reported)' "$tmp/analyze.out"
echo "race:sum_into" >"$tmp/suppressions.txt"
timeout 120 "$streamsan" run --suppressions "$tmp/suppressions.txt" -- "$ex/cross_stream_raw_racy" 2>&1 | tail -2
echo "suppressed run: exit ${PIPESTATUS[0]}"
STREAMSAN_OPTIONS=print_limit=1:stack_depth=4 timeout 120 "$streamsan" run -- "$ex/api_tour_per_thread" 2>&1 | tail -3
rm -rf "$tmp"

echo "== verdicts"
pass=0 fail=0
for program in "$here"/examples/*_racy "$here"/examples/*_fixed "$here"/examples/api_tour_*; do
  name=$(basename "$program")
  case $name in
    free_async_in_use_racy) expected=free-while-in-use ;;
    graph_missing_edge_racy) expected=graph-node-race ;;
    host_read_in_flight_racy) expected=host-device-race ;;
    *_racy) expected=stream-race ;;
    *) expected=none ;;
  esac
  log=$out/verdicts.log
  echo "-- $name (expect $expected)" >>"$log"
  if STREAMSAN_DEBUG=1 timeout 120 "$here/examples/check_verdict.sh" "$streamsan" \
      "$here/examples/gpu_probe" "$program" "$expected" >>"$log" 2>&1; then
    result=PASS; ((++pass))
  else
    result=FAIL; ((++fail))
  fi
  echo "$result $name: $(grep '^verdict:' "$log" | tail -1)"
done
echo "verdicts: $pass passed, $fail failed"
echo "NVTX and counters of the API tour:"
grep -A1 -e '-- api_tour' "$out/verdicts.log" | grep debug

echo "== stream and thread churn (issue #16): natively, then under streamsan run"
timeout 300 "$ex/stream_churn"; echo "native: exit $?"
STREAMSAN_DEBUG=1 timeout 600 "$streamsan" run -- "$ex/stream_churn"; echo "streamsan run: exit $?"

echo "== overhead"
REPEATS=${REPEATS:-5}
"$here/bench/overhead.sh" "$streamsan" "$here/bench/launch_bound" "$here/bench/pipeline" "$REPEATS" \
  | tee "$out/overhead.md"
echo "== unmodelled / debug counters of the workloads under streamsan"
STREAMSAN_DEBUG=1 "$streamsan" run -- "$here/bench/launch_bound" 20000 2>&1 | tail -5
STREAMSAN_DEBUG=1 "$streamsan" run -- "$here/bench/pipeline" 8 1000 2>&1 | tail -5
