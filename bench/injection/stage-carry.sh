#!/usr/bin/env bash
# Copies what gpu-run.sh needs from a build folder into DEST (for the device
# machine, /work/main/.carry/injection): stripped binaries, the examples, the
# workloads and the scripts.
set -eu
build=$1 dest=$2
src=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/examples" "$dest/bench" "$dest/cupti"
install -m 755 "$build/cli/streamsan" "$dest/bin/"
install -m 755 "$build/inject/libstreamsan_inject.so" "$dest/bin/"
strip --strip-debug "$dest/bin/streamsan" "$dest/bin/libstreamsan_inject.so"
cuda_lib=$(dirname "$(readlink -f "$(command -v nvcc)")")/../lib64
cp -L "$cuda_lib/libcupti.so.13" "$dest/cupti/"
for p in "$build"/examples/programs/*_racy "$build"/examples/programs/*_fixed \
         "$build"/examples/programs/api_tour_legacy "$build"/examples/programs/api_tour_per_thread \
         "$build/examples/programs/gpu_probe"; do
  install -m 755 "$p" "$dest/examples/"
done

install -m 755 "$src/../../examples/programs/check_verdict.sh" "$dest/examples/"
install -m 755 "$build/bench/injection/launch_bound" "$build/bench/injection/pipeline" \
  "$src/overhead.sh" "$dest/bench/"
install -m 755 "$src/gpu-run.sh" "$dest/"
du -sh "$dest"
