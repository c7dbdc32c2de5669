#!/usr/bin/env bash
# Builds the CUDA library samples corpus (library-samples.tsv): programs of
# NVIDIA/CUDALibrarySamples, written by the libraries' own authors, that
# drive cuBLAS, cuBLASLt, cuFFT, cuSOLVER and cuRAND on a stream of their
# own (pageable host vectors copied asynchronously), and cuSPARSE on the
# legacy default stream. What streamsan meets there is the libraries'
# insides: their workspaces, their internal kernels and copies, values the
# host reads back between phases, a cuSPARSE graph capture. On the GPU
# machine the libraries come with its PyTorch (acceptance-gpu.sh puts them
# on LD_LIBRARY_PATH).
#
#   build-library-samples.sh SRC BIN
#
# SRC: a checkout of https://github.com/NVIDIA/CUDALibrarySamples (only its
# cuBLAS, cuBLASLt, cuFFT, cuSOLVER, cuSPARSE and cuRAND folders are read);
# BIN: where the binaries go. Logs in BIN/../buildlogs. Built against CUDA
# 13.0 (the GPU machine's driver is 13.0's) from commit 3437729, but for
# cuBLASLt/ from 0d3f70c: its later helpers need a newer cuBLASLt's enums
# (and LtSgemmGreenContext, left out, the runtime's green contexts of 13.1).
#   git -C REPO archive 3437729 cuBLAS cuFFT cuSOLVER cuSPARSE cuRAND | tar -x -C SRC
#   git -C REPO archive 0d3f70c cuBLASLt | tar -x -C SRC
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../samples-build-lib.sh
source "$here/../samples-build-lib.sh"
samples_build_setup build-library-samples.sh "${1:-}" "${2:-}"
JOBS=2
BASE=(-O2 -std=c++17 -arch=sm_90 -w)
# These samples are laid out LIBRARY/.../NAME/SOURCE, not Samples/DIR, so
# they go to the shared build_in with their own folders and sources.
lib_build() { # lib_build NAME SOURCE(relative to SRC) UTILS(relative to SRC) LIBS...
    local name=$1 source=$SRC/$2 utils=$SRC/$3; shift 3
    sources_build "$name" "$(dirname "$source")" -x cu -I "$utils" "$source" "$@"
}
# cuBLASLt's samples are a main.cpp, the sample's .cu (if any) and
# Common/helpers.cpp.
lt() { # lt FOLDER (under cuBLASLt)
    local dir=$SRC/cuBLASLt/$1 f sources=()
    for f in "$dir"/*.cu "$dir"/main.cpp "$SRC/cuBLASLt/Common/helpers.cpp"; do
      [[ -f $f ]] && sources+=("$f")
    done
    sources_build "cublaslt_$1" "$dir" -I "$SRC/cuBLASLt/Common" "${sources[@]}" -lcublasLt
}
sources_build() { # sources_build NAME DIR NVCC-ARGS...: build_in, at most JOBS at a time
    wait_for_slot
    echo "== $1"
    build_in "$@" &
}
blas() { lib_build "cublas_$1" "cuBLAS/$2" cuBLAS/utils -lcublas; }
fft() { lib_build "cufft_$1" "cuFFT/$1/$1_example.cpp" cuFFT/utils -lcufft; }
solver() { lib_build "cusolver_$1" "cuSOLVER/$2" cuSOLVER/utils -lcusolver -lcublas; }
sparse() { lib_build "cusparse_$1" "cuSPARSE/$1/$1_example.c" cuSPARSE -lcusparse -lcublas; }
rand() { lib_build "curand_$1" "cuRAND/Host/$2" cuRAND/utils -lcurand; }

blas gemm Level-3/gemm/cublas_gemm_example.cu
blas gemmBatched Level-3/gemmBatched/cublas_gemmBatched_example.cu
blas gemmStridedBatched Level-3/gemmStridedBatched/cublas_gemmStridedBatched_example.cu
blas trsm Level-3/trsm/cublas_trsm_example.cu
blas syrk Level-3/syrk/cublas_syrk_example.cu
blas gemv Level-2/gemv/cublas_gemv_example.cu
blas dot Level-1/dot/cublas_dot_example.cu
blas nrm2 Level-1/nrm2/cublas_nrm2_example.cu
lt LtSgemm
lt LtSgemmSimpleAutoTuning
lt LtSgemmCustomFind
lt LtHSHgemmStridedBatchSimple
lt LtIgemmTensor
lt LtFp8Matmul
lt LtDgemmPresetAlgo
lt LtPlanarComplex
fft 1d_c2c
fft 1d_r2c_c2r
fft 2d_c2r_r2c
fft 3d_c2c
solver Xgeqrf Xgeqrf/cusolver_Xgeqrf_example.cu
solver Xgesvd Xgesvd/cusolver_Xgesvd_example.cu
solver Xgetrf Xgetrf/cusolver_Xgetrf_example.cu
solver Xpotrf Xpotrf/cusolver_Xpotrf_example.cu
solver Xsyevd Xsyevd/cusolver_Xsyevd_example.cu
solver gesvdj gesvdj/cusolver_gesvdj_example.cu
solver syevj syevj/cusolver_syevj_example.cu
solver syevjBatched syevjBatched/cusolver_syevjBatched_example.cu
solver potrfBatched potrfBatched/cusolver_potrfBatched_example.cu
solver ormqr ormqr/cusolver_ormqr_example.cu
sparse spmv_csr
sparse spmm_csr
sparse spgemm
sparse sparse2dense_csr
sparse dense2sparse_csr
sparse graph_capture
sparse cg
rand philox_uniform philox/curand_philox_uniform_example.cpp
rand mtgp32_normal mtgp32/curand_mtgp32_normal_example.cpp
rand sobol32_uniform sobol32/curand_sobol32_uniform_example.cpp
wait
built_and_failed
