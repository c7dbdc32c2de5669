#!/usr/bin/env bash
# Overhead of `streamsan run` against native runs and compute-sanitizer
# memcheck, on the two workloads of this folder. Prints a Markdown table
# (docs/injection.md keeps the last one measured).
#
#   overhead.sh STREAMSAN LAUNCH_BOUND PIPELINE [REPEATS]
#
# Each configuration runs REPEATS times (default 5), the configurations
# taking turns; the table shows the median of the time the program measures
# itself (its timed region) and of the whole process's wall time.
# The timed region of every run follows the table (sessions differ by more
# than the medians do; the samples show how much).
# compute-sanitizer runs once (it is slow; SKIP_MEMCHECK=1 leaves it out).
# WORKLOADS="launch_bound" measures one workload only.
set -u
streamsan=$1 launch_bound=$2 pipeline=$3 repeats=${4:-5}
launch_args=${LAUNCH_ARGS:-200000}
pipeline_args=${PIPELINE_ARGS:-"192 250000"}
sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
memcheck_timeout=${MEMCHECK_TIMEOUT:-120}

now() { date +%s%N; }

# run LABEL COMMAND...: prints "region_ms wall_ms" or "fail"
run_once() {
  local start end out
  start=$(now)
  out=$("$@" 2>/dev/null | grep -Eo 'elapsed_ms=[0-9.]+' | head -1 | cut -d= -f2)
  end=$(now)
  if [[ -z $out ]]; then echo fail; return; fi
  echo "$out $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", (b - a) / 1e6 }')"
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "nan"; else print a[int((NR+1)/2)]}'; }

measure() {  # measure REPEATS COMMAND... -> "region wall"
  local n=$1; shift
  local regions=() walls=()
  for ((i = 0; i < n; ++i)); do
    read -r r w <<<"$(run_once "$@")"
    [[ $r == fail ]] && { echo "fail fail"; return; }
    regions+=("$r"); walls+=("$w")
  done
  echo "$(printf '%s\n' "${regions[@]}" | median) $(printf '%s\n' "${walls[@]}" | median)"
}

is_number() { [[ $1 =~ ^[0-9.]+$ ]]; }
ratio() { if is_number "$1" && is_number "$2"; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b / a }'; else echo "-"; fi; }
fmt() { if is_number "$1"; then printf '%.1f' "$1"; else echo "$1"; fi; }

workloads=${WORKLOADS:-"launch_bound pipeline"}
samples=""
echo "| workload | configuration | timed region (ms) | ratio | process wall (ms) | ratio |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
for workload in $workloads; do
  if [[ $workload == launch_bound ]]; then cmd=("$launch_bound" $launch_args); else cmd=("$pipeline" $pipeline_args); fi
  # The configurations take turns, so that drift of the machine (clocks,
  # other tenants) spreads over all of them instead of favouring one.
  nr_all=() nw_all=() sr_all=() sw_all=() s0r_all=() s0w_all=()
  for ((rep = 0; rep < repeats; ++rep)); do
    read -r r w <<<"$(run_once "${cmd[@]}")"; nr_all+=("$r"); nw_all+=("$w")
    read -r r w <<<"$(run_once "$streamsan" run -- "${cmd[@]}")"; sr_all+=("$r"); sw_all+=("$w")
    read -r r w <<<"$(run_once "$streamsan" run --stack-depth 0 -- "${cmd[@]}")"; s0r_all+=("$r"); s0w_all+=("$w")
  done
  med() { if printf '%s\n' "$@" | grep -q fail; then echo fail; else printf '%s\n' "$@" | median; fi; }
  nr=$(med "${nr_all[@]}") nw=$(med "${nw_all[@]}")
  sr=$(med "${sr_all[@]}") sw=$(med "${sw_all[@]}")
  s0r=$(med "${s0r_all[@]}") s0w=$(med "${s0w_all[@]}")
  if [[ -x $sanitizer && ${SKIP_MEMCHECK:-0} == 0 ]]; then
    read -r mr mw <<<"$(measure 1 timeout "$memcheck_timeout" "$sanitizer" --tool memcheck "${cmd[@]}")"
    [[ $mr == fail ]] && { mr=timeout; mw=timeout; }
  else
    mr=skipped; mw=skipped
  fi
  samples+="$workload native: ${nr_all[*]}"$'\n'
  samples+="$workload streamsan (stacks): ${sr_all[*]}"$'\n'
  samples+="$workload streamsan --stack-depth 0: ${s0r_all[*]}"$'\n'
  row() { echo "| $workload | $1 | $(fmt "$2") | $(ratio "$nr" "$2") | $(fmt "$3") | $(ratio "$nw" "$3") |"; }
  row native "$nr" "$nw"
  row "streamsan run (stacks, depth 16)" "$sr" "$sw"
  row "streamsan run --stack-depth 0" "$s0r" "$s0w"
  row "compute-sanitizer memcheck" "$mr" "$mw"
done
echo
echo "Timed region of each run (ms, in run order):"
printf '%s' "$samples"
