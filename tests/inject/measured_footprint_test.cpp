// The model's side of exact footprints: inferred accesses say so, a measured
// launch's record waits for its footprint and takes it, the measurement is
// mapped onto the allocations of the launch's time, and kernels learn what
// their pointer words do.
#include <gtest/gtest.h>

#include <variant>
#include <vector>

#include "inject/model/cuda_model.h"
#include "inject/precise/footprint_resolver.h"
#include "tests/inject/capture_sink.h"
#include "tests/inject/fake_driver.h"

namespace streamsan::injection {
namespace {

namespace sp = streamsan::precise;

constexpr std::uintptr_t stream_a = 0x5000;
constexpr std::uintptr_t kernel = 0xabc;
constexpr std::uint64_t base_a = 0x700000000000;
constexpr std::uint64_t base_b = 0x700000100000;

class MeasuredFootprint : public ::testing::Test {
 protected:
  recorder rec{{.capture_stacks = false, .stack_depth = 0}};
  fake_driver driver;
  capture_sink sink;
  sp::footprint_resolver resolver;
  cuda_model model{rec, driver};
  call_site here{};

  void SetUp() override {
    resolver.add_downstream(sink);
    rec.add_sink(resolver);
    model.set_footprint_resolver(&resolver);
    // k(two_buffers {float* a; float* b;}, int n): a struct of two pointers.
    driver.kernels[kernel] = kernel_description{"_Z1k11two_buffersi", {{0, 16}, {16, 4}}, true};
    model.allocated(here, base_a, 1 << 20, memory_kind::device);
    model.allocated(here, base_b, 1 << 20, memory_kind::device);
  }
  void launch(std::uint64_t a, std::uint64_t b, std::uint64_t measured_id = 0) {
    struct {
      std::uint64_t a, b;
    } pair{a, b};
    int n = 0;
    void* params[] = {&pair, &n};
    if (measured_id != 0) model.expect_measured_launch(measured_id);
    model.kernel_launched(here, {stream_a}, kernel, kernel_arguments::from_pointers(params));
  }
  static sp::decoded_footprint footprint(std::vector<sp::measured_interval> intervals,
                                         bool complete = true) {
    sp::decoded_footprint d;
    d.intervals = std::move(intervals);
    d.complete = complete;
    return d;
  }
  std::vector<access> last_launch() const { return sink.last<kernel_launch>().accesses; }
  // An inferred launch of a kernel that learned it writes b and never
  // touches a.
  void expect_b_written_only() {
    launch(base_a, base_b);
    const auto accesses = last_launch();
    ASSERT_EQ(accesses.size(), 1u);
    EXPECT_EQ(accesses[0].range.offset, 0u);
    EXPECT_EQ(accesses[0].mode, access_mode::write);
    EXPECT_EQ(accesses[0].origin, access_origin::inferred);
  }
};

TEST_F(MeasuredFootprint, InferredAccessesSayTheyAreInferred) {
  launch(base_a, base_b);
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 2u);
  for (const auto& a : accesses) {
    EXPECT_EQ(a.origin, access_origin::inferred);
    EXPECT_EQ(a.mode, access_mode::read_write);
  }
}

TEST_F(MeasuredFootprint, AMeasuredLaunchWaitsAndTakesItsFootprint) {
  launch(base_a, base_b, 7);
  EXPECT_TRUE(sink.all<kernel_launch>().empty());  // held back
  model.stream_synchronized(here, {stream_a});
  EXPECT_TRUE(sink.all<stream_synchronize>().empty());  // behind it
  model.measured_launch_done(7, footprint({{base_b + 64, base_b + 192, sp::footprint_kind::write}}));
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 1u);
  EXPECT_EQ(accesses[0].range.offset, 64u);
  EXPECT_EQ(accesses[0].range.size, 128u);
  EXPECT_EQ(accesses[0].mode, access_mode::write);
  EXPECT_EQ(accesses[0].origin, access_origin::measured);
  EXPECT_EQ(sink.all<stream_synchronize>().size(), 1u);
}

TEST_F(MeasuredFootprint, AnIncompleteFootprintKeepsTheInferredAccesses) {
  launch(base_a, base_b, 3);
  model.measured_launch_done(3, footprint({{base_b, base_b + 4, sp::footprint_kind::write}}, false));
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 2u);
  EXPECT_EQ(accesses[0].origin, access_origin::inferred);
}

TEST_F(MeasuredFootprint, KernelsLearnWhatTheirPointerWordsDo) {
  launch(base_a, base_b, 1);
  // The kernel wrote b and never touched a.
  model.measured_launch_done(1, footprint({{base_b, base_b + 4096, sp::footprint_kind::write}}));
  expect_b_written_only();
}

TEST_F(MeasuredFootprint, ReadOnlyThroughANonConstPointerIsLearnedAsARead) {
  launch(base_a, base_b, 1);
  model.measured_launch_done(1, footprint({{base_a, base_a + 64, sp::footprint_kind::read},
                                           {base_b, base_b + 64, sp::footprint_kind::atomic}}));
  launch(base_a, base_b);
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 2u);
  EXPECT_EQ(accesses[0].mode, access_mode::read);
  EXPECT_EQ(accesses[1].mode, access_mode::atomic);
}

TEST_F(MeasuredFootprint, MeasurementsMapOntoTheAllocationsOfTheLaunchsTime) {
  launch(base_a, base_b, 5);
  const alloc_id a_then = sink.all<alloc_record>().at(0).alloc;
  // a is freed and its address handed out again before the footprint is back.
  model.freed(here, base_a, free_mode::synchronizing);
  model.allocated(here, base_a, 1 << 20, memory_kind::device);
  model.measured_launch_done(5, footprint({{base_a, base_a + 8, sp::footprint_kind::read}}));
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 1u);
  EXPECT_EQ(accesses[0].range.alloc, a_then);
}

TEST_F(MeasuredFootprint, IntervalsAcrossAllocationsAndUntrackedMemorySplit) {
  allocation_map map;
  map.insert({alloc_id{1}, 0x1000, 0x100});
  map.insert({alloc_id{2}, 0x1100, 0x100});
  map.insert({alloc_id{3}, 0x1400, 0x100});
  const auto accesses = cuda_model::measured_accesses(
      footprint({{0x10f0, 0x1410, sp::footprint_kind::write}}), map, map.epoch());
  ASSERT_EQ(accesses.size(), 3u);
  EXPECT_EQ(accesses[0].range, (byte_range{alloc_id{1}, 0xf0, 0x10}));
  EXPECT_EQ(accesses[1].range, (byte_range{alloc_id{2}, 0, 0x100}));
  EXPECT_EQ(accesses[2].range, (byte_range{alloc_id{3}, 0, 0x10}));
}

// Note [Texture and surface objects]: no measurement sees a texture fetch,
// so a measured footprint keeps the texture's access, and learning leaves
// the output's pointer word alone.
TEST_F(MeasuredFootprint, AMeasuredLaunchKeepsWhatItReadsThroughATextureObject) {
  constexpr std::uintptr_t reader = 0xdef;
  driver.kernels[reader] = kernel_description{"_Z4readyPf", {{0, 8}, {8, 8}}, true};
  model.array_created(here, 0xa770, 1024, "cudaMallocArray");
  const alloc_id array = sink.all<alloc_record>().at(2).alloc;
  model.texture_object_created(5, model.array_region(0xa770), access_mode::read);
  std::uint64_t object = 5, out = base_b;
  void* params[] = {&object, &out};
  model.expect_measured_launch(9);
  model.kernel_launched(here, {stream_a}, reader, kernel_arguments::from_pointers(params));
  model.measured_launch_done(9, footprint({{base_b, base_b + 64, sp::footprint_kind::write}}));
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 2u);
  EXPECT_EQ(accesses[0].origin, access_origin::measured);
  EXPECT_EQ(accesses[1].range, (byte_range{array, 0, 1024}));
  EXPECT_EQ(accesses[1].mode, access_mode::read);
  EXPECT_EQ(accesses[1].origin, access_origin::exact);
}

TEST_F(MeasuredFootprint, AnUnknownMeasurementChangesNothing) {
  launch(base_a, base_b);
  model.measured_launch_done(99, footprint({}));
  EXPECT_EQ(resolver.held(), 0u);
}

// Note [Measuring graph kernel nodes]: a measured node teaches its kernel
// through the pointer words described at instantiation.
class MeasuredGraphNode : public MeasuredFootprint {
 protected:
  static constexpr std::uintptr_t graph = 0x9000, exec = 0x9100, node = 0xa1;
  struct {
    std::uint64_t a, b;
  } pair{base_a, base_b};
  int n = 0;
  void* params[2] = {&pair, &n};

  void instantiate() {
    raw_graph g;
    raw_graph_node k;
    k.kind = raw_node_kind::kernel;
    k.handle = node;
    k.kernel = kernel;
    k.args = kernel_arguments::from_pointers(params);
    g.nodes = {k};
    driver.graphs[graph] = g;
    model.graph_instantiated(here, exec, graph);
  }
  // One graph launch whose node wrote b only.
  void launch_measured() {
    const cuda_model::measured_graph_node nodes[] = {{1, node}};
    model.expect_measured_graph_launch(nodes);
    model.graph_launched(here, exec, {stream_a});
    model.clear_expected_measured_graph_launch();
    model.measured_launch_done(1, footprint({{base_b, base_b + 4096, sp::footprint_kind::write}}));
  }
};

TEST_F(MeasuredGraphNode, TeachesItsKernelWhatItsPointerWordsDo) {
  model.stream_created(here, stream_a, 1, 0);
  instantiate();
  launch_measured();
  expect_b_written_only();
}

// a was freed and handed out again after the instantiation: the node's word
// no longer points into what it did, so nothing is learned (a would be
// learned as unused).
TEST_F(MeasuredGraphNode, TeachesNothingOnceABufferOfItsWordsWasReplaced) {
  model.stream_created(here, stream_a, 1, 0);
  instantiate();
  model.freed(here, base_a, free_mode::synchronizing);
  model.allocated(here, base_a, 1 << 20, memory_kind::device);
  launch_measured();
  launch(base_a, base_b);
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 2u);
  for (const auto& a : accesses) EXPECT_EQ(a.mode, access_mode::read_write);
}

TEST(AllocationMapEpochs, AnswersWithTheAllocationOfThen) {
  allocation_map map;
  map.insert({alloc_id{1}, 0x1000, 0x100});
  const auto then = map.epoch();
  map.erase(0x1000);
  map.insert({alloc_id{2}, 0x1000, 0x100});
  ASSERT_NE(map.find_at(0x1010, then), nullptr);
  EXPECT_EQ(map.find_at(0x1010, then)->id, alloc_id{1});
  EXPECT_EQ(map.find_at(0x1010, map.epoch())->id, alloc_id{2});
  // Before anything existed.
  EXPECT_EQ(map.find_at(0x1010, 0), nullptr);
}

}  // namespace
}  // namespace streamsan::injection
