#!/usr/bin/env bash
# The operator hook's price over the generic capture, measured inside each
# process (Note [The hook priced inside one process] in mlp_bench.py):
# PROCESSES runs of the MLP loop under `streamsan run` with the native hook,
# each timing ROUNDS pairs of blocks of 300 iterations, hook on and off.
# Prints each process's median on/off ratio and its spread, then the median
# over processes and, for comparison with ratios between processes, the
# spread of the processes' own "on" times.
#   hook-alternate.sh STREAMSAN [PROCESSES] [ROUNDS]
# STREAMSAN's folder holds python/ (stage-torch.sh puts it there).
# With ALT_WHAT=pause the blocks alternate kernel launches modelled and
# paused instead (mlp_bench.py's MLP_ALTERNATE_WHAT=pause), the hook as the
# environment says (STREAMSAN_TORCH=0: the generic capture alone). With
# ALT_WHAT=all they alternate the hook and the driver's launch callbacks
# both on and both off (mlp_bench.py's MLP_ALTERNATE_WHAT=all); with
# ALT_WHAT=unsubscribed, everything on against the hook off and the
# Sanitizer API subscription dropped (MLP_ALTERNATE_WHAT=unsubscribed;
# with STREAMSAN_TORCH=0 in the environment, the generic capture's whole
# price). With ALT_WHAT=csan the processes run without streamsan and
# alternate PyTorch's CUDA sanitizer on and off (MLP_ALTERNATE_WHAT=csan:
# Note [CSAN priced inside one process] in mlp_bench.py).
set -u
streamsan=$1 processes=${2:-3} rounds=${3:-8}
here=$(cd "$(dirname "$0")" && pwd)
python=${STREAMSAN_PYTHON:-python3}
ratios= ons=
under=("$streamsan" run --)
[[ ${ALT_WHAT:-hook} == csan ]] && under=()
for ((p = 1; p <= processes; p++)); do
  out=$(MLP_ALTERNATE=$rounds MLP_ALTERNATE_WHAT=${ALT_WHAT:-hook} STREAMSAN_BENCH_PAUSE=1 \
        STREAMSAN_TORCH_HOOK=native timeout 300 "${under[@]}" \
        "$python" "$here/mlp_bench.py" 2>&1)
  line=$(grep -Eo 'mlp_alt_ratio [0-9.]+ min [0-9.]+ max [0-9.]+' <<<"$out" | tail -1)
  if [[ -z $line ]]; then
    echo "process $p: no ratio; output:"; tail -20 <<<"$out"; continue
  fi
  grep -E '^mlp_alt_(on|off)_ms_each' <<<"$out" | sed "s/^/process $p /"
  echo "process $p $line"
  ratios+="$(awk '{print $2}' <<<"$line") "
  ons+="$(grep -Eo 'mlp_ms [0-9.]+' <<<"$out" | tail -1 | awk '{print $2}') "
done
"$python" - "$ratios" "$ons" <<'PY'
import statistics, sys
ratios = [float(v) for v in sys.argv[1].split()]
ons = [float(v) for v in sys.argv[2].split()]
if not ratios:
    print("| no process gave a ratio |"); sys.exit(1)
print()
print("| measure | median | min-max | processes |")
print("| --- | ---: | ---: | ---: |")
import os
label = {"pause": "launches modelled / paused",
         "all": "hook and launch callbacks on / off",
         "unsubscribed": "everything on / hook off and unsubscribed",
         "csan": "CSAN on / off (no streamsan)"}.get(
             os.environ.get("ALT_WHAT", "hook"), "hook on / hook off")
print("| %s, inside one process | %.3f | %.3f-%.3f | %d |"
      % (label, statistics.median(ratios), min(ratios), max(ratios), len(ratios)))
print("| processes' median 'on' block (ms, 300 it.) | %.1f | %.1f-%.1f | %d |"
      % (statistics.median(ons), min(ons), max(ons), len(ons)))
PY
