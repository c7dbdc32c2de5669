#!/usr/bin/env bash
# The Compute Sanitizer API source inside `streamsan run`, on a GPU, in one
# device call: every example's verdict in the default mode and with
# --precise, measured footprints checked through a recorded trace, and the
# debug counters of the two workloads. integration-gpu.sh DIR (logs: $OUT).
# To fit a shorter device call: MODES="precise" (default: both), ONLY=glob
# (the examples whose name matches), EXAMPLES_ONLY=1 (no footprints, no
# workloads).
set -u
dir=$(cd "$1" && pwd)
out=${OUT:-$dir/out}
mkdir -p "$out"
cd "$dir"
exec > >(tee "$out/integration.log") 2>&1
s=$dir/streamsan
# Graph kernel nodes are measured (Note [Graph node measurement is on]):
# the graph examples' --precise verdicts below expect it.
nvidia-smi -L
# real_cublas_two_streams needs cuBLAS and cuRAND: the machine may have them
# only inside a Python package (torch's nvidia/cu13/lib).
if lib=$(python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "lib"))' 2>/dev/null) &&
   [[ -d $lib ]]; then
  export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
for mode in ${MODES:-default precise}; do
  echo "== examples, $mode mode"
  pass=0 fail=0
  for program in examples/*_racy examples/*_fixed examples/api_tour_* examples/real_* examples/module_churn; do
    name=$(basename "$program")
    # shellcheck disable=SC2053
    [[ -n ${ONLY:-} && $name != $ONLY ]] && continue
    case $name in
      # Two devices needed: bench/multigpu/run-gpu.sh runs them.
      peer_copy_*|peer_access_*|device_sync_other_*|mempool_peer_*) continue ;;
      free_async_in_use_racy) expected=free-while-in-use ;;
      # Note [Graph allocations]
      graph_memory_reader_racy) expected=use-before-alloc ;;
      graph_memory_capture_racy) expected=free-while-in-use ;;
      # The instrumented kernel runs longer, so the early cudaFree can unmap
      # memory it still writes: the bug then shows itself (an illegal
      # address) and the lost footprint leaves a possible race.
      free_stream_ordered_racy) expected=free-or-crash ;;
      # Graph kernel nodes are measured with --precise (Note [Which graph
      # nodes are measured]); the default mode measures them only on a
      # launch after a candidate named them, and these launch once.
      graph_missing_edge_racy|graph_capture_fork_racy|graph_disjoint_halves_racy)
        expected=$([[ $mode == precise ]] && echo graph-node-race || echo candidate) ;;
      # Its racing node is the second of its kernel, never measured (Note [A
      # graph node keeps its per-launch data]): a possible race either way.
      graph_repeated_kernel_racy) expected=candidate ;;
      # Measured, the two halves do not overlap: not even a possible race.
      graph_disjoint_halves_fixed) expected=$([[ $mode == precise ]] && echo clean || echo none) ;;
      host_read_in_flight_racy|pageable_upload_sync_racy) expected=host-device-race ;;
      # Note [First launches are measured once work can overlap]: its fill
      # ran before the program had a second stream, unmeasured.
      late_stream_racy) expected=$([[ $mode == precise ]] && echo stream-race || echo candidate) ;;
      static_destructor_racy) expected=stream-race ;;
      event_query_unrecorded_racy|expired_event_racy) expected=any ;;
      *_racy) expected=stream-race ;;
      *) expected=none ;;
    esac
    opts=""; [[ $mode == precise ]] && opts="precise=1"
    log=$out/$mode-$name.log
    if [[ $expected == any ]]; then
      # The default mode measures a kernel's first launch per stream only:
      # a race between later launches may stay a possible race there.
      STREAMSAN_OPTIONS=$opts timeout 120 "$s" run -- "$program" >"$log" 2>&1
      st=$?
      v=$([[ $st -eq 66 || ($mode == default && $st -eq 0) ]] && grep -qE "^WARNING|possible race" "$log" && echo PASS || echo FAIL)
    elif [[ $expected == free-or-crash ]]; then
      STREAMSAN_OPTIONS=$opts timeout 120 "$s" run -- "$program" >"$log" 2>&1
      st=$?
      v=$([[ $st -ne 124 ]] && grep -q "free-while-in-use" "$log" && echo PASS || echo FAIL)
    elif [[ $expected == clean ]]; then
      STREAMSAN_OPTIONS=$opts timeout 120 "$s" run -- "$program" >"$log" 2>&1
      st=$?; v=$([[ $st -eq 0 ]] && ! grep -qE "^WARNING|possible race" "$log" && echo PASS || echo FAIL)
    elif [[ $expected == candidate ]]; then
      STREAMSAN_OPTIONS=$opts timeout 120 "$s" run -- "$program" >"$log" 2>&1
      st=$?; v=$([[ $st -eq 0 ]] && grep -q "possible race" "$log" && echo PASS || echo FAIL)
    else
      STREAMSAN_OPTIONS=$opts timeout 120 examples/check_verdict.sh "$s" examples/gpu_probe "$program" "$expected" >"$log" 2>&1
      v=$([[ $? -eq 0 ]] && echo PASS || echo FAIL)
    fi
    [[ $v == PASS ]] && ((++pass)) || ((++fail))
    echo "$v $name ($expected): $(grep -E '^verdict:' "$log" | tail -1)"
    [[ $v == FAIL ]] && tail -25 "$log" | sed 's/^/    /'
    [[ $v == PASS && $name == *_racy ]] && grep -E "^(WARNING|SUMMARY)|possible race" "$log" | head -2 | sed 's/^/    /'
  done
  echo "$mode: $pass passed, $fail failed"
done
[[ -n ${EXAMPLES_ONLY:-} ]] && exit 0

echo "== footprints through streamsan run --precise --record"
STREAMSAN_DEBUG=1 timeout 120 "$s" run --precise --record "$out/fp.trace" -- bench/footprint_probe >"$out/fp.out" 2>"$out/fp.err"
echo "exit $?"; grep -E "debug|streamsan:" "$out/fp.err" | head -5
"$s" dump "$out/fp.trace" >"$out/fp.jsonl"
python3 check_trace_footprints.py "$out/fp.out" "$out/fp.jsonl"
echo "== the same in the default mode (first launches per stream measured)"
timeout 120 "$s" run --record "$out/fpd.trace" -- bench/footprint_probe >"$out/fpd.out" 2>"$out/fpd.err"
echo "exit $?"; "$s" dump "$out/fpd.trace" >"$out/fpd.jsonl"
python3 check_trace_footprints.py "$out/fpd.out" "$out/fpd.jsonl" | tail -3

echo "== workloads (debug counters)"
for mode in default precise; do
  opts=""; [[ $mode == precise ]] && opts="precise=1"
  for w in "launch_loop 20000" "pipeline 64 250000" "triad 20"; do
    t0=$(date +%s%N)
    r=$(STREAMSAN_OPTIONS=$opts STREAMSAN_DEBUG=1 timeout 200 "$s" run -- bench/$w 2>"$out/w.err")
    echo "$mode $w: exit $? wall_ms=$(( ($(date +%s%N) - t0) / 1000000 )) $(echo "$r" | grep -Eo 'elapsed_ms=[0-9.]+')"
    grep -E "debug|streamsan:" "$out/w.err" | head -3 | cut -c1-400
  done
done
for w in "launch_loop 20000" "pipeline 64 250000" "triad 20"; do echo "native $w: $(bench/$w | grep -Eo 'elapsed_ms=[0-9.]+')"; done
# Note [Waiting for a module's streams to drain]: streams that never go
# idle still get the measured module unpatched after its first launches,
# so only those launches take the launch callbacks (2,000 without it).
echo "== the default mode unpatches a busy program's module early (busy_streams)"
r=$(STREAMSAN_DEBUG=1 timeout 100 "$s" run -- bench/busy_streams 2000 2>"$out/busy.err")
callbacks=$(grep -Eo 'launches=[0-9]+ \(launch calls' "$out/busy.err" | grep -Eo '[0-9]+' | head -1)
if [[ -n $callbacks && $callbacks -lt 100 ]]; then
  echo "busy_streams: passed (launch callbacks for $callbacks of 2000 launches; $(echo "$r" | grep -Eo 'elapsed_ms=[0-9.]+'))"
else
  echo "FAIL busy_streams: launch callbacks for ${callbacks:-?} of 2000 launches"
  tail -5 "$out/busy.err" | cut -c1-400
fi
echo "== done"
