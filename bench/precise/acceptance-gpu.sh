#!/usr/bin/env bash
# The cuda-samples acceptance (../shared/acceptance) on a GPU in one device
# call, in the default mode and with --precise. acceptance-gpu.sh DIR [MODES]
# DIR holds streamsan, libstreamsan_inject.so, samples/bin and the acceptance
# scripts (stage-acceptance.sh makes it); logs go to $OUT.
set -u
dir=$(cd "$1" && pwd)
modes=${2:-"default precise"}
out=${OUT:-$dir/out}
mkdir -p "$out"
cd "$dir"
# cuBLAS, cuFFT, cuSPARSE and NVRTC come with the machine's PyTorch.
nvlib=$(python3 -c 'import nvidia.cu13, os; print(os.path.join(list(nvidia.cu13.__path__)[0], "lib"))' 2>/dev/null)
export LD_LIBRARY_PATH=${nvlib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for mode in $modes; do
  opts=""; [[ $mode == precise ]] && opts="precise=1"
  echo "===== $mode mode"
  STREAMSAN_OPTIONS=$opts SAN_TIMEOUT=${SAN_TIMEOUT:-150} bash ./run-cuda-samples.sh ./streamsan samples "$out/$mode" \
    > "$out/$mode.log" 2>&1
  sed -n '/^NAME /,$p' "$out/$mode.log" | head -60
  # The possible-races lines and notes of every case, for the closing note.
  for f in "$out/$mode"/*.log; do
    case $f in *.native.log) continue ;; esac
    n=$(grep -c -E '^WARNING|possible race' "$f" 2>/dev/null || true)
    notes=$(grep -E 'streamsan: (note|a module)|possible races|unmodelled' "$f" | head -3 | cut -c1-200 | tr '\n' '|')
    [[ $n != 0 || -n $notes ]] && echo "  $(basename "$f" .log): $notes"
  done
done
