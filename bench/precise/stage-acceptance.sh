#!/usr/bin/env bash
# stage-acceptance.sh BUILD SAMPLES_BIN DEST [EXTRA_BIN]: what acceptance-gpu.sh needs.
# SAMPLES_BIN: the 42 cases' binaries (../shared/acceptance/build-cuda-samples.sh),
# EXTRA_BIN (or env EXTRA_BIN): the extra corpus's (extra-samples/build-extra-samples.sh),
# staged as DEST/extra/bin with extra-samples.tsv; either may be empty to leave it out.
set -eu
build=$1 samples=$2 dest=$3 extra=${4:-${EXTRA_BIN:-}}
src=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dest"; mkdir -p "$dest"
install -m 755 "$build/cli/streamsan" "$build/inject/libstreamsan_inject.so" "$dest/"
strip --strip-debug "$dest/streamsan" "$dest/libstreamsan_inject.so"
acceptance=$src/../../../shared/acceptance
[[ -d $acceptance ]] || acceptance=/work/shared/acceptance
install -m 755 "$acceptance/run-cuda-samples.sh" "$src/acceptance-gpu.sh" "$dest/"
if [[ -n $samples ]]; then
  mkdir -p "$dest/samples"
  cp -r "$samples" "$dest/samples/bin"
  install -m 644 "$acceptance/cuda-samples.tsv" "$dest/"
fi
if [[ -n $extra ]]; then
  mkdir -p "$dest/extra"
  cp -r "$extra" "$dest/extra/bin"
  install -m 644 "$src/extra-samples/extra-samples.tsv" "$dest/"
fi
du -sh "$dest"
