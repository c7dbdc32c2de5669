#include "inject/capture/api_classification.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "inject/capture/api_names.h"
#include "inject/capture/api_params.h"
#include "inject/capture/api_table.h"

namespace streamsan::injection {
namespace {

// Every API name of CUDA's runtime and driver callback lists.
std::vector<std::string_view> callback_apis() {
  std::vector<std::string_view> out;
  for (const api_domain d : {api_domain::runtime, api_domain::driver}) {
    for (const std::string_view name : api_names(d)) {
      if (!name.empty()) out.push_back(name);
    }
  }
  return out;
}

// Reads something without changing anything, by its name.
bool is_query(std::string_view base) {
  for (const std::string_view part :
       {"Get", "Query", "Peek", "Occupancy", "IsCapturing", "ElapsedTime", "Version"}) {
    if (base.find(part) != std::string_view::npos) return true;
  }
  return false;
}

// Queries whose answer orders work: "complete" is a synchronization.
// A mipmapped array's level is a query that hands out an array handle
// (Note [Mipmapped arrays]).
const std::set<std::string_view> modelled_queries = {
    "cudaStreamQuery", "cudaEventQuery", "cuStreamQuery", "cuEventQuery",
    "cudaGetMipmappedArrayLevel", "cuMipmappedArrayGetLevel"};

TEST(ApiClassification, BaseNameDropsVersionAndStreamVariant) {
  EXPECT_EQ(base_api_name("cudaMemcpyAsync_ptsz_v7000"), "cudaMemcpyAsync");
  EXPECT_EQ(base_api_name("cuMemcpyHtoD_v2_ptds"), "cuMemcpyHtoD");
  EXPECT_EQ(base_api_name("cuGraphInstantiate_v2"), "cuGraphInstantiate");
  EXPECT_EQ(base_api_name("cuLaunchKernel"), "cuLaunchKernel");
  EXPECT_EQ(base_api_name("cuStreamGetCaptureInfo_v3_ptsz"), "cuStreamGetCaptureInfo");
}

TEST(ApiClassification, EachApiIsListedOnce) {
  std::set<std::string_view> seen;
  for (const api_class c : {api_class::inert, api_class::modelled, api_class::unmodelled}) {
    const auto names = listed_apis(c);
    EXPECT_FALSE(names.empty());
    for (const std::string_view name : names) {
      EXPECT_TRUE(seen.insert(name).second) << name << " is listed twice";
      EXPECT_EQ(base_api_name(name), name) << name << " is not a base name";
    }
  }
}

TEST(ApiClassification, EveryApiOfTheCallbackListsIsClassified) {
  std::string missing;
  for (const std::string_view name : callback_apis()) {
    if (!listed_class(name)) missing += " " + std::string(base_api_name(name));
  }
  EXPECT_EQ(missing, "") << "classify these in inject/capture/api_classes.cpp";
}

TEST(ApiClassification, EveryQueryIsInert) {
  int queries = 0;
  for (const std::string_view name : callback_apis()) {
    const std::string_view base = base_api_name(name);
    if (!is_query(base)) continue;
    ++queries;
    const api_class expected =
        modelled_queries.contains(base) ? api_class::modelled : api_class::inert;
    EXPECT_EQ(classify_api(name), expected) << name;
  }
  EXPECT_GT(queries, 300);  // the predicate finds the query APIs
}

TEST(ApiClassification, ModelledMeansExactlyWhatTheHandlersModel) {
  std::set<std::string_view> handled;
  const auto& tables = api_tables::standard();
  for (const api_domain d : {api_domain::runtime, api_domain::driver}) {
    const api_table& t = tables[d];
    for (std::uint32_t cbid = 1; cbid < t.size(); ++cbid) {
      if (!t[cbid].handled()) continue;
      handled.insert(base_api_name(t.name(cbid)));
      EXPECT_EQ(classify_api(t.name(cbid)), api_class::modelled) << t.name(cbid);
    }
  }
  const auto modelled = listed_apis(api_class::modelled);
  EXPECT_EQ(handled, std::set<std::string_view>(modelled.begin(), modelled.end()));
}

TEST(ApiClassification, UnlistedApisAndUnreadVersionsAreUnmodelled) {
  EXPECT_EQ(listed_class("cuSomeFutureApi_v2"), std::nullopt);
  EXPECT_EQ(classify_api("cuSomeFutureApi_v2"), api_class::unmodelled);
  // cuMemcpyHtoD is modelled through its _v2 only: the old entry point is
  // neither handled nor inert, so each call is listed.
  const api_entry& v1 = api_tables::standard().driver[CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD];
  EXPECT_FALSE(v1.handled());
  EXPECT_FALSE(v1.inert());
}

TEST(ApiClassification, QueriesAndConfigurationAreInert) {
  for (const char* name :
       {"cudaGetDevice_v3020", "cudaGetLastError_v3020", "cudaPeekAtLastError_v3020",
        "cudaFuncGetAttributes_v3020", "cudaStreamGetPriority_v5050",
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor_v6000", "cudaSetDevice_v3020",
        "__cudaPushCallConfiguration_v13000", "__cudaRegisterFunction_v13000",
        "cudaGraphCreate_v10000", "cudaEventElapsedTime_v3020",
        "cuCtxGetCurrent", "cuModuleGetFunction", "cuLibraryLoadData", "cuDeviceGetAttribute",
        "cuMemGetInfo_v2", "cuPointerGetAttribute", "cudaMemPrefetchAsync_v12020",
        "cudaStreamIsCapturing_v10000", "cuGraphNodeGetType"}) {
    EXPECT_EQ(classify_api(name), api_class::inert) << name;
  }
}

// Note [Where graph nodes were made]: the add calls are modelled for their
// stacks; the node kinds whose semantics are not stay listed.
TEST(ApiClassification, GraphNodeAddsAreModelledExceptUnmodelledNodeKinds) {
  EXPECT_EQ(classify_api("cudaGraphAddKernelNode_v10000"), api_class::modelled);
  EXPECT_EQ(classify_api("cuGraphAddNode_v2"), api_class::modelled);
  EXPECT_EQ(classify_api("cuGraphAddBatchMemOpNode"), api_class::unmodelled);
  EXPECT_EQ(classify_api("cudaGraphAddExternalSemaphoresWaitNode_v11020"), api_class::unmodelled);
}

TEST(ApiClassification, OrderingAndMemoryCallsWithoutHandlerAreUnmodelled) {
  for (const char* name :
       {"cudaBindTextureToMipmappedArray_v5000", "cudaDestroyExternalMemory_v10000",
        "cuMulticastBindMem",
        "cuGraphAddExternalSemaphoresWaitNode",
        "cudaGraphExecExternalSemaphoresSignalNodeSetParams_v11020",
        "cuGraphExecExternalSemaphoresWaitNodeSetParams", "cuGraphExecBatchMemOpNodeSetParams",
        "cuMemMapArrayAsync", "cuCtxWaitEvent",
        "cudaMemcpy3DBatchAsync_v13000", "cudaLaunchCooperativeKernelMultiDevice_v9000",
        "cuGraphicsMapResources", "cuSomeFutureApi"}) {
    EXPECT_EQ(classify_api(name), api_class::unmodelled) << name;
  }
}

// Note [Device reset]
TEST(ApiClassification, DeviceResetsAreModelled) {
  for (const char* name : {"cudaDeviceReset_v3020", "cudaThreadExit_v3020", "cuDevicePrimaryCtxReset",
                           "cuDevicePrimaryCtxReset_v2"}) {
    EXPECT_EQ(classify_api(name), api_class::modelled) << name;
  }
}

// Note [Texture and surface objects], Note [Mipmapped arrays]; the queries
// of an object's descriptors stay inert.
TEST(ApiClassification, TextureObjectsMipmapsAndArrayToArrayCopiesAreModelled) {
  for (const char* name :
       {"cudaCreateTextureObject_v5000", "cudaDestroySurfaceObject_v5000", "cuTexObjectCreate",
        "cuSurfObjectDestroy", "cudaMallocMipmappedArray_v5000", "cuMipmappedArrayGetLevel",
        "cudaMemcpy2DArrayToArray_ptds_v7000", "cuMemcpyAtoA_v2"}) {
    EXPECT_EQ(classify_api(name), api_class::modelled) << name;
  }
  EXPECT_EQ(classify_api("cudaGetTextureObjectResourceDesc_v5000"), api_class::inert);
  EXPECT_EQ(classify_api("cuTexObjectGetResourceViewDesc"), api_class::inert);
}

// Note [Editing an instantiated graph], Note [Stream memory operations].
TEST(ApiClassification, GraphExecEditsAndStreamMemoryOperationsAreModelled) {
  for (const char* name :
       {"cudaGraphExecUpdate_v10020", "cuGraphExecUpdate_v2",
        "cudaGraphExecKernelNodeSetParams_v10010", "cuGraphExecKernelNodeSetParams_v2",
        "cudaGraphExecMemcpyNodeSetParams1D_v11010", "cuGraphExecMemsetNodeSetParams",
        "cudaGraphExecHostNodeSetParams_v10020", "cudaGraphExecNodeSetParams_v12020",
        "cudaGraphNodeSetEnabled_v11060", "cuStreamWriteValue32_v2_ptsz", "cuStreamWaitValue64",
        "cuStreamBatchMemOp_v2", "cudaGraphAddNode_v12030",
        "cudaGraphExecEventRecordNodeSetEvent_v11010", "cudaGraphExecEventWaitNodeSetEvent_v11010",
        "cuGraphExecEventRecordNodeSetEvent", "cuGraphExecEventWaitNodeSetEvent",
        "cudaGraphExecChildGraphNodeSetParams_v11010", "cuGraphExecChildGraphNodeSetParams"}) {
    EXPECT_EQ(classify_api(name), api_class::modelled) << name;
  }
}

// Notes [Virtual memory management], [IPC memory handles], [IPC events],
// [External semaphores], [Inert calls that look like ordering].
TEST(ApiClassification, VirtualMemoryIpcAndSemaphoresAreModelledOrInert) {
  for (const char* name :
       {"cuMemCreate", "cuMemMap", "cuMemUnmap", "cuMemRelease", "cuMemRetainAllocationHandle",
        "cuMemAddressFree", "cudaIpcOpenMemHandle_v4010", "cudaIpcCloseMemHandle_v4010",
        "cudaIpcOpenEventHandle_v4010", "cuIpcOpenMemHandle_v2", "cuIpcCloseMemHandle",
        "cuIpcOpenEventHandle", "cudaSignalExternalSemaphoresAsync_v11020",
        "cudaWaitExternalSemaphoresAsync_ptsz_v10000", "cuSignalExternalSemaphoresAsync",
        "cuWaitExternalSemaphoresAsync_ptsz"}) {
    EXPECT_EQ(classify_api(name), api_class::modelled) << name;
  }
  for (const char* name :
       {"cuMemAddressReserve", "cuMemSetAccess", "cuMemExportToShareableHandle",
        "cuMemImportFromShareableHandle", "cuMemGetAllocationGranularity",
        "cudaIpcGetMemHandle_v4010", "cuIpcGetEventHandle", "cudaImportExternalSemaphore_v10000",
        "cuDestroyExternalSemaphore"}) {
    EXPECT_EQ(classify_api(name), api_class::inert) << name;
  }
}

// Note [Inert calls that look like ordering]
TEST(ApiClassification, CaptureDependencyUpdatesAndManagedAttachmentAreInert) {
  for (const char* name :
       {"cudaStreamUpdateCaptureDependencies_v12030", "cuStreamUpdateCaptureDependencies_v2_ptsz",
        "cudaStreamAttachMemAsync_v6000", "cuStreamAttachMemAsync_ptsz"}) {
    EXPECT_EQ(classify_api(name), api_class::inert) << name;
  }
}

// A driver API and its runtime twin (cuX and cudaX) do the same thing, so
// they share a class: a twin left unmodelled is listed at every call of the
// other's nested driver call (cuThreadExchangeStreamCaptureMode was, 1,300
// times in a short DDP run). Where the twins differ in kind, the exception
// is named here with its reason.
TEST(ApiClassification, DriverAndRuntimeTwinsShareAClass) {
  // cudaLibraryUnload is inert because its nested cuLibraryUnload is
  // modelled at every level (kernel handles die with their library).
  const std::set<std::string_view> exceptions = {"cudaLibraryUnload"};
  for (const api_class c : {api_class::modelled, api_class::inert, api_class::unmodelled}) {
    for (const std::string_view name : listed_apis(c)) {
      if (!name.starts_with("cuda") || exceptions.contains(name)) continue;
      const std::string twin = "cu" + std::string(name.substr(4));
      const auto twin_class = listed_class(twin);
      if (!twin_class) continue;  // no driver namesake
      EXPECT_EQ(*twin_class, c) << name << " and " << twin;
    }
  }
}

TEST(ApiClassification, HandledCallsAreModelled) {
  for (const char* name :
       {"__cudaLaunchKernel_v13000", "__cudaLaunchKernel_ptsz_v13000", "cuCtxSynchronize",
        "cuModuleUnload", "cuLibraryUnload", "cudaLaunchKernel_v7000", "cudaMemcpyAsync_v3020",
        "cudaStreamWaitEvent_v3020", "cudaEventRecord_v3020", "cudaStreamSynchronize_v3020",
        "cudaDeviceSynchronize_v3020", "cudaMalloc_v3020", "cudaFreeAsync_v11020",
        "cudaGraphLaunch_v10000", "cudaGraphInstantiate_v12000", "cudaGraphExecDestroy_v10000",
        "cudaStreamBeginCapture_v10000", "cudaStreamEndCapture_v10000",
        "cudaLaunchHostFunc_v10000", "cudaStreamQuery_v3020", "cudaEventQuery_v3020",
        "cudaStreamCreateWithPriority_v5050", "cudaStreamDestroy_v5050", "cuLaunchKernel",
        "cuMemAllocAsync", "cuStreamCreate", "cuEventRecordWithFlags", "cuMemsetD32Async",
        "cuGraphInstantiateWithFlags", "cuStreamBeginCaptureToGraph", "cuMemHostRegister_v2"}) {
    EXPECT_EQ(classify_api(name), api_class::modelled) << name;
  }
}

}  // namespace
}  // namespace streamsan::injection
