#include "inject/capture/api_classification.h"

#include <gtest/gtest.h>

namespace streamsan::injection {
namespace {

TEST(ApiClassification, BaseNameDropsVersionAndStreamVariant) {
  EXPECT_EQ(base_api_name("cudaMemcpyAsync_ptsz_v7000"), "cudaMemcpyAsync");
  EXPECT_EQ(base_api_name("cuMemcpyHtoD_v2_ptds"), "cuMemcpyHtoD");
  EXPECT_EQ(base_api_name("cuGraphInstantiate_v2"), "cuGraphInstantiate");
  EXPECT_EQ(base_api_name("cuLaunchKernel"), "cuLaunchKernel");
  EXPECT_EQ(base_api_name("cuStreamGetCaptureInfo_v3_ptsz"), "cuStreamGetCaptureInfo");
}

TEST(ApiClassification, QueriesAndConfigurationAreInert) {
  for (const char* name :
       {"cudaGetDevice_v3020", "cudaGetLastError_v3020", "cudaPeekAtLastError_v3020",
        "cudaFuncGetAttributes_v3020", "cudaStreamGetPriority_v5050",
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor_v6000", "cudaSetDevice_v3020",
        "__cudaPushCallConfiguration_v13000", "__cudaRegisterFunction_v13000",
        "cudaGraphAddKernelNode_v10000", "cudaGraphCreate_v10000", "cudaEventElapsedTime_v3020",
        "cuCtxGetCurrent", "cuModuleGetFunction", "cuLibraryLoadData", "cuDeviceGetAttribute",
        "cuMemGetInfo_v2", "cuPointerGetAttribute", "cudaMemPrefetchAsync_v12020",
        "cudaStreamIsCapturing_v10000", "cuGraphNodeGetType"}) {
    EXPECT_EQ(classify_api(name), api_class::inert) << name;
  }
}

TEST(ApiClassification, OrderingAndMemoryCallsWithoutHandlerAreUnmodelled) {
  for (const char* name :
       {"cudaMallocArray_v3020", "cudaMemcpy2DToArray_v3020", "cudaIpcOpenMemHandle_v4010",
        "cudaSignalExternalSemaphoresAsync_v10000", "cuStreamWaitValue32_v2",
        "cuStreamWriteValue64", "cudaGraphExecKernelNodeSetParams_v10010",
        "cudaGraphExecUpdate_v10020", "cudaStreamAttachMemAsync_v6000", "cuMemMap",
        "cuMemCreate", "cuCtxWaitEvent", "cudaDeviceReset_v3020",
        "cudaMemcpy3DBatchAsync_v13000", "cudaLaunchCooperativeKernelMultiDevice_v9000",
        "cuGraphicsMapResources", "cuSomeFutureApi"}) {
    EXPECT_EQ(classify_api(name), api_class::unmodelled) << name;
  }
}

TEST(ApiClassification, HandledCallsThatLookInertStayObserved) {
  EXPECT_EQ(classify_api("__cudaLaunchKernel_v13000"), api_class::observed);
  EXPECT_EQ(classify_api("__cudaLaunchKernel_ptsz_v13000"), api_class::observed);
  EXPECT_EQ(classify_api("cuCtxSynchronize"), api_class::observed);
  EXPECT_EQ(classify_api("cuModuleUnload"), api_class::observed);
  EXPECT_EQ(classify_api("cuLibraryUnload"), api_class::observed);
  // Handled calls are never inert (their callbacks must stay on).
  for (const char* name :
       {"cudaLaunchKernel_v7000", "cudaMemcpyAsync_v3020", "cudaStreamWaitEvent_v3020",
        "cudaEventRecord_v3020", "cudaStreamSynchronize_v3020", "cudaDeviceSynchronize_v3020",
        "cudaMalloc_v3020", "cudaFreeAsync_v11020", "cudaGraphLaunch_v10000",
        "cudaGraphInstantiate_v12000", "cudaGraphExecDestroy_v10000",
        "cudaStreamBeginCapture_v10000", "cudaStreamEndCapture_v10000",
        "cudaLaunchHostFunc_v10000", "cudaStreamQuery_v3020", "cudaEventQuery_v3020",
        "cudaStreamCreateWithPriority_v5050", "cudaStreamDestroy_v5050", "cuLaunchKernel",
        "cuMemAllocAsync", "cuStreamCreate", "cuEventRecordWithFlags", "cuMemsetD32Async",
        "cuGraphInstantiateWithFlags", "cuStreamBeginCaptureToGraph", "cuMemHostRegister_v2"}) {
    EXPECT_NE(classify_api(name), api_class::inert) << name;
  }
}

}  // namespace
}  // namespace streamsan::injection
