#!/usr/bin/env bash
# On the GPU machine, in the folder stage-torch.sh filled: every torch test
# program (racy and fixed) under streamsan and under CSAN, the verdict table,
# one text report, and the MLP overhead table. About 5 minutes on an H100
# (ROUNDS of the MLP bench, default 3); every run has a time limit.
#   bash torch-gpu.sh [ROUNDS]
# VERDICTS_ONLY=1: streamsan's verdicts only, without custom_kernel.py (its
# extension takes minutes to build), CSAN and the MLP (about a minute).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
python=${STREAMSAN_PYTHON:-python3}
rounds=${1:-3}
export STREAMSAN_EXT_DIR=$here/ext
# The verdicts are taken with the native operator hook where it builds
# (Note [Which operator hook by default]); STREAMSAN_TORCH_HOOK=python
# takes them with the dispatch mode.
export STREAMSAN_TORCH_HOOK=${STREAMSAN_TORCH_HOOK:-auto}
mkdir -p "$STREAMSAN_EXT_DIR" results
"$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
torch.cuda.get_device_name(0), "devices", torch.cuda.device_count())' || exit 1
command -v compute-sanitizer || echo "no compute-sanitizer on PATH"
# The native operator hook (python/streamsan_torch/op_hook.cpp), built once
# against this torch before the parallel runs (they would wait on its lock).
echo "== building the native operator hook"
PYTHONPATH=$here/python timeout 600 "$python" -c '
import torch
from streamsan_torch import _native_hook
path, why, no_tracker = _native_hook.build(torch, lambda m: print("streamsan: " + m))
print("native operator hook:", path or "NOT BUILT: " + why)
print("caching allocator blocks:", "tracked" if path and not no_tracker else
      "NOT TRACKED: " + (no_tracker or "no hook"))'
echo "== the native operator hook's tests (CPU tensors, this torch)"
timeout 300 "$python" tests/op_hook_test.py "$here/python" \
  "${STREAMSAN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/streamsan}" 2>&1 | tail -4
# The custom extension is compiled once, natively (nvcc + ninja), while the
# other programs run; custom_kernel.py's runs reuse it.
verdicts_only=${VERDICTS_ONLY:-}
build_pid=
if [[ -z $verdicts_only ]]; then
  echo "== building the load_inline extension (custom_kernel.py) in the background"
  (timeout 300 "$python" tests/programs/custom_kernel.py --fixed > results/ext_build.log 2>&1;
   echo "ext build exit $?" >> results/ext_build.log) &
  build_pid=$!
fi
jobs=() late=()
while read -r program kinds; do
  [[ -z $program || $program == \#* ]] && continue
  if [[ $program == custom_kernel.py ]]; then
    [[ -n $verdicts_only ]] && continue
    late+=("$program racy $kinds" "$program fixed none")
  else
    jobs+=("$program racy $kinds" "$program fixed none")
  fi
done < tests/programs.txt
jobs+=("tour.py fixed none")
for real in tests/programs/real/*.py; do jobs+=("real/${real##*/} fixed none"); done
# Started as people start them (check_torch.sh's LAUNCHER): torchrun, with
# one rank and with two where two GPUs are present, and pytest; and the
# programs of other Python frameworks (tests/frameworks: CuPy, JAX,
# cuda-python), which
# CSAN cannot check. streamsan only: CSAN's column runs each program with
# python.
launched=("side_stream_no_wait.py racy stream-race torchrun"
          "side_stream_no_wait.py fixed none torchrun"
          "launchers/test_side_stream.py racy stream-race pytest"
          "launchers/test_side_stream.py fixed none pytest"
          "launchers/ddp_training.py fixed none torchrun"
          "launchers/ddp_training.py fixed none torchrun:2"
          "frameworks/cupy_streams.py racy stream-race python"
          "frameworks/cupy_streams.py fixed none python"
          "frameworks/jax_training.py fixed none python"
          "frameworks/cuda_python_streams.py racy stream-race python"
          "frameworks/cuda_python_streams.py fixed none python"
          "frameworks/cupy_daemon_exit.py fixed none python")
verdicts() {
  xargs -P 12 -L 1 bash -c '
  framework=; [[ $0 == frameworks/* ]] && framework=${0#frameworks/}
  out=$(STREAMSAN_CHECK_FRAMEWORK=$framework STREAMSAN_TEST_TIMEOUT=140 timeout 170 tests/check_torch.sh ./streamsan "tests/programs/$0" "$1" "$2" "${3:-python}" 2>&1); rc=$?
  name=${0%.py}; name=${name//\//_}_$1
  [[ -n ${3:-} ]] && name=${name}_${3//:/}
  printf "%s\n" "$out" > "results/streamsan_$name.log"
  case $rc in 0) v=PASS;; 77) v=SKIP;; 124) v=TIMEOUT;; *) v="FAIL($rc)";; esac
  echo "$v $name $(grep -m1 "^verdict:" <<<"$out" | cut -d" " -f4-)"'
}
echo "== streamsan verdicts (${#jobs[@]} + ${#launched[@]} + ${#late[@]} runs)"
printf '%s\n' "${jobs[@]}" "${launched[@]}" | verdicts > results/streamsan.unsorted
if [[ -n $build_pid ]]; then
  wait "$build_pid"; tail -2 results/ext_build.log
  printf '%s\n' "${late[@]}" | verdicts >> results/streamsan.unsorted
fi
sort -k2 results/streamsan.unsorted | tee results/streamsan.txt
[[ -n $verdicts_only ]] && exit 0
jobs+=("${late[@]}")
echo "== CSAN verdicts (TORCH_CUDA_SANITIZER=1)"
printf '%s\n' "${jobs[@]}" | xargs -P 12 -L 1 bash -c '
  args=(); [[ $1 == fixed ]] && args=(--fixed)
  out=$(TORCH_CUDA_SANITIZER=1 timeout 120 '"$python"' "tests/programs/$0" "${args[@]}" 2>&1); rc=$?
  name=${0%.py}; name=${name//\//_}_$1
  printf "%s\n" "$out" > "results/csan_$name.log"
  if grep -q "CSAN detected a possible data race" <<<"$out"; then v=race
  elif [[ $rc -eq 0 ]]; then v=clean
  elif [[ $rc -eq 77 ]]; then v=skipped
  else v="error(rc=$rc: $(grep -m1 -E "Error|error" <<<"$out" | cut -c1-80))"; fi
  echo "$name $v"' | sort | tee results/csan.txt
echo "== verdict table"
"$python" - <<'PY'
rows = {}
for line in open("results/streamsan.txt"):
    parts = line.split()
    rows.setdefault(parts[1], {})["streamsan"] = parts[0] + " " + " ".join(
        p for p in parts[2:] if p.startswith(("kinds=", "python_frame=")))
for line in open("results/csan.txt"):
    name, verdict = line.split(" ", 1)
    rows.setdefault(name, {})["csan"] = verdict.strip()
print("| program | variant | streamsan | CSAN |")
print("| --- | --- | --- | --- |")
for name in sorted(rows):
    program, variant = name.rsplit("_", 1)
    # A program started by a launcher is NAME_VARIANT_LAUNCHER
    # (side_stream_no_wait_racy_torchrun, ..._fixed_torchrun2, ..._racy_pytest).
    if variant.startswith(("torchrun", "pytest")) and "_" in program:
        program, plain = program.rsplit("_", 1)
        variant = "%s (%s)" % (plain, variant)
    r = rows[name]
    print("| %s | %s | %s | %s |" % (program, variant, r.get("streamsan", "?"), r.get("csan", "?")))
PY
echo "== one text report (side_stream_no_wait.py, racy)"
timeout 120 ./streamsan run -- "$python" tests/programs/side_stream_no_wait.py 2>&1 | head -60
echo "== the same with --cpp-stacks (first 40 lines)"
timeout 120 ./streamsan run --cpp-stacks -- "$python" tests/programs/side_stream_no_wait.py 2>&1 |
  head -40
echo "== MLP overhead ($rounds interleaved rounds)"
timeout 300 bash bench/overhead.sh ./streamsan "$rounds"
echo "== failing logs"
for f in results/streamsan_*.log; do
  grep -q "^PASS\|^SKIP" "$f" || { echo "--- $f"; tail -40 "$f"; }
done
