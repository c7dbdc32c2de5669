// The dispatcher fed by a fake source: the parameter structs CUPTI and the
// Sanitizer API hand over, through the handler tables, the model and a
// record sink.
#include "inject/capture/dispatcher.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "inject/capture/api_params.h"
#include "tests/inject/capture_sink.h"
#include "tests/inject/fake_driver.h"

namespace streamsan::injection {
namespace {

// Records the path key of every capture.
class fake_call_sites : public call_site_source {
 public:
  std::vector<std::uint64_t> keys;
  std::vector<std::uint64_t> frames;  // what every capture answers
  call_site capture(std::uint64_t path_key) noexcept override {
    keys.push_back(path_key);
    return {frames};
  }
};

constexpr auto runtime = api_domain::runtime;
constexpr auto driver_api = api_domain::driver;

const cudaError_t runtime_ok = cudaSuccess;
const CUresult driver_ok = CUDA_SUCCESS;

__attribute__((noinline)) void host_stub() {}

class Dispatcher : public ::testing::Test {
 protected:
  recorder rec{{.capture_stacks = true}};  // the fake call sites give none unless told
  fake_driver driver;
  capture_sink sink;
  cuda_model model{rec, driver};
  fake_call_sites sites;
  api_dispatcher dispatcher{model, sites};

  void SetUp() override {
    rec.add_sink(sink);
    dispatcher.start();
  }

  void enter(api_domain d, std::uint32_t cbid, const void* params, const char* name = nullptr) {
    dispatcher.dispatch({d, cbid, api_site::entry, params, nullptr, name});
  }
  void leave(api_domain d, std::uint32_t cbid, const void* params, const void* result,
             const char* name = nullptr) {
    dispatcher.dispatch({d, cbid, api_site::exit, params, result, name});
  }
  template <class Params>
  void runtime_call(std::uint32_t cbid, const Params& p, cudaError_t result = cudaSuccess) {
    enter(runtime, cbid, &p);
    leave(runtime, cbid, &p, &result);
  }
  template <class Params>
  void driver_call(std::uint32_t cbid, const Params& p, CUresult result = CUDA_SUCCESS) {
    enter(driver_api, cbid, &p);
    leave(driver_api, cbid, &p, &result);
  }

  void malloc_device(std::uint64_t address, std::size_t size) {
    void* ptr = reinterpret_cast<void*>(address);
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, cudaMalloc_v3020_params{&ptr, size});
  }
  // cudaStreamSynchronize on the default stream: the stream the model takes
  // handle 0 for.
  stream_id default_stream(bool per_thread) {
    const cudaStreamSynchronize_v3020_params p{nullptr};
    runtime_call(per_thread ? CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000
                            : CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                 p);
    return sink.all<stream_synchronize>().back().stream;
  }
};

constexpr std::uintptr_t kernel_handle = 0xabc;

TEST_F(Dispatcher, RuntimeLaunchIsModelledFromItsNestedDriverLaunch) {
  driver.kernels[kernel_handle] = kernel_description{"_Z1kPf", {{0, 8}}, true};
  malloc_device(0x10000, 256);
  std::uint64_t arg = 0x10000;
  void* args[] = {&arg};
  const cudaLaunchKernel_v7000_params launch{reinterpret_cast<const void*>(&host_stub), {}, {},
                                             args, 0, nullptr};
  cuLaunchKernel_params nested{};
  nested.f = reinterpret_cast<CUfunction>(kernel_handle);
  nested.kernelParams = args;
  enter(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &launch);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, nested);
  leave(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &launch, &runtime_ok);

  const auto& k = sink.last<kernel_launch>();
  EXPECT_EQ(sink.tables.string(std::get<kernel_launch>(k.body).kernel), "k(float*)");
  ASSERT_EQ(k.accesses.size(), 1u);
  EXPECT_EQ(k.accesses[0].range.size, 256u);
  EXPECT_EQ(sink.all<kernel_launch>().size(), 1u);
  EXPECT_TRUE(sink.all<unmodelled_call>().empty());
  EXPECT_EQ(dispatcher.api_calls(), 2u);  // the nested driver call is not the program's
}

// Note [Kernels that synchronize on the device]: the engine needs to know
// which launches keep all their blocks resident.
TEST_F(Dispatcher, CooperativeLaunchesAreMarkedSoAndOthersAreNot) {
  driver.kernels[kernel_handle] = kernel_description{"_Z1kPf", {{0, 8}}, true};
  malloc_device(0x10000, 256);
  std::uint64_t arg = 0x10000;
  void* args[] = {&arg};
  cuLaunchCooperativeKernel_params cooperative{};
  cooperative.f = reinterpret_cast<CUfunction>(kernel_handle);
  cooperative.kernelParams = args;
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, cooperative);

  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attribute.value.cooperative = 1;
  CUlaunchConfig config{};
  config.attrs = &attribute;
  config.numAttrs = 1;
  cuLaunchKernelEx_params ex{};
  ex.config = &config;
  ex.f = reinterpret_cast<CUfunction>(kernel_handle);
  ex.kernelParams = args;
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, ex);

  attribute.value.cooperative = 0;
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, ex);
  cuLaunchKernel_params plain{};
  plain.f = reinterpret_cast<CUfunction>(kernel_handle);
  plain.kernelParams = args;
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, plain);

  const auto launches = sink.all<kernel_launch>();
  ASSERT_EQ(launches.size(), 4u);
  EXPECT_TRUE(launches[0].cooperative);
  EXPECT_TRUE(launches[1].cooperative);
  EXPECT_FALSE(launches[2].cooperative);
  EXPECT_FALSE(launches[3].cooperative);
}

TEST_F(Dispatcher, ARuntimeCooperativeLaunchSeenByNameOnlyIsStillMarked) {
  const cudaLaunchCooperativeKernel_v9000_params launch{
      reinterpret_cast<const void*>(&host_stub), {}, {}, nullptr, 0, nullptr};
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000, launch);
  const auto launches = sink.all<kernel_launch>();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_TRUE(launches[0].cooperative);
}

TEST_F(Dispatcher, RuntimeLaunchWithoutDriverLaunchIsRecordedByNameAndListed) {
  const cudaLaunchKernel_v7000_params launch{reinterpret_cast<const void*>(&host_stub), {}, {},
                                             nullptr, 0, nullptr};
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, launch);
  const auto launches = sink.all<kernel_launch>();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_TRUE(launches[0].accesses.empty());
  const auto u = sink.all<unmodelled_call>();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(sink.tables.string(u[0].api), "cudaLaunchKernel (kernel parameters not seen)");
}

TEST_F(Dispatcher, DriverCallsNestedInARuntimeCallAreNotModelled) {
  malloc_device(0x10000, 256);
  char host[16] = {};
  const cudaMemcpy_v3020_params copy{reinterpret_cast<void*>(0x10000), host, sizeof host,
                                     cudaMemcpyHostToDevice};
  const cuMemcpyHtoD_v2_params nested{0x10000, host, sizeof host};
  enter(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, &copy);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, nested);
  leave(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, &copy, &runtime_ok);
  const auto copies = sink.all<memcpy_record>();
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_FALSE(copies[0].async);
  EXPECT_EQ(copies[0].dst.size, sizeof host);
  EXPECT_EQ(dispatcher.api_calls(), 2u);
}

TEST_F(Dispatcher, DriverCallsOfTheProgramAreModelled) {
  CUdeviceptr ptr = 0x20000;
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, cuMemAlloc_v2_params{&ptr, 512});
  const auto allocs = sink.all<alloc_record>();
  ASSERT_EQ(allocs.size(), 1u);
  EXPECT_EQ(allocs[0].size, 512u);
  EXPECT_EQ(allocs[0].kind, memory_kind::device);
  EXPECT_EQ(dispatcher.api_calls(), 1u);
}

// Note [Calls counted per thread]: each dispatcher counts the calls of
// every thread, those that ended and those that live, and only its own
// (a block an ended thread left is taken over only for its dispatcher).
TEST_F(Dispatcher, ApiCallsSumEveryThreadsCallsOfThisDispatcherOnly) {
  CUdeviceptr ptr = 0x20000;
  const cuMemAlloc_v2_params alloc{&ptr, 512};
  const auto calls_on = [&](api_dispatcher& d, int n) {
    for (int i = 0; i < n; ++i) {
      d.dispatch({driver_api, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, api_site::entry, &alloc,
                  nullptr, nullptr});
    }
  };
  calls_on(dispatcher, 1);
  std::thread([&] { calls_on(dispatcher, 2); }).join();
  std::thread([&] { calls_on(dispatcher, 3); }).join();  // may take the block left
  EXPECT_EQ(dispatcher.api_calls(), 6u);
  api_dispatcher other{model, sites};
  other.start();
  std::thread([&] { calls_on(other, 4); }).join();
  calls_on(other, 1);
  calls_on(dispatcher, 1);
  EXPECT_EQ(dispatcher.api_calls(), 7u);
  EXPECT_EQ(other.api_calls(), 5u);
}

TEST_F(Dispatcher, ExitWithoutEntryIsIgnored) {
  // Note [The call that loads the library]: the first runtime call's entry
  // is never seen; its driver calls are the program's.
  CUdeviceptr ptr = 0x20000;
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, cuMemAlloc_v2_params{&ptr, 512});
  void* same = reinterpret_cast<void*>(ptr);
  const cudaMalloc_v3020_params first{&same, 512};
  leave(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &first, &runtime_ok);
  EXPECT_EQ(sink.all<alloc_record>().size(), 1u);
  malloc_device(0x30000, 64);  // and the next call is modelled as usual
  EXPECT_EQ(sink.all<alloc_record>().size(), 2u);
}

TEST_F(Dispatcher, FreesAreModelledOnEntry) {
  malloc_device(0x10000, 256);
  const cudaFree_v3020_params free{reinterpret_cast<void*>(0x10000)};
  enter(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, &free);
  EXPECT_EQ(sink.all<free_record>().size(), 1u);
  const cudaError_t failed = cudaErrorInvalidValue;
  leave(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, &free, &failed);
  EXPECT_EQ(sink.all<free_record>().size(), 1u);
}

TEST_F(Dispatcher, FailedCallsAreNeitherModelledNorListed) {
  void* ptr = reinterpret_cast<void*>(0x10000);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, cudaMalloc_v3020_params{&ptr, 64},
               cudaErrorMemoryAllocation);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMallocArray_v3020, cudaMallocArray_v3020_params{},
               cudaErrorInvalidValue);
  EXPECT_TRUE(sink.records.empty());
}

TEST_F(Dispatcher, NotReadyIsTheAnswerOfAQueryAndAFailureElsewhere) {
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020,
               cudaStreamQuery_v3020_params{nullptr}, cudaErrorNotReady);
  const auto queries = sink.all<stream_query>();
  ASSERT_EQ(queries.size(), 1u);
  EXPECT_FALSE(queries[0].complete);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
               cudaStreamSynchronize_v3020_params{nullptr}, cudaErrorNotReady);
  EXPECT_TRUE(sink.all<stream_synchronize>().empty());
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuEventQuery, cuEventQuery_params{nullptr},
              CUDA_ERROR_NOT_READY);
  EXPECT_FALSE(sink.all<event_query>().at(0).complete);
}

TEST_F(Dispatcher, PerThreadVariantsNameThePerThreadDefaultStream) {
  const stream_id legacy = default_stream(false);
  const stream_id per_thread = default_stream(true);
  EXPECT_NE(legacy, per_thread);
  EXPECT_EQ(default_stream(true), per_thread);
}

TEST_F(Dispatcher, NestedDriverLaunchTakesThePerThreadFlagOfItsRuntimeLaunch) {
  driver.kernels[kernel_handle] = kernel_description{"_Z1kv", {}, true};
  const stream_id per_thread = default_stream(true);
  const cudaLaunchKernel_v7000_params launch{reinterpret_cast<const void*>(&host_stub), {}, {},
                                             nullptr, 0, nullptr};
  cuLaunchKernel_params nested{};  // not the _ptsz variant, stream 0
  nested.f = reinterpret_cast<CUfunction>(kernel_handle);
  enter(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000, &launch);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, nested);
  leave(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000, &launch, &runtime_ok);
  EXPECT_EQ(sink.all<kernel_launch>().at(0).stream, per_thread);
}

TEST_F(Dispatcher, UnmodelledCallsAreListedUnderTheirBaseName) {
  cudaDestroyExternalMemory_v10000_params memory{};
  // The table's name, then the name the source hands over.
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaDestroyExternalMemory_v10000, memory);
  enter(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaDestroyExternalMemory_v10000, &memory,
        "cudaDestroyExternalMemory_v10000");
  leave(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaDestroyExternalMemory_v10000, &memory, &runtime_ok,
        "cudaDestroyExternalMemory_v10000");
  // An id newer than the headers the library was built with.
  const std::uint32_t future = CUPTI_DRIVER_TRACE_CBID_SIZE + 7;
  enter(driver_api, future, nullptr, "cuFutureApi_v2");
  leave(driver_api, future, nullptr, &driver_ok, "cuFutureApi_v2");
  const auto u = sink.all<unmodelled_call>();
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(sink.tables.string(u[0].api), "cudaDestroyExternalMemory");
  EXPECT_EQ(sink.tables.string(u[1].api), "cudaDestroyExternalMemory");
  EXPECT_EQ(sink.tables.string(u[2].api), "cuFutureApi");
}

// Note [CUDA arrays]: an array is an allocation of its own; copies to it
// write the whole array, copies from it read it; an unsized one is listed.
TEST_F(Dispatcher, CudaArraysAreAllocationsThatCopiesWriteAndRead) {
  const cudaChannelFormatDesc desc{32, 0, 0, 0, cudaChannelFormatKindFloat};
  cudaArray_t array = reinterpret_cast<cudaArray_t>(0xa770);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMallocArray_v3020,
               cudaMallocArray_v3020_params{&array, &desc, 16, 4, 0});
  const auto allocs = sink.all<alloc_record>();
  ASSERT_EQ(allocs.size(), 1u);
  EXPECT_EQ(allocs[0].size, 16u * 4u * 4u);
  std::vector<float> host(64);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DToArrayAsync_v3020,
               cudaMemcpy2DToArrayAsync_v3020_params{array, 4, 1, host.data(), 64, 8, 2,
                                                      cudaMemcpyHostToDevice, nullptr});
  ASSERT_EQ(sink.all<memcpy_record>().size(), 1u);
  const byte_range written = sink.all<memcpy_record>()[0].dst;
  EXPECT_EQ(written.alloc, allocs[0].alloc);
  EXPECT_EQ(written.offset, 0u);  // the whole array, whatever the offsets
  EXPECT_EQ(written.size, allocs[0].size);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoH_v2,
              cuMemcpyAtoH_v2_params{host.data(), reinterpret_cast<CUarray>(array), 0, 16});
  EXPECT_EQ(sink.all<memcpy_record>().at(1).src.alloc, allocs[0].alloc);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaFreeArray_v3020, cudaFreeArray_v3020_params{array});
  ASSERT_EQ(sink.all<free_record>().size(), 1u);
  EXPECT_EQ(sink.all<free_record>()[0].alloc, allocs[0].alloc);
  EXPECT_EQ(sink.all<free_record>()[0].mode, free_mode::unsynchronized);
  // A format the model cannot size (no descriptor) is listed, named.
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMallocArray_v3020,
               cudaMallocArray_v3020_params{&array, nullptr, 16, 4, 0});
  const auto u = sink.all<unmodelled_call>();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(sink.tables.string(u[0].api), "cudaMallocArray (array size unknown)");
}

// A batch copy is one stream-ordered copy per entry, from the runtime's
// cudaMemcpyBatchAsync and from both driver entry points (12.8's with
// failIdx, 13.0's _v2 without).
TEST_F(Dispatcher, BatchCopiesAreOneAsyncCopyPerEntryAtBothLevels) {
  malloc_device(0x10000, 0x1000);
  malloc_device(0x20000, 0x1000);
  void* dsts[] = {reinterpret_cast<void*>(0x20000), reinterpret_cast<void*>(0x20800)};
  const void* srcs[] = {reinterpret_cast<const void*>(0x10000),
                        reinterpret_cast<const void*>(0x10100)};
  const std::size_t sizes[] = {0x100, 0x40};
  cudaMemcpyAttributes attrs{};
  std::size_t attrs_index = 0;
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000,
               cudaMemcpyBatchAsync_v13000_params{dsts, srcs, sizes, 2, &attrs, &attrs_index, 1,
                                                  nullptr});
  CUdeviceptr ddsts[] = {0x20000, 0x20800};
  CUdeviceptr dsrcs[] = {0x10000, 0x10100};
  std::size_t dsizes[] = {0x100, 0x40};
  CUmemcpyAttributes dattrs{};
  std::size_t fail_index = 0;
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync,
              cuMemcpyBatchAsync_params{ddsts, dsrcs, dsizes, 2, &dattrs, &attrs_index, 1,
                                        &fail_index, nullptr});
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2_ptsz,
              cuMemcpyBatchAsync_v2_ptsz_params{ddsts, dsrcs, dsizes, 2, &dattrs, &attrs_index, 1,
                                                nullptr});
  const auto copies = sink.all<memcpy_record>();
  ASSERT_EQ(copies.size(), 6u);
  const auto allocs = sink.all<alloc_record>();
  for (std::size_t call = 0; call < 3; ++call) {
    const memcpy_record& first = copies[2 * call];
    const memcpy_record& second = copies[2 * call + 1];
    EXPECT_TRUE(first.async && second.async) << call;
    EXPECT_EQ(first.src.alloc, allocs[0].alloc);
    EXPECT_EQ(first.dst.alloc, allocs[1].alloc);
    EXPECT_EQ(first.dst.size, 0x100u);
    EXPECT_EQ(second.src.offset, 0x100u);
    EXPECT_EQ(second.dst.offset, 0x800u);
    EXPECT_EQ(second.dst.size, 0x40u);
  }
  // The per-thread driver variant names the per-thread default stream.
  EXPECT_NE(copies[4].stream, copies[0].stream);
  EXPECT_TRUE(sink.all<unmodelled_call>().empty());
}

// Note [Inert calls that look like ordering]: the capture mode exchange
// orders nothing, at either level, and is not listed.
TEST_F(Dispatcher, StreamCaptureModeExchangeIsInertAtBothLevels) {
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuThreadExchangeStreamCaptureMode,
              cuThreadExchangeStreamCaptureMode_params{&mode});
  cudaStreamCaptureMode runtime_mode = cudaStreamCaptureModeRelaxed;
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaThreadExchangeStreamCaptureMode_v10010,
               cudaThreadExchangeStreamCaptureMode_v10010_params{&runtime_mode});
  EXPECT_TRUE(sink.all<unmodelled_call>().empty());
  EXPECT_TRUE(dispatcher.is_inert(driver_api,
                                  CUPTI_DRIVER_TRACE_CBID_cuThreadExchangeStreamCaptureMode));
}

// Note [Texture and surface objects]: the objects' resources, decoded from
// the runtime's and the driver's descriptors, are what a kernel that takes
// the object touches, until the object is destroyed.
TEST_F(Dispatcher, TextureAndSurfaceObjectsViewTheResourceTheirDescriptorNames) {
  const cudaChannelFormatDesc desc{32, 0, 0, 0, cudaChannelFormatKindFloat};
  cudaArray_t array = reinterpret_cast<cudaArray_t>(0xa770);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMallocArray_v3020,
               cudaMallocArray_v3020_params{&array, &desc, 16, 4, 0});
  malloc_device(0x10000, 4096);
  const auto allocs = sink.all<alloc_record>();
  cudaResourceDesc texture_resource{};
  texture_resource.resType = cudaResourceTypeArray;
  texture_resource.res.array.array = array;
  const cudaTextureDesc texture_desc{};
  cudaTextureObject_t texture = 0x11;
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaCreateTextureObject_v5000,
               cudaCreateTextureObject_v5000_params{&texture, &texture_resource, &texture_desc,
                                                    nullptr});
  CUDA_RESOURCE_DESC surface_resource{};
  surface_resource.resType = CU_RESOURCE_TYPE_PITCH2D;
  surface_resource.res.pitch2D.devPtr = 0x10100;
  surface_resource.res.pitch2D.pitchInBytes = 256;
  surface_resource.res.pitch2D.height = 4;
  CUsurfObject surface = 0x12;
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuSurfObjectCreate,
              cuSurfObjectCreate_params{&surface, &surface_resource});

  driver.kernels[kernel_handle] = kernel_description{"_Z4readyy", {{0, 8}, {8, 8}}, true};
  std::uint64_t first = texture, second = surface;
  void* args[] = {&first, &second};
  cuLaunchKernel_params launch{};
  launch.f = reinterpret_cast<CUfunction>(kernel_handle);
  launch.kernelParams = args;
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, launch);
  const auto accesses = sink.last<kernel_launch>().accesses;
  ASSERT_EQ(accesses.size(), 2u);
  EXPECT_EQ(accesses[0].range, (byte_range{allocs[0].alloc, 0, 256}));
  EXPECT_EQ(accesses[0].mode, access_mode::read);
  EXPECT_EQ(accesses[1].range, (byte_range{allocs[1].alloc, 0x100, 1024}));
  EXPECT_EQ(accesses[1].mode, access_mode::read_write);

  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaDestroyTextureObject_v5000,
               cudaDestroyTextureObject_v5000_params{texture});
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuSurfObjectDestroy, cuSurfObjectDestroy_params{surface});
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, launch);
  EXPECT_TRUE(sink.last<kernel_launch>().accesses.empty());
  EXPECT_TRUE(sink.all<unmodelled_call>().empty());
}

// Note [CUDA arrays]: the array side of a 2D/3D descriptor, and both sides
// of an array-to-array copy, are the whole array.
TEST_F(Dispatcher, DescriptorAndArrayToArrayCopiesTouchWholeArrays) {
  const cudaChannelFormatDesc desc{32, 0, 0, 0, cudaChannelFormatKindFloat};
  cudaArray_t a = reinterpret_cast<cudaArray_t>(0xa770);
  cudaArray_t b = reinterpret_cast<cudaArray_t>(0xa780);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3DArray_v3020,
               cudaMalloc3DArray_v3020_params{&a, &desc, {8, 4, 2}, 0});
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMallocArray_v3020,
               cudaMallocArray_v3020_params{&b, &desc, 16, 4, 0});
  const auto allocs = sink.all<alloc_record>();
  ASSERT_EQ(allocs.size(), 2u);
  std::vector<float> host(64);

  cudaMemcpy3DParms to_a{};
  to_a.srcPtr = cudaPitchedPtr{host.data(), 32, 8, 4};
  to_a.dstArray = a;
  to_a.dstPos = cudaPos{4, 1, 1};
  to_a.extent = cudaExtent{4, 1, 1};
  to_a.kind = cudaMemcpyHostToDevice;
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020,
               cudaMemcpy3DAsync_v3020_params{&to_a, nullptr});
  EXPECT_EQ(sink.all<memcpy_record>().at(0).dst, (byte_range{allocs[0].alloc, 0, 256}));
  // The extent's width counts the array's elements: the host side takes
  // its row whole (the pitch), not 4 bytes of it.
  EXPECT_EQ(sink.all<memcpy_record>().at(0).src.size, 32u);

  CUDA_MEMCPY2D from_b{};
  from_b.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  from_b.srcArray = reinterpret_cast<CUarray>(b);
  from_b.srcXInBytes = 8;
  from_b.dstMemoryType = CU_MEMORYTYPE_HOST;
  from_b.dstHost = host.data();
  from_b.dstPitch = 16;
  from_b.WidthInBytes = 16;
  from_b.Height = 2;
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2, cuMemcpy2D_v2_params{&from_b});
  EXPECT_EQ(sink.all<memcpy_record>().at(1).src, (byte_range{allocs[1].alloc, 0, 256}));

  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyArrayToArray_v3020,
               cudaMemcpyArrayToArray_v3020_params{b, 0, 0, a, 0, 0, 16,
                                                   cudaMemcpyDeviceToDevice});
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoA_v2,
              cuMemcpyAtoA_v2_params{reinterpret_cast<CUarray>(a), 0,
                                     reinterpret_cast<CUarray>(b), 4, 16});
  const auto copies = sink.all<memcpy_record>();
  ASSERT_EQ(copies.size(), 4u);
  EXPECT_EQ(copies[2].dst, (byte_range{allocs[1].alloc, 0, 256}));
  EXPECT_EQ(copies[2].src, (byte_range{allocs[0].alloc, 0, 256}));
  EXPECT_EQ(copies[3].dst, (byte_range{allocs[0].alloc, 0, 256}));
  EXPECT_EQ(copies[3].src, (byte_range{allocs[1].alloc, 0, 256}));
  EXPECT_FALSE(copies[3].async);
  EXPECT_TRUE(sink.all<unmodelled_call>().empty());
}

// Note [Mipmapped arrays]: sized level by level, each level a part.
TEST_F(Dispatcher, MipmappedArraysAreSizedPerLevelAndTheirLevelsAreParts) {
  const cudaChannelFormatDesc desc{32, 0, 0, 0, cudaChannelFormatKindFloat};
  cudaMipmappedArray_t mipmap = reinterpret_cast<cudaMipmappedArray_t>(0xb000);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMallocMipmappedArray_v5000,
               cudaMallocMipmappedArray_v5000_params{&mipmap, &desc, {16, 8, 0}, 3, 0});
  ASSERT_EQ(sink.all<alloc_record>().size(), 1u);
  const alloc_record whole = sink.all<alloc_record>()[0];
  EXPECT_EQ(whole.size, 512u + 128u + 32u);
  cudaArray_t level = reinterpret_cast<cudaArray_t>(0xb100);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGetMipmappedArrayLevel_v5000,
               cudaGetMipmappedArrayLevel_v5000_params{&level, mipmap, 1});
  std::vector<float> host(32);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DToArrayAsync_v3020,
               cudaMemcpy2DToArrayAsync_v3020_params{level, 0, 0, host.data(), 32, 32, 4,
                                                      cudaMemcpyHostToDevice, nullptr});
  EXPECT_EQ(sink.all<memcpy_record>().at(0).dst, (byte_range{whole.alloc, 512, 128}));

  // The driver's, 64 x 1 bytes asked for 10 levels: clamped to 7.
  CUDA_ARRAY3D_DESCRIPTOR bytes{};
  bytes.Width = 64;
  bytes.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  bytes.NumChannels = 1;
  CUmipmappedArray driver_mipmap = reinterpret_cast<CUmipmappedArray>(0xc000);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate,
              cuMipmappedArrayCreate_params{&driver_mipmap, &bytes, 10});
  EXPECT_EQ(sink.all<alloc_record>().at(1).size, 64u + 32 + 16 + 8 + 4 + 2 + 1);

  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaFreeMipmappedArray_v5000,
               cudaFreeMipmappedArray_v5000_params{mipmap});
  ASSERT_EQ(sink.all<free_record>().size(), 1u);
  EXPECT_EQ(sink.all<free_record>()[0].alloc, whole.alloc);
  EXPECT_TRUE(sink.all<unmodelled_call>().empty());
}

TEST_F(Dispatcher, InertCallsAreNeitherModelledNorListed) {
  int device = 0;
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, cudaGetDevice_v3020_params{&device});
  EXPECT_TRUE(sink.records.empty());
  EXPECT_TRUE(dispatcher.is_inert(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020));
  EXPECT_FALSE(dispatcher.is_inert(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  EXPECT_FALSE(dispatcher.is_inert(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaMallocArray_v3020));
  EXPECT_FALSE(dispatcher.is_inert(driver_api, CUPTI_DRIVER_TRACE_CBID_cuModuleUnload));
}

// Note [Launches without their runtime callback]
// With the plain runtime launch callbacks asked for (Note [Runtime launch
// callbacks on request]).
TEST_F(Dispatcher, OnlyThePlainTripleChevronLaunchHasItsRuntimeCallbackSwitchedOffWhenAskedFor) {
  dispatcher.set_runtime_launch_callbacks(true);
  EXPECT_TRUE(dispatcher.switched_off(runtime, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000));
  EXPECT_FALSE(dispatcher.is_inert(runtime, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000));
  EXPECT_FALSE(
      dispatcher.switched_off(runtime, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000));
  EXPECT_FALSE(dispatcher.switched_off(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  EXPECT_FALSE(dispatcher.switched_off(driver_api, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
  EXPECT_TRUE(dispatcher.switched_off(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020));
}

// Note [Runtime launch callbacks on request]: the plain cudaLaunchKernel and
// cudaLaunchKernelExC too, unless asked for; never the per-thread or
// cooperative ones, whose names say what the driver launch does not.
TEST_F(Dispatcher, ThePlainRuntimeLaunchCallbacksAreSwitchedOffUnlessAskedFor) {
  EXPECT_TRUE(dispatcher.switched_off(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  EXPECT_TRUE(dispatcher.switched_off(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060));
  for (const auto cbid : {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
                          CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
                          CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
                          CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000}) {
    EXPECT_FALSE(dispatcher.switched_off(runtime, cbid)) << cbid;
  }
  EXPECT_FALSE(dispatcher.switched_off(driver_api, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
  dispatcher.set_runtime_launch_callbacks(true);
  EXPECT_FALSE(dispatcher.switched_off(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
}

// What a source that switched __cudaLaunchKernel off delivers: the driver
// launch alone, modelled as the program's own call.
TEST_F(Dispatcher, ADriverLaunchWithoutItsRuntimeCallbackIsModelledWhole) {
  driver.kernels[kernel_handle] = kernel_description{"_Z1kPf", {{0, 8}}, true};
  malloc_device(0x10000, 256);
  std::uint64_t arg = 0x10000;
  void* args[] = {&arg};
  cuLaunchKernel_params launch{};
  launch.f = reinterpret_cast<CUfunction>(kernel_handle);
  launch.kernelParams = args;
  const auto before = dispatcher.api_calls();
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, launch);
  const auto& k = sink.last<kernel_launch>();
  EXPECT_EQ(sink.tables.string(std::get<kernel_launch>(k.body).kernel), "k(float*)");
  ASSERT_EQ(k.accesses.size(), 1u);
  EXPECT_EQ(k.accesses[0].range.size, 256u);
  EXPECT_TRUE(sink.all<unmodelled_call>().empty());
  EXPECT_EQ(dispatcher.api_calls(), before + 1);
}

TEST_F(Dispatcher, ModuleUnloadRetiresKernelHandlesEvenInsideARuntimeCall) {
  driver.kernels[kernel_handle] = kernel_description{"_Z1kv", {}, true};
  cuLaunchKernel_params launch{};
  launch.f = reinterpret_cast<CUfunction>(kernel_handle);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, launch);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, launch);
  EXPECT_EQ(driver.kernel_queries.load(), 1);
  // cudaDeviceReset takes no parameters.
  enter(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020, nullptr);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuModuleUnload, cuModuleUnload_params{nullptr});
  leave(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020, nullptr, &runtime_ok);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, launch);
  EXPECT_EQ(driver.kernel_queries.load(), 2);
}

// Note [Device reset]: the device's cudaMalloc, cudaMallocManaged and
// cudaMallocHost memory ends (after the device's work), stream-ordered
// memory survives.
TEST_F(Dispatcher, DeviceResetFreesTheDevicesMemoryButNotStreamOrderedMemory) {
  malloc_device(0x10000, 256);
  void* managed = reinterpret_cast<void*>(0x20000);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
               cudaMallocManaged_v6000_params{&managed, 64, 1});
  void* pooled = reinterpret_cast<void*>(0x30000);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
               cudaMallocAsync_v11020_params{&pooled, 64, nullptr});
  const auto allocs = sink.all<alloc_record>();
  ASSERT_EQ(allocs.size(), 3u);
  enter(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020, nullptr);
  leave(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020, nullptr, &runtime_ok);
  ASSERT_EQ(sink.all<device_synchronize>().size(), 1u);
  const auto frees = sink.all<free_record>();
  ASSERT_EQ(frees.size(), 2u);
  EXPECT_EQ(frees[0].alloc, allocs[0].alloc);
  EXPECT_EQ(frees[1].alloc, allocs[1].alloc);
  EXPECT_EQ(frees[0].mode, free_mode::synchronizing);
  EXPECT_TRUE(sink.all<unmodelled_call>().empty());
  // The device's work was ordered first: the synchronize precedes the frees.
  std::size_t sync_at = 0, first_free_at = 0;
  for (std::size_t i = 0; i < sink.records.size(); ++i) {
    if (std::holds_alternative<device_synchronize>(sink.records[i].body)) sync_at = i;
    if (first_free_at == 0 && std::holds_alternative<free_record>(sink.records[i].body)) first_free_at = i;
  }
  EXPECT_LT(sync_at, first_free_at);
}

// cuDevicePrimaryCtxReset resets the device it names, not the current one.
TEST_F(Dispatcher, PrimaryContextResetFreesOnlyTheNamedDevicesMemory) {
  malloc_device(0x10000, 256);  // on the current device, 0
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset_v2_params{1});
  EXPECT_TRUE(sink.all<free_record>().empty());
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset_v2_params{0});
  EXPECT_EQ(sink.all<free_record>().size(), 1u);
  EXPECT_EQ(sink.all<device_synchronize>().back().device, 0);
}

TEST_F(Dispatcher, NothingIsModelledWhileStopped) {
  dispatcher.stop();
  malloc_device(0x10000, 64);
  EXPECT_TRUE(sink.records.empty());
  EXPECT_EQ(dispatcher.api_calls(), 0u);
  dispatcher.resume();
  malloc_device(0x10000, 64);
  EXPECT_EQ(sink.all<alloc_record>().size(), 1u);
}

// Note [Nesting is tracked while stopped]
TEST_F(Dispatcher, ACallThatReturnsWhileStoppedDoesNotSilenceItsThread) {
  char host[16] = {};
  const cudaMemcpy_v3020_params copy{reinterpret_cast<void*>(0x10000), host, sizeof host,
                                     cudaMemcpyHostToDevice};
  enter(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, &copy);
  dispatcher.stop();
  leave(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, &copy, &runtime_ok);
  dispatcher.resume();
  malloc_device(0x10000, 64);
  EXPECT_EQ(sink.all<alloc_record>().size(), 1u);
  EXPECT_TRUE(sink.all<memcpy_record>().empty());  // its exit came while stopped
}

TEST_F(Dispatcher, ACallThatEntersWhileStoppedIsModelledFromItsExit) {
  void* ptr = reinterpret_cast<void*>(0x10000);
  const cudaMalloc_v3020_params p{&ptr, 64};
  dispatcher.stop();
  enter(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &p);
  dispatcher.resume();
  leave(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &p, &runtime_ok);
  EXPECT_EQ(sink.all<alloc_record>().size(), 1u);
  malloc_device(0x20000, 64);
  EXPECT_EQ(sink.all<alloc_record>().size(), 2u);
}

TEST_F(Dispatcher, NothingIsModelledBeforeStart) {
  api_dispatcher unstarted{model, sites};
  unstarted.resume();  // resumes only what was started
  void* ptr = reinterpret_cast<void*>(0x10000);
  const cudaMalloc_v3020_params p{&ptr, 64};
  unstarted.dispatch({runtime, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, api_site::entry, &p});
  unstarted.dispatch({runtime, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, api_site::exit, &p,
                      &runtime_ok});
  EXPECT_FALSE(unstarted.active());
  EXPECT_TRUE(sink.records.empty());
}

TEST_F(Dispatcher, NestedAndOutermostCallsCaptureOnDifferentPaths) {
  driver.kernels[kernel_handle] = kernel_description{"_Z1kv", {}, true};
  cuLaunchKernel_params nested{};
  nested.f = reinterpret_cast<CUfunction>(kernel_handle);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, nested);
  const cudaLaunchKernel_v7000_params launch{reinterpret_cast<const void*>(&host_stub), {}, {},
                                             nullptr, 0, nullptr};
  enter(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &launch);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, nested);
  leave(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &launch, &runtime_ok);
  ASSERT_EQ(sites.keys.size(), 2u);  // one capture per modelled launch
  EXPECT_NE(sites.keys[0], 0u);
  EXPECT_NE(sites.keys[1], 0u);
  EXPECT_NE(sites.keys[0], sites.keys[1]);
}

// Note [Where graph nodes were made]: the node a captured launch added is
// the capture frontier right after it, and gets the launch's stack.
TEST_F(Dispatcher, CapturedLaunchNodeCarriesTheLaunchStack) {
  driver.kernels[kernel_handle] = kernel_description{"_Z1kv", {}, true};
  const auto stream = reinterpret_cast<cudaStream_t>(0x5000);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000,
               cudaStreamBeginCapture_v10000_params{stream, cudaStreamCaptureModeGlobal});
  driver.captures[0x5000] = capture_frontier{0x7000, {0xb1}};
  // An event record adds no node: even when the frontier names one not yet
  // named (a node made by a call not seen), the record does not name it.
  sites.frames = {0x409999};
  auto event = reinterpret_cast<cudaEvent_t>(0x6100);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020,
               cudaEventRecord_v3020_params{event, stream});
  sites.frames = {0x401234};
  const cudaLaunchKernel_v7000_params launch{reinterpret_cast<const void*>(&host_stub), {}, {},
                                             nullptr, 0, stream};
  cuLaunchKernel_params nested{};
  nested.f = reinterpret_cast<CUfunction>(kernel_handle);
  nested.hStream = reinterpret_cast<CUstream>(stream);
  enter(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &launch);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, nested);
  leave(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &launch, &runtime_ok);
  sites.frames = {0x409999};
  driver.captures.clear();
  auto graph = reinterpret_cast<cudaGraph_t>(0x7000);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000,
               cudaStreamEndCapture_v10000_params{stream, &graph});
  raw_graph g;
  g.nodes.resize(1);
  g.nodes[0].kind = raw_node_kind::empty;
  g.nodes[0].handle = 0xb1;
  driver.graphs[0x7000] = g;
  auto exec = reinterpret_cast<cudaGraphExec_t>(0x7100);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040,
               cudaGraphInstantiateWithFlags_v11040_params{&exec, graph, 0});
  const auto& inst = sink.last<graph_instantiate>();
  ASSERT_EQ(inst.nodes.size(), 1u);
  ASSERT_FALSE(is_none(inst.nodes[0].stack));
  EXPECT_EQ(sink.tables.stack(inst.nodes[0].stack)[0], 0x401234u);
}

// An invalidated capture ends in a failing cudaStreamEndCapture: the stream
// leaves capture mode all the same.
TEST_F(Dispatcher, AFailedEndCaptureEndsTheCapture) {
  const auto stream = reinterpret_cast<cudaStream_t>(0x5000);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000,
               cudaStreamBeginCapture_v10000_params{stream, cudaStreamCaptureModeGlobal});
  EXPECT_TRUE(model.any_capture_active());
  cudaGraph_t graph = nullptr;
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000,
               cudaStreamEndCapture_v10000_params{stream, &graph},
               cudaErrorStreamCaptureInvalidated);
  EXPECT_FALSE(model.any_capture_active());
  const auto ends = sink.all<graph_capture_end>();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].graph, sink.all<graph_capture_begin>().at(0).graph);
}

// cudaGraphExecUpdate: the executable graph runs the new graph's nodes from
// then on, read again as at instantiation and logged under the exec's id
// (Note [Editing an instantiated graph]).
TEST_F(Dispatcher, GraphExecUpdateReadsTheNewGraph) {
  raw_graph before, after;
  before.nodes.resize(1);
  before.nodes[0].kind = raw_node_kind::empty;
  after.nodes.resize(2);
  after.nodes[0].kind = after.nodes[1].kind = raw_node_kind::empty;
  driver.graphs[0x7000] = before;
  driver.graphs[0x7200] = after;
  auto exec = reinterpret_cast<cudaGraphExec_t>(0x7100);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040,
               cudaGraphInstantiateWithFlags_v11040_params{
                   &exec, reinterpret_cast<cudaGraph_t>(0x7000), 0});
  const graph_id first = std::get<graph_instantiate>(sink.last<graph_instantiate>().body).graph;
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecUpdate_v10020,
               cudaGraphExecUpdate_v10020_params{exec, reinterpret_cast<cudaGraph_t>(0x7200),
                                                 nullptr});
  const auto& updated = sink.last<graph_instantiate>();
  EXPECT_EQ(updated.nodes.size(), 2u);
  const graph_id second = std::get<graph_instantiate>(updated.body).graph;
  EXPECT_EQ(second, first);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
               cudaGraphLaunch_v10000_params{exec, nullptr});
  EXPECT_EQ(sink.all<graph_launch>().at(0).graph, second);
  EXPECT_TRUE(sink.all<unmodelled_call>().empty());
}

// Note [Editing an instantiated graph]: the runtime names the kernel by its
// host stub; the driver call nested in it names it by handle.
class DispatcherGraphEdits : public Dispatcher {
 protected:
  std::uint64_t arg = 0x20000;
  void* args[1] = {&arg};
  cudaGraphExec_t exec = reinterpret_cast<cudaGraphExec_t>(0x9100);
  cudaGraphNode_t node = reinterpret_cast<cudaGraphNode_t>(0xa1);

  void instantiate(std::uintptr_t graph_handle) {
    auto graph = reinterpret_cast<cudaGraph_t>(graph_handle);
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040,
                 cudaGraphInstantiateWithFlags_v11040_params{&exec, graph, 0});
  }
  void SetUp() override {
    Dispatcher::SetUp();
    driver.kernels[kernel_handle] = kernel_description{"_Z1kPf", {{0, 8}}, true};
    malloc_device(0x10000, 64);
    malloc_device(0x20000, 64);
    static std::uint64_t first = 0x10000;
    static void* first_args[] = {&first};
    raw_graph g;
    g.nodes.resize(1);
    g.nodes[0].kind = raw_node_kind::kernel;
    g.nodes[0].handle = 0xa1;
    g.nodes[0].kernel = kernel_handle;
    g.nodes[0].args = kernel_arguments::from_pointers(first_args);
    driver.graphs[0x9000] = g;
    instantiate(0x9000);
  }
  std::uint64_t written() const {
    const auto& inst = sink.last<graph_instantiate>();
    return inst.node_accesses.at(0).empty() ? 0 : inst.node_accesses[0][0].range.size;
  }
  std::vector<std::string> unmodelled() const {
    std::vector<std::string> out;
    for (const auto& u : sink.all<unmodelled_call>()) out.emplace_back(sink.tables.string(u.api));
    return out;
  }
};

TEST_F(DispatcherGraphEdits, RuntimeKernelNodeEditIsModelledFromItsNestedDriverCall) {
  cudaKernelNodeParams runtime_params{};
  runtime_params.func = reinterpret_cast<void*>(&host_stub);
  runtime_params.kernelParams = args;
  const cudaGraphExecKernelNodeSetParams_v10010_params edit{exec, node, &runtime_params};
  CUDA_KERNEL_NODE_PARAMS driver_params{};
  driver_params.func = reinterpret_cast<CUfunction>(kernel_handle);
  driver_params.kernelParams = args;
  const cuGraphExecKernelNodeSetParams_v2_params nested{reinterpret_cast<CUgraphExec>(exec),
                                                        reinterpret_cast<CUgraphNode>(node),
                                                        &driver_params};
  const auto before = sink.all<graph_instantiate>().size();
  enter(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecKernelNodeSetParams_v10010, &edit);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2, nested);
  leave(runtime, CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecKernelNodeSetParams_v10010, &edit,
        &runtime_ok);
  EXPECT_EQ(sink.all<graph_instantiate>().size(), before + 1);
  const auto& inst = sink.last<graph_instantiate>();
  ASSERT_EQ(inst.node_accesses.at(0).size(), 1u);
  EXPECT_EQ(raw(inst.node_accesses[0][0].range.alloc), 2u);  // the second cudaMalloc
  EXPECT_TRUE(unmodelled().empty());
}

TEST_F(DispatcherGraphEdits, RuntimeKernelNodeEditWithoutDriverCallIsListed) {
  cudaKernelNodeParams runtime_params{};
  runtime_params.func = reinterpret_cast<void*>(&host_stub);
  runtime_params.kernelParams = args;
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecKernelNodeSetParams_v10010,
               cudaGraphExecKernelNodeSetParams_v10010_params{exec, node, &runtime_params});
  EXPECT_TRUE(sink.last<graph_instantiate>().node_accesses.at(0).empty());
  EXPECT_EQ(unmodelled(), std::vector<std::string>{
                              "cudaGraphExecKernelNodeSetParams (kernel parameters not seen)"});
}

TEST_F(DispatcherGraphEdits, ExecUpdateAndEnableAreModelledAtBothLevels) {
  raw_graph h = driver.graphs[0x9000];
  static std::uint64_t second = 0x20000;
  static void* second_args[] = {&second};
  h.nodes[0].handle = 0xb1;
  h.nodes[0].args = kernel_arguments::from_pointers(second_args);
  driver.graphs[0x9500] = h;
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecUpdate_v10020,
               cudaGraphExecUpdate_v10020_params{exec, reinterpret_cast<cudaGraph_t>(0x9500),
                                                 nullptr});
  EXPECT_EQ(raw(sink.last<graph_instantiate>().node_accesses.at(0).at(0).range.alloc), 2u);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled,
              cuGraphNodeSetEnabled_params{reinterpret_cast<CUgraphExec>(exec),
                                           reinterpret_cast<CUgraphNode>(node), 0});
  EXPECT_TRUE(sink.last<graph_instantiate>().node_accesses.at(0).empty());
  EXPECT_TRUE(unmodelled().empty());
}

// Note [Event nodes]: both levels' event edits name the new event; each
// later launch records it.
TEST_F(DispatcherGraphEdits, EventRecordNodeEditsChangeWhatLaterLaunchesRecord) {
  raw_graph g;
  g.nodes.resize(1);
  g.nodes[0].kind = raw_node_kind::event_record;
  g.nodes[0].handle = 0xa2;
  g.nodes[0].event = 0xe1;
  driver.graphs[0x7000] = g;
  instantiate(0x7000);
  const auto e1 = reinterpret_cast<CUevent>(0xe1), e2 = reinterpret_cast<CUevent>(0xe2);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuEventCreate,
              cuEventCreate_params{const_cast<CUevent*>(&e1), 2});
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuEventCreate,
              cuEventCreate_params{const_cast<CUevent*>(&e2), 2});
  const auto creates = sink.all<event_create>();
  ASSERT_EQ(creates.size(), 2u);
  const auto record_node = reinterpret_cast<cudaGraphNode_t>(0xa2);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecEventRecordNodeSetEvent_v11010,
               cudaGraphExecEventRecordNodeSetEvent_v11010_params{
                   exec, record_node, reinterpret_cast<cudaEvent_t>(e2)});
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
               cudaGraphLaunch_v10000_params{exec, nullptr});
  ASSERT_EQ(sink.all<event_record>().size(), 1u);
  EXPECT_EQ(sink.all<event_record>().back().event, creates[1].event);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphExecEventRecordNodeSetEvent,
              cuGraphExecEventRecordNodeSetEvent_params{reinterpret_cast<CUgraphExec>(exec),
                                                        reinterpret_cast<CUgraphNode>(0xa2), e1});
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
               cudaGraphLaunch_v10000_params{exec, nullptr});
  ASSERT_EQ(sink.all<event_record>().size(), 2u);
  EXPECT_EQ(sink.all<event_record>().back().event, creates[0].event);
  EXPECT_TRUE(unmodelled().empty());
}

// Note [Child graph edits]: the runtime's and cudaGraphExecNodeSetParams'
// child graph edits both replace the flattened child.
TEST_F(DispatcherGraphEdits, ChildGraphEditsReplaceTheFlattenedChild) {
  raw_graph g, first, second;
  g.nodes.resize(3);
  for (auto& n : g.nodes) n.kind = raw_node_kind::empty;
  g.nodes[0].handle = 0xc1;
  g.nodes[1].kind = raw_node_kind::memset;
  g.nodes[1].dst = memory_region{0x10000, 64, memory_side::device};
  g.edges = {{0, 1}, {1, 2}};
  first.nodes = {g.nodes[1]};
  first.nodes[0].dst.address = 0x20000;
  second.nodes = {g.nodes[1]};
  driver.graphs[0x7000] = g;
  driver.graphs[0x7600] = first;
  driver.graphs[0x7700] = second;
  instantiate(0x7000);
  const auto child_node = reinterpret_cast<cudaGraphNode_t>(0xc1);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecChildGraphNodeSetParams_v11010,
               cudaGraphExecChildGraphNodeSetParams_v11010_params{
                   exec, child_node, reinterpret_cast<cudaGraph_t>(0x7600)});
  EXPECT_EQ(raw(sink.last<graph_instantiate>().node_accesses.at(1).at(0).range.alloc), 2u);
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeGraph;
  params.graph.graph = reinterpret_cast<cudaGraph_t>(0x7700);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecNodeSetParams_v12020,
               cudaGraphExecNodeSetParams_v12020_params{exec, child_node, &params});
  EXPECT_EQ(raw(sink.last<graph_instantiate>().node_accesses.at(1).at(0).range.alloc), 1u);
  EXPECT_TRUE(unmodelled().empty());
}

// Note [Conditional nodes]: the bodies come from the add call's parameters.
TEST_F(DispatcherGraphEdits, ConditionalNodeBodiesComeFromTheAddCall) {
  raw_graph g, body;
  g.nodes.resize(1);
  g.nodes[0].kind = raw_node_kind::conditional;
  g.nodes[0].handle = 0xc1;
  body.nodes.resize(1);
  body.nodes[0].kind = raw_node_kind::memset;
  body.nodes[0].dst = memory_region{0x20000, 64, memory_side::device};
  driver.graphs[0x7000] = g;
  driver.graphs[0xb0d1] = body;
  cudaGraph_t bodies[] = {reinterpret_cast<cudaGraph_t>(0xb0d1)};
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.type = cudaGraphCondTypeWhile;
  params.conditional.size = 1;
  params.conditional.phGraph_out = bodies;
  cudaGraphNode_t added = reinterpret_cast<cudaGraphNode_t>(0xc1);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddNode_v12030,
               cudaGraphAddNode_v12030_params{&added, reinterpret_cast<cudaGraph_t>(0x7000),
                                              nullptr, nullptr, 0, &params});
  instantiate(0x7000);
  const auto& inst = sink.last<graph_instantiate>();
  ASSERT_EQ(inst.nodes.size(), 3u);  // entry, the body's memset, exit
  EXPECT_EQ(inst.nodes[1].kind, graph_node_kind::memset);
  EXPECT_EQ(inst.node_accesses[1].size(), 1u);
  EXPECT_TRUE(unmodelled().empty());
}

// Note [Stream memory operations]
TEST_F(DispatcherGraphEdits, WaitValueWaitsForTheEventOfTheLastWriteValue) {
  const auto s1 = reinterpret_cast<CUstream>(0x5000), s2 = reinterpret_cast<CUstream>(0x6000);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue32_v2,
              cuStreamWriteValue32_v2_params{s1, 0x20000, 1, 0});
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2,
              cuStreamWaitValue32_v2_params{s2, 0x20000, 1, CU_STREAM_WAIT_VALUE_GEQ});
  const auto records = sink.all<event_record>();
  const auto waits = sink.all<event_wait>();
  ASSERT_EQ(records.size(), 1u);
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(records[0].event, waits[0].event);
  EXPECT_NE(records[0].stream, waits[0].stream);
  CUstreamBatchMemOpParams ops[2]{};
  ops[0].operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
  ops[0].waitValue.address = 0x10000;
  ops[1].operation = CU_STREAM_MEM_OP_BARRIER;
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp_v2,
              cuStreamBatchMemOp_v2_params{s2, 2, ops, 0});
  EXPECT_EQ(unmodelled(),
            std::vector<std::string>{"cuStreamBatchMemOp (wait value 64) (release not seen)"});
}

// Note [Inert calls that look like ordering]
TEST_F(DispatcherGraphEdits, CaptureDependencyUpdatesAndMemoryAttachmentAreInert) {
  const auto stream = reinterpret_cast<cudaStream_t>(0x5000);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamUpdateCaptureDependencies_v12030,
               cudaStreamUpdateCaptureDependencies_v12030_params{stream, &node, nullptr, 1, 1});
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamAttachMemAsync_v6000,
               cudaStreamAttachMemAsync_v6000_params{stream, reinterpret_cast<void*>(0x10000), 0,
                                                     cudaMemAttachSingle});
  EXPECT_TRUE(unmodelled().empty());
  EXPECT_TRUE(dispatcher.is_inert(runtime,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaStreamUpdateCaptureDependencies_v12030));
}

// Note [Programmatic dependent launch]: the programmatic and the
// launch-completion events are recorded right after their kernel.
TEST_F(Dispatcher, LaunchEventsAreRecordedAfterTheKernelOnItsStream) {
  driver.kernels[kernel_handle] = kernel_description{"_Z1kPf", {{0, 8}}, true};
  std::uint64_t arg = 0x10000;
  void* args[] = {&arg};
  const auto pdl_event = reinterpret_cast<CUevent>(0xe1);
  CUlaunchAttribute attributes[2]{};
  attributes[0].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attributes[0].value.programmaticStreamSerializationAllowed = 1;
  attributes[1].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
  attributes[1].value.programmaticEvent.event = pdl_event;
  CUlaunchConfig config{};
  config.hStream = reinterpret_cast<CUstream>(0x5000);
  config.attrs = attributes;
  config.numAttrs = 2;
  cuLaunchKernelEx_params ex{};
  ex.config = &config;
  ex.f = reinterpret_cast<CUfunction>(kernel_handle);
  ex.kernelParams = args;
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuEventCreate, cuEventCreate_params{
                                                         const_cast<CUevent*>(&pdl_event), 2});
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, ex);
  const auto& records = sink.records;
  ASSERT_GE(records.size(), 2u);
  const auto* launch = std::get_if<kernel_launch>(&records[records.size() - 2].body);
  const auto* record = std::get_if<event_record>(&records.back().body);
  ASSERT_NE(launch, nullptr);
  ASSERT_NE(record, nullptr);
  EXPECT_EQ(record->stream, launch->stream);
  EXPECT_EQ(record->event, sink.all<event_create>().back().event);
  EXPECT_TRUE(sink.all<unmodelled_call>().empty());

  // A runtime launch seen by name only records its events all the same.
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeLaunchCompletionEvent;
  attribute.val.launchCompletionEvent.event = reinterpret_cast<cudaEvent_t>(0xe1);
  cudaLaunchConfig_t runtime_config{};
  runtime_config.stream = reinterpret_cast<cudaStream_t>(0x6000);
  runtime_config.attrs = &attribute;
  runtime_config.numAttrs = 1;
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
               cudaLaunchKernelExC_v11060_params{&runtime_config,
                                                 reinterpret_cast<const void*>(&host_stub),
                                                 nullptr});
  const auto again = sink.all<event_record>();
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[1].event, again[0].event);
  EXPECT_EQ(again[1].stream, sink.all<kernel_launch>().back().stream);
}

// Note [Virtual memory management]: the driver's structs decoded.
TEST_F(Dispatcher, VirtualMemoryCallsAreDecoded) {
  CUmemGenericAllocationHandle h = 0;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 1;
  cuMemCreate_params create{&h, 1 << 21, &prop, 0};
  enter(driver_api, CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &create);
  h = 0x77;  // the driver fills it in before the exit
  leave(driver_api, CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &create, &driver_ok);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemMap,
              cuMemMap_params{0x7f0000000000, 1 << 21, 0, h, 0});
  const auto allocs = sink.all<alloc_record>();
  ASSERT_EQ(allocs.size(), 2u);
  EXPECT_EQ(allocs[0].device, 1);
  EXPECT_EQ(allocs[0].size, 1u << 21);
  EXPECT_EQ(allocs[1].parent, allocs[0].alloc);
  EXPECT_EQ(allocs[1].address, 0x7f0000000000u);
  // Ends are modelled on entry: a failed unmap still ended the mapping's use.
  const CUresult failed = CUDA_ERROR_INVALID_VALUE;
  const cuMemUnmap_params unmap{0x7f0000000000, 1 << 21};
  enter(driver_api, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, &unmap);
  leave(driver_api, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, &unmap, &failed);
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemRelease, cuMemRelease_params{h});
  const auto frees = sink.all<free_record>();
  ASSERT_EQ(frees.size(), 2u);
  EXPECT_EQ(frees[0].alloc, allocs[1].alloc);
  EXPECT_EQ(frees[0].mode, free_mode::unsynchronized);
  EXPECT_EQ(frees[1].alloc, allocs[0].alloc);
  EXPECT_TRUE(sink.all<unmodelled_call>().empty());
  EXPECT_TRUE(dispatcher.is_inert(driver_api, CUPTI_DRIVER_TRACE_CBID_cuMemSetAccess));
  EXPECT_TRUE(dispatcher.is_inert(driver_api, CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve));
}

// Note [IPC memory handles], Note [IPC events]
TEST_F(Dispatcher, IpcHandlesAreDecoded) {
  driver.ranges[0x7f0000000000] = 4096;
  void* opened = reinterpret_cast<void*>(0x7f0000000000);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaIpcOpenMemHandle_v4010,
               cudaIpcOpenMemHandle_v4010_params{&opened, {}, cudaIpcMemLazyEnablePeerAccess});
  ASSERT_EQ(sink.all<alloc_record>().size(), 1u);
  EXPECT_EQ(sink.all<alloc_record>()[0].size, 4096u);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaIpcCloseMemHandle_v4010,
               cudaIpcCloseMemHandle_v4010_params{opened});
  ASSERT_EQ(sink.all<free_record>().size(), 1u);
  cudaEvent_t event = reinterpret_cast<cudaEvent_t>(0xe5);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaIpcOpenEventHandle_v4010,
               cudaIpcOpenEventHandle_v4010_params{&event, {}});
  ASSERT_EQ(sink.all<event_create>().size(), 1u);
  EXPECT_EQ(sink.all<event_record>().size(), 1u);  // by the other processes
  EXPECT_TRUE(sink.all<unmodelled_call>().empty());
}

// Note [External semaphores]
TEST_F(Dispatcher, SemaphoreSignalsHandTheStreamOverAndWaitsTakeItBack) {
  const auto s1 = reinterpret_cast<cudaStream_t>(0x5000);
  const auto s2 = reinterpret_cast<cudaStream_t>(0x6000);
  cudaExternalSemaphore_t semaphore = reinterpret_cast<cudaExternalSemaphore_t>(0x5e);
  cudaExternalSemaphoreSignalParams signal{};
  signal.params.fence.value = 3;
  cudaExternalSemaphoreWaitParams wait{};
  wait.params.fence.value = 3;
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaWaitExternalSemaphoresAsync_v11020,
               cudaWaitExternalSemaphoresAsync_v11020_params{&semaphore, &wait, 1, s2});
  EXPECT_TRUE(sink.all<event_wait>().empty());  // nothing signalled yet
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaSignalExternalSemaphoresAsync_v11020,
               cudaSignalExternalSemaphoresAsync_v11020_params{&semaphore, &signal, 1, s1});
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaSignalExternalSemaphoresAsync_v11020,
               cudaSignalExternalSemaphoresAsync_v11020_params{&semaphore, &signal, 0, s1});
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuWaitExternalSemaphoresAsync,
              cuWaitExternalSemaphoresAsync_params{
                  reinterpret_cast<const CUexternalSemaphore*>(&semaphore), nullptr, 1,
                  reinterpret_cast<CUstream>(s2)});
  const auto records = sink.all<event_record>();
  const auto waits = sink.all<event_wait>();
  ASSERT_EQ(records.size(), 2u);  // the handoff on s1, then the outside's
  ASSERT_EQ(waits.size(), 2u);    // the outside took s1's work, s2 the outside's
  EXPECT_EQ(waits[0].event, records[0].event);
  EXPECT_EQ(waits[1].event, records[1].event);
  EXPECT_EQ(waits[0].stream, records[1].stream);
  EXPECT_NE(waits[1].stream, records[0].stream);
  EXPECT_TRUE(sink.all<unmodelled_call>().empty());
}

TEST(ApiTable, RegistersEveryHandlerFamilyOnce) {
  const auto& t = api_tables::standard();
  EXPECT_TRUE(t.runtime[CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000].handled());
  EXPECT_TRUE(t.runtime[CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000].per_thread);
  EXPECT_TRUE(t.runtime[CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000].handler.kernel_launch);
  EXPECT_TRUE(t.driver[CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async_ptsz].handled());
  EXPECT_TRUE(t.driver[CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch].handled());
  EXPECT_EQ(t.driver.name(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds), "cuMemcpyHtoD_v2_ptds");
  EXPECT_EQ(t.runtime.size(), static_cast<std::uint32_t>(CUPTI_RUNTIME_TRACE_CBID_SIZE));
  api_tables fresh;
  add_stream_handlers(fresh);
  EXPECT_THROW(add_stream_handlers(fresh), std::logic_error);
}

}  // namespace
}  // namespace streamsan::injection

namespace streamsan::injection {
namespace {

TEST_F(Dispatcher, CountsEntryCallbacksPerCallOnlyWhenAsked) {
  malloc_device(0x10000, 256);
  EXPECT_TRUE(dispatcher.most_frequent_calls(4).empty());

  api_dispatcher counting{model, sites};
  counting.count_callbacks_per_call();
  counting.start();
  const cudaGetDevice_v3020_params g{nullptr};
  const cudaStreamSynchronize_v3020_params s{nullptr};
  for (int i = 0; i < 3; ++i) {
    counting.dispatch({runtime, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                       api_site::entry, &s, nullptr, nullptr});
    counting.dispatch({runtime, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                       api_site::exit, &s, &runtime_ok, nullptr});
  }
  counting.dispatch({runtime, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, api_site::entry, &g,
                     nullptr, nullptr});
  // (The nesting depth is per thread, across dispatchers: leave the call.)
  counting.dispatch({runtime, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, api_site::exit, &g,
                     &runtime_ok, nullptr});
  const auto top = counting.most_frequent_calls(1);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].first, "runtime cudaStreamSynchronize_v3020");
  EXPECT_EQ(top[0].second, 3u);  // entries only, exits are not counted
  EXPECT_EQ(counting.most_frequent_calls(8).size(), 2u);
}

}  // namespace
}  // namespace streamsan::injection
