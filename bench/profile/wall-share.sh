#!/usr/bin/env bash
# On the GPU machine, in the folder stage-all.sh unpacked (/tmp/ss): our
# share of the critical path (bench/profile/critical_share.py, Note
# [Critical share]) on the MLP loop (native, the bare Compute Sanitizer API
# subscriber, the generic capture, the operator hook) and on the launch
# loop (native, the bare Sanitizer API and CUPTI subscribers, streamsan run
# through each source: LOOP_CONFIGS picks among native bare bare_cupti
# streamsan streamsan_cupti, default all), every thread sampled on
# the wall clock (pc_sampler.cpp, PCSAMPLE_CLOCK=wall-all), ROUNDS rounds
# (default 2), one process per configuration and round (WALL_MLP=0: the
# launch loop only), then with streamsan among LOOP_CONFIGS one unsampled
# run of the loop with STREAMSAN_DEBUG=1 for its counters
# (loop-streamsan-debug.log):
#   wall-share.sh ROOT OUT
# OUT gets a folder per run (its pcs files and log), the dynamic symbol
# tables of torch's and libc's libraries (symbols/, for --symbols) and the
# table. Where the build is, the steps of a call come from the same build's
# library:
#   critical_share.py OUT/*-[0-9]* --symbols OUT/symbols --library BUILD/inject/libstreamsan_inject.so
# About 3 minutes for 2 rounds. Sampling every thread each PCSAMPLE_US
# (default 1000) slows the runs; the shares are what it is for.
set -u
loop_configs=${LOOP_CONFIGS:-native bare bare_cupti streamsan streamsan_cupti}
for c in $loop_configs; do  # before any run, not when its turn comes
  case $c in
    native|bare|bare_cupti|streamsan|streamsan_cupti) ;;
    *) echo "wall-share.sh: unknown LOOP_CONFIGS entry '$c' (native bare bare_cupti streamsan streamsan_cupti)"
       exit 2 ;;
  esac
done
root=$(cd "$1" && pwd) out=$2
mkdir -p "$out/symbols"
sampler=$root/probe/libpc_sampler.so
[[ -f $sampler ]] || { echo "wall-share.sh: $sampler is missing (stage-all.sh stages it)"; exit 2; }
python=${STREAMSAN_PYTHON:-python3}
iterations=${ITERATIONS:-2000} launches=${LAUNCHES:-500000}
torch_lib=$("$python" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)
for lib in "$torch_lib"/libtorch_cpu.so "$torch_lib"/libtorch_cuda.so "$torch_lib"/libc10.so \
           "$torch_lib"/libtorch_python.so /lib/x86_64-linux-gnu/libc.so.6; do
  [[ -f $lib ]] && nm -D --defined-only "$lib" 2>/dev/null | gzip >"$out/symbols/$(basename "$lib").nm.gz"
done
run() {  # run LABEL DIR ENV... -- COMMAND...
  local label=$1 dir=$2; shift 2
  local env=()
  while [[ $1 != -- ]]; do env+=("$1"); shift; done
  shift
  local d=$out/$label-$round
  mkdir -p "$d"
  (cd "$dir" && env "${env[@]}" LD_PRELOAD=$sampler PCSAMPLE_DIR=$d PCSAMPLE_DEPTH=16 \
     PCSAMPLE_CLOCK=wall-all PCSAMPLE_US=${PCSAMPLE_US:-1000} timeout 200 "$@" >"$d/log" 2>&1)
  echo "$label round $round: exit $?, $(grep -m1 -Eo '^mlp_ms [0-9.]+|elapsed_ms=[0-9.]+' "$d/log")"
  runs+=("$d")
}
runs=()
probe=$root/probe torch=$root/torch
for round in $(seq 1 "${ROUNDS:-2}"); do
  if [[ -n $torch_lib && ${WALL_MLP:-1} != 0 ]]; then
    run mlp-native "$torch" PCSAMPLE_ON_SIGNAL=1 -- "$python" bench/mlp_bench.py "$iterations"
    run mlp-bare "$torch" PCSAMPLE_ON_SIGNAL=1 PROBE_MODE=api CUDA_INJECTION64_PATH=$probe/libprobe_inject.so \
      -- "$python" bench/mlp_bench.py "$iterations"
    run mlp-generic "$torch" PCSAMPLE_ON_SIGNAL=1 STREAMSAN_TORCH=0 \
      -- ./streamsan run -- "$python" bench/mlp_bench.py "$iterations"
    run mlp-hook "$torch" PCSAMPLE_ON_SIGNAL=1 STREAMSAN_TORCH_HOOK=native \
      -- ./streamsan run -- "$python" bench/mlp_bench.py "$iterations"
  fi
  for c in $loop_configs; do
    case $c in
      native) run loop-native "$probe" -- ./launch_loop "$launches" ;;
      bare) run loop-bare "$probe" PROBE_MODE=api CUDA_INJECTION64_PATH=$probe/libprobe_inject.so \
              -- ./launch_loop "$launches" ;;
      bare_cupti) run loop-bare_cupti "$probe" CUDA_INJECTION64_PATH=$probe/libbare_cupti.so \
                    -- ./launch_loop "$launches" ;;
      streamsan) run loop-streamsan "$probe" -- ./streamsan run -- ./launch_loop "$launches" ;;
      streamsan_cupti) run loop-streamsan_cupti "$probe" \
                         -- ./streamsan run --capture cupti -- ./launch_loop "$launches" ;;
    esac
  done
done
# The launch loop's counters (Note [Unpatched at a synchronize]): whether
# its kernel's module stayed patched, and so the launch callbacks on, for
# the whole loop. One run apart: STREAMSAN_DEBUG's callback counter would
# bias the sampled rounds.
if [[ " $loop_configs " == *" streamsan "* ]]; then
  (cd "$probe" && STREAMSAN_DEBUG=1 timeout 200 ./streamsan run -- ./launch_loop "$launches" \
     >"$out/loop-streamsan-debug.log" 2>&1)
  grep -E '^streamsan: debug: (sanitizer|callbacks)' "$out/loop-streamsan-debug.log" | cut -c1-400
fi
"$python" "$root/probe/critical_share.py" "${runs[@]}" --symbols "$out/symbols" | tee "$out/table.md"
