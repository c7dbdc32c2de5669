// The error translation of the cuda backend and its behaviour without a GPU.
// Runs on any machine (suite `cuda`): no call here needs a device.
#include "runtime/cuda/cuda_check.h"

#include <gtest/gtest.h>

#include <string>

#include "runtime/backend/backend.h"
#include "runtime/cuda/native_handles.h"

namespace streamsan::rt::cuda {
namespace {

TEST(CudaCheck, MapsCudaErrorsOntoErrorCodes) {
  EXPECT_EQ(to_error_code(cudaErrorInvalidValue), error_code::invalid_value);
  EXPECT_EQ(to_error_code(cudaErrorInvalidDevice), error_code::invalid_device);
  EXPECT_EQ(to_error_code(cudaErrorInvalidResourceHandle), error_code::invalid_resource_handle);
  EXPECT_EQ(to_error_code(cudaErrorNotReady), error_code::not_ready);
  EXPECT_EQ(to_error_code(cudaErrorMemoryAllocation), error_code::memory_allocation);
  EXPECT_EQ(to_error_code(cudaErrorStreamCaptureUnsupported), error_code::capture_unsupported);
  EXPECT_EQ(to_error_code(cudaErrorStreamCaptureInvalidated), error_code::capture_invalidated);
  EXPECT_EQ(to_error_code(cudaErrorStreamCaptureUnjoined), error_code::capture_unjoined);
  EXPECT_EQ(to_error_code(cudaErrorStreamCaptureImplicit), error_code::capture_implicit);
  EXPECT_EQ(to_error_code(cudaErrorIllegalAddress), error_code::launch_failure);
  EXPECT_EQ(to_error_code(cudaErrorLaunchFailure), error_code::launch_failure);
  EXPECT_EQ(to_error_code(cudaErrorInsufficientDriver), error_code::unknown);
}

TEST(CudaCheck, ThrowsCudaErrorNamingCallObjectsAndCause) {
  try {
    check(cudaErrorInvalidResourceHandle, "cudaEventRecord",
          [] { return std::string("event 0x10 on stream 0x20 (device 0)"); });
    FAIL() << "no exception";
  } catch (const cuda_error& e) {
    EXPECT_EQ(e.code(), error_code::invalid_resource_handle);
    EXPECT_EQ(e.native_code(), static_cast<int>(cudaErrorInvalidResourceHandle));
    EXPECT_EQ(std::string(e.what()),
              std::string("cudaEventRecord: event 0x10 on stream 0x20 (device 0): ") +
                  cudaGetErrorString(cudaErrorInvalidResourceHandle) +
                  " [cudaErrorInvalidResourceHandle] (invalid resource handle)");
  }
}

TEST(CudaCheck, SuccessDescribesNothing) {
  bool described = false;
  check(cudaSuccess, "cudaStreamQuery", [&] {
    described = true;
    return std::string();
  });
  EXPECT_FALSE(described);
}

TEST(CudaCheck, DescribesDefaultStreamsByName) {
  EXPECT_EQ(describe(device_stream{1, to_handle<stream_handle>(cudaStreamLegacy)}),
            "legacy default stream (device 1)");
  EXPECT_EQ(describe(device_stream{0, to_handle<stream_handle>(cudaStreamPerThread)}),
            "per-thread default stream (device 0)");
  EXPECT_EQ(describe(device_stream{2, stream_handle{0x1234}}), "stream 0x1234 (device 2)");
  EXPECT_EQ(describe(event_handle{0xabc}), "event 0xabc");
}

TEST(CudaBackendWithoutDevice, MakeCudaBackendThrowsNamingCudaGetDeviceCount) {
  if (cuda_device_present()) GTEST_SKIP() << "a CUDA device is visible";
  try {
    (void)make_cuda_backend();
    FAIL() << "no exception";
  } catch (const cuda_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cudaGetDeviceCount: ", 0), 0u) << e.what();
    EXPECT_NE(e.native_code(), 0);
  }
}

TEST(CudaBackendWithoutDevice, DevicePresentAgreesWithMakeCudaBackend) {
  bool constructed = false;
  try {
    constructed = make_cuda_backend() != nullptr;
  } catch (const cuda_error&) {
  }
  EXPECT_EQ(cuda_device_present(), constructed);
}

}  // namespace
}  // namespace streamsan::rt::cuda
