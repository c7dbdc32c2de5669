#!/usr/bin/env bash
# The cuda-samples acceptance (../shared/acceptance) on a GPU in one device
# call, in the default mode and with --precise. acceptance-gpu.sh DIR [MODES] [SUITE]
# DIR holds streamsan, libstreamsan_inject.so, the acceptance scripts and the
# suites' binaries (stage-acceptance.sh makes it). SUITE: samples (the 42
# cases of cuda-samples.tsv, from DIR/samples/bin; logs in $OUT/MODE), extra
# (extra-samples.tsv, from DIR/extra/bin; logs in $OUT/extra-MODE) or wide
# (wide-samples.tsv, from DIR/wide/bin; logs in $OUT/wide-MODE) or library
# (library-samples.tsv, from DIR/library/bin; logs in $OUT/library-MODE) or cccl
# (cccl-samples.tsv, from DIR/cccl/bin; logs in $OUT/cccl-MODE). Logs go to
# $OUT (default DIR/out).
set -u
dir=$(cd "$1" && pwd)
modes=${2:-"default precise"}
suite=${3:-samples}
case $suite in
  samples) cases=$dir/cuda-samples.tsv prefix="" ;;
  extra|wide|library|cccl) cases=$dir/$suite-samples.tsv prefix="$suite-" ;;
  *) echo "acceptance-gpu.sh: unknown suite '$suite' (samples, extra, wide, library, cccl)"; exit 2 ;;
esac
[[ -d $dir/$suite/bin ]] || { echo "acceptance-gpu.sh: $dir/$suite/bin not staged"; exit 2; }
out=${OUT:-$dir/out}
mkdir -p "$out"
cd "$dir"
# cuBLAS, cuFFT, cuSPARSE, cuSOLVER, cuRAND, nvJitLink and NVRTC come with the machine's PyTorch.
nvlib=$(python3 -c 'import nvidia.cu13, os; print(os.path.join(list(nvidia.cu13.__path__)[0], "lib"))' 2>/dev/null)
export LD_LIBRARY_PATH=${nvlib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for mode in $modes; do
  opts=""; [[ $mode == precise ]] && opts="precise=1"
  res=$out/$prefix$mode
  echo "===== $suite: $mode mode"
  CASES=$cases STREAMSAN_OPTIONS=$opts SAN_TIMEOUT=${SAN_TIMEOUT:-150} \
    bash ./run-cuda-samples.sh ./streamsan "$suite" "$res" > "$res.log" 2>&1
  sed -n '/^NAME /,$p' "$res.log" | head -60
  # The possible-races lines and notes of every case, for the closing note,
  # each followed by its warnings' SUMMARY lines and its possible races'
  # first lines (each as "   - LINE").
  for f in "$res"/*.log; do
    case $f in *.native.log) continue ;; esac
    n=$(grep -c -E '^WARNING|possible race' "$f" 2>/dev/null || true)
    notes=$(grep -E 'streamsan: (note|a module)|possible races|unmodelled' "$f" | head -3 | cut -c1-200 | tr '\n' '|')
    [[ $n != 0 || -n $notes ]] || continue
    echo "  $(basename "$f" .log): $notes"
    grep -E '^SUMMARY: streamsan|^  [a-z-]+ \([a-z-]+\), [0-9]+ bytes' "$f" | head -6 | cut -c1-200 | sed 's/^ */   - /'
  done
done
