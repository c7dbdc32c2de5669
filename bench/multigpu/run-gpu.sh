#!/usr/bin/env bash
# The two-GPU checks (issue #10 item 4) in one device call: each two-GPU
# example's verdict and the multi-GPU cuda-samples, in the default mode and
# with --precise. run-gpu.sh DIR [MODES]; DIR comes from stage.sh; logs go to
# $OUT.
set -u
dir=$(cd "$1" && pwd)
modes=${2:-"default precise"}
out=${OUT:-$dir/out}
mkdir -p "$out"
cd "$dir"
exec > >(tee "$out/multigpu.log") 2>&1
nvidia-smi -L
nvidia-smi topo -m 2>/dev/null | head -6
for mode in $modes; do
  opts=""; [[ $mode == precise ]] && opts="precise=1"
  echo "===== examples, $mode mode"
  for program in examples/*_racy examples/*_fixed; do
    name=$(basename "$program")
    case $name in
      device_sync_other_racy) expected=host-device-race ;;
      *_racy) expected=stream-race ;;
      *) expected=none ;;
    esac
    log=$out/$mode-$name.log
    STREAMSAN_OPTIONS=$opts timeout 120 examples/check_verdict.sh ./streamsan examples/gpu_probe_two "$program" "$expected" >"$log" 2>&1
    case $? in 0) v=PASS ;; 77) v=SKIP ;; *) v=FAIL ;; esac
    echo "$v $name ($expected): $(grep -m1 '^verdict' "$log")"
  done
  echo "===== multi-GPU cuda-samples, $mode mode"
  STREAMSAN_OPTIONS=$opts CASES=$dir/samples.tsv SAN_TIMEOUT=${SAN_TIMEOUT:-150} \
    bash ./run-cuda-samples.sh ./streamsan samples "$out/samples-$mode" > "$out/samples-$mode.log" 2>&1
  sed -n '/^NAME /,$p' "$out/samples-$mode.log" | head -80
  for f in "$out/samples-$mode"/*.log; do
    case $f in *.native.log) continue ;; esac
    notes=$(grep -E 'possible race|streamsan: (note|a module)|unmodelled' "$f" | head -4 | cut -c1-220 | tr '\n' '|')
    [[ -n $notes ]] && echo "  $(basename "$f" .log): $notes"
  done
done
