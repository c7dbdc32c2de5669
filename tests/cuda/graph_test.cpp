// Graphs (S-GRAPH-1, S-GRAPH-2): capture records instead of executing,
// replays run the captured work, captured host functions run at every
// replay.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "tests/cuda/backend_fixture.h"

namespace streamsan::rt::testing {
namespace {

using namespace std::chrono_literals;

TEST_F(CudaBackend, CapturedWorkRunsOnlyWhenTheGraphIsLaunched) {
  const device_stream s = make_stream();
  float* x = floats(256);
  float* sum = floats(1);
  std::atomic<int> host_runs{0};

  EXPECT_FALSE(b().is_capturing(s));
  b().begin_capture(s, capture_mode::global);
  EXPECT_TRUE(b().is_capturing(s));
  launch(s, fill_args{x, 256, 1.0f});
  launch(s, scale_args{x, 256, 2.0f});
  launch(s, reduce_sum_args{x, 256, sum});
  b().launch_host_func(s, [&host_runs] { host_runs.fetch_add(1); });
  const graph_handle graph = b().end_capture(s);
  EXPECT_FALSE(b().is_capturing(s));

  b().synchronize_device(device_);
  EXPECT_EQ(read_one(sum), 0.0f) << "captured work must not execute";
  EXPECT_EQ(host_runs.load(), 0);

  const graph_exec_handle exec = b().instantiate(graph);
  b().launch_graph(exec, s);
  b().synchronize_stream(s);
  EXPECT_EQ(read_one(sum), 512.0f);
  EXPECT_EQ(host_runs.load(), 1);

  launch(s, fill_args{sum, 1, 0.0f});
  b().launch_graph(exec, s);
  b().launch_graph(exec, s);
  b().synchronize_stream(s);
  EXPECT_EQ(read_one(sum), 512.0f);
  EXPECT_EQ(host_runs.load(), 3);

  b().destroy_graph_exec(exec);
  b().destroy_graph(graph);
}

TEST_F(CudaBackend, CapturedHostFunctionLivesAsLongAsTheGraph) {
  const device_stream s = make_stream();
  auto token = std::make_shared<int>(0);
  b().begin_capture(s, capture_mode::relaxed);
  b().launch_host_func(s, [token] { ++*token; });
  const graph_handle graph = b().end_capture(s);
  const graph_exec_handle exec = b().instantiate(graph);
  EXPECT_GT(token.use_count(), 1);
  b().launch_graph(exec, s);
  b().launch_graph(exec, s);
  b().synchronize_stream(s);
  EXPECT_EQ(*token, 2);
  b().destroy_graph_exec(exec);
  b().destroy_graph(graph);
  // CUDA releases user objects asynchronously (cudaUserObjectNoDestructorSync);
  // a device synchronize lets it finish.
  b().synchronize_device(device_);
  for (int i = 0; i < 100 && token.use_count() > 1; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(token.use_count(), 1);
}

TEST_F(CudaBackend, GraphLaunchIsOneOperationInItsStream) {
  const device_stream capture = make_stream();
  const device_stream s = make_stream();
  float* x = floats(1);
  float* y = floats(1);
  b().begin_capture(capture, capture_mode::thread_local_);
  spin(capture, 30ms);
  launch(capture, fill_args{x, 1, 5.0f});
  const graph_handle graph = b().end_capture(capture);
  const graph_exec_handle exec = b().instantiate(graph);
  b().launch_graph(exec, s);
  launch(s, copy_args{y, x, 1});
  b().synchronize_stream(s);
  EXPECT_EQ(read_one(y), 5.0f);
  b().destroy_graph_exec(exec);
  b().destroy_graph(graph);
}

TEST_F(CudaBackend, ForkedStreamsJoinTheCaptureThroughEvents) {
  const device_stream origin = make_stream();
  const device_stream side = make_stream();
  const event_handle fork = make_event();
  const event_handle join = make_event();
  float* x = floats(64);
  float* y = floats(64);
  b().begin_capture(origin, capture_mode::global);
  b().record_event(fork, origin);
  b().stream_wait_event(side, fork);
  EXPECT_TRUE(b().is_capturing(side));
  launch(origin, fill_args{x, 64, 1.0f});
  launch(side, fill_args{y, 64, 2.0f});
  b().record_event(join, side);
  b().stream_wait_event(origin, join);
  launch(origin, axpy_args{1.0f, y, x, 64});
  const graph_handle graph = b().end_capture(origin);
  const graph_exec_handle exec = b().instantiate(graph);
  b().launch_graph(exec, origin);
  b().synchronize_stream(origin);
  EXPECT_EQ(read(x, 64), std::vector<float>(64, 3.0f));
  b().destroy_graph_exec(exec);
  b().destroy_graph(graph);
}

}  // namespace
}  // namespace streamsan::rt::testing
