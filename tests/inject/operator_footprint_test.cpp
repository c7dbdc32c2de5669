// Note [Operators narrow kernel footprints]: kernels launched inside a
// framework operator take the operator's tensor spans; words in no span
// keep their inferred footprint; launches of an operator with new outputs
// wait for op_ended().
#include <gtest/gtest.h>

#include <vector>

#include "inject/capture/call_sites.h"
#include "inject/model/cuda_model.h"
#include "inject/precise/footprint_resolver.h"
#include "tests/inject/capture_sink.h"
#include "tests/inject/fake_driver.h"

namespace streamsan::injection {
namespace {

constexpr std::uintptr_t stream_a = 0x5000;
constexpr std::uintptr_t kernel = 0xabc;
constexpr std::uint64_t segment = 0x700000000000;  // one caching-allocator segment
constexpr std::uint64_t workspace = 0x700000400000;

class OperatorFootprint : public ::testing::Test {
 protected:
  recorder rec{{.capture_stacks = false, .stack_depth = 0}};
  fake_driver driver;
  capture_sink sink;
  precise::footprint_resolver resolver;
  cuda_model model{rec, driver};
  call_site here{};

  void SetUp() override {
    resolver.add_downstream(sink);
    rec.add_sink(resolver);
    model.set_footprint_resolver(&resolver);
    // k(two_buffers {float* a; float* b;}, int n)
    driver.kernels[kernel] = kernel_description{"_Z1k11two_buffersi", {{0, 16}, {16, 4}}, true};
    model.allocated(here, segment, 2 << 20, memory_kind::device);
    model.allocated(here, workspace, 1 << 20, memory_kind::device);
  }
  void launch(std::uint64_t a, std::uint64_t b) {
    struct {
      std::uint64_t a, b;
    } pair{a, b};
    int n = 0;
    void* params[] = {&pair, &n};
    model.kernel_launched(here, {stream_a}, kernel, kernel_arguments::from_pointers(params));
  }
  std::vector<access> last_launch() const { return sink.last<kernel_launch>().accesses; }
};

TEST_F(OperatorFootprint, AnInPlaceOperatorsKernelTakesItsTensorsExactly) {
  const annotated_range in[] = {{segment + 4096, 1024, access_mode::read_write},
                                {segment + 65536, 1024, access_mode::read}};
  model.op_began(in, false);
  launch(segment + 4096, segment + 65536);
  model.op_ended({});
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 2u);  // two spans of one segment, not folded
  EXPECT_EQ(accesses[0].range.offset, 4096u);
  EXPECT_EQ(accesses[0].range.size, 1024u);
  EXPECT_EQ(accesses[0].mode, access_mode::read_write);
  EXPECT_EQ(accesses[0].origin, access_origin::exact);
  EXPECT_EQ(accesses[1].range.offset, 65536u);
  EXPECT_EQ(accesses[1].mode, access_mode::read);
}

TEST_F(OperatorFootprint, NewOutputsAreWaitedForAndWorkspacesStayInferred) {
  const annotated_range in[] = {{segment, 256, access_mode::read}};
  model.op_began(in, true);
  launch(segment, workspace + 512);  // reads the input, writes the output... or a workspace
  EXPECT_TRUE(sink.all<kernel_launch>().empty());  // held until the outputs are known
  model.stream_synchronized(here, {stream_a});
  EXPECT_TRUE(sink.all<stream_synchronize>().empty());  // behind it, in order
  const annotated_range out[] = {{segment + 8192, 512, access_mode::write}};
  model.op_ended(out);
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 3u);
  EXPECT_EQ(accesses[0].range.offset, 0u);
  EXPECT_EQ(accesses[0].origin, access_origin::exact);
  EXPECT_EQ(accesses[1].range.offset, 8192u);
  EXPECT_EQ(accesses[1].mode, access_mode::write);
  // The word in no tensor span keeps "to the end of its allocation".
  EXPECT_EQ(accesses[2].range.offset, 512u);
  EXPECT_EQ(accesses[2].range.size, (1u << 20) - 512u);
  EXPECT_EQ(accesses[2].origin, access_origin::inferred);
  EXPECT_EQ(sink.all<stream_synchronize>().size(), 1u);
}

// The inferred footprint a word in no span adds is its allocation's: every
// word into that allocation, one in a span too, is folded into it.
TEST_F(OperatorFootprint, AWordInNoSpanAddsItsAllocationsWholeFootprint) {
  const annotated_range in[] = {{segment + 4096, 1024, access_mode::read}};
  model.op_began(in, false);
  launch(segment + 4096, segment + 65536);  // the second word is in no span
  model.op_ended({});
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 2u);
  EXPECT_EQ(accesses[0].origin, access_origin::exact);
  EXPECT_EQ(accesses[1].origin, access_origin::inferred);
  EXPECT_EQ(accesses[1].range.offset, 4096u);  // from the lower word on, not 65536
  EXPECT_EQ(accesses[1].range.size, (2u << 20) - 4096u);
  // And the words into another allocation only are left out of it.
  const annotated_range both[] = {{segment, 256, access_mode::read}};
  model.op_began(both, false);
  launch(segment, workspace + 512);
  model.op_ended({});
  const auto second = last_launch();
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[1].range.offset, 512u);
  EXPECT_EQ(second[1].range.size, (1u << 20) - 512u);
}

TEST_F(OperatorFootprint, OutsideAnOperatorFootprintsStayInferred) {
  model.op_began({}, false);
  model.op_ended({});
  launch(segment + 4096, segment + 65536);
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 1u);  // folded per allocation, as before
  EXPECT_EQ(accesses[0].origin, access_origin::inferred);
}

TEST_F(OperatorFootprint, AnUnbalancedEndIsIgnored) {
  model.op_ended({});
  launch(segment, segment);
  EXPECT_EQ(last_launch().at(0).origin, access_origin::inferred);
}

TEST(InterpreterFrames, ReplaceTheNativeFramesUnlessAskedFor) {
  const std::uint32_t ids[] = {7, 3};
  set_interpreter_frames(ids);
  unwinder_call_sites python_only(16);
  const auto site = python_only.capture(0);
  ASSERT_EQ(site.frames.size(), 2u);
  EXPECT_EQ(site.frames[0], interpreter_frame_address(7));
  EXPECT_EQ(site.frames[1], interpreter_frame_address(3));
  unwinder_call_sites both(16, true);
  const auto mixed = both.capture(0);
  ASSERT_GT(mixed.frames.size(), 2u);
  EXPECT_EQ(mixed.frames.back(), interpreter_frame_address(3));
  EXPECT_LT(mixed.frames.front(), interpreter_frame_base);
  set_interpreter_frames({});
  EXPECT_LT(python_only.capture(0).frames.front(), interpreter_frame_base);
}

}  // namespace
}  // namespace streamsan::injection
