#!/usr/bin/env bash
# On the GPU machine: where cuSolverRf's --precise run goes (issue #8's
# program at about twice memcheck; docs/injection.md, "Where cuSolverRf's
# --precise run goes"). Uses the wide corpus' cuSolverRf and the probe that
# stage-all.sh staged under ROOT (run-all.sh's /tmp/ss).
#   cusolverrf-gpu.sh ROOT OUT [ROUNDS]     (default 2 interleaved rounds)
# Each round: natively, `streamsan run --precise` with STREAMSAN_DEBUG=1
# (the read-back's and the engine's counters), the probe measuring every
# launch without streamsan's model and engine (PROBE_MODE=track), and in
# the first round memcheck. Then one --precise run with the main thread
# sampled in wall-clock time (bench/profile/pc_sampler.cpp,
# PCSAMPLE_CLOCK=wall), its samples in OUT/pcs. On the development machine:
#   fold.py OUT/pcs/pcs.PID --callers --map ROOT/acc=DIR_WITH_THE_BUILDS_LIBRARY
set -u
root=$1 out=$2 rounds=${3:-2}
mkdir -p "$out/pcs"
program=$root/acc/wide/bin/cuSolverRf
[[ -x $program ]] || { echo "cusolverrf-gpu.sh: $program is not staged (stage-all.sh with WIDE_BIN)"; exit 2; }
# The toolkit's cuSOLVER and cuSPARSE come with torch's wheels on the GPU machine.
nvlib=$(python3 -c 'import nvidia.cu13, os; print(os.path.join(list(nvidia.cu13.__path__)[0], "lib"))' 2>/dev/null)
export LD_LIBRARY_PATH=${nvlib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cd "$(dirname "$program")" || exit 2
memcheck=$(command -v compute-sanitizer || echo /usr/local/cuda/compute-sanitizer/compute-sanitizer)
counters='incomplete=[0-9]+|read_back=[0-9]+|read_back_ms=[0-9.]+ \(copies [0-9.]+\)|decode_ms=[0-9.]+|waits=[0-9]+|producer_waits=[0-9]+|reported [0-9]+ warnings?|ERROR SUMMARY: [0-9]+'
run() {  # run LABEL COMMAND...: the whole process's time and its counters
  local label=$1; shift
  local start; start=$(date +%s%N)
  STREAMSAN_DEBUG=1 timeout 300 "$@" >"$out/$label.log" 2>&1
  local status=$?
  echo "$label: exit $status, $(( ($(date +%s%N) - start) / 1000000 )) ms | $(grep -oE "$counters" "$out/$label.log" | tr '\n' ' ')"
}
for round in $(seq 1 "$rounds"); do
  run "native-$round" ./cuSolverRf
  run "precise-$round" "$root/acc/streamsan" run --precise -- ./cuSolverRf
  run "probe-track-$round" env PROBE_MODE=track CUDA_INJECTION64_PATH="$root/probe/libprobe_inject.so" ./cuSolverRf
  [[ $round == 1 ]] && run "memcheck-$round" "$memcheck" --tool memcheck ./cuSolverRf
done
LD_PRELOAD=$root/probe/libpc_sampler.so PCSAMPLE_DIR=$out/pcs PCSAMPLE_DEPTH=24 \
  PCSAMPLE_CLOCK=wall PCSAMPLE_US=2000 run precise-sampled "$root/acc/streamsan" run --precise -- ./cuSolverRf
echo "samples: $(ls "$out/pcs" | tr '\n' ' ')"
