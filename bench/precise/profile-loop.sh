#!/usr/bin/env bash
# On the GPU machine, in the folder stage-probe.sh filled: where the
# launch-bound loop's time goes under `streamsan run` against the bare
# Compute Sanitizer API subscriber (issue #11: our own work per launch).
# Each configuration runs once with STREAMSAN_DEBUG=1 (the source's counters)
# and once under the sample profiler (bench/profile/pc_sampler.cpp,
# preloaded; the loop is most of the run at this length), with
# PCSAMPLE_DEPTH return addresses per sample for fold.py --callers.
#   profile-loop.sh DIR OUT [LAUNCHES]     (default 1,000,000 launches)
# On the development machine, after the device call:
#   fold.py OUT/pcs-streamsan/pcs.PID --map /tmp/ss/probe/libstreamsan_inject.so=BUILD/inject/libstreamsan_inject.so
set -u
dir=$(cd "$1" && pwd)
out=$2 launches=${3:-1000000}
mkdir -p "$out"
cd "$dir"
if [[ ! -e /usr/local/cuda/lib64/libcupti.so.13 ]]; then export LD_LIBRARY_PATH=$dir/cupti; fi
sampler=$dir/libpc_sampler.so
[[ -f $sampler ]] || { echo "profile-loop.sh: $sampler is missing (stage-all.sh stages it)"; exit 2; }
command_of() {
  case $1 in
    native) echo "./launch_loop" ;;
    bare_sanitizer) echo "env PROBE_MODE=api CUDA_INJECTION64_PATH=$dir/libprobe_inject.so ./launch_loop" ;;
    streamsan) echo "./streamsan run -- ./launch_loop" ;;
  esac
}
for label in native bare_sanitizer streamsan; do
  cmd=$(command_of "$label")
  STREAMSAN_DEBUG=1 timeout 300 $cmd "$launches" >"$out/debug-$label.log" 2>&1
  echo "== $label (exit $?): $(grep -Eo 'elapsed_ms=[0-9.]+' "$out/debug-$label.log" | head -1)"
  grep -E 'debug: (sanitizer|callbacks|most frequent)' "$out/debug-$label.log" | cut -c1-600
  mkdir -p "$out/pcs-$label"
  LD_PRELOAD=$sampler PCSAMPLE_DIR=$out/pcs-$label PCSAMPLE_DEPTH=12 timeout 300 $cmd "$launches" \
    >"$out/sampled-$label.log" 2>&1
  echo "   sampled (exit $?): $(grep -Eo 'elapsed_ms=[0-9.]+' "$out/sampled-$label.log" | head -1)," \
       "$(cat "$out/pcs-$label"/pcs.* 2>/dev/null | wc -l) samples"
done
