#!/usr/bin/env bash
# Copies what probe-gpu.sh and launch-overhead-gpu.sh need from a build
# folder into DEST. With BASE set (a folder holding another build's
# streamsan and libstreamsan_inject.so, and python/ for the MLP), that build
# goes to DEST/base for the streamsan_base and streamsan_precise_base
# configurations.
set -eu
build=$1 dest=$2
src=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dest"; mkdir -p "$dest/cupti"
install -m 755 "$build/bench/precise/libprobe_inject.so" "$build/bench/precise/libbare_cupti.so" \
  "$build/bench/precise/footprint_probe" "$build/bench/precise/launch_loop" "$build/bench/precise/triad" "$build/bench/precise/busy_streams" \
  "$build/bench/precise/graph_repeat" \
  "$build/bench/injection/pipeline" "$build/cli/streamsan" "$dest/"
install -m 755 "$build"/runtime/injection/libstreamsan_inject.so "$dest/" 2>/dev/null ||
  install -m 755 "$build"/inject/libstreamsan_inject.so "$dest/"
strip --strip-debug "$dest"/*.so "$dest/streamsan"
if [[ -n ${BASE:-} ]]; then
  mkdir -p "$dest/base"
  install -m 755 "$BASE/streamsan" "$BASE/libstreamsan_inject.so" "$dest/base/"
  strip --strip-debug "$dest/base/streamsan" "$dest/base/libstreamsan_inject.so"
  # Its PyTorch support, for overhead.sh's streamsan_base (next to its
  # streamsan, where `streamsan run` looks).
  if [[ -d $BASE/python ]]; then cp -r "$BASE/python" "$dest/base/"; fi
fi
cp -L "$(dirname "$(readlink -f "$(command -v nvcc)")")/../lib64/libcupti.so.13" "$dest/cupti/"
install -m 755 "$src/probe-gpu.sh" "$src/launch-overhead-gpu.sh" "$src/profile-loop.sh" "$src/cusolverrf-gpu.sh" "$src/check_footprints.py" \
  "$src/../ratio_ci.py" "$src/../profile/wall-share.sh" "$src/../profile/critical_share.py" "$dest/"
du -sh "$dest"
