#!/usr/bin/env bash
# On the GPU machine: the parts of a validation that stage-all.sh staged,
# each with a time limit. A device call brings back the last 12,000
# characters of stdout and only a few files, so each part's full output
# goes to a log, a short summary of it is printed when it ends and all the
# summaries again at the end (never cut by a long report before them), and
# every log (the parts' own files under $OUT, the torch results) goes into
# one archive, $OUT/run-all-logs.tar.gz, when $OUT is set.
#
#   bash bench/device/run-all.sh DEST PART...
#
# PART: steps (the operator hook priced step by step inside one process:
# bench/torch/hook-steps.sh, STEPS_PROCESSES x 7 configurations, about 8
# minutes with 3), int (every example in both modes, about 2 minutes), acc (the 42
# cuda-samples cases in both modes, about 3 minutes), extra (the extra
# cuda-samples corpus, bench/precise/extra-samples/extra-samples.tsv, in both
# modes: each case's verdict and its warnings' and possible races' lines; a
# limit of 540 s, so alone in its device call), wide (the wide cuda-samples
# corpus, bench/precise/wide-samples/wide-samples.tsv, the same way: logs
# prefixed wide-, a limit of 540 s, alone in its device call), library (the
# CUDA library samples, bench/precise/library-samples/library-samples.tsv,
# the same way: logs prefixed library-, about 2 minutes), cccl (Thrust's and
# CUB's examples, bench/precise/cccl-samples/cccl-samples.tsv, the same way:
# logs prefixed cccl-), torch (the torch
# suite, CSAN beside it and the MLP overhead, about 5 minutes), probe (the
# launch-bound overhead table of issue #11, about 4 minutes), prof (the MLP
# loop's price list and sample profile, generic capture and operator hook,
# about 2 minutes: bench/torch/profile-mlp.sh), profloop (the launch-bound
# loop's sample profile under streamsan and the bare Sanitizer API
# subscriber, about 1 minute: bench/precise/profile-loop.sh), nodes (whether a graph node
# given null per-launch data stays out of its function's per-function table:
# bench/precise/graph_repeat.cu under the probe, seconds), mlp (the MLP
# loop against its floors: native, the bare Sanitizer API subscriber, the
# generic capture through each source, the generic capture and the default
# each with and without STREAMSAN_RUNTIME_LAUNCH_CALLBACKS=off; MLP_CONFIGS
# picks others, MLP_ROUNDS interleaved rounds, default 5, about 4 minutes),
# pipe (the compute-bound pipeline natively, under the default mode, under
# --precise and under memcheck: #11's compute-bound target and #8's point 6;
# PIPE_ROUNDS interleaved rounds, default 7, about 2 minutes; PROGRAM_ARGS
# gives the pipeline's arguments, e.g. "64 25000" for a tenth of its compute;
# PIPE_PROGRAM=triad runs the memory-bound triad instead), churn (the
# programs that found the module-change hang and crash, examples'
# module_churn in both modes and UnifiedMemoryStreams in the default mode,
# CHURN_RUNS runs each, default 30, about 2 minutes: a run that hangs or
# faults leaves its threads' stacks: bench/precise/churn-gpu.sh), rf
# (cuSolverRf natively, under --precise, under the probe and memcheck, and
# the main thread's wall-clock profile under --precise, about 2 minutes:
# bench/precise/cusolverrf-gpu.sh; needs the wide corpus staged), wall
# (our share of the critical path on the MLP loop and the launch loop,
# every thread sampled on the wall clock: bench/profile/wall-share.sh and
# Note [Critical share] in critical_share.py; ROUNDS rounds, default 2,
# about 3 minutes), alt (the operator hook's price inside one process,
# ALT_PROCESSES processes of ALT_ROUNDS on/off pairs, defaults 3 and 8:
# bench/torch/hook-alternate.sh; then native, the generic capture and the
# default side by side in ALT_MLP_ROUNDS interleaved rounds, default 5, all
# pinned to the CPUs ALT_CPUS, default 2-9, to see whether pinning narrows
# the spread between processes; about 5 minutes), handoff (whether CUPTI,
# subscribed first, can hand the calls over to the Compute Sanitizer API in
# one process: bench/precise/probe_cupti_handoff.cpp; launch_loop under the
# probe with PROBE_HANDOFF, counting and measuring; seconds), inproc (the
# launch loop's price of our launch path inside one process: launch_loop
# with LAUNCH_LOOP_ALTERNATE=INPROC_PAIRS (default 10) under `streamsan run`
# and STREAMSAN_BENCH_PAUSE=1, INPROC_PROCESSES processes (default 5) of
# INPROC_LAUNCHES launches (default 420000): Note [Launches paused for a
# benchmark]; INPROC_WHAT=runtime_callbacks toggles the plain runtime launch
# callbacks instead: Note [Runtime launch callbacks toggled for a
# benchmark]; INPROC_WHAT=launch_callbacks puts modelled launches against
# launches with no callback at all, streamsan's whole price for them: Note
# [Launches unseen for a benchmark]; about 30 seconds), mlppause (the same price on the MLP loop:
# bench/torch/hook-alternate.sh with ALT_WHAT=pause, ALT_PROCESSES processes of
# ALT_ROUNDS pairs, the operator hook on and then the generic capture; about
# 2 minutes).
# The archive is
# unpacked once per machine into /tmp/ss; a newer archive replaces it.
set -u
dest=$(cd "$1" && pwd); shift
root=/tmp/ss
stamp=$(tar -xJOf "$dest/all.tar.xz" ./STAMP 2>/dev/null)
if [[ ! -f $root/STAMP || $(cat "$root/STAMP") != "$stamp" ]]; then
  rm -rf "$root"; mkdir -p "$root"
  tar -C "$root" -xJf "$dest/all.tar.xz"
fi
logs=$(mktemp -d /tmp/run-all.XXXXXX)
# Long lines (3,000-character kernel names) are cut in summaries.
short() { cut -c1-240; }
summarize() {  # summarize PART LOG
  case $1 in
    int) grep -E '^== |^FAIL|passed|failed' "$2" | short ;;
    acc) grep -E '^=====|SUMMARY|possible race|^  [A-Za-z_]+:' "$2" | short ;;
    extra|wide|library|cccl) grep -E '^=====|^WARNING|SUMMARY|possible race|not staged|^  [A-Za-z_0-9]+:|^   - |  (clean|REPORTED|error|skipped)$|^skipped ' "$2" | short ;;
    torch) grep -E '^torch |native operator hook:|caching allocator blocks:' "$2" | short
           echo "streamsan verdicts: $(grep -cE '^PASS ' "$root/torch/results/streamsan.txt" 2>/dev/null) PASS" \
                "of $(wc -l < "$root/torch/results/streamsan.txt" 2>/dev/null)"
           grep -vE '^PASS ' "$root/torch/results/streamsan.txt" 2>/dev/null | short
           sed -n '/^== MLP overhead/,/^== failing logs/p' "$2" | grep -E '^\||CSAN /' ;;
    probe|pipe) grep -E '^\||^== |exit [0-9]|every 1 M|^failures' "$2" | short ;;
    prof) grep -E '^== |sampled|debug: most frequent' "$2" | cut -c1-600 ;;
    profloop) grep -E '^== |sampled|debug: (sanitizer|callbacks)' "$2" | cut -c1-600 ;;
    mlp) grep -E '^\||^round .*(nan|no timing)' "$2" | short ;;
    nodes) grep -E '^half|^values|function data|^  (read|write|atomic) |SetCallbackData|^probe:' "$2" | short ;;
    churn) grep -E 'not clean|\(ms/exit\)|: exit [0-9]|^streamsan: (the fault|  called from)|not staged' "$2" | short ;;
    rf) grep -E 'exit [0-9]+, |^samples:|not staged' "$2" | short ;;
    wall) grep -E '^\||round|missing' "$2" | short ;;
    handoff) grep -E '^== |^probe|elapsed|^exit' "$2" | short ;;
    inproc) grep -E '^alternate|^exit|^median' "$2" | sed 's/ on_ms=.* ratios=/ ratios=/' | short ;;
    steps) grep -E '^\||no ratio' "$2" | short ;;
    alt) grep -E '^\||^process .*(ratio|no ratio)|^round .*(nan|no timing)|^== ' "$2" | short ;;
    mlppause) grep -E '^\||^process .*(ratio|no ratio)|^== ' "$2" | short ;;
  esac
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for part in "$@"; do
  start=$(date +%s)
  log=$logs/$part.log
  case $part in
    int) timeout 400 bash "$root/int/integration-gpu.sh" "$root/int" >"$log" 2>&1 ;;
    acc) if [[ -d $root/acc/samples ]]; then timeout 500 bash "$root/acc/acceptance-gpu.sh" "$root/acc" >"$log" 2>&1
         else echo "acc: not staged (stage-all.sh without SAMPLES_BIN)" >"$log"; fi ;;
    extra|wide|library|cccl) if [[ -d $root/acc/$part ]]; then
             timeout 540 bash "$root/acc/acceptance-gpu.sh" "$root/acc" "default precise" "$part" >"$log" 2>&1
           else echo "$part: not staged (stage-all.sh without ${part^^}_BIN)" >"$log"; fi ;;
    torch) timeout 540 bash "$root/torch/torch-gpu.sh" "${TORCH_ROUNDS:-3}" >"$log" 2>&1 ;;
    probe) ROUNDS=${ROUNDS:-7} timeout 500 bash "$root/probe/launch-overhead-gpu.sh" "$root/probe" >"$log" 2>&1 ;;
    pipe) PROGRAM=${PIPE_PROGRAM:-pipeline} ROUNDS=${PIPE_ROUNDS:-7} CONFIGS=${PIPE_CONFIGS:-"native streamsan streamsan_precise memcheck"} \
            OUT=$logs/pipe timeout 500 bash "$root/probe/launch-overhead-gpu.sh" "$root/probe" >"$log" 2>&1 ;;
    prof) timeout 400 bash "$root/torch/profile-mlp.sh" "$root/probe/libpc_sampler.so" "$logs/prof" >"$log" 2>&1 ;;
    profloop) timeout 300 bash "$root/probe/profile-loop.sh" "$root/probe" "$logs/profloop" >"$log" 2>&1 ;;
    mlp) CONFIGS=${MLP_CONFIGS:-"native bare_sanitizer streamsan_generic_cupti streamsan_generic streamsan_generic_driver_launches streamsan streamsan_driver_launches"} \
           PROBE_DIR=$root/probe timeout 500 bash "$root/torch/bench/overhead.sh" "$root/torch/streamsan" \
           "${MLP_ROUNDS:-5}" >"$log" 2>&1 ;;
    churn) OUT=$logs/churn timeout 560 bash "$root/int/churn-gpu.sh" "$root" "${CHURN_RUNS:-30}" >"$log" 2>&1 ;;
    rf) timeout 500 bash "$root/probe/cusolverrf-gpu.sh" "$root" "$logs/rf" "${RF_ROUNDS:-2}" >"$log" 2>&1 ;;
    wall) ROUNDS=${WALL_ROUNDS:-2} timeout 540 bash "$root/probe/wall-share.sh" "$root" "$logs/wall" >"$log" 2>&1 ;;
    steps) timeout 560 bash "$root/torch/bench/hook-steps.sh" "$root/torch/streamsan" \
             "${STEPS_PROCESSES:-3}" "${STEPS_ROUNDS:-6}" >"$log" 2>&1 ;;
    alt) { echo "== the hook on and off inside each process"
           timeout 300 bash "$root/torch/bench/hook-alternate.sh" "$root/torch/streamsan" \
             "${ALT_PROCESSES:-3}" "${ALT_ROUNDS:-8}"
           echo "== pinned to CPUs ${ALT_CPUS:-2-9}: native, generic, default"
           CONFIGS="native streamsan_generic streamsan" timeout 280 taskset -c "${ALT_CPUS:-2-9}" \
             bash "$root/torch/bench/overhead.sh" "$root/torch/streamsan" "${ALT_MLP_ROUNDS:-5}"
         } >"$log" 2>&1 ;;
    handoff) (cd "$root/probe" && for mode in api lazy; do
                for after in 1000 100000; do
                  echo "== PROBE_MODE=$mode PROBE_HANDOFF=$after, launch_loop 20000"
                  PROBE_HANDOFF=$after PROBE_MODE=$mode CUDA_INJECTION64_PATH=$root/probe/libprobe_inject.so \
                    timeout 60 ./launch_loop 20000
                  echo "exit $?"
                done
              done) >"$log" 2>&1 ;;
    inproc) (cd "$root/probe" && for r in $(seq "${INPROC_PROCESSES:-5}"); do
               STREAMSAN_BENCH_PAUSE=1 LAUNCH_LOOP_ALTERNATE=${INPROC_PAIRS:-10} \
                 LAUNCH_LOOP_ALTERNATE_WHAT=${INPROC_WHAT:-pause} \
                 timeout 120 ./streamsan run -- ./launch_loop "${INPROC_LAUNCHES:-420000}"
               echo "exit $?"
             done
             grep -h '^alternate' "$log" 2>/dev/null | sed 's/.*median_ratio=//' | sort -n |
               awk '{ v[NR] = $1 } END { if (NR) printf "median of the processes'"'"' median ratios: %s (%d processes)\n", v[int((NR + 1) / 2)], NR }'
            ) >"$log" 2>&1 ;;
    mlppause) { echo "== launches modelled and paused, the operator hook on"
                ALT_WHAT=pause timeout 250 bash "$root/torch/bench/hook-alternate.sh" \
                  "$root/torch/streamsan" "${ALT_PROCESSES:-3}" "${ALT_ROUNDS:-8}"
                echo "== launches modelled and paused, the generic capture"
                ALT_WHAT=pause STREAMSAN_TORCH=0 timeout 250 bash "$root/torch/bench/hook-alternate.sh" \
                  "$root/torch/streamsan" "${ALT_PROCESSES:-3}" "${ALT_ROUNDS:-8}"
              } >"$log" 2>&1 ;;
    nodes) (cd "$root/probe" && CUDA_INJECTION64_PATH=$root/probe/libprobe_inject.so PROBE_MODE=graphs \
              PROBE_PRINT=1 PROBE_GRAPH_FUNCDATA=1 timeout 60 ./graph_repeat) >"$log" 2>&1 ;;
    *) echo "run-all.sh: unknown part '$part' (int, acc, extra, wide, library, cccl, torch, probe, pipe, prof, profloop, nodes, mlp, churn, rf, wall, alt, handoff, inproc, mlppause)"; exit 2 ;;
  esac
  echo "exit $? after $(( $(date +%s) - start )) s" >>"$log"
  { echo "################ $part: $(tail -1 "$log")"; summarize "$part" "$log"; } >"$logs/$part.summary"
  cat "$logs/$part.summary"
done
echo
echo "################ summaries"
for part in "$@"; do [[ -f $logs/$part.summary ]] && cat "$logs/$part.summary"; done
if [[ -n ${OUT:-} ]]; then
  [[ -d $root/torch/results ]] && cp -r "$root/torch/results" "$logs/torch-results"
  mkdir -p "$logs/out"
  find "$OUT" -mindepth 1 -maxdepth 1 -exec mv {} "$logs/out/" \;
  tar -C "$logs" -czf "$OUT/run-all-logs.tar.gz" .
  echo "logs: \$OUT/run-all-logs.tar.gz ($(du -h "$OUT/run-all-logs.tar.gz" | cut -f1))"
fi
