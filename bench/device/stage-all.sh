#!/usr/bin/env bash
# Stages everything a GPU validation runs into one archive that a device
# call carries (the working tree that travels is limited to 64 MiB):
#
#   bench/device/stage-all.sh BUILD DEST [SAMPLES_BIN [EXTRA_BIN [WIDE_BIN [LIBRARY_BIN [CCCL_BIN]]]]]
#
# BUILD: a build folder (streamsan, the injection library, the examples and
# benchmarks); DEST: a folder git ignores (for example .carry/all);
# SAMPLES_BIN: the cuda-samples acceptance binaries
# (../shared/acceptance/build-cuda-samples.sh), left out when not given or
# empty; EXTRA_BIN: the extra cuda-samples corpus
# (bench/precise/extra-samples/build-extra-samples.sh), WIDE_BIN (or env
# WIDE_BIN): the wide one (bench/precise/wide-samples/build-wide-samples.sh),
# LIBRARY_BIN (or env LIBRARY_BIN): the CUDA library samples
# (bench/precise/library-samples/build-library-samples.sh), CCCL_BIN (or env
# CCCL_BIN): Thrust's and CUB's examples
# (bench/precise/cccl-samples/build-cccl-samples.sh), each left out when not
# given or empty.
# DEST ends up holding all.tar.xz only. On the GPU machine:
#
#   bash bench/device/run-all.sh DEST int acc extra wide library cccl torch probe   (any of them)
set -eu
build=$(cd "$1" && pwd) dest=$2 samples=${3:-} extra=${4:-} wide=${5:-${WIDE_BIN:-}}
library=${6:-${LIBRARY_BIN:-}} cccl=${7:-${CCCL_BIN:-}}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bash "$here/precise/stage-integration.sh" "$build" "$work/int" >/dev/null
bash "$here/torch/stage-torch.sh" "$build" "$work/torch" >/dev/null
bash "$here/precise/stage-probe.sh" "$build" "$work/probe" >/dev/null
if [[ -n $samples || -n $extra || -n $wide || -n $library || -n $cccl ]]; then
  bash "$here/precise/stage-acceptance.sh" "$build" "$samples" "$work/acc" "$extra" "$wide" "$library" "$cccl" >/dev/null
fi
if [[ -f $build/bench/profile/libpc_sampler.so ]]; then
  install -m 755 "$build/bench/profile/libpc_sampler.so" "$work/probe/"
fi
git -C "$here/.." rev-parse --short HEAD > "$work/STAMP" 2>/dev/null || date +%s > "$work/STAMP"
date +%s%N >> "$work/STAMP"
rm -rf "$dest"; mkdir -p "$dest"
tar -C "$work" -cJf "$dest/all.tar.xz" .
du -sh "$dest/all.tar.xz"
