#!/bin/bash
# Builds the cuda-samples of extra-samples.tsv for sm_90: samples beyond the
# 42 runs of ../shared/acceptance/cuda-samples.tsv, chosen for the APIs those
# leave out (IPC through fork+exec, virtual memory management, driver-API
# contexts moved between threads, PTX JIT, dynamic parallelism, the device
# heap, L2 access-policy windows, system-wide atomics with the host, OpenMP,
# Thrust, cuBLAS-XT, cuSOLVER, cuRAND, cuFFT).
# usage: build-extra-samples.sh SRC BIN
#   SRC: a checkout of NVIDIA/cuda-samples (the one of build-cuda-samples.sh), holding Samples/ and Common/
#   BIN: where the binaries and their run-time files go; logs go to BIN/../buildlogs
# Flags mirror each sample's CMakeLists.txt, as build-cuda-samples.sh does:
# -std=c++17 --extended-lambda -lineinfo, CUDA_SEPARABLE_COMPILATION ON ->
# -rdc=true, cudart static (nvcc's default), the CUDA libraries dynamic (only
# their shared libraries are installed here), libcuda from the stub for the
# driver-API samples. A library CMake links but the source never calls is
# left out, so the GPU machine need not have it. Two nvcc run at a time
# (JOBS=N for another count), under nice.
set -u
source "$(dirname "$0")/../samples-build-lib.sh"
samples_build_setup build-extra-samples.sh "$@"
BASE=(-O2 -arch=sm_90 -std=c++17 -lineinfo --extended-lambda -I "$SRC/Common")
RDC=(-rdc=true)
LIB64=/usr/local/cuda/lib64
DRV=(-L$LIB64/stubs -lcuda)
MP=$SRC/Common/helper_multiprocess.cpp
JOBS=${JOBS:-2}


I=0_Introduction C=2_Concepts_and_Techniques F=3_CUDA_Features L=4_CUDA_Libraries D=5_Domain_Specific P=6_Performance
# The slowest (Thrust) first, so that the two nvcc stay busy to the end.
b segmentationTreeThrust   $C/segmentationTreeThrust   "${RDC[@]}" segmentationTree.cu
data $C/segmentationTreeThrust data/test.ppm data/ref_00.ppm data/ref_09.ppm
b radixSortThrust          $C/radixSortThrust          "${RDC[@]}" radixSortThrust.cu

b cudaOpenMP               $I/cudaOpenMP               "${RDC[@]}" -Xcompiler -fopenmp cudaOpenMP.cu -lgomp
b simpleMultiGPU           $I/simpleMultiGPU           "${RDC[@]}" simpleMultiGPU.cu
b simpleIPC                $I/simpleIPC                "${RDC[@]}" simpleIPC.cu "$MP"
b systemWideAtomics        $I/systemWideAtomics        "${RDC[@]}" systemWideAtomics.cu
b simpleAttributes         $I/simpleAttributes         "${RDC[@]}" simpleAttributes.cu
# driver API: libcuda from the stub at link time, the real driver at run time; CMake
# builds the modules with the sample's own -gencode (here sm_90) and copies them next to it
b vectorAddMMAP            $I/vectorAddMMAP            "${RDC[@]}" vectorAddMMAP.cpp multidevicealloc_memmap.cpp "${DRV[@]}"
module $I/vectorAddMMAP vectorAdd_kernel.cu vectorAdd_kernel64.fatbin -fatbin
b matrixMulDrv             $I/matrixMulDrv             "${RDC[@]}" matrixMulDrv.cpp "${DRV[@]}"
module $I/matrixMulDrv matrixMul_kernel.cu matrixMul_kernel64.fatbin -fatbin

b streamOrderedAllocationIPC $C/streamOrderedAllocationIPC "${RDC[@]}" streamOrderedAllocationIPC.cu "$MP" "${DRV[@]}"
b threadMigration          $C/threadMigration          "${RDC[@]}" threadMigration.cpp "${DRV[@]}" -lpthread
module $C/threadMigration threadMigration_kernel.cu threadMigration_kernel64.fatbin -fatbin

b memMapIPCDrv             $F/memMapIPCDrv             "${RDC[@]}" memMapIpc.cpp "$MP" "${DRV[@]}" -lrt
module $F/memMapIPCDrv memMapIpc_kernel.cu memMapIpc_kernel64.ptx -ptx
b ptxjit                   $F/ptxjit                   "${RDC[@]}" ptxjit.cpp "${DRV[@]}"
module $F/ptxjit ptxjit_kernel.cu ptxjit_kernel64.ptx -ptx
# dynamic parallelism: -rdc=true makes nvcc link libcudadevrt, as CMake's device link does
b cdpSimplePrint           $F/cdpSimplePrint           "${RDC[@]}" cdpSimplePrint.cu
b cdpSimpleQuicksort       $F/cdpSimpleQuicksort       "${RDC[@]}" cdpSimpleQuicksort.cu
b newdelete                $F/newdelete                "${RDC[@]}" newdelete.cu
b binaryPartitionCG        $F/binaryPartitionCG        "${RDC[@]}" binaryPartitionCG.cu

# cuBLAS / cuSPARSE / cuSOLVER / cuRAND / cuFFT: shared libraries only -> dynamic link
b conjugateGradient        $L/conjugateGradient        "${RDC[@]}" main.cpp -L$LIB64 -lcublas -lcusparse
b conjugateGradientUM      $L/conjugateGradientUM      "${RDC[@]}" main.cpp -L$LIB64 -lcublas -lcusparse
b conjugateGradientPrecond $L/conjugateGradientPrecond "${RDC[@]}" main.cpp -L$LIB64 -lcublas -lcusparse
b matrixMulCUBLAS          $L/matrixMulCUBLAS          "${RDC[@]}" matrixMulCUBLAS.cpp -L$LIB64 -lcublas
b simpleCUBLASXT           $L/simpleCUBLASXT           "${RDC[@]}" simpleCUBLASXT.cpp -L$LIB64 -lcublas
b simpleCUBLAS_LU          $L/simpleCUBLAS_LU          "${RDC[@]}" simpleCUBLAS_LU.cpp -L$LIB64 -lcublas
# CMake's CUDA::cusolver brings cuSPARSE along; the sample calls cusparseGetMatIndexBase
b cuSolverDn_LinearSolver  $L/cuSolverDn_LinearSolver  "${RDC[@]}" cuSolverDn_LinearSolver.cpp mmio.c mmio_wrapper.cpp \
                                                       -L$LIB64 -lcublas -lcusolver -lcusparse
data $L/cuSolverDn_LinearSolver gr_900_900_crg.mtx lap3D_7pt_n20.mtx
b MersenneTwisterGP11213   $L/MersenneTwisterGP11213   "${RDC[@]}" MersenneTwister.cpp -L$LIB64 -lcurand
# simpleCUFFT_callback is left out: CMake links cufft_static (legacy callbacks need the
# static cuFFT), and this toolkit has no libcufft_static.a.

# cuRAND's device API in the kernels, its host generator in the CPU reference
b MonteCarloMultiGPU       $D/MonteCarloMultiGPU       "${RDC[@]}" MonteCarlo_gold.cpp MonteCarlo_kernel.cu multithreading.cpp \
                                                       MonteCarloMultiGPU.cpp -L$LIB64 -lcurand
b convolutionFFT2D         $D/convolutionFFT2D         "${RDC[@]}" convolutionFFT2D.cu convolutionFFT2D_gold.cpp main.cpp -L$LIB64 -lcufft
b FDTD3d                   $D/FDTD3d                   "${RDC[@]}" -I inc src/FDTD3d.cpp src/FDTD3dGPU.cu src/FDTD3dReference.cpp
b transpose                $P/transpose                "${RDC[@]}" transpose.cu
wait

built_and_failed
