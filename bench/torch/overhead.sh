#!/usr/bin/env bash
# The MLP loop (mlp_bench.py) natively, under `streamsan run` (full: the
# PyTorch support, Python frames) with the native operator hook
# (STREAMSAN_TORCH_HOOK=native: op_hook.cpp, built once before the rounds)
# and with the Python dispatch mode (STREAMSAN_TORCH_HOOK=python), lazily
# (STREAMSAN_TORCH=lazy), with the PyTorch support off (STREAMSAN_TORCH=0:
# generic capture only), and under CSAN (TORCH_CUDA_SANITIZER=1), ROUNDS
# interleaved rounds (default 5); prints the median of the in-process time
# of each and the ratios.
#   overhead.sh STREAMSAN [ROUNDS]
# STREAMSAN's folder holds python/ (stage-torch.sh puts it there).
# CONFIGS picks and orders the configurations; besides those above:
# streamsan_fast_frames (the native hook walking CPython's own frames:
# Note [Frames without frame objects] in op_hook.cpp), streamsan_generic_cupti
# (the generic capture through CUPTI: no patching
# at all), streamsan_driver_launches and streamsan_generic_driver_launches
# (the default and the generic capture with
# STREAMSAN_RUNTIME_LAUNCH_CALLBACKS=off), and with PROBE_DIR
# (bench/precise/stage-probe.sh's folder) the floors bare_cupti (a CUPTI
# subscriber that only counts) and bare_sanitizer (a Compute Sanitizer API
# subscriber that only counts); streamsan_step_STEP (the native hook stopped
# after STEP: callback, boxing, spans, frames or calls; Note [The hook priced
# step by step] in op_hook.cpp); with PROBE_DIR/base (stage-probe.sh with
# BASE, holding another build's streamsan, library and python/)
# streamsan_base (that build, as `streamsan`) and streamsan_generic_base (that
# build, as `streamsan_generic`). MLP_REPEATS=K has each run time its
# iterations K times and report their median (mlp_bench.py).
set -u
streamsan=$1 rounds=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
python=${STREAMSAN_PYTHON:-python3}
bench=$here/mlp_bench.py
declare -A times
read -r -a configs <<<"${CONFIGS:-native streamsan streamsan_python streamsan_lazy streamsan_generic csan}"
probe=${PROBE_DIR:-}
run_one() {
  case $1 in
    native) timeout 120 "$python" "$bench" ;;
    streamsan) STREAMSAN_TORCH_HOOK=native timeout 120 "$streamsan" run -- "$python" "$bench" ;;
    streamsan_python)
      STREAMSAN_TORCH_HOOK=python timeout 120 "$streamsan" run -- "$python" "$bench" ;;
    streamsan_lazy) STREAMSAN_TORCH=lazy timeout 120 "$streamsan" run -- "$python" "$bench" ;;
    streamsan_fast_frames) STREAMSAN_TORCH_FAST_FRAMES=1 STREAMSAN_TORCH_HOOK=native \
      timeout 120 "$streamsan" run -- "$python" "$bench" ;;
    streamsan_generic) STREAMSAN_TORCH=0 timeout 120 "$streamsan" run -- "$python" "$bench" ;;
    streamsan_driver_launches) STREAMSAN_RUNTIME_LAUNCH_CALLBACKS=off STREAMSAN_TORCH_HOOK=native \
      timeout 120 "$streamsan" run -- "$python" "$bench" ;;
    streamsan_generic_driver_launches) STREAMSAN_RUNTIME_LAUNCH_CALLBACKS=off STREAMSAN_TORCH=0 \
      timeout 120 "$streamsan" run -- "$python" "$bench" ;;
    streamsan_generic_cupti)
      STREAMSAN_TORCH=0 timeout 120 "$streamsan" run --capture cupti -- "$python" "$bench" ;;
    bare_cupti) CUDA_INJECTION64_PATH=$probe/libbare_cupti.so timeout 120 "$python" "$bench" ;;
    bare_sanitizer)
      PROBE_MODE=api CUDA_INJECTION64_PATH=$probe/libprobe_inject.so timeout 120 "$python" "$bench" ;;
    csan) TORCH_CUDA_SANITIZER=1 timeout 120 "$python" "$bench" ;;
    streamsan_base) STREAMSAN_TORCH_HOOK=native timeout 120 "$probe/base/streamsan" run -- \
      "$python" "$bench" ;;
    streamsan_generic_base) STREAMSAN_TORCH=0 timeout 120 "$probe/base/streamsan" run -- \
      "$python" "$bench" ;;
    streamsan_step_*)  # Note [The hook priced step by step] in op_hook.cpp
      STREAMSAN_TORCH_HOOK_STEPS=${1#streamsan_step_} STREAMSAN_TORCH_HOOK=native \
        timeout 120 "$streamsan" run -- "$python" "$bench" ;;
    *) echo "overhead.sh: unknown configuration '$1'"; return 2 ;;
  esac
}
# The native hook is built (once per torch, cached) before any timed run,
# and the base build's (its own source: another cache entry) when there is one.
echo "== building the native operator hook"
for support in "$(dirname "$streamsan")/python" ${probe:+"$probe/base/python"}; do
[[ -d $support ]] || continue
PYTHONPATH="$support" timeout 600 "$python" -c '
import sys, torch
from streamsan_torch import _native_hook
path, why, no_tracker = _native_hook.build(torch, lambda m: print("streamsan: " + m))
print("native operator hook:", path or "NOT BUILT: " + why)
print("caching allocator blocks:", "tracked" if path and not no_tracker else
      "NOT TRACKED: " + (no_tracker or "no hook"))'
done
for ((r = 1; r <= rounds; r++)); do
  for c in "${configs[@]}"; do
    out=$(run_one "$c" 2>&1)
    # The last timing line with a number: the sanitizer's own lines on
    # stderr may land in the middle of the program's output.
    ms=$(grep -Eo 'mlp_ms [0-9.]+' <<<"$out" | tail -1 | awk '{print $2}')
    if [[ -z $ms ]]; then
      echo "round $r $c: no timing; output:"; tail -20 <<<"$out"; ms=nan
    fi
    # Which operator hook ran, when it was not the one asked for.
    grep -m1 "operator hook is not available\|operator hook stopped" <<<"$out"
    echo "round $r $c ${ms} ms"
    # Each repeat's time (MLP_REPEATS > 1): the spread inside one process.
    grep -m1 -Eo 'mlp_ms_each [0-9. ]+' <<<"$out" | sed "s/^/round $r $c /"
    times[$c]+="$ms "
  done
done
"$python" - "${configs[@]}" <<PY
import statistics, sys
times = {}
$(for c in "${configs[@]}"; do echo "times['$c'] = [float(v) for v in '${times[$c]}'.split() if v != 'nan']"; done)
native = statistics.median(times["native"]) if times["native"] else float("nan")
print()
print("| configuration | median ms (300 it.) | min-max ms | ratio to native | runs |")
print("| --- | ---: | ---: | ---: | ---: |")
labels = {"native": "native",
          "streamsan": "streamsan run, native operator hook (STREAMSAN_TORCH_HOOK=native)",
          "streamsan_python": "streamsan run, Python dispatch mode (STREAMSAN_TORCH_HOOK=python)",
          "streamsan_lazy": "streamsan run, STREAMSAN_TORCH=lazy",
          "streamsan_fast_frames":
              "streamsan run, native operator hook, STREAMSAN_TORCH_FAST_FRAMES=1",
          "streamsan_generic": "streamsan run, STREAMSAN_TORCH=0 (generic)",
          "streamsan_generic_cupti": "streamsan run --capture cupti, STREAMSAN_TORCH=0",
          "streamsan_driver_launches": "streamsan run, STREAMSAN_RUNTIME_LAUNCH_CALLBACKS=off",
          "streamsan_generic_driver_launches":
              "streamsan run, STREAMSAN_TORCH=0, STREAMSAN_RUNTIME_LAUNCH_CALLBACKS=off",
          "streamsan_base": "the base build (PROBE_DIR/base), native operator hook",
          "streamsan_generic_base": "the base build (PROBE_DIR/base), STREAMSAN_TORCH=0",
          "bare_cupti": "bare CUPTI subscriber (counting only)",
          "bare_sanitizer": "bare Compute Sanitizer API subscriber (counting only)",
          "csan": "CSAN (TORCH_CUDA_SANITIZER=1)"}
med = {}
for c in sys.argv[1:]:
    v = times[c]
    med[c] = statistics.median(v) if v else float("nan")
    spread = "%.1f-%.1f" % (min(v), max(v)) if v else "-"
    label = labels.get(c, "streamsan run, native hook stopped after STREAMSAN_TORCH_HOOK_STEPS=" +
                       c[len("streamsan_step_"):] if c.startswith("streamsan_step_") else c)
    print("| %s | %.1f | %s | %.3f | %d |" % (label, med[c], spread, med[c] / native, len(v)))
if "csan" in med and "streamsan" in med:
    print()
    print("CSAN / streamsan = %.2f" % (med["csan"] / med["streamsan"]))
PY
# Note [Intervals, not only medians] in ratio_ci.py.
if [[ -f $here/ratio_ci.py && " ${configs[*]} " == *" native "* ]]; then
  echo
  echo "ratios of medians with 95% bootstrap intervals:"
  reference=; [[ " ${configs[*]} " == *" bare_sanitizer "* ]] && reference=bare_sanitizer
  for c in "${configs[@]}"; do echo "$c ${times[$c]}"; done | "$python" "$here/ratio_ci.py" native $reference
fi
