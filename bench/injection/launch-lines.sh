#!/usr/bin/env bash
# Cache lines our launch path misses, a launch, with the caches evicted
# between launches as the driver's own launch path does on the GPU machine
# (Note [Our launch path with cold caches] in source_bench.cpp):
# callgrind's cache model (a 32 KiB L1 and a 2 MiB last level) on
# BM_SourceLaunchColdCaches/64 (64 KiB written between launches), the
# source's callbacks' L1 read misses, the engine's apart (it runs inline
# in that bench, and on a thread of its own under `streamsan run`).
#
#   bench/injection/launch-lines.sh BUILD
#
# Deterministic for one build, unlike the bench's own times (which the
# host's caches blur: misses overlap there). But it moves with layout: the
# same code built with -g missed 59 lines a launch against 45 without, so
# compare builds made alike (docs/injection.md, "The lines counted again").
set -eu
[[ $# -eq 1 && -d $1 ]] || { echo "usage: launch-lines.sh BUILD (a build folder; got: ${1:-nothing})" >&2; exit 2; }
build=$(cd "$1" && pwd)
bench=$build/bench/injection/injection_source_bench
[[ -x $bench ]] || { echo "launch-lines.sh: no source bench at $bench" >&2; exit 2; }
script=launch-lines.sh
# shellcheck source=callgrind-setup.sh
source "$(dirname "$0")/callgrind-setup.sh"
# One run's counts: launches, the callbacks' L1 read misses and
# instructions, the engine's misses. Two runs of different lengths are
# subtracted, so that start-up (the first launches' lookups, the report at
# exit) drops out.
counts() {
  valgrind --tool=callgrind --cache-sim=yes --D1=32768,8,64 --LL=2097152,16,64 \
    --callgrind-out-file="$work/out" "$bench" --benchmark_filter='ColdCaches/64/' \
    --benchmark_min_time="$1" >/dev/null 2>"$work/err" ||
    { echo "launch-lines.sh: the bench failed:" >&2; tail -5 "$work/err" >&2; exit 1; }
  callgrind_annotate --show=D1mr,Ir --inclusive=yes --threshold=100 "$work/out" >"$work/annotated"
  # The launches: the calls from the model's kernel_launched to its callees.
  callgrind_annotate --tree=caller --show=Ir --threshold=100 "$work/out" >"$work/callers"
  local launches callbacks engine
  launches=$(grep -m1 '< .*cuda_model::kernel_launched(' "$work/callers" |
             sed -n 's/.*(\([0-9,]*\)x).*/\1/p' | tr -d ,)
  callbacks=$(grep -m1 'sanitizer_source::impl::on_callback(' "$work/annotated" |
              awk '{ gsub(",", "", $1); gsub(",", "", $3); print $1, $3 }')
  engine=$(grep -m1 'streamsan::engine::on_record(' "$work/annotated" | awk '{ gsub(",", "", $1); print $1 }')
  [[ -n $launches && -n $callbacks && -n $engine ]] ||
    { echo "launch-lines.sh: no launches, callbacks or engine in the profile" >&2; exit 1; }
  echo "$launches $callbacks $engine"
}
# Assigned first: a failed measurement then stops the script (set -e).
first=$(counts 0.05)
second=$(counts 0.3)
read -r n1 m1 i1 e1 <<<"$first"
read -r n2 m2 i2 e2 <<<"$second"
awk -v n1="$n1" -v m1="$m1" -v i1="$i1" -v e1="$e1" -v n2="$n2" -v m2="$m2" -v i2="$i2" -v e2="$e2" 'BEGIN {
  n = n2 - n1
  if (n <= 0) { print "launch-lines.sh: the longer run launched no more" > "/dev/stderr"; exit 1 }
  printf "a launch (%d launches apart): L1 read misses %.1f (the engine %.1f, ours without it %.1f); instructions %.0f\n",
         n, (m2 - m1) / n, (e2 - e1) / n, ((m2 - e2) - (m1 - e1)) / n, (i2 - i1) / n }'
