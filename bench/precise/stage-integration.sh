#!/usr/bin/env bash
# Copies what integration-gpu.sh needs from a build folder into DEST.
set -eu
build=$1 dest=$2
src=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dest"; mkdir -p "$dest/examples" "$dest/bench"
install -m 755 "$build/cli/streamsan" "$build/inject/libstreamsan_inject.so" "$dest/"
strip --strip-debug "$dest/streamsan" "$dest/libstreamsan_inject.so"
for p in "$build"/examples/programs/*_racy "$build"/examples/programs/*_fixed \
         "$build"/examples/programs/api_tour_legacy "$build"/examples/programs/api_tour_per_thread \
         "$build"/examples/programs/real_* "$build"/examples/programs/module_churn \
         "$build/examples/programs/gpu_probe"; do
  # The ThreadSanitizer bridge's examples have their own check
  # (check_tsan_verdict.sh), not this script's.
  [[ $(basename "$p") == tsan_* ]] && continue
  [[ -x $p && -f $p ]] && install -m 755 "$p" "$dest/examples/"
done
install -m 755 "$src/../../examples/programs/check_verdict.sh" "$dest/examples/"
install -m 755 "$build/bench/precise/footprint_probe" "$build/bench/precise/launch_loop" \
  "$build/bench/precise/triad" "$build/bench/precise/busy_streams" "$build/bench/injection/pipeline" \
  "$dest/bench/"
install -m 755 "$src/integration-gpu.sh" "$src/churn-gpu.sh" "$src/check_trace_footprints.py" "$dest/"
du -sh "$dest"
