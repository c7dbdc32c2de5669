#!/usr/bin/env bash
# Instructions a launch of our callbacks in libstreamsan_inject.so, the
# engine's share apart (Note [The library as the driver loads it] in
# library_bench.cpp): callgrind on injection_library_bench at two lengths,
# the difference divided by the launches between them, so that start-up
# and exit drop out.
#
#   bench/injection/library-instructions.sh BUILD [LIBRARY]
#
# BUILD holds the bench and the fakes (tests/inject); LIBRARY defaults to
# BUILD's own injection library, and may be another build's to compare.
# LIBRARY_BENCH_STREAMS=1 (passed on to the bench) counts a single-stream
# loop instead of the two-stream launch loop; LIBRARY_BENCH_CHAINS=2 has the
# launches come in turn from two call chains of different depth.
# The engine runs inline (STREAMSAN_ENGINE_THREAD=0): with its thread,
# valgrind's serialized threads let the ring fill or not from run to run,
# and the program thread's count moved by 500 instructions a launch
# between two runs of one library; inline, two runs agree exactly.
set -eu
build=$(cd "$1" && pwd)
library=${2:-$build/inject/libstreamsan_inject.so}
[[ -f $library ]] || { echo "library-instructions.sh: no library at $library" >&2; exit 2; }
script=library-instructions.sh
# shellcheck source=callgrind-setup.sh
source "$(dirname "$0")/callgrind-setup.sh"
export STREAMSAN_ENGINE_THREAD=0 STREAMSAN_INJECTION_LIB=$library
# inclusive LAUNCHES: the callbacks' and the engine's inclusive counts.
inclusive() {
  valgrind --tool=callgrind --callgrind-out-file="$work/out" \
    "$build/bench/injection/injection_library_bench" "$1" >/dev/null 2>"$work/err" ||
    { echo "library-instructions.sh: the bench failed:" >&2; tail -5 "$work/err" >&2; exit 1; }
  callgrind_annotate --inclusive=yes --threshold=100 "$work/out" >"$work/annotated"
  local callbacks engine
  callbacks=$(grep -m1 'sanitizer_source::impl::trampoline' "$work/annotated" | awk '{ gsub(",", "", $1); print $1 }')
  engine=$(grep -m1 'engine::on_record(' "$work/annotated" | awk '{ gsub(",", "", $1); print $1 }')
  [[ -n $callbacks && -n $engine ]] || { echo "library-instructions.sh: no callbacks or engine in the profile" >&2; exit 1; }
  echo "$callbacks $engine"
}
# Assigned first: a failed measurement then stops the script (set -e).
first=$(inclusive 10000)
second=$(inclusive 30000)
read -r c1 e1 <<<"$first"
read -r c2 e2 <<<"$second"
awk -v c1="$c1" -v e1="$e1" -v c2="$c2" -v e2="$e2" 'BEGIN {
  printf "instructions a launch: callbacks %.0f, of which the engine %.0f, ours without the engine %.0f\n",
         (c2 - c1) / 20000, (e2 - e1) / 20000, ((c2 - e2) - (c1 - e1)) / 20000 }'
