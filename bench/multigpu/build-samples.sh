#!/usr/bin/env bash
# build-samples.sh SRC BIN: the multi-GPU cuda-samples that the two-GPU
# acceptance runs (samples.tsv), built like ../../../shared/acceptance's
# build-cuda-samples.sh builds the one-GPU ones: nvcc 13, sm_90, static
# cudart, -rdc=true as each sample's CMakeLists.txt sets
# CUDA_SEPARABLE_COMPILATION. SRC is a checkout of NVIDIA/cuda-samples.
set -u
src=$(cd "${1:?usage: build-samples.sh SRC BIN}" && pwd)
mkdir -p "${2:?usage: build-samples.sh SRC BIN}"; bin=$(cd "$2" && pwd)
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
base=(-O2 -arch=sm_90 -std=c++17 -lineinfo --extended-lambda -rdc=true -I "$src/Common")
failed=0
build() {  # build NAME DIR SOURCES...
  local name=$1 dir=$src/Samples/$2; shift 2
  echo "== $name"
  if ! (cd "$dir" && "$nvcc" "${base[@]}" -I . "$@" -o "$bin/$name") >"$bin/$name.build.log" 2>&1; then
    tail -5 "$bin/$name.build.log"; failed=$((failed + 1))
  fi
}
build simpleP2P                      0_Introduction/simpleP2P                            simpleP2P.cu
build simpleMultiGPU                 0_Introduction/simpleMultiGPU                       simpleMultiGPU.cu
build streamOrderedAllocationP2P     2_Concepts_and_Techniques/streamOrderedAllocationP2P streamOrderedAllocationP2P.cu
build conjugateGradientMultiDeviceCG 4_CUDA_Libraries/conjugateGradientMultiDeviceCG     conjugateGradientMultiDeviceCG.cu
exit $((failed > 0))
