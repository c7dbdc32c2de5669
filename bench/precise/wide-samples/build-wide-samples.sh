#!/bin/bash
# Builds the cuda-samples of wide-samples.tsv for sm_90: samples in neither
# ../shared/acceptance/cuda-samples.tsv nor extra-samples.tsv, chosen to widen
# what the sanitizer's model meets: CUDA arrays, textures and surfaces
# (layered, cubemap, pitch-linear, driver-API texture objects),
# cudaMallocPitch/2D copies, __constant__/__device__ symbols, cooperative
# launches and warp intrinsics, dynamic parallelism with device-side
# allocation, tensor cores (wmma half/int8/double), compressible VMM memory,
# managed memory attached to a stream, NVRTC and nvJitLink (LTO), the driver
# API through dlopen, cuSOLVER's sparse and refactorization APIs, cuRAND's
# device and host APIs, Thrust with textures.
# usage: build-wide-samples.sh SRC BIN
#   SRC: a checkout of NVIDIA/cuda-samples (the one of build-cuda-samples.sh), holding Samples/ and Common/
#   BIN: where the binaries and their run-time files go; logs go to BIN/../buildlogs
# Flags as build-extra-samples.sh: each sample's CMakeLists.txt mirrored,
# -std=c++17 --extended-lambda -lineinfo, CUDA_SEPARABLE_COMPILATION ON (every
# sample here) -> -rdc=true (which also links libcudadevrt for the cdp*
# samples, as CMake's device link does), cudart static (nvcc's default), the CUDA libraries dynamic (only
# their shared libraries are installed here), libcuda from the stub for the
# driver-API samples. A library CMake links but the source never calls is
# left out, so the GPU machine need not have it. Two nvcc run at a time
# (JOBS=N for another count), under nice.
#
# Failed to build with nvcc 13.0 and dropped: none (all 44 below build).
# Left out on purpose: samples needing GL, Vulkan, EGL, D3D, NPP, nvJPEG,
# FreeImage, MPI, NvSci, libNVVM (7_libNVVM) or two GPUs (simpleCUFFT_MGPU,
# simpleCUFFT_2d_MGPU, p2pBandwidthLatencyTest), the device queries,
# simpleAssert(_nvrtc) (fails on purpose), and twins of what is here:
# bf16/tf32TensorCoreGemm (the same wmma kernels and calls as the three kept),
# MC_EstimatePiP/InlineQ, MC_SingleAsianOptionP, the other *_nvrtc samples,
# and plain cudaMemcpy-kernel-cudaMemcpy programs (template, clock, inlinePTX,
# scalarProd, alignedTypes, simpleTemplates, BlackScholes, SobolQRNG,
# fastWalshTransform, dwtHaar1D).
set -u
source "$(dirname "$0")/../samples-build-lib.sh"
samples_build_setup build-wide-samples.sh "$@"
BASE=(-O2 -arch=sm_90 -std=c++17 -lineinfo --extended-lambda -rdc=true -I "$SRC/Common")
LIB64=/usr/local/cuda/lib64
DRV=(-L$LIB64/stubs -lcuda)
JOBS=${JOBS:-2}


I=0_Introduction C=2_Concepts_and_Techniques F=3_CUDA_Features L=4_CUDA_Libraries D=5_Domain_Specific
# The slowest (Thrust, dynamic parallelism, tensor cores) first, so that the two nvcc stay busy to the end.
b lineOfSight                 $L/lineOfSight lineOfSight.cu
b cdpAdvancedQuicksort        $F/cdpAdvancedQuicksort cdpAdvancedQuicksort.cu cdpBitonicSort.cu
b cdpQuadtree                 $F/cdpQuadtree cdpQuadtree.cu
b cdpBezierTessellation       $F/cdpBezierTessellation BezierLineCDP.cu
b cudaTensorCoreGemm          $F/cudaTensorCoreGemm cudaTensorCoreGemm.cu
b immaTensorCoreGemm          $F/immaTensorCoreGemm immaTensorCoreGemm.cu
b dmmaTensorCoreGemm          $F/dmmaTensorCoreGemm dmmaTensorCoreGemm.cu
b eigenvalues                 $C/eigenvalues bisect_large.cu bisect_small.cu bisect_util.cu gerschgorin.cpp \
                                main.cu matlab.cpp
data $C/eigenvalues data/diagonal.dat data/superdiagonal.dat data/reference.dat

# CUDA arrays, textures, surfaces, pitched memory
b simpleTexture               $I/simpleTexture simpleTexture.cu
b simpleSurfaceWrite          $I/simpleSurfaceWrite simpleSurfaceWrite.cu
data $I/simpleTexture data/teapot512.pgm data/ref_rotated.pgm
b simplePitchLinearTexture    $I/simplePitchLinearTexture simplePitchLinearTexture.cu
b simpleLayeredTexture        $I/simpleLayeredTexture simpleLayeredTexture.cu
b simpleCubemapTexture        $I/simpleCubemapTexture simpleCubemapTexture.cu
# driver API: libcuda from the stub at link time, the real driver at run time; CMake
# builds the module with the sample's own -gencode (here sm_90) and copies it next to it
b simpleTextureDrv            $I/simpleTextureDrv simpleTextureDrv.cpp "${DRV[@]}"
module $I/simpleTextureDrv simpleTexture_kernel.cu simpleTexture_kernel64.fatbin -fatbin
b convolutionTexture          $C/convolutionTexture convolutionTexture.cu convolutionTexture_gold.cpp main.cpp
b dct8x8                      $C/dct8x8 dct8x8.cu BmpUtil.cpp DCT8x8_Gold.cpp
data $C/dct8x8 data/teapot512.bmp
b HSOpticalFlow               $D/HSOpticalFlow flowCUDA.cu flowGold.cpp main.cpp
data $D/HSOpticalFlow data/frame10.ppm data/frame11.ppm
b stereoDisparity             $D/stereoDisparity stereoDisparity.cu
data $D/stereoDisparity data/stereo.im0.640x533.ppm data/stereo.im1.640x533.ppm
b dxtc                        $D/dxtc dxtc.cu
data $D/dxtc data/teapot512_std.ppm data/teapot512_ref.dds
b NV12toBGRandResize          $D/NV12toBGRandResize bgr_resize.cu nv12_resize.cu nv12_to_bgr_planar.cu \
                                resize_convert_main.cpp utils.cu
data $D/NV12toBGRandResize data/test640x480.nv12

# __constant__ and __device__ symbols
b convolutionSeparable        $C/convolutionSeparable convolutionSeparable.cu convolutionSeparable_gold.cpp main.cpp
b binomialOptions             $D/binomialOptions binomialOptions.cpp binomialOptions_gold.cpp binomialOptions_kernel.cu
b quasirandomGenerator        $D/quasirandomGenerator quasirandomGenerator.cpp quasirandomGenerator_gold.cpp \
                                quasirandomGenerator_kernel.cu

# cooperative groups, warp intrinsics, atomics, half precision, device printf
b reductionMultiBlockCG       $C/reductionMultiBlockCG reductionMultiBlockCG.cu
b warpAggregatedAtomicsCG     $F/warpAggregatedAtomicsCG warpAggregatedAtomicsCG.cu
b shfl_scan                   $C/shfl_scan shfl_scan.cu
b simpleVoteIntrinsics        $I/simpleVoteIntrinsics simpleVoteIntrinsics.cu
b simpleAtomicIntrinsics      $I/simpleAtomicIntrinsics simpleAtomicIntrinsics.cu simpleAtomicIntrinsics_cpu.cpp
b fp16ScalarProduct           $I/fp16ScalarProduct fp16ScalarProduct.cu
b simplePrintf                $I/simplePrintf simplePrintf.cu
b simpleOccupancy             $I/simpleOccupancy simpleOccupancy.cu
b interval                    $C/interval interval.cu
b mergeSort                   $I/mergeSort mergeSort.cu main.cpp mergeSort_host.cpp mergeSort_validate.cpp
b sortingNetworks             $C/sortingNetworks main.cpp bitonicSort.cu sortingNetworks_validate.cpp

# compressible memory through the driver's VMM calls, runtime kernels on it
b cudaCompressibleMemory      $F/cudaCompressibleMemory compMalloc.cpp saxpy.cu "${DRV[@]}"
# the driver API through dlopen("libcuda.so.1") and dlsym: no libcuda at link time
# (every cu* symbol is the sample's own cuda_drvapi_dynlink.c); CMake links -no-pie and -ldl
b matrixMulDynlinkJIT         $I/matrixMulDynlinkJIT -Xcompiler -no-pie cuda_drvapi_dynlink.c matrixMulDynlinkJIT.cpp \
                                matrixMul_gold.cpp matrixMul_kernel_32_ptxdump.c matrixMul_kernel_64_ptxdump.c -ldl
# NVRTC (and nvJitLink): from torch's nvidia/cu13/lib on the GPU machine
b clock_nvrtc                 $I/clock_nvrtc clock.cpp -L$LIB64 -lnvrtc "${DRV[@]}"
data $I/clock_nvrtc clock_kernel.cu
b jitLto                      $L/jitLto jitLto.cpp -L$LIB64 -lnvrtc -lnvJitLink "${DRV[@]}"

# cuRAND: device API only (no library) and host API
b MC_EstimatePiInlineP        $C/MC_EstimatePiInlineP -I inc src/main.cpp src/piestimator.cu src/test.cpp
b MC_EstimatePiQ              $C/MC_EstimatePiQ -I inc src/main.cpp src/piestimator.cu src/test.cpp -L$LIB64 -lcurand
# cuSOLVER sparse and refactorization: CMake links cuBLAS and cuSOLVER (which brings
# cuSPARSE along); the sources call cuSOLVER and cuSPARSE, not cuBLAS
SOLVER=(mmio.c mmio_wrapper.cpp -L$LIB64 -lcusolver -lcusparse)
b cuSolverRf                  $L/cuSolverRf cuSolverRf.cpp "${SOLVER[@]}"
b cuSolverSp_LinearSolver     $L/cuSolverSp_LinearSolver cuSolverSp_LinearSolver.cpp "${SOLVER[@]}"
b cuSolverSp_LowlevelCholesky $L/cuSolverSp_LowlevelCholesky cuSolverSp_LowlevelCholesky.cpp "${SOLVER[@]}"
b cuSolverSp_LowlevelQR       $L/cuSolverSp_LowlevelQR cuSolverSp_LowlevelQR.cpp "${SOLVER[@]}"
data $L/cuSolverSp_LowlevelQR lap2D_5pt_n100.mtx lap2D_5pt_n32.mtx
wait

built_and_failed
