#!/usr/bin/env bash
# Copies what torch-gpu.sh needs from a build folder into DEST (one folder,
# a few MiB): streamsan, the injection library, the PyTorch support
# (python/, next to streamsan, where `streamsan run` looks), the torch test
# programs and their checker, tests/frameworks' programs, and the MLP
# benchmark.
#   stage-torch.sh BUILD DEST     then on the GPU machine: bash DEST/torch-gpu.sh
set -eu
build=$1 dest=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$dest"; mkdir -p "$dest/python/streamsan_torch" "$dest/tests" "$dest/bench"
install -m 755 "$build/cli/streamsan" "$build/inject/libstreamsan_inject.so" "$dest/"
strip --strip-debug "$dest/streamsan" "$dest/libstreamsan_inject.so"
install -m 644 "$build/python/sitecustomize.py" "$dest/python/"
install -m 644 "$build"/python/streamsan_torch/*.py "$build"/python/streamsan_torch/op_hook.cpp \
  "$dest/python/streamsan_torch/"
cp -r "$src/tests/torch/programs" "$dest/tests/"
# Programs of other Python frameworks (CuPy, JAX, cuda-python), run by
# torch-gpu.sh too.
mkdir -p "$dest/tests/programs/frameworks"
install -m 644 "$src"/tests/frameworks/*.py "$dest/tests/programs/frameworks/"
install -m 755 "$src/tests/torch/check_torch.sh" "$dest/tests/"
install -m 644 "$src/tests/torch/op_hook_test.py" "$dest/tests/"
install -m 644 "$src/tests/torch/programs.txt" "$dest/tests/"
install -m 644 "$src/bench/torch/mlp_bench.py" "$src/bench/torch/triton_hooks_bench.py" "$dest/bench/"
install -m 755 "$src/bench/torch/overhead.sh" "$src/bench/torch/hook-alternate.sh" "$src/bench/torch/hook-steps.sh" \
  "$src/bench/ratio_ci.py" "$dest/bench/"
install -m 755 "$src/bench/torch/torch-gpu.sh" "$src/bench/torch/profile-mlp.sh" "$dest/"
du -sh "$dest"
