#!/usr/bin/env bash
# stage.sh BUILD SAMPLES_BIN DEST: what run-gpu.sh needs on a two-GPU machine:
# streamsan and its injection library, the two-GPU examples with their probe
# and verdict script, the multi-GPU cuda-samples (build-samples.sh) and the
# acceptance runner of ../shared/acceptance.
set -eu
build=$1 samples=$2 dest=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dest"; mkdir -p "$dest/examples" "$dest/samples/bin"
install -m 755 "$build/cli/streamsan" "$build/inject/libstreamsan_inject.so" "$dest/"
strip --strip-debug "$dest/streamsan" "$dest/libstreamsan_inject.so"
for name in peer_copy peer_access device_sync_other mempool_peer; do
  install -m 755 "$build/examples/programs/${name}_racy" "$build/examples/programs/${name}_fixed" "$dest/examples/"
done
install -m 755 "$build/examples/programs/gpu_probe_two" "$here/../../examples/programs/check_verdict.sh" "$dest/examples/"
for exe in simpleP2P simpleMultiGPU streamOrderedAllocationP2P conjugateGradientMultiDeviceCG; do
  install -m 755 "$samples/$exe" "$dest/samples/bin/"
done
acceptance=$here/../../../shared/acceptance
[[ -d $acceptance ]] || acceptance=/work/shared/acceptance
install -m 755 "$acceptance/run-cuda-samples.sh" "$here/run-gpu.sh" "$dest/"
install -m 644 "$here/samples.tsv" "$dest/"
du -sh "$dest"
