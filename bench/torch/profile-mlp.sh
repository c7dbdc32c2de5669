#!/usr/bin/env bash
# On the GPU machine, in the folder stage-torch.sh filled: where the MLP
# loop's time goes under `streamsan run` (issue #9 point 8, issue #11), with
# the generic capture alone (STREAMSAN_TORCH=0) and with the PyTorch support
# (the default operator hook):
#   - the per-call price list (STREAMSAN_DEBUG=1: the most frequent calls
#     whose callbacks we take, and the source's counters);
#   - a sample profile (bench/profile/pc_sampler.cpp, preloaded) of the
#     program's threads, folded by bench/profile/fold.py where the build is.
#   profile-mlp.sh SAMPLER_SO OUT [ITERATIONS]
# PROF_RUNS (default "generic native-hook") picks the runs; generic-paused
# is the generic capture with every timed launch paused (mlp_bench.py's
# MLP_PAUSED), the floor to read the generic run's profile against.
# OUT gets the logs, the samples (pcs.*) and a copy of the operator hook
# built here, for fold.py's --map on the development machine:
#   fold.py OUT/pcs-native-hook.* --map /tmp/ss/torch/libstreamsan_inject.so=BUILD/inject/libstreamsan_inject.so
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
sampler=$1 out=$2 iterations=${3:-3000}
python=${STREAMSAN_PYTHON:-python3}
mkdir -p "$out"
run() {  # run LABEL ENV... : one debug run and one sampled run
  local label=$1; shift
  env "$@" STREAMSAN_DEBUG=1 timeout 300 ./streamsan run -- "$python" bench/mlp_bench.py "$iterations" \
    >"$out/debug-$label.log" 2>&1
  echo "== $label (exit $?): $(grep -m1 '^mlp_ms' "$out/debug-$label.log")"
  grep -E 'debug: (sanitizer|most frequent)' "$out/debug-$label.log" | cut -c1-900
  mkdir -p "$out/pcs-$label"
  # Only the timed loop is sampled (PCSAMPLE_ON_SIGNAL: mlp_bench.py marks it).
  env "$@" LD_PRELOAD="$sampler" PCSAMPLE_DIR="$out/pcs-$label" PCSAMPLE_DEPTH=12 \
    PCSAMPLE_ON_SIGNAL=1 timeout 300 \
    ./streamsan run -- "$python" bench/mlp_bench.py "$iterations" >"$out/sampled-$label.log" 2>&1
  echo "   sampled (exit $?): $(grep -m1 '^mlp_ms' "$out/sampled-$label.log"), $(cat "$out/pcs-$label"/pcs.* 2>/dev/null | wc -l) samples"
}
echo "== native: $(timeout 120 "$python" bench/mlp_bench.py "$iterations" 2>&1 | grep -m1 '^mlp_ms')"
for what in ${PROF_RUNS:-generic native-hook}; do
  case $what in
    generic) run generic STREAMSAN_TORCH=0 ;;
    generic-paused) run generic-paused STREAMSAN_TORCH=0 STREAMSAN_BENCH_PAUSE=1 MLP_PAUSED=1 ;;
    native-hook) run native-hook STREAMSAN_TORCH_HOOK=native ;;
    *) echo "profile-mlp.sh: PROF_RUNS: unknown run '$what' (generic, generic-paused, native-hook)"; exit 2 ;;
  esac
done
cp "${STREAMSAN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/streamsan}"/op_hook-*.so "$out/" 2>/dev/null
true
