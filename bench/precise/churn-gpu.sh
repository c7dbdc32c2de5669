#!/usr/bin/env bash
# On the GPU machine: the programs that found the module-change hang and
# crash (Note [A module-loaded callback waits a bounded time], Note [No
# module change while a module loads]), run again and again under both
# modes, each run bounded; a run that hangs or faults leaves its threads'
# stacks (bench/profile's sampler: PCSAMPLE_ON_TERM, PCSAMPLE_ON_FAULT)
# and its log in $OUT, for `bench/profile/fold.py FILE --stacks`.
#
#   churn-gpu.sh ROOT [RUNS]
#
# ROOT is run-all.sh's unpacked archive (int/ with the examples, probe/
# with the sampler, acc/ with UnifiedMemoryStreams when staged). RUNS per
# program and mode, default 30.
set -u
root=$(cd "$1" && pwd)
runs=${2:-30}
out=${OUT:-/tmp/churn-out}
mkdir -p "$out"
sampler=$root/probe/libpc_sampler.so
streamsan=$root/int/streamsan
if lib=$(python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "lib"))' 2>/dev/null) &&
   [[ -d $lib ]]; then
  export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

# repeat NAME PROGRAM MODE: RUNS runs; one line of ms/exit per run, and the
# count of runs that did not end clean.
repeat() {
  local name=$1 program=$2 mode=$3 line="" bad=0
  local opt=""; [[ $mode == precise ]] && opt=--precise
  for i in $(seq 1 "$runs"); do
    local stacks=$out/stacks-$name-$mode-$i log=$out/$name-$mode-$i.log
    mkdir -p "$stacks"
    local start; start=$(date +%s%N)
    (cd "$(dirname "$program")" &&
      STREAMSAN_DEBUG=1 LD_PRELOAD=$sampler PCSAMPLE_DIR=$stacks PCSAMPLE_ON_FAULT=1 \
      PCSAMPLE_ON_TERM=1 PCSAMPLE_US=500000 timeout -k 5 60 "$streamsan" run $opt -- "$program") \
      >"$log" 2>&1
    local rc=$?
    line="$line $(( ($(date +%s%N) - start) / 1000000 ))/$rc"
    if [[ $rc != 0 ]] || ! grep -q "reported 0 warnings" "$log"; then
      bad=$((bad + 1))
      echo "$name $mode run $i: exit $rc (log $log, stacks $stacks)"
      grep -E "^streamsan: (the fault|  called from|the faulting)" "$log" | head -8
    else
      rm -rf "$stacks" "$log"
    fi
  done
  echo "$name $mode (ms/exit):$line"
  echo "$name $mode: $bad of $runs not clean"
}

nvidia-smi -L
for mode in default precise; do
  repeat module_churn "$root/int/examples/module_churn" "$mode"
done
if [[ -x $root/acc/samples/bin/UnifiedMemoryStreams ]]; then
  repeat UnifiedMemoryStreams "$root/acc/samples/bin/UnifiedMemoryStreams" default
else
  echo "UnifiedMemoryStreams: not staged (stage-all.sh without SAMPLES_BIN)"
fi
