#include "sanitizer/report/user_stack.h"

#include "sanitizer/log/interpreter_frame.h"
#include "sanitizer/report/describe.h"

#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <string>
#include <vector>

namespace streamsan {
namespace {

// A kernel launch as a static-cudart program's stack shows it on a GPU
// machine, innermost first.
// A stack in a log's tables, viewed as reports show it.
class ViewedStack : public ::testing::Test {
 protected:
  void add(std::uint64_t address, symbol_info info) { tables_.define_symbol(address, info); }

  std::vector<std::string> lines(const stack_view_options& options, const operation_ref* op,
                                 const std::filesystem::path& root) {
    symbolizer symbols(tables_, symbol_source::log_only);
    const auto view = view_stack(stack_id{1}, op, symbols, options);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < view.lines.size(); ++i) {
      out.push_back(describe_stack_line(i, view.lines[i], root));
    }
    return out;
  }

  log_tables tables_;
  operation_ref op_;
};

// The lines of a stack of `frames` (defined in `tables`) as reports show it.
template <std::size_t N>
std::vector<std::string> stack_lines(log_tables& tables, const std::array<std::uint64_t, N>& frames,
                                     const operation_ref* op, const std::filesystem::path& root) {
  tables.define_stack(stack_id{1}, frames);
  symbolizer symbols(tables, symbol_source::log_only);
  const auto view = view_stack(stack_id{1}, op, symbols, {});
  std::vector<std::string> out;
  for (std::size_t i = 0; i < view.lines.size(); ++i) {
    out.push_back(describe_stack_line(i, view.lines[i], root));
  }
  return out;
}

class LaunchStack : public ViewedStack {
 protected:
  void SetUp() override {
    tables_.define_string(string_id{1}, "k_read");
    add(0x10, {"cudaLaunchKernel", "", 0, "/app/app", 0x10});
    add(0x20, {"__device_stub__Z6k_readPKfPfi(float const*, float*, int)",
               "/tmp/tmpxft_1_00000000-6_app.cudafe1.stub.c", 14, "/app/app", 0x20});
    add(0x30, {"cudaError cudaLaunchKernel<char>(char const*, dim3, dim3, void**, unsigned long, "
               "CUstream_st*)",
               "/usr/local/cuda/include/cuda_runtime.h", 216, "/app/app", 0x30});
    add(0x40, {"run(float*)", "/app/app.cu", 42, "/app/app", 0x40});
    add(0x50, {"main", "/app/app.cu", 60, "/app/app", 0x50});
    add(0x60, {"__libc_start_call_main", "../sysdeps/nptl/libc_start_call_main.h", 58,
               "/usr/lib/libc.so.6", 0x60});
    add(0x70, {"__libc_start_main", "../csu/libc-start.c", 360, "/usr/lib/libc.so.6", 0x70});
    add(0x80, {"_start", "", 0, "/app/app", 0x80});
    const std::array<std::uint64_t, 8> frames{0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80};
    tables_.define_stack(stack_id{1}, frames);
    op_.op = operation_kind::kernel;
    op_.name = string_id{1};
  }
  std::vector<std::string> lines(const stack_view_options& options, const operation_ref* op) {
    return ViewedStack::lines(options, op, "/app");
  }
};

TEST_F(LaunchStack, FoldsTheLaunchIntoTheFirstUserFrameAndDropsMainsCallers) {
  EXPECT_EQ(lines({}, &op_), (std::vector<std::string>{
                                 "#0 launch of k_read<<<…>>> from run(float*) at app.cu:42",
                                 "#1 main app.cu:60"}));
}

TEST_F(LaunchStack, WithoutAnOperationTheCallIsNamedByTheOutermostInternalFrame) {
  EXPECT_EQ(lines({}, nullptr).front(), "#0 cudaLaunchKernel from run(float*) at app.cu:42");
}

TEST_F(LaunchStack, DepthCountsUserFrames) {
  EXPECT_EQ(lines({.depth = 1}, &op_),
            (std::vector<std::string>{"#0 launch of k_read<<<…>>> from run(float*) at app.cu:42"}));
  EXPECT_EQ(lines({.depth = 2}, &op_).size(), 2u);
  EXPECT_EQ(lines({.depth = 0}, &op_).size(), 2u);
}

TEST_F(LaunchStack, RawShowsEveryFrame) {
  const auto raw = lines({.raw = true}, &op_);
  ASSERT_EQ(raw.size(), 8u);
  EXPECT_EQ(raw[0], "#0 cudaLaunchKernel (app+0x10)");
  EXPECT_EQ(raw[7], "#7 _start (app+0x80)");
}

TEST_F(LaunchStack, CallSiteIsTheFirstUserFrame) {
  symbolizer symbols(tables_, symbol_source::log_only);
  const auto site = find_call_site(stack_id{1}, symbols);
  ASSERT_TRUE(site);
  EXPECT_EQ(site->symbol->function, "run(float*)");
  EXPECT_EQ(site->symbol->line, 42u);
}

// A CuPy kernel launch: the driver call, CuPy's Cython, the interpreter,
// then the frames read from the interpreter (Note [Python stacks fold
// their native frames]).
class PythonStack : public ViewedStack {
 protected:
  void SetUp() override {
    tables_.define_string(string_id{1}, "cupy_multiply");
    add(0x10, {"cuLaunchKernel", "", 0, "/usr/lib/libcuda.so.1", 0x10});
    add(0x20, {"__pyx_f_4cupy_4cuda_8function__launch", "", 0,
               "/venv/lib/python3.12/site-packages/cupy/cuda/function.so", 0x20});
    add(0x30, {"_PyEval_EvalFrameDefault", "", 0, "/usr/bin/python3.12", 0x30});
    add(interpreter_frame_address(0x8000'0001u), {"step", "/work/train.py", 12, "", 0});
    add(interpreter_frame_address(0x8000'0002u), {"<module>", "/work/train.py", 30, "", 0});
    const std::array<std::uint64_t, 5> frames{0x10, 0x20, 0x30,
                                              interpreter_frame_address(0x8000'0001u),
                                              interpreter_frame_address(0x8000'0002u)};
    tables_.define_stack(stack_id{1}, frames);
    op_.op = operation_kind::kernel;
    op_.name = string_id{1};
  }
  std::vector<std::string> lines(const stack_view_options& options, const operation_ref* op) {
    return ViewedStack::lines(options, op, "/work");
  }
};

TEST_F(PythonStack, NativeFramesFoldIntoTheFirstPythonFrame) {
  EXPECT_EQ(lines({}, &op_), (std::vector<std::string>{
                                 "#0 launch of cupy_multiply<<<…>>> from step at train.py:12",
                                 "#1 <module> train.py:30"}));
  // Without an operation the call is the CUDA function the extension called.
  EXPECT_EQ(lines({}, nullptr).front(), "#0 cuLaunchKernel from step at train.py:12");
}

TEST_F(PythonStack, DepthCountsPythonFrames) {
  EXPECT_EQ(lines({.depth = 1}, &op_).size(), 1u);
}

TEST_F(PythonStack, CppStacksShowTheNativeFramesFirst) {
  const auto all = lines({.native_with_python = true}, &op_);
  ASSERT_GE(all.size(), 3u);
  EXPECT_NE(all[0].find("__pyx_f_4cupy"), std::string::npos) << all[0];
  EXPECT_EQ(all.back(), "#" + std::to_string(all.size() - 1) + " <module> train.py:30");
}

TEST_F(PythonStack, TheCallSiteIsTheUsersPythonLine) {
  symbolizer symbols(tables_, symbol_source::log_only);
  const auto site = find_call_site(stack_id{1}, symbols);
  ASSERT_TRUE(site);
  EXPECT_EQ(site->symbol->file, "/work/train.py");
  EXPECT_EQ(site->symbol->line, 12u);
}

// thrust::reduce on a stream, as the GPU machine's stack shows it: CUB's
// launch through the static cudart, the kernel's own host function (a
// template instance, at the kernel's definition in a toolkit header), CUB's
// and Thrust's functions, then the user's line.
class ThrustLaunchStack : public ViewedStack {
 protected:
  static constexpr const char* kernel =
      "void cub::CUB_300001_SM_750_900::detail::reduce::DeviceReduceKernel<cub::CUB_300001_SM_"
      "750_900::detail::reduce::policy_hub<float, unsigned int, cuda::std::__4::plus<float> >::"
      "Policy1000, float*, unsigned int, cuda::std::__4::plus<float>, float>(float*, float*, "
      "unsigned int, cuda::std::__4::plus<float>)";
  void SetUp() override {
    tables_.define_string(string_id{1}, kernel);
    add(0x10, {"cudaLaunchKernel", "", 0, "/app/app", 0x10});
    add(0x20, {"__device_stub__ZN3cub6detail6reduce18DeviceReduceKernel(float*, float*)",
               "/tmp/tmpxft_1_00000000-6_app.cudafe1.stub.c", 20, "/app/app", 0x20});
    add(0x30, {kernel, "/usr/local/cuda-13.0/include/cccl/cub/device/dispatch/kernels/reduce.cuh",
               160, "/app/app", 0x30});
    add(0x40, {"cudaError cub::CUB_300001_SM_750_900::DeviceReduce::Reduce<float*, float*>(void*, "
               "unsigned long&, float*, float*, int, CUstream_st*)",
               "/usr/local/cuda-13.0/include/cccl/cub/device/device_reduce.cuh", 227, "/app/app",
               0x40});
    add(0x50, {"float thrust::THRUST_300001_SM_750_900_NS::reduce<float*>(float*, float*)", "", 0,
               "/app/app", 0x50});
    add(0x60, {"main", "/app/app.cu", 43, "/app/app", 0x60});
    const std::array<std::uint64_t, 6> frames{0x10, 0x20, 0x30, 0x40, 0x50, 0x60};
    tables_.define_stack(stack_id{1}, frames);
    op_.op = operation_kind::kernel;
    op_.name = string_id{1};
  }
};

TEST_F(ThrustLaunchStack, LibraryFramesFoldIntoTheUsersLineWithTheKernelsShortName) {
  EXPECT_EQ(lines({}, &op_, "/app"),
            (std::vector<std::string>{"#0 launch of cub::detail::reduce::DeviceReduceKernel<…>(float*, "
                                      "float*, unsigned int, cuda::std::plus<…>)<<<…>>> from main "
                                      "at app.cu:43"}));
  symbolizer symbols(tables_, symbol_source::log_only);
  const auto site = find_call_site(stack_id{1}, symbols, &op_);
  ASSERT_TRUE(site);
  EXPECT_EQ(site->symbol->function, "main");
}

// A template kernel of the program's own: its host function has the line
// of the kernel's definition in the user's header, but it is the launch's,
// not a frame of the user's call chain.
TEST(UserStack, ATemplateKernelsHostFunctionIsPartOfItsLaunch) {
  log_tables tables;
  const std::string kernel = "void scale<float>(float*, int)";
  tables.define_string(string_id{1}, kernel);
  tables.define_symbol(0x10, {"cudaLaunchKernel", "", 0, "/app/app", 0x10});
  tables.define_symbol(0x20, {kernel, "/app/kernels.cuh", 10, "/app/app", 0x20});
  tables.define_symbol(0x30, {"main", "/app/app.cu", 30, "/app/app", 0x30});
  operation_ref op;
  op.op = operation_kind::kernel;
  op.name = string_id{1};
  EXPECT_EQ(stack_lines(tables, std::array<std::uint64_t, 3>{0x10, 0x20, 0x30}, &op, "/app"),
            (std::vector<std::string>{
                "#0 launch of scale<float>(float*, int)<<<…>>> from main at app.cu:30"}));
  symbolizer symbols(tables, symbol_source::log_only);
  const auto site = find_call_site(stack_id{1}, symbols, &op);
  ASSERT_TRUE(site);
  EXPECT_EQ(site->symbol->line, 30u);
  // Without the operation the host function cannot be told apart.
  EXPECT_EQ(find_call_site(stack_id{1}, symbols)->symbol->line, 10u);
}

// A device_vector's cudaMalloc: the API and the library function the
// program called.
TEST(UserStack, ACudaCallInsideALibraryFunctionNamesBoth) {
  log_tables tables;
  tables.define_symbol(0x10, {"cudaMalloc", "", 0, "/app/app", 0x10});
  tables.define_symbol(
      0x20, {"thrust::THRUST_300001_SM_750_900_NS::cuda_cub::malloc(unsigned long)",
             "/usr/local/cuda/include/cccl/thrust/system/cuda/detail/malloc_and_free.h", 60,
             "/app/app", 0x20});
  tables.define_symbol(
      0x30, {"thrust::THRUST_300001_SM_750_900_NS::detail::vector_base<float, thrust::"
             "THRUST_300001_SM_750_900_NS::device_allocator<float> >::vector_base(unsigned long, "
             "float const&)",
             "", 0, "/app/app", 0x30});
  tables.define_symbol(0x40, {"main", "/app/app.cu", 29, "/app/app", 0x40});
  const std::array<std::uint64_t, 4> frames{0x10, 0x20, 0x30, 0x40};
  EXPECT_EQ(stack_lines(tables, frames, nullptr, "/app"),
            (std::vector<std::string>{"#0 cudaMalloc via thrust::detail::vector_base<…>::vector_base "
                                      "from main at app.cu:29"}));
}

TEST(UserStack, StacksWithoutUserFramesAreShownAsTheyAre) {
  log_tables tables;
  tables.define_symbol(0x10, {"", "", 0, "/usr/lib/libcuda.so.1", 0x10});
  tables.define_symbol(0x20, {"start_thread", "", 0, "/usr/lib/libc.so.6", 0x20});
  const std::array<std::uint64_t, 2> frames{0x10, 0x20};
  tables.define_stack(stack_id{1}, frames);
  symbolizer symbols(tables, symbol_source::log_only);
  const auto view = view_stack(stack_id{1}, nullptr, symbols, {});
  ASSERT_EQ(view.lines.size(), 1u);  // the thread's entry is still dropped
  EXPECT_EQ(describe_stack_line(0, view.lines[0], {}), "#0 0x10 (libcuda.so.1+0x10)");
  EXPECT_EQ(view.dropped, 1u);
}

TEST(UserStack, ThreadEntryAndLibraryPlumbingBelowTheUsersFunctionAreDropped) {
  log_tables tables;
  tables.define_symbol(0x10, {"cudaStreamSynchronize", "", 0, "/app/app", 0x10});
  tables.define_symbol(0x20, {"worker(int)", "/app/app.cu", 70, "/app/app", 0x20});
  tables.define_symbol(0x30, {"void std::__invoke_impl<void, void (*)(int), int>(...)",
                              "/usr/include/c++/12/bits/invoke.h", 61, "/app/app", 0x30});
  tables.define_symbol(0x40, {"execute_native_thread_routine", "", 0, "/usr/lib/libstdc++.so.6",
                              0x40});
  tables.define_symbol(0x50, {"clone3", "", 0, "/usr/lib/libc.so.6", 0x50});
  const std::array<std::uint64_t, 5> frames{0x10, 0x20, 0x30, 0x40, 0x50};
  tables.define_stack(stack_id{1}, frames);
  symbolizer symbols(tables, symbol_source::log_only);
  const auto view = view_stack(stack_id{1}, nullptr, symbols, {});
  ASSERT_EQ(view.lines.size(), 1u);
  EXPECT_EQ(describe_stack_line(0, view.lines[0], "/app"),
            "#0 cudaStreamSynchronize from worker(int) at app.cu:70");
  EXPECT_EQ(view.dropped, 3u);
}

// A copy in a stripped program with the CUDA runtime linked in, captured
// through the Compute Sanitizer API: no frame has a name, so the call is
// named by the library the program called, not by the capture's layer
// (whose frames are the outermost folded ones).
TEST(UserStack, AnUnnamedCallIsIntoCudaNotIntoTheCapturesLayer) {
  log_tables tables;
  tables.define_symbol(0x10, {"", "", 0, "/opt/streamsan/libstreamsan_inject.so", 0x10});
  tables.define_symbol(0x20, {"", "", 0, "/usr/lib/libcuda.so.1", 0x20});
  tables.define_symbol(0x30, {"", "", 0, "/opt/cuda/compute-sanitizer/libsanitizer-public.so",
                              0x30});
  tables.define_symbol(0x40, {"", "", 0, "/app/sample", 0x7514f});
  const std::array<std::uint64_t, 4> frames{0x10, 0x20, 0x30, 0x40};
  tables.define_stack(stack_id{1}, frames);
  symbolizer symbols(tables, symbol_source::log_only);
  operation_ref copy;
  copy.op = operation_kind::memcpy;
  const auto view = view_stack(stack_id{1}, &copy, symbols, {});
  ASSERT_EQ(view.lines.size(), 1u);
  EXPECT_EQ(describe_stack_line(0, view.lines[0], {}),
            "#0 call into CUDA from 0x40 (sample+0x7514f)");
}

TEST(UserStack, FramesWithoutSymbolsAreTheUsers) {
  log_tables tables;
  const std::array<std::uint64_t, 2> frames{0x1000, 0x2000};
  tables.define_stack(stack_id{1}, frames);
  symbolizer symbols(tables, symbol_source::log_only);
  const auto view = view_stack(stack_id{1}, nullptr, symbols, {});
  ASSERT_EQ(view.lines.size(), 2u);
  EXPECT_EQ(describe_stack_line(1, view.lines[1], {}), "#1 0x2000");
}

TEST(UserStack, EmptyStackHasNoLinesAndNoCallSite) {
  log_tables tables;
  symbolizer symbols(tables, symbol_source::log_only);
  EXPECT_TRUE(view_stack(stack_id{}, nullptr, symbols, {}).lines.empty());
  EXPECT_FALSE(find_call_site(stack_id{}, symbols));
}

}  // namespace
}  // namespace streamsan

namespace streamsan {
namespace {

TEST(ShortKernelName, ElidesTemplateArgumentsOfLongNames) {
  EXPECT_EQ(short_kernel_name("sum_into(float const*, int, float*, long long)"),
            "sum_into(float const*, int, float*, long long)");
  EXPECT_EQ(short_kernel_name(
                "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<"
                "float, float, float, at::native::binary_internal::MulFunctor<float> >, "
                "std::array<char*, 2> >(int, at::native::AUnaryFunctor<float, float, float, "
                "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2>)"),
            "at::native::vectorized_elementwise_kernel<\u2026>(int, "
            "at::native::AUnaryFunctor<\u2026>, std::array<\u2026>)");
}

// torch's distribution kernels take lambdas whose types spell out whole
// signatures: with the templates elided the parameters still run to
// hundreds of characters, so they are elided too.
TEST(ShortKernelName, ElidesParametersThatStayLong) {
  const std::string lambda =
      "at::native::templates::cuda::uniform_and_transform<float, float>(at::TensorIteratorBase&, "
      "at::CUDAGeneratorImpl*)::{lambda(curandStatePhilox4_32_10*)#2}";
  const std::string name = "void at::native::(anonymous namespace)::distribution_kernel<float, 4>"
                           "(long, at::PhiloxCudaState, " + lambda + ", " + lambda + ")";
  EXPECT_EQ(short_kernel_name(name),
            "at::native::(anonymous namespace)::distribution_kernel<\u2026>(\u2026)");
  // Short enough once the templates are gone: the parameters stay.
  EXPECT_EQ(short_kernel_name("void k<" + std::string(100, 'x') + ">(int, float*)"),
            "k<\u2026>(int, float*)");
  const std::string params = "(int, float*, " + std::string(120, 'p') + ")";
  EXPECT_EQ(short_kernel_name("void k<" + std::string(100, 'x') + ">" + params), "k<\u2026>" + params);
}

TEST(ShortKernelName, DropsCcclsAbiNamespaces) {
  EXPECT_EQ(without_abi_namespaces("cub::CUB_300001_SM_750_900::detail::transform::transform_kernel"
                                   "<thrust::THRUST_300001_SM_750_900_NS::device_ptr<float>, "
                                   "cuda::std::__4::plus<float> >"),
            "cub::detail::transform::transform_kernel<thrust::device_ptr<float>, "
            "cuda::std::plus<float> >");
  // Only whole namespace names that look versioned go.
  EXPECT_EQ(without_abi_namespaces("my::CUB_config::__init::k(int)"),
            "my::CUB_config::__init::k(int)");
  EXPECT_EQ(without_abi_namespaces("xCUB_3::k"), "xCUB_3::k");
  EXPECT_EQ(short_kernel_name("void cub::CUB_300001_SM_900::EmptyKernel<void>()"),
            "cub::EmptyKernel<void>()");
}

TEST(ShortKernelName, KeepsOperatorNames) {
  const std::string name = "void ns::functor<int, float, double, long, char, short, unsigned, "
                           "bool>::operator<<(int, std::vector<int, std::allocator<int> >)";
  EXPECT_EQ(short_kernel_name(name), "ns::functor<\u2026>::operator<<(int, std::vector<\u2026>)");
}

}  // namespace
}  // namespace streamsan
