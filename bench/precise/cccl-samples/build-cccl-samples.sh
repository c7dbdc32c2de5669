#!/usr/bin/env bash
# Builds the CCCL samples corpus (cccl-samples.tsv): the examples that
# NVIDIA/cccl ships with Thrust and CUB, written by those libraries' own
# authors. What streamsan meets there is what every Thrust or CUB user's
# program does without writing it: device_vector constructors and
# destructors (fill kernels, cudaMalloc, cudaFree), temporary storage
# allocated and freed inside each algorithm, results read back through
# cudaMemcpyAsync on the algorithm's stream and a stream synchronize,
# execution policies on streams of the program's own (par.on, par_nosync.on,
# a custom temporary allocator), CUB's caching allocator reusing blocks, and
# a decoupled look-back whose blocks wait on each other through memory.
#
# With CUCO_SRC, also the examples of NVIDIA/cuCollections (hash maps and
# sets and a Bloom filter built on CCCL), whose containers
# allocate and initialize their storage on a stream and read their
# counters back.
#
#   build-cccl-samples.sh SRC BIN [CUCO_SRC]
#
# SRC: the examples of CCCL v3.0.1 (the version that CUDA 13.0 ships; the
# headers come from the toolkit, not from SRC) and the test helpers CUB's
# examples include:
#   git -C REPO archive v3.0.1 thrust/examples cub/examples cub/test c2h | tar -x -C SRC
# CUCO_SRC: cuCollections' include/ and examples/ at commit dc0f9fc2 (the
# newest stored); it names thrust::identity, which left CCCL in 3.0, so
# each example gets a stand-in (cuco-shim.cuh) included first:
#   git -C REPO archive dc0f9fc2 include examples | tar -x -C CUCO_SRC
# BIN: where the binaries go. Logs in BIN/../buildlogs.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../samples-build-lib.sh
source "$here/../samples-build-lib.sh"
samples_build_setup build-cccl-samples.sh "${1:-}" "${2:-}"
CUCO_SRC=${3:+$(cd "$3" && pwd)}
JOBS=2
BASE=(-O2 -std=c++17 -arch=sm_90 -w --extended-lambda)
sources_build() { # sources_build NAME DIR NVCC-ARGS...: build_in, at most JOBS at a time
    wait_for_slot
    echo "== $1"
    build_in "$@" &
}
thrust_example() { # thrust_example PATH (under thrust/examples, without .cu)
    local dir=$SRC/thrust/examples/$(dirname "$1")
    sources_build "thrust_$(basename "$1")" "$dir" "$SRC/thrust/examples/$1.cu"
}
cub_example() { # cub_example FOLDER NAME (cub/examples/FOLDER/example_FOLDER_NAME.cu)
    local dir=$SRC/cub/examples/$1
    sources_build "cub_$1_$2" "$dir" -I "$SRC/c2h/include" -I "$SRC/cub/test" \
        "$dir/example_$1_$2.cu"
}

for f in "$SRC"/thrust/examples/*.cu "$SRC"/thrust/examples/cuda/*.cu; do
    rel=${f#"$SRC/thrust/examples/"}
    thrust_example "${rel%.cu}"
done
# host.cpp only holds host code, but g++ 12 cannot parse the CUB headers
# that thrust::sort on a host_vector includes, so nvcc compiles it as CUDA.
sources_build thrust_cpp_integration "$SRC/thrust/examples/cpp_integration" \
    "$SRC/thrust/examples/cpp_integration/device.cu" -x cu "$SRC/thrust/examples/cpp_integration/host.cpp"
for f in "$SRC"/cub/examples/device/example_device_*.cu; do
    n=$(basename "$f" .cu); cub_example device "${n#example_device_}"
done
for f in "$SRC"/cub/examples/block/example_block_*.cu; do
    n=$(basename "$f" .cu); cub_example block "${n#example_block_}"
done
if [[ -n $CUCO_SRC ]]; then
    # HyperLogLog's finalizer is constexpr around cuda::std::round, which
    # CCCL 3.0's is not: those two examples are left out.
    for f in "$CUCO_SRC"/examples/*/*.cu; do
        n=$(basename "$(dirname "$f")")_$(basename "$f" .cu)
        [[ $n == hyperloglog_* ]] && continue
        sources_build "cuco_${n%_example}" "$(dirname "$f")" --expt-relaxed-constexpr \
            -include "$here/cuco-shim.cuh" -I "$CUCO_SRC/include" "$f"
    done
fi
wait
built_and_failed
