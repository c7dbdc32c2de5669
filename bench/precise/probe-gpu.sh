#!/usr/bin/env bash
# GPU probe for exact footprints (issue #8), one device call: where the
# Sanitizer API is, whether measured footprints are exact, and what a bare
# subscriber, patching and tracking cost on the launch-bound loop and the
# compute-bound pipeline. Expects the files stage-probe.sh copies into DIR.
#   probe-gpu.sh DIR     (logs and raw outputs go to $OUT or DIR/out)
set -u
dir=$(cd "$1" && pwd)
out=${OUT:-$dir/out}
mkdir -p "$out"
cd "$dir"
exec > >(tee "$out/probe.log") 2>&1
if [[ ! -e /usr/local/cuda/lib64/libcupti.so.13 ]]; then export LD_LIBRARY_PATH=$dir/cupti; fi
probe=$dir/libprobe_inject.so

echo "== machine"
nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm --format=csv,noheader
cs=$(command -v compute-sanitizer); echo "compute-sanitizer: $cs -> $(readlink -f "$cs")"
find / -xdev -name 'libsanitizer-public.so*' 2>/dev/null | head -5
command -v nvdisasm cuobjdump

for mode in track lazy; do
  echo "== footprints: $mode"
  t0=$(date +%s%N)
  CUDA_INJECTION64_PATH=$probe PROBE_MODE=$mode PROBE_PRINT=1 timeout 60 ./footprint_probe >"$out/fp-$mode.out" 2>"$out/fp-$mode.err"
  echo "rc=$? wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))"
  grep -E '^probe' "$out/fp-$mode.err" | sort | uniq -c | head
  python3 check_footprints.py "$out/fp-$mode.out" "$out/fp-$mode.err"
done

now() { date +%s%N; }
region() { grep -Eo 'elapsed_ms=[0-9.]+' | head -1 | cut -d= -f2; }
run() { # run LABEL ENV... -- CMD...
  local label=$1; shift
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  local r; r=$(env "${envs[@]}" timeout 90 "$@" 2>>"$out/timing.err" | region)
  echo "$label ${r:-fail}"
}

echo "== launch loop, 20000 launches, 3 interleaved rounds"
for round in 1 2 3; do
  run native_20k X=1 -- ./launch_loop 20000
  run track_20k CUDA_INJECTION64_PATH=$probe PROBE_MODE=track -- ./launch_loop 20000
done | tee "$out/launch.txt"
run memcheck_20k X=1 -- "$cs" --tool memcheck ./launch_loop 20000
grep -E '^probe: mode' "$out/timing.err" | tail -2
echo "== pipeline (64 chunks x 250000 iterations), 2 rounds"
for round in 1 2; do
  run native X=1 -- ./pipeline 64 250000
  run patch_null CUDA_INJECTION64_PATH=$probe PROBE_MODE=patch-null -- ./pipeline 64 250000
  run track CUDA_INJECTION64_PATH=$probe PROBE_MODE=track -- ./pipeline 64 250000
done | tee "$out/pipeline.txt"
run memcheck X=1 -- "$cs" --tool memcheck ./pipeline 64 250000
grep -E '^probe: mode' "$out/timing.err" | tail -2
echo "== triad (bandwidth-bound, 200 iterations), 2 rounds"
for round in 1 2; do
  run native X=1 -- ./triad 200
  run api CUDA_INJECTION64_PATH=$probe PROBE_MODE=api -- ./triad 200
  run patch_null CUDA_INJECTION64_PATH=$probe PROBE_MODE=patch-null -- ./triad 200
  run track CUDA_INJECTION64_PATH=$probe PROBE_MODE=track -- ./triad 200
done | tee "$out/triad.txt"
run memcheck X=1 -- "$cs" --tool memcheck ./triad 200
grep -E '^probe: mode' "$out/timing.err" | tail -2
echo "== done"
