#!/usr/bin/env bash
# stage-acceptance.sh BUILD SAMPLES_BIN DEST: what acceptance-gpu.sh needs.
set -eu
build=$1 samples=$2 dest=$3
src=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dest"; mkdir -p "$dest/samples"
install -m 755 "$build/cli/streamsan" "$build/inject/libstreamsan_inject.so" "$dest/"
strip --strip-debug "$dest/streamsan" "$dest/libstreamsan_inject.so"
cp -r "$samples" "$dest/samples/bin"
acceptance=$src/../../../shared/acceptance
[[ -d $acceptance ]] || acceptance=/work/shared/acceptance
install -m 755 "$acceptance/run-cuda-samples.sh" "$src/acceptance-gpu.sh" "$dest/"
install -m 644 "$acceptance/cuda-samples.tsv" "$dest/"
du -sh "$dest"
