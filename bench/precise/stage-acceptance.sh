#!/usr/bin/env bash
# stage-acceptance.sh BUILD SAMPLES_BIN DEST [EXTRA_BIN [WIDE_BIN [LIBRARY_BIN [CCCL_BIN]]]]: what acceptance-gpu.sh needs.
# SAMPLES_BIN: the 42 cases' binaries (../shared/acceptance/build-cuda-samples.sh),
# EXTRA_BIN (or env EXTRA_BIN): the extra corpus's (extra-samples/build-extra-samples.sh),
# staged as DEST/extra/bin with extra-samples.tsv; WIDE_BIN (or env WIDE_BIN): the wide
# corpus's (wide-samples/build-wide-samples.sh), staged as DEST/wide/bin with
# wide-samples.tsv; LIBRARY_BIN (or env LIBRARY_BIN): the CUDA library samples'
# (library-samples/build-library-samples.sh), staged as DEST/library/bin with
# library-samples.tsv; CCCL_BIN (or env CCCL_BIN): Thrust's and CUB's examples
# (cccl-samples/build-cccl-samples.sh), staged as DEST/cccl/bin with
# cccl-samples.tsv; any of them may be empty to leave it out.
set -eu
build=$1 samples=$2 dest=$3 extra=${4:-${EXTRA_BIN:-}} wide=${5:-${WIDE_BIN:-}}
library=${6:-${LIBRARY_BIN:-}} cccl=${7:-${CCCL_BIN:-}}
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
corpus() {  # corpus BIN NAME: BIN as DEST/NAME/bin, NAME-samples/NAME-samples.tsv beside; nothing when BIN is empty
  [[ -n $1 ]] || return 0
  mkdir -p "$dest/$2"
  cp -r "$1" "$dest/$2/bin"
  install -m 644 "$src/$2-samples/$2-samples.tsv" "$dest/"
}
corpus "$extra" extra
corpus "$wide" wide
corpus "$library" library
corpus "$cccl" cccl
du -sh "$dest"
