#!/usr/bin/env bash
# The operator hook priced step by step inside one process (Note [The hook
# priced step by step] in python/streamsan_torch/op_hook.cpp, Note [The
# hook priced inside one process] in mlp_bench.py): for each step, processes
# of the MLP loop under `streamsan run` whose blocks alternate everything on
# against the hook off and the Sanitizer API subscription dropped
# (hook-alternate.sh's ALT_WHAT=unsubscribed), so each ratio is that
# configuration's whole price against the same process run as natively.
# Between processes the GPU machine's MLP times spread by 20-30%, far more
# than a step costs; inside one process they repeat within a few percent.
#   hook-steps.sh STREAMSAN [PROCESSES] [ROUNDS]
# The configurations take turns process by process, so a machine that drifts
# moves them all alike: `generic` (STREAMSAN_TORCH=0: the generic capture
# alone), then the native hook stopped after each step (callback: registered
# without arguments, torch's RecordFunction alone; boxing; spans; frames;
# calls) and `all` (the hook, the default); STEPS_CONFIGS may also name
# `fastframes` (`all` with STREAMSAN_TORCH_FAST_FRAMES=1). Prints every process's ratio and
# a table of each configuration's median, spread and its step over the one
# before (a ratio of medians).
set -u
streamsan=$1 processes=${2:-3} rounds=${3:-8}
here=$(cd "$(dirname "$0")" && pwd)
configs=${STEPS_CONFIGS:-"generic callback boxing spans frames calls all"}
for c in $configs; do
  case $c in
    generic|callback|boxing|spans|frames|calls|all|fastframes) ;;
    *) echo "hook-steps.sh: STEPS_CONFIGS: '$c' is not a configuration (generic, callback," \
            "boxing, spans, frames, calls, all, fastframes)" >&2; exit 2 ;;
  esac
done
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for ((p = 1; p <= processes; p++)); do
  for c in $configs; do
    case $c in
      generic) env=(STREAMSAN_TORCH=0) ;;
      all) env=() ;;
      fastframes) env=(STREAMSAN_TORCH_FAST_FRAMES=1) ;;  # `all`, CPython's frames read directly
      *) env=(STREAMSAN_TORCH_HOOK_STEPS=$c) ;;
    esac
    line=$(env "${env[@]}" ALT_WHAT=unsubscribed bash "$here/hook-alternate.sh" "$streamsan" 1 "$rounds" |
           grep -Eo 'mlp_alt_ratio [0-9.]+' | tail -1)
    echo "process $p $c ${line:-no ratio}"
    [[ -n $line ]] && echo "$c ${line#mlp_alt_ratio }" >>"$results"
  done
done
python3 - "$results" "$configs" <<'PY'
import statistics, sys
ratios = {}
for row in open(sys.argv[1]):
    config, value = row.split()
    ratios.setdefault(config, []).append(float(value))
print()
print("| configuration | everything on / off, median | min-max | processes | step over the row before |")
print("| --- | ---: | ---: | ---: | ---: |")
before = None
for c in sys.argv[2].split():
    r = ratios.get(c)
    if not r:
        print("| %s | no ratio | | 0 | |" % c)
        continue
    m = statistics.median(r)
    step = "%.3f" % (m / before) if before else ""
    print("| %s | %.3f | %.3f-%.3f | %d | %s |" % (c, m, min(r), max(r), len(r), step))
    before = m
PY
