#!/usr/bin/env bash
# Fuzzes one target of tests/fuzz/ with libFuzzer, then merges what it found
# into the committed corpus (docs/reliability.md).
#
#   tests/fuzz/fuzz.sh TARGET [SECONDS]        (default 3600)
#
# Needs the fuzz build:
#   CXX=clang++ CC=clang meson setup build-fuzz -Dfuzz=true \
#     -Db_sanitize=address,undefined -Db_lundef=false -Dcuda=disabled -Dtests=false -Dbench=false
#   ninja -C build-fuzz
# Runs at the lowest priority. The working corpus, crash artifacts and the
# log (with -print_final_stats) go to build-fuzz/fuzz-work/TARGET/; the
# committed corpus tests/fuzz/corpus/TARGET/ is replaced by the minimized
# union (-merge=1) of itself and what was found, plus its named inputs
# (seed-*), which are kept as they are.
set -euo pipefail
cd "$(dirname "$0")/../.."
target=${1:?usage: tests/fuzz/fuzz.sh TARGET [SECONDS]}
seconds=${2:-3600}
fuzzer=build-fuzz/tests/fuzz/${target}_fuzz
corpus=tests/fuzz/corpus/$target
work=build-fuzz/fuzz-work/$target
[[ -x $fuzzer ]] || { echo "fuzz.sh: no $fuzzer (see the set-up above)" >&2; exit 2; }
mkdir -p "$work/corpus" "$work/artifacts"
cp -n "$corpus"/* "$work/corpus/" 2>/dev/null || true
dict=()
[[ -f tests/fuzz/$target.dict ]] && dict=(-dict="tests/fuzz/$target.dict")

status=0
nice -n 19 "$fuzzer" "$work/corpus" "${dict[@]}" -max_total_time="$seconds" \
  -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" >"$work/fuzz.log" 2>&1 || status=$?
tail -20 "$work/fuzz.log"
if [[ $status -ne 0 ]]; then
  echo "fuzz.sh: $target found something (status $status): $work/artifacts/" >&2
  exit 1
fi

# Minimize: the smallest set of inputs with the same coverage.
rm -rf "$work/merged"
mkdir -p "$work/merged"
nice -n 19 "$fuzzer" -merge=1 "$work/merged" "$corpus" "$work/corpus" >"$work/merge.log" 2>&1
# The named inputs (seed-*: hand-written seeds, and each input that once
# found a bug) stay as they are, whatever the merge kept of them: they are
# regression tests with names (docs/reliability.md).
mkdir -p "$work/named"
rm -f "$work/named"/*
cp "$corpus"/seed-* "$work/named/" 2>/dev/null || true
rm -rf "$corpus"
mkdir -p "$corpus"
cp "$work/merged"/* "$corpus/"
cp "$work/named"/* "$corpus/" 2>/dev/null || true
echo "fuzz.sh: $target: $(ls "$corpus" | wc -l) inputs, $(du -sk "$corpus" | cut -f1) KiB in $corpus"
