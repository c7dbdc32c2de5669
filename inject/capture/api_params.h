// The callback ids and parameter structs of every runtime and driver API
// call, without cupti.h (Note [One table for every source] in api_call.h):
// what the handler files decode.
#pragma once

#if defined(_CUPTI_H_)
#error "cupti.h declares all of this too; only inject/cupti includes cupti.h"
#endif

#include <cuda.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

// The meta headers name the parameter types of obsolete API versions, which
// cuda.h no longer declares; cupti.h declares the same placeholders before
// it includes them. (The meta headers have no include guards: include them
// through this header only.)
typedef unsigned int CUdeviceptr_v1;
typedef struct CUDA_MEMCPY2D_v1_st { int dummy; } CUDA_MEMCPY2D_v1;
typedef struct CUDA_MEMCPY3D_v1_st { int dummy; } CUDA_MEMCPY3D_v1;
typedef struct CUDA_ARRAY_DESCRIPTOR_v1_st { int dummy; } CUDA_ARRAY_DESCRIPTOR_v1;
typedef struct CUDA_ARRAY3D_DESCRIPTOR_v1_st { int dummy; } CUDA_ARRAY3D_DESCRIPTOR_v1;

#include <generated_cuda_runtime_api_meta.h>
#include <generated_cuda_meta.h>
