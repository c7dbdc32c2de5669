#!/usr/bin/env bash
# The launch-bound overhead of the capture-overhead issue (#11) on a GPU, in
# one device call: bench/precise/launch_loop natively, under a bare CUPTI
# subscriber (the floor), under `streamsan run` in its configurations, and
# under compute-sanitizer memcheck, the configurations taking turns for
# ROUNDS rounds; then the resident memory of the sanitized process after
# 1 M and 10 M launches. Expects the files stage-probe.sh copies into DIR.
#
#   launch-overhead-gpu.sh DIR        (logs and raw outputs: $OUT or DIR/out)
#
# Environment: ROUNDS (7), LAUNCHES (100000 a run), CONFIGS (the labels
# below, space-separated; default all), RSS_LAUNCHES (10000000; 0 skips the
# memory runs), RSS_NATIVE (1: the native process's memory too), PROGRAM
# (launch_loop; `pipeline` is the compute-bound pipeline of issue #11 and
# #8's point 6, whose arguments PROGRAM_ARGS gives: "64 250000" by default;
# `triad` the memory-bound triad, 20 launches by default; `busy_streams`
# bandwidth-bound kernels on two streams that never go idle, 2,000
# launches by default; the memory runs are the launch loop's only).
#
# Configurations:
#   native            the program alone
#   bare_cupti        libbare_cupti.so: runtime + driver callbacks, counted
#   bare_launch       the same, only the launch callbacks (runtime and driver)
#   bare_driver_launch  the same, only the driver's cuLaunchKernel
#   probe_patch_null  libprobe_inject.so PROBE_MODE=patch-null: every module
#                     patched with streamsan's device functions, launches
#                     given no table (what the patched calls cost by
#                     themselves)
#   probe_track       PROBE_MODE=track: every launch measured by the launch
#                     tracker alone, without the model (what --precise's
#                     measuring costs)
#   probe_track_return  probe_track, its patched function returning at once
#                     (what measuring costs besides recording the accesses)
#   probe_track_grouping  probe_track, its patched function forming the
#                     warp's groups and recording nothing
#   probe_track_lookup  probe_track_grouping, and a coalesced group's slot
#                     found (pages inserted), no bit set
#   probe_track_words   probe_track_lookup, and the span's bitmap words set,
#                     the page's summary left alone
#   probe_track_bucket  probe_track_grouping, and one load of the key of
#                     the page's first slot (no insertion)
#   probe_track_per_lane  probe_track, every lane recording its own access
#                     (no warp aggregation)
#   (PROBE_INITIAL_SLOTS=N in the environment sizes a kernel's first table
#   for the probe configurations: the triad wants 131072)
#   bare_sanitizer    libprobe_inject.so PROBE_MODE=api: a Compute Sanitizer
#                     API subscriber to the runtime + driver domains, counting
#                     (the floor of the default capture source)
#   bare_sanitizer_kept  PROBE_MODE=api-launch: only the driver callbacks
#                     streamsan keeps in the loop's steady state (launches,
#                     event record, stream wait), counting
#   sanitizer_released  bare_sanitizer_kept, unsubscribed after PROBE_RELEASE
#                     (2000) launches
#   sanitizer_to_cupti  the same, then CUPTI subscribed to those calls
#   streamsan         streamsan run (default capture, engine on its thread)
#   streamsan_cupti   streamsan run --capture cupti
#   streamsan_inline  STREAMSAN_ENGINE_THREAD=0 streamsan run (engine inline)
#   streamsan_drain   STREAMSAN_UNPATCH_WAIT_MS=50 streamsan run (Note
#                     [Waiting for a module's streams to drain]; 20 ms by
#                     default)
#   streamsan_nodrain STREAMSAN_UNPATCH_WAIT_MS=0 streamsan run (no wait)
#   streamsan_waitN   STREAMSAN_UNPATCH_WAIT_MS=N streamsan run (N ms)
#   streamsan_driver_launches  STREAMSAN_RUNTIME_LAUNCH_CALLBACKS=off (the default since 2026-11-30)
#   streamsan_runtime_launches STREAMSAN_RUNTIME_LAUNCH_CALLBACKS=on
#                     streamsan run (Note [Runtime launch callbacks on
#                     request]: no runtime callback for <<<>>>)
#   streamsan_base    DIR/base/streamsan run: another build (with its own
#                     libstreamsan_inject.so beside it), to compare two builds
#                     in the same interleaved rounds
#   streamsan_precise streamsan run --precise (exact footprints, every
#                     launch instrumented: #8's point 6 puts it against memcheck)
#   streamsan_precise_base  DIR/base/streamsan run --precise (BASE of
#                     stage-probe.sh)
#   memcheck          compute-sanitizer --tool memcheck
#
# Prints, per configuration, the median of the loop's own timing
# (elapsed_ms) with its spread (min-max), the ratio of medians to native
# and to bare_cupti, and every sample in run order.
set -u
dir=$(cd "$1" && pwd)
out=${OUT:-$dir/out}
mkdir -p "$out"
rm -f "$out/counters.txt" "$out/failures.log"
cd "$dir"
exec > >(tee "$out/launch-overhead.log") 2>&1
if [[ ! -e /usr/local/cuda/lib64/libcupti.so.13 ]]; then export LD_LIBRARY_PATH=$dir/cupti; fi
rounds=${ROUNDS:-7}
launches=${LAUNCHES:-100000}
configs=${CONFIGS:-"native bare_cupti bare_sanitizer streamsan streamsan_driver_launches streamsan_cupti memcheck"}
rss_launches=${RSS_LAUNCHES:-10000000}
program=${PROGRAM:-launch_loop}
case $program in
  launch_loop) program_args=${PROGRAM_ARGS:-$launches} ;;
  pipeline) program_args=${PROGRAM_ARGS:-"64 250000"}; rss_launches=0 ;;
  triad) program_args=${PROGRAM_ARGS:-20}; rss_launches=0 ;;
  busy_streams) program_args=${PROGRAM_ARGS:-2000}; rss_launches=0 ;;
  *) echo "launch-overhead-gpu.sh: unknown PROGRAM '$program' (launch_loop, pipeline, triad, busy_streams)" >&2; exit 2 ;;
esac
cs=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}

echo "== machine"
nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm --format=csv,noheader
nproc; uptime

# The command line of a configuration, as words.
command_of() {
  case $1 in
    native) echo "./$program" ;;
    bare_cupti) echo "env CUDA_INJECTION64_PATH=$dir/libbare_cupti.so ./$program" ;;
    bare_launch) echo "env BARE_CUPTI_ONLY=launch CUDA_INJECTION64_PATH=$dir/libbare_cupti.so ./$program" ;;
    bare_driver_launch) echo "env BARE_CUPTI_ONLY=driver_launch CUDA_INJECTION64_PATH=$dir/libbare_cupti.so ./$program" ;;
    bare_sanitizer) echo "env PROBE_MODE=api CUDA_INJECTION64_PATH=$dir/libprobe_inject.so ./$program" ;;
    sanitizer_released) echo "env PROBE_MODE=api-launch PROBE_RELEASE=${PROBE_RELEASE:-2000} CUDA_INJECTION64_PATH=$dir/libprobe_inject.so ./$program" ;;
    sanitizer_to_cupti) echo "env PROBE_MODE=api-launch PROBE_RELEASE=${PROBE_RELEASE:-2000} PROBE_RELEASE_TO=cupti CUDA_INJECTION64_PATH=$dir/libprobe_inject.so ./$program" ;;
    bare_sanitizer_kept) echo "env PROBE_MODE=api-launch CUDA_INJECTION64_PATH=$dir/libprobe_inject.so ./$program" ;;
    probe_patch_null) echo "env PROBE_MODE=patch-null CUDA_INJECTION64_PATH=$dir/libprobe_inject.so ./$program" ;;
    probe_track) echo "env PROBE_MODE=track CUDA_INJECTION64_PATH=$dir/libprobe_inject.so ./$program" ;;
    probe_track_return | probe_track_grouping | probe_track_lookup | probe_track_words | probe_track_bucket | probe_track_per_lane)
      echo "env PROBE_MODE=track PROBE_ACCESS_FN=streamsan_global_access_${1#probe_track_} CUDA_INJECTION64_PATH=$dir/libprobe_inject.so ./$program" ;;
    streamsan) echo "./streamsan run -- ./$program" ;;
    streamsan_base) echo "$dir/base/streamsan run -- ./$program" ;;
    streamsan_cupti) echo "./streamsan run --capture cupti -- ./$program" ;;
    streamsan_inline) echo "env STREAMSAN_ENGINE_THREAD=0 ./streamsan run -- ./$program" ;;
    streamsan_drain) echo "env STREAMSAN_UNPATCH_WAIT_MS=50 ./streamsan run -- ./$program" ;;
    streamsan_nodrain) echo "env STREAMSAN_UNPATCH_WAIT_MS=0 ./streamsan run -- ./$program" ;;
    streamsan_wait[0-9]*) echo "env STREAMSAN_UNPATCH_WAIT_MS=${1#streamsan_wait} ./streamsan run -- ./$program" ;;
    streamsan_driver_launches)
      echo "env STREAMSAN_RUNTIME_LAUNCH_CALLBACKS=off ./streamsan run -- ./$program" ;;
    streamsan_runtime_launches)
      echo "env STREAMSAN_RUNTIME_LAUNCH_CALLBACKS=on ./streamsan run -- ./$program" ;;
    streamsan_precise) echo "./streamsan run --precise -- ./$program" ;;
    streamsan_precise_base) echo "$dir/base/streamsan run --precise -- ./$program" ;;
    memcheck) echo "$cs --tool memcheck ./$program" ;;
    *) echo "unknown configuration $1" >&2; return 1 ;;
  esac
}

# One run: prints elapsed_ms, or "fail" (the exit status and the tail of the
# run's output go to $out/failures.log).
run_once() {
  local label=$1 log=$out/run.log cmd
  cmd=$(command_of "$label") || { echo fail; return; }
  timeout 600 $cmd $program_args >"$log" 2>&1
  local status=$? ms
  ms=$(grep -Eo 'elapsed_ms=[0-9.]+' "$log" | head -1 | cut -d= -f2)
  if [[ $status -ne 0 || -z $ms ]]; then
    { echo "-- $label: exit $status"; tail -5 "$log"; } >>"$out/failures.log"
    echo fail
    return
  fi
  # Note [The program thread's own counts] (bench_cuda.h): launch_loop's
  # per-launch counts of its thread, one line a run.
  local counts
  counts=$(grep -Eo 'thread_(instructions|cycles)_per_launch=[0-9.]+|thread_counters=.*' "$log" | tr '\n' ' ')
  [[ -n $counts ]] && echo "$label $counts" >>"$out/counters.txt"
  echo "$ms"
}

declare -A samples
for ((round = 1; round <= rounds; ++round)); do
  for label in $configs; do
    samples[$label]+="$(run_once "$label") "
  done
  echo "round $round done"
done

# median min max of the numbers on stdin ("fail" when any run failed).
stats() {
  tr ' ' '\n' | grep -v '^$' | sort -g | awk '
    /fail/ { failed = 1 }
    { a[NR] = $1 }
    END {
      if (failed || NR == 0) { print "fail fail fail"; exit }
      m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
      print m, a[1], a[NR]
    }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b ~ /^[0-9.]+$/) printf "%.3f", b / a; else print "-" }'; }

echo
echo "== $program $program_args, $rounds interleaved rounds (elapsed_ms of its timed region)"
read -r native_median _ _ <<<"$(stats <<<"${samples[native]:-}")"
read -r bare_median _ _ <<<"$(stats <<<"${samples[bare_cupti]:-}")"
echo "| configuration | median ms | min-max ms | x native | x bare CUPTI | us/launch |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for label in $configs; do
  read -r median low high <<<"$(stats <<<"${samples[$label]}")"
  per=$(awk -v m="$median" -v n="$launches" -v p="$program" 'BEGIN { if (p == "launch_loop" && m ~ /^[0-9.]+$/) printf "%.3f", m * 1000 / n; else print "-" }')
  echo "| $label | $median | $low-$high | $(ratio "${native_median:-0}" "$median") | $(ratio "${bare_median:-0}" "$median") | $per |"
done
echo
echo "samples (ms, in run order):"
for label in $configs; do echo "  $label: ${samples[$label]}"; done
# Note [Intervals, not only medians] in ratio_ci.py.
if [[ -f $dir/ratio_ci.py && " $configs " == *" native "* ]] && command -v python3 >/dev/null; then
  echo
  echo "== ratios of medians with 95% bootstrap intervals"
  reference=; [[ " $configs " == *" bare_sanitizer "* ]] && reference=bare_sanitizer
  for label in $configs; do echo "$label ${samples[$label]}"; done | python3 "$dir/ratio_ci.py" native $reference
fi
[[ -s $out/failures.log ]] && { echo "failures:"; cat "$out/failures.log"; }

if [[ -s $out/counters.txt ]]; then
  echo
  echo "== the program thread's user-mode counts per launch (Note [The program thread's own counts]): median (min-max)"
  echo "| configuration | runs | instructions | cycles |"
  echo "| --- | ---: | ---: | ---: |"
  # The runs' values of counter $2 for configuration $1, one a line.
  counts_of() { grep "^$1 " "$out/counters.txt" | grep -Eo "$2=[0-9.]+" | cut -d= -f2; }
  # "median (min-max)" of counter $2 for $1, by stats() above; "-" if none.
  summary_of() {
    local values median low high
    values=$(counts_of "$1" "$2")
    [[ -n $values ]] || { echo "-"; return; }
    read -r median low high <<<"$(stats <<<"$values")"
    echo "$median ($low-$high)"
  }
  for label in $configs; do
    grep -q "^$label " "$out/counters.txt" || continue
    why=$(grep "^$label " "$out/counters.txt" | grep -Eo 'thread_counters=.*' | head -1)
    echo "| $label | $(counts_of "$label" thread_instructions_per_launch | wc -l) |" \
      "$(summary_of "$label" thread_instructions_per_launch) |" \
      "$(summary_of "$label" thread_cycles_per_launch) |${why:+ $why}"
  done
fi

if [[ $rss_launches -gt 0 ]]; then
  echo
  echo "== resident memory after 1 M and 10 M launches (LAUNCH_LOOP_RSS_EVERY=1000000, $rss_launches launches)"
  rss_run() {  # rss_run LABEL COMMAND...
    local label=$1; shift
    local t0=$(date +%s)
    LAUNCH_LOOP_RSS_EVERY=1000000 timeout 900 "$@" "$rss_launches" >"$out/rss-$label.log" 2>&1
    local status=$?
    echo "$label: exit $status, $(( $(date +%s) - t0 )) s"
    grep -E '^rss launches=(1000000|10000000) ' "$out/rss-$label.log" | sed 's/^/  /'
    grep -E '^rss ' "$out/rss-$label.log" | awk '{ split($3, r, "="); printf "%s%s", (NR > 1 ? " " : "  every 1 M (KiB): "), r[2] } END { print "" }'
  }
  rss_run streamsan env STREAMSAN_DEBUG=1 ./streamsan run -- ./launch_loop
  grep -E 'debug: (engine thread|sanitizer)' "$out/rss-streamsan.log" | sed 's/^/  /'
  [[ ${RSS_NATIVE:-1} == 1 ]] && rss_run native ./launch_loop
fi
echo "== done"
