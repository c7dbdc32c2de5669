#include "sanitizer/report/frame_kind.h"

#include <gtest/gtest.h>

namespace streamsan {
namespace {

symbol_info fn(std::string function, std::string file = {}, std::string module = {}) {
  return symbol_info{std::move(function), std::move(file), 0, std::move(module), 0};
}

TEST(FrameBaseName, StripsReturnTypeParametersAndTemplateArguments) {
  EXPECT_EQ(frame_base_name("cudaLaunchKernel"), "cudaLaunchKernel");
  EXPECT_EQ(frame_base_name("cudaError cudaLaunchKernel<char>(char const*, dim3, dim3, void**, "
                            "unsigned long, CUstream_st*)"),
            "cudaLaunchKernel");
  EXPECT_EQ(frame_base_name("streamsan::rt::stream_ref::synchronize() const"),
            "streamsan::rt::stream_ref::synchronize");
  EXPECT_EQ(frame_base_name("(anonymous namespace)::helper(int)"), "(anonymous namespace)::helper");
  EXPECT_EQ(frame_base_name("main::{lambda()#1}::operator()() const"),
            "main::{lambda()#1}::operator()");
  EXPECT_EQ(frame_base_name("std::vector<int, std::allocator<int> >::push_back(int const&)"),
            "std::vector<int, std::allocator<int> >::push_back");
  EXPECT_EQ(frame_base_name("bool operator< <int>(A<int> const&, A<int> const&)"), "operator<");
  EXPECT_EQ(frame_base_name(""), "");
}

// Each rule of the table, by the frames that made it necessary.
TEST(ClassifyFrame, EntryFramesBelowMainAndThreads) {
  EXPECT_EQ(classify_frame(fn("_start", "", "/home/user/app/app")), frame_kind::process_entry);
  EXPECT_EQ(classify_frame(fn("__libc_start_main", "../csu/libc-start.c",
                              "/usr/lib/x86_64-linux-gnu/libc.so.6")),
            frame_kind::process_entry);
  EXPECT_EQ(classify_frame(fn("__libc_start_call_main")), frame_kind::process_entry);
  EXPECT_EQ(classify_frame(fn("start_thread", "./nptl/pthread_create.c",
                              "/usr/lib/x86_64-linux-gnu/libc.so.6")),
            frame_kind::thread_entry);
  EXPECT_EQ(classify_frame(fn("clone3")), frame_kind::thread_entry);
  EXPECT_EQ(classify_frame(fn("execute_native_thread_routine", "", "/usr/lib/libstdc++.so.6")),
            frame_kind::thread_entry);
}

TEST(ClassifyFrame, StaticCudaRuntimeStubsAndWrappers) {
  EXPECT_EQ(classify_frame(fn("cudaLaunchKernel", "", "/home/user/app/app")), frame_kind::cuda);
  EXPECT_EQ(classify_frame(fn("cudaStreamWaitEvent")), frame_kind::cuda);
  EXPECT_EQ(classify_frame(fn("cuLaunchKernel")), frame_kind::cuda);
  EXPECT_EQ(classify_frame(fn("__cudart1055")), frame_kind::cuda);
  EXPECT_EQ(classify_frame(fn("cudart::cudaApiLaunchKernel(void const*)")), frame_kind::cuda);
  EXPECT_EQ(classify_frame(fn("__device_stub__Z6k_readPKfPfi(float const*, float*, int)",
                              "/tmp/tmpxft_00002d41_00000000-6_app.cudafe1.stub.c")),
            frame_kind::launch_stub);
  EXPECT_EQ(classify_frame(fn("__device_stub__Z6k_readPKfPfi(float const*, float*, int)")),
            frame_kind::launch_stub);
  EXPECT_EQ(classify_frame(fn("cudaError cudaLaunchKernel<char>(char const*, dim3, dim3, void**, "
                              "unsigned long, CUstream_st*)",
                              "/usr/local/cuda/targets/x86_64-linux/include/cuda_runtime.h")),
            frame_kind::cuda);
  // Without debug information the template is still known by its name.
  EXPECT_EQ(classify_frame(fn("cudaError cudaLaunchKernel<char>(char const*, dim3, dim3, void**, "
                              "unsigned long, CUstream_st*)")),
            frame_kind::cuda);
  EXPECT_EQ(classify_frame(fn("cudaError cudaMalloc<float>(float**, unsigned long)")),
            frame_kind::cuda);
}

TEST(ClassifyFrame, SharedLibrariesByModule) {
  EXPECT_EQ(classify_frame(fn("", "", "/usr/lib/x86_64-linux-gnu/libcuda.so.1")), frame_kind::cuda);
  EXPECT_EQ(classify_frame(fn("cudaGraphAddKernelNode", "", "/usr/local/cuda/lib64/libcudart.so.13")),
            frame_kind::cuda);
  EXPECT_EQ(classify_frame(fn("", "", "/usr/local/cuda/lib64/libcupti.so.13")), frame_kind::cupti);
  EXPECT_EQ(classify_frame(fn("", "", "/usr/local/cuda/compute-sanitizer/libsanitizer-public.so")),
            frame_kind::cupti);
  EXPECT_EQ(classify_frame(fn("cublasSgemm_v2", "", "/usr/local/cuda/lib64/libcublas.so.13")),
            frame_kind::cuda);
  EXPECT_EQ(classify_frame(fn("memcpy", "", "/usr/lib/x86_64-linux-gnu/libc.so.6")),
            frame_kind::system);
  EXPECT_EQ(classify_frame(fn("", "", "/opt/streamsan/lib/libstreamsan_inject.so")),
            frame_kind::streamsan);
}

TEST(ClassifyFrame, StreamsansOwnFramesByName) {
  EXPECT_EQ(classify_frame(fn("streamsan::rt::launch(streamsan::rt::stream_ref, ...)")),
            frame_kind::streamsan);
  EXPECT_EQ(classify_frame(fn("streamsan::recorder::emit(...)")), frame_kind::streamsan);
  EXPECT_EQ(classify_frame(fn("streamsan::injection::session::on_call()")), frame_kind::streamsan);
  EXPECT_EQ(classify_frame(fn("streamsan_host_access", "/opt/streamsan/include/streamsan/annotate.h")),
            frame_kind::streamsan);
  // Other code in the streamsan namespace (tests, tools) is the user's.
  EXPECT_EQ(classify_frame(fn("streamsan::(anonymous namespace)::cli_test_fill(program&)")),
            frame_kind::user);
}

// Thrust, CUB and libcu++ are compiled into the program from the
// toolkit's headers: by file with debug information, by name without.
TEST(ClassifyFrame, CcclCodeIsCudas) {
  const symbol_info cccl[] = {
      fn("float thrust::THRUST_300001_SM_900_NS::reduce<float*>(float*)",
         "/usr/local/cuda-13.0/include/cccl/thrust/detail/reduce.inl", "/app/app"),
      fn("f(int)", "/usr/local/cuda-12.4/include/cub/device/device_scan.cuh", "/app/app"),
      fn("f(int)", "/opt/cuda/include/cuda/std/__algorithm/copy.h", "/app/app"),
      fn("cudaError cub::CUB_300001_SM_900::DeviceScan::ExclusiveSum<int*>(void*, unsigned long&, "
         "int*, int*, int, CUstream_st*)",
         "", "/app/app"),
      fn("thrust::detail::vector_base<float>::resize(unsigned long)", "", "/app/app"),
  };
  for (const auto& frame : cccl) {
    EXPECT_EQ(classify_frame(frame), frame_kind::cuda) << frame.function;
  }
  // The user's own namespace named cuda is not libcu++.
  EXPECT_EQ(classify_frame(fn("cuda::kernels::launch_all(int)", "/app/launch.cpp", "/app/app")),
            frame_kind::user);
  EXPECT_EQ(classify_frame(fn("run(int)", "/home/me/proj/include/cudax/run.h", "/app/app")),
            frame_kind::user);
}

TEST(ClassifyFrame, UserCodeIsWhatNoRuleMatches) {
  EXPECT_EQ(classify_frame(fn("main", "/home/user/app/app.cu")), frame_kind::user);
  // A C++ function whose name merely starts like CUDA's is the user's.
  EXPECT_EQ(classify_frame(fn("cudaHelper(float*)", "/home/user/app/app.cu")), frame_kind::user);
  EXPECT_EQ(classify_frame(fn("cuda_fill(float*)")), frame_kind::user);
  EXPECT_EQ(classify_frame(fn("custom(int)")), frame_kind::user);
  EXPECT_EQ(classify_frame(symbol_info{}), frame_kind::user);  // nothing known
  EXPECT_EQ(classify_frame(fn("std::sort(int*, int*)", "/home/user/app/app.cu")), frame_kind::user);
}

TEST(ClassifyFrame, MainIsRecognizedWithoutParameters) {
  EXPECT_TRUE(is_main_frame(fn("main")));
  EXPECT_TRUE(is_main_frame(fn("main", "/src/app.cu")));
  EXPECT_FALSE(is_main_frame(fn("main::{lambda()#1}::operator()() const")));
  EXPECT_FALSE(is_main_frame(fn("domain()")));
}

TEST(FrameRules, EveryKindButUserHasARuleAndEveryRuleHasAPattern) {
  bool seen[8] = {};
  for (const frame_rule& r : frame_rules()) {
    EXPECT_FALSE(r.pattern.empty());
    seen[static_cast<int>(r.kind)] = true;
  }
  EXPECT_FALSE(seen[static_cast<int>(frame_kind::user)]);
  for (int k = 1; k < 8; ++k) EXPECT_TRUE(seen[k]) << to_string(static_cast<frame_kind>(k));
}

}  // namespace
}  // namespace streamsan
