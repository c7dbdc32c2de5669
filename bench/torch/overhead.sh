#!/usr/bin/env bash
# The MLP loop (mlp_bench.py) natively, under `streamsan run` (full: the
# PyTorch support, Python frames), under `streamsan run` with the PyTorch
# support off (STREAMSAN_TORCH=0: generic capture only), and under CSAN
# (TORCH_CUDA_SANITIZER=1), ROUNDS interleaved rounds (default 5); prints
# the median of the in-process time of each and the ratios.
#   overhead.sh STREAMSAN [ROUNDS]
set -u
streamsan=$1 rounds=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
python=${STREAMSAN_PYTHON:-python3}
bench=$here/mlp_bench.py
declare -A times
configs=(native streamsan streamsan_lazy streamsan_generic csan)
run_one() {
  case $1 in
    native) timeout 120 "$python" "$bench" ;;
    streamsan) timeout 120 "$streamsan" run -- "$python" "$bench" ;;
    streamsan_lazy) STREAMSAN_TORCH=lazy timeout 120 "$streamsan" run -- "$python" "$bench" ;;
    streamsan_generic) STREAMSAN_TORCH=0 timeout 120 "$streamsan" run -- "$python" "$bench" ;;
    csan) TORCH_CUDA_SANITIZER=1 timeout 120 "$python" "$bench" ;;
  esac
}
for ((r = 1; r <= rounds; r++)); do
  for c in "${configs[@]}"; do
    out=$(run_one "$c" 2>&1)
    # The last timing line with a number: the sanitizer's own lines on
    # stderr may land in the middle of the program's output.
    ms=$(grep -Eo 'mlp_ms [0-9.]+' <<<"$out" | tail -1 | awk '{print $2}')
    if [[ -z $ms ]]; then
      echo "round $r $c: no timing; output:"; tail -20 <<<"$out"; ms=nan
    fi
    echo "round $r $c ${ms} ms"
    times[$c]+="$ms "
  done
done
"$python" - "${configs[@]}" <<PY
import statistics, sys
times = {}
$(for c in "${configs[@]}"; do echo "times['$c'] = [float(v) for v in '${times[$c]}'.split() if v != 'nan']"; done)
native = statistics.median(times["native"]) if times["native"] else float("nan")
print()
print("| configuration | median ms (300 it.) | ratio to native | runs |")
print("| --- | ---: | ---: | ---: |")
labels = {"native": "native", "streamsan": "streamsan run (PyTorch support)",
          "streamsan_lazy": "streamsan run, STREAMSAN_TORCH=lazy",
          "streamsan_generic": "streamsan run, STREAMSAN_TORCH=0 (generic)",
          "csan": "CSAN (TORCH_CUDA_SANITIZER=1)"}
med = {}
for c in sys.argv[1:]:
    v = times[c]
    med[c] = statistics.median(v) if v else float("nan")
    print("| %s | %.1f | %.3f | %d |" % (labels[c], med[c], med[c] / native, len(v)))
print()
print("CSAN / streamsan = %.2f" % (med["csan"] / med["streamsan"]))
PY
