// Failing CUDA calls throw cuda_error naming the call and the objects
// (runtime/errors.h, Note [A failed call names itself and its objects]).
#include <gtest/gtest.h>

#include <string>

#include "tests/cuda/backend_fixture.h"

namespace streamsan::rt::testing {
namespace {

// Runs `call`, expects a cuda_error and returns it.
template <class Call>
cuda_error expect_cuda_error(Call&& call) {
  try {
    call();
  } catch (const cuda_error& e) {
    return e;
  }
  ADD_FAILURE() << "no cuda_error thrown";
  return cuda_error(error_code::unknown, "", "");
}

TEST_F(CudaBackend, ElapsedTimeWithoutTimingNamesTheCallAndBothEvents) {
  const device_stream s = make_stream();
  const event_handle start = make_event(event_flag_none);
  const event_handle end = make_event(event_flag_none);
  b().record_event(start, s);
  b().record_event(end, s);
  b().synchronize_event(end);
  const cuda_error e = expect_cuda_error([&] { (void)b().elapsed_time(start, end); });
  EXPECT_EQ(e.code(), error_code::invalid_resource_handle);
  EXPECT_EQ(e.native_code(), 400);  // cudaErrorInvalidResourceHandle
  const std::string what = e.what();
  EXPECT_EQ(what.rfind("cudaEventElapsedTime: from event 0x", 0), 0u) << what;
  EXPECT_NE(what.find(" to event 0x"), std::string::npos) << what;
  EXPECT_NE(what.find("[cudaErrorInvalidResourceHandle] (invalid resource handle)"),
            std::string::npos)
      << what;
}

TEST_F(CudaBackend, SynchronizingACapturingStreamIsRefusedAndInvalidatesTheCapture) {
  const device_stream s = make_stream();
  b().begin_capture(s, capture_mode::global);
  const cuda_error sync = expect_cuda_error([&] { b().synchronize_stream(s); });
  EXPECT_EQ(sync.code(), error_code::capture_unsupported);
  EXPECT_EQ(std::string(sync.what()).rfind("cudaStreamSynchronize: stream 0x", 0), 0u)
      << sync.what();
  const cuda_error end = expect_cuda_error([&] { (void)b().end_capture(s); });
  EXPECT_EQ(end.code(), error_code::capture_invalidated);
  EXPECT_FALSE(b().is_capturing(s));
}

TEST_F(CudaBackend, CapturingTheLegacyStreamIsRefused) {
  const cuda_error e =
      expect_cuda_error([&] { b().begin_capture(legacy(), capture_mode::global); });
  EXPECT_EQ(e.code(), error_code::capture_unsupported);
  EXPECT_EQ(std::string(e.what()).rfind("cudaStreamBeginCapture: legacy default stream (device 0)",
                                        0),
            0u)
      << e.what();
}

TEST_F(CudaBackend, AnInvalidDeviceIsNamed) {
  const int count = b().device_count();
  const cuda_error e = expect_cuda_error([&] { (void)b().create_stream(count, true, 0); });
  EXPECT_EQ(e.code(), error_code::invalid_device);
  EXPECT_NE(std::string(e.what()).find("device " + std::to_string(count)), std::string::npos)
      << e.what();
}

TEST_F(CudaBackend, AFailedCallLeavesNoErrorForTheNextCall) {
  const int count = b().device_count();
  EXPECT_THROW((void)b().properties(count), cuda_error);
  float* x = floats(1);
  launch(legacy(), fill_args{x, 1, 2.0f});
  EXPECT_EQ(read_one(x), 2.0f);
}

}  // namespace
}  // namespace streamsan::rt::testing
