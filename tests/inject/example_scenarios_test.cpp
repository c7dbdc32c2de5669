// The example programs of examples/programs, replayed as the CUDA calls the
// subscriber decodes them into, through the model and the real engine: the
// verdicts the 'gpu' suite checks on a GPU, checked here without one.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "inject/model/cuda_model.h"
#include "inject/precise/footprint_resolver.h"
#include "sanitizer/engine/engine.h"
#include "tests/inject/fake_driver.h"

namespace streamsan::injection {
namespace {

constexpr std::uintptr_t fill_kernel = 0xf111;
constexpr std::uintptr_t sum_kernel = 0x5000;
constexpr std::uintptr_t scale_kernel = 0x5ca1e;
constexpr std::uint64_t a = 0x7f0000000000, b = 0x7f0000100000, sum = 0x7f0000200000;
constexpr std::uint64_t pinned = 0x7f1000000000;
constexpr std::uint64_t host_stack = 0x7ffff0000000;
constexpr std::uintptr_t s1 = 0x51, s2 = 0x52, ev = 0xe1, ev2 = 0xe2;
constexpr std::uint64_t bytes = 1 << 18;

class Examples : public ::testing::Test {
 protected:
  recorder rec{{.capture_stacks = false}};
  engine eng;
  fake_driver driver;
  cuda_model model{rec, driver};
  call_site at{};
  // Argument storage that outlives each launch call.
  std::vector<std::vector<std::uint64_t>> words;
  std::vector<std::vector<void*>> pointers;

  void SetUp() override {
    connect();
    // fill(float*, int, float, long long); sum_into(const float*, int, float*, long long)
    driver.kernels[fill_kernel] =
        kernel_description{"_Z4fillPfifx", {{0, 8}, {8, 4}, {12, 4}, {16, 8}}, true};
    driver.kernels[sum_kernel] =
        kernel_description{"_Z8sum_intoPKfiPfx", {{0, 8}, {8, 4}, {16, 8}, {24, 8}}, true};
    // scale(scale_args, long long): the struct is {const float*, float*, int, float}.
    driver.kernels[scale_kernel] =
        kernel_description{"_Z5scale10scale_argsx", {{0, 24}, {24, 8}}, true};
  }

  // The log's way to the engine.
  virtual void connect() { rec.add_sink(eng); }

  // One kernelParams array whose i-th entry points at words[i].
  kernel_arguments args(std::vector<std::uint64_t> values) {
    words.push_back(std::move(values));
    auto& w = words.back();
    pointers.emplace_back();
    for (auto& v : w) pointers.back().push_back(&v);
    return kernel_arguments::from_pointers(pointers.back().data());
  }
  void fill(stream_arg s, std::uint64_t dst) {
    model.kernel_launched(at, s, fill_kernel, args({dst, 1 << 16, 0, 0}));
  }
  void sum_into(stream_arg s, std::uint64_t src) {
    model.kernel_launched(at, s, sum_kernel, args({src, 1 << 16, sum, 0}));
  }
  void prologue(unsigned stream_flags) {
    model.stream_created(at, s1, stream_flags, 0);
    model.stream_created(at, s2, stream_flags, 0);
    model.allocated(at, a, bytes, memory_kind::device);
    model.allocated(at, b, bytes, memory_kind::device);
    model.allocated(at, sum, 4, memory_kind::device);
    model.memset(at, {0}, {sum, 4, memory_side::device}, false);
    model.device_synchronized(at);
  }
  void record_and_wait(std::uintptr_t from, std::uintptr_t to, std::uintptr_t event = ev) {
    model.event_created(at, event, 2);
    model.event_recorded(at, event, {from});
    model.stream_waited_event(at, {to}, event);
  }
  std::vector<std::string> kinds() const {
    std::vector<std::string> out;
    for (const auto& d : eng.diagnostics()) out.emplace_back(to_string(d.kind));
    return out;
  }
  // The verdict of a GPU run: possible races (guessed footprints) left out.
  std::vector<std::string> confirmed_kinds() const {
    std::vector<std::string> out;
    for (const auto& d : eng.diagnostics()) {
      if (d.certainty == diagnostic_certainty::confirmed) out.emplace_back(to_string(d.kind));
    }
    return out;
  }
};

using kinds_t = std::vector<std::string>;

class RawExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(RawExample, SumOnOneStreamOfAFillOnAnother) {
  const bool fixed = GetParam();
  prologue(0);
  fill({s1}, a);
  if (fixed) record_and_wait(s1, s2);
  sum_into({s2}, a);
  model.copied(at, {s2}, {host_stack, 4, memory_side::host}, {sum, 4, memory_side::device}, true);
  model.stream_synchronized(at, {s2});
  model.device_synchronized(at);
  model.freed(at, a, free_mode::synchronizing);
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
  if (!fixed) {
    EXPECT_EQ(eng.diagnostics().at(0).hazard_kind, hazard::read_after_write);
  }
}
INSTANTIATE_TEST_SUITE_P(Examples, RawExample, ::testing::Bool());

class WarExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(WarExample, OverwriteOnOneStreamOfAReadOnAnother) {
  const bool fixed = GetParam();
  prologue(0);
  fill({0}, a);
  model.device_synchronized(at);
  sum_into({s1}, a);
  if (fixed) record_and_wait(s1, s2);
  fill({s2}, a);
  model.device_synchronized(at);
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
  if (!fixed) {
    EXPECT_EQ(eng.diagnostics().at(0).hazard_kind, hazard::write_after_read);
  }
}
INSTANTIATE_TEST_SUITE_P(Examples, WarExample, ::testing::Bool());

class LegacyExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(LegacyExample, NonBlockingRacesBlockingDoesNot) {
  const bool fixed = GetParam();
  model.stream_created(at, s1, fixed ? 0 : 1, 0);
  model.allocated(at, a, bytes, memory_kind::device);
  model.allocated(at, sum, 4, memory_kind::device);
  model.memset(at, {0}, {sum, 4, memory_side::device}, false);
  model.device_synchronized(at);
  fill({0}, a);
  sum_into({s1}, a);
  model.stream_synchronized(at, {s1});
  model.device_synchronized(at);
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
}
INSTANTIATE_TEST_SUITE_P(Examples, LegacyExample, ::testing::Bool());

class ExpiredEventExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(ExpiredEventExample, WorkAfterTheRecordIsNotCovered) {
  const bool fixed = GetParam();
  prologue(1);
  model.event_created(at, ev, 2);
  fill({s1}, a);
  if (!fixed) model.event_recorded(at, ev, {s1});
  fill({s1}, b);
  if (fixed) model.event_recorded(at, ev, {s1});
  model.stream_waited_event(at, {s2}, ev);
  sum_into({s2}, a);
  sum_into({s2}, b);
  model.stream_synchronized(at, {s2});
  model.stream_synchronized(at, {s1});
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
}
INSTANTIATE_TEST_SUITE_P(Examples, ExpiredEventExample, ::testing::Bool());

class FreeAsyncExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(FreeAsyncExample, FreeOnTheOwnerWhileTheReaderUsesIt) {
  const bool fixed = GetParam();
  model.stream_created(at, s1, 1, 0);
  model.stream_created(at, s2, 1, 0);
  model.allocated(at, sum, 4, memory_kind::device);
  model.memset(at, {0}, {sum, 4, memory_side::device}, false);
  model.device_synchronized(at);
  model.allocated(at, a, bytes, memory_kind::stream_ordered, stream_arg{s1});
  fill({s1}, a);
  record_and_wait(s1, s2);
  sum_into({s2}, a);
  if (fixed) record_and_wait(s2, s1, ev2);
  model.freed(at, a, free_mode::stream_ordered, stream_arg{s1});
  model.device_synchronized(at);
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"free-while-in-use"});
}
INSTANTIATE_TEST_SUITE_P(Examples, FreeAsyncExample, ::testing::Bool());

class GraphExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(GraphExample, MissingEdgeBetweenWriterAndReader) {
  const bool fixed = GetParam();
  model.allocated(at, a, bytes, memory_kind::device);
  model.allocated(at, sum, 4, memory_kind::device);
  raw_graph g;
  raw_graph_node w, r;
  w.kind = r.kind = raw_node_kind::kernel;
  w.kernel = fill_kernel;
  w.args = args({a, 1 << 16, 0, 0});
  r.kernel = sum_kernel;
  r.args = args({a, 1 << 16, sum, 0});
  g.nodes = {w, r};
  if (fixed) g.edges = {{0, 1}};
  driver.graphs[0x9000] = g;
  model.graph_instantiated(at, 0x9100, 0x9000);
  model.stream_created(at, s1, 1, 0);
  model.graph_launched(at, 0x9100, {s1});
  model.stream_synchronized(at, {s1});
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"graph-node-race"});
}
INSTANTIATE_TEST_SUITE_P(Examples, GraphExample, ::testing::Bool());

// graph_disjoint_halves.cu: a fill node and a scale node, without an edge,
// on the two halves of A; the racy fill writes one element too many. Both
// nodes' inferred footprints are all of A. Replayed as the measuring source
// hands the model a measured graph launch (Note [Measuring graph kernel
// nodes]): --precise on a GPU.
// Examples whose graph nodes are measured: the log goes through the
// footprint resolver, as with the Compute Sanitizer API source.
class MeasuredGraphExamples : public Examples {
 protected:
  precise::footprint_resolver resolver;
  std::uint64_t last_id = 0;
  void connect() override {
    resolver.add_downstream(eng);
    rec.add_sink(resolver);
    model.set_footprint_resolver(&resolver);
  }
  using measured_node = std::pair<std::uintptr_t, precise::decoded_footprint>;
  // One launch of exec 0x9100 on s1 that measured `measured` (node handle,
  // footprint), then a synchronize of s1.
  void launch_measured(const std::vector<measured_node>& measured) {
    std::vector<cuda_model::measured_graph_node> nodes;
    for (const auto& m : measured) nodes.push_back({last_id + nodes.size() + 1, m.first});
    model.expect_measured_graph_launch(nodes);
    model.graph_launched(at, 0x9100, {s1});
    model.clear_expected_measured_graph_launch();
    for (const auto& m : measured) model.measured_launch_done(++last_id, m.second);
    model.stream_synchronized(at, {s1});
  }
  static raw_graph_node kernel_node(std::uintptr_t handle, std::uintptr_t kernel,
                                    kernel_arguments arguments) {
    raw_graph_node n;
    n.kind = raw_node_kind::kernel;
    n.handle = handle;
    n.kernel = kernel;
    n.args = arguments;
    return n;
  }
  static precise::decoded_footprint footprint(
      std::vector<precise::measured_interval> intervals) {
    precise::decoded_footprint d;
    d.intervals = std::move(intervals);
    return d;
  }
};

class GraphHalvesExample : public MeasuredGraphExamples,
                           public ::testing::WithParamInterface<std::tuple<bool, bool>> {};

TEST_P(GraphHalvesExample, FillAndScaleNodesOnTheTwoHalvesOfOneBuffer) {
  const auto [fixed, measured] = GetParam();
  constexpr std::uint64_t half = bytes / 2;
  model.allocated(at, a, bytes, memory_kind::device);
  raw_graph g;
  raw_graph_node f, sc;
  f.kind = sc.kind = raw_node_kind::kernel;
  f.handle = 0xa1;
  f.kernel = fill_kernel;
  f.args = args({a, (half + (fixed ? 0 : 4)) / 4, 0, 0});
  sc.handle = 0xa2;
  sc.kernel = sum_kernel;  // any other kernel: its inferred footprint covers A too
  sc.args = args({a + half, half / 4, a, 0});
  g.nodes = {f, sc};
  driver.graphs[0x9000] = g;
  model.graph_instantiated(at, 0x9100, 0x9000);
  model.stream_created(at, s1, 1, 0);
  const cuda_model::measured_graph_node nodes[] = {{1, 0xa1}, {2, 0xa2}};
  if (measured) model.expect_measured_graph_launch(nodes);
  model.graph_launched(at, 0x9100, {s1});
  if (measured) {
    precise::decoded_footprint fill_fp, scale_fp;
    fill_fp.intervals = {{a, a + half + (fixed ? 0 : 4), precise::footprint_kind::write}};
    scale_fp.intervals = {{a + half, a + bytes, precise::footprint_kind::read},
                          {a + half, a + bytes, precise::footprint_kind::write}};
    model.measured_launch_done(2, scale_fp);
    model.measured_launch_done(1, fill_fp);
  }
  model.stream_synchronized(at, {s1});
  resolver.release_all();
  if (measured) {
    // The racy fill's extra element is written before scale reads it and
    // while scale writes it: a race per hazard, each confirmed.
    const kinds_t racy{"graph-node-race", "graph-node-race"};
    EXPECT_EQ(kinds(), fixed ? kinds_t{} : racy);
    EXPECT_EQ(confirmed_kinds(), kinds());
  } else {  // the default mode: possible races in both versions
    EXPECT_EQ(kinds(), kinds_t{"graph-node-race"});
    EXPECT_EQ(confirmed_kinds(), kinds_t{});
  }
}
INSTANTIATE_TEST_SUITE_P(Examples, GraphHalvesExample,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()));

// Note [Earlier measurements of graph nodes]: two fill nodes of one kernel
// on the first two quarters of A, measured in turn (one per launch), and a
// sum node reading A's last half, without edges. Inferred, either fill node
// reaches the sum node's half. The first launch measures the first fill
// node only: the second one's candidate stands (a possible race). From the
// second launch on, the fill node not measured stands in with its earlier
// measurement, so no launch adds a candidate (the first fill node's,
// inferred, would be a second one).
TEST_F(MeasuredGraphExamples, NodesOfOneKernelMeasuredInTurnLeaveNoCandidate) {
  constexpr std::uint64_t quarter = bytes / 4;
  model.allocated(at, a, bytes, memory_kind::device);
  model.allocated(at, sum, 4, memory_kind::device);
  raw_graph g;
  g.nodes = {kernel_node(0xa1, fill_kernel, args({a, quarter / 4, 0, 0})),
             kernel_node(0xa2, fill_kernel, args({a + quarter, quarter / 4, 0, 0})),
             kernel_node(0xa3, sum_kernel, args({a + 2 * quarter, 2 * quarter / 4, sum, 0}))};
  driver.graphs[0x9000] = g;
  model.graph_instantiated(at, 0x9100, 0x9000);
  model.stream_created(at, s1, 1, 0);
  const auto read = footprint({{a + 2 * quarter, a + bytes, precise::footprint_kind::read},
                               {sum, sum + 4, precise::footprint_kind::write}});
  const auto fill_at = [&](std::uint64_t at_address) {
    return footprint({{at_address, at_address + quarter, precise::footprint_kind::write}});
  };
  launch_measured({{0xa1, fill_at(a)}, {0xa3, read}});  // the second fill node inferred
  launch_measured({{0xa2, fill_at(a + quarter)}, {0xa3, read}});
  launch_measured({{0xa1, fill_at(a)}, {0xa3, read}});
  resolver.release_all();
  EXPECT_EQ(kinds(), kinds_t{"graph-node-race"});
  EXPECT_EQ(confirmed_kinds(), kinds_t{});
}

// examples/programs/graph_repeated_kernel: fill on A (origin) and on B
// (side), one kernel in two nodes, and the origin's sum reading B, joined to
// the side's fill only in the fixed version. As --precise measures them:
// one fill node per launch (the first, then the second), the sum node every
// launch. The racy version's race is confirmed at the second launch.
class GraphRepeatedKernelExample : public MeasuredGraphExamples,
                                   public ::testing::WithParamInterface<bool> {};

TEST_P(GraphRepeatedKernelExample, TheSecondFillNodeIsMeasuredAtTheSecondLaunch) {
  const bool fixed = GetParam();
  constexpr std::uint64_t n = bytes / 4;
  model.allocated(at, a, bytes, memory_kind::device);
  model.allocated(at, b, bytes, memory_kind::device);
  model.allocated(at, sum, 4, memory_kind::device);
  raw_graph g;
  g.nodes = {kernel_node(0xa1, fill_kernel, args({a, n, 0, 0})),
             kernel_node(0xa2, fill_kernel, args({b, n, 0, 0})),
             kernel_node(0xa3, sum_kernel, args({b, n, sum, 0}))};
  g.edges = {{0, 2}};
  if (fixed) g.edges.push_back({1, 2});
  driver.graphs[0x9000] = g;
  model.graph_instantiated(at, 0x9100, 0x9000);
  model.stream_created(at, s1, 1, 0);
  const auto read = footprint({{b, b + bytes, precise::footprint_kind::read},
                               {sum, sum + 4, precise::footprint_kind::atomic}});
  const auto fill_a = footprint({{a, a + bytes, precise::footprint_kind::write}});
  launch_measured({{0xa1, fill_a}, {0xa3, read}});
  launch_measured({{0xa2, footprint({{b, b + bytes, precise::footprint_kind::write}})}, {0xa3, read}});
  launch_measured({{0xa1, fill_a}, {0xa3, read}});
  resolver.release_all();
  if (fixed) {
    EXPECT_EQ(kinds(), kinds_t{});
  } else {
    EXPECT_EQ(confirmed_kinds(), kinds_t{"graph-node-race"});
  }
}
INSTANTIATE_TEST_SUITE_P(Examples, GraphRepeatedKernelExample, ::testing::Bool());

class StructExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(StructExample, PointersInsideStructParameters) {
  const bool fixed = GetParam();
  model.stream_created(at, s1, 1, 0);
  model.stream_created(at, s2, 1, 0);
  model.allocated(at, a, bytes, memory_kind::device);  // x
  model.allocated(at, b, bytes, memory_kind::device);  // y
  model.allocated(at, sum, bytes, memory_kind::device);  // z
  fill({0}, a);
  model.device_synchronized(at);
  // scale_args {in, out, n | factor} as three 8-byte words
  model.kernel_launched(at, {s1}, scale_kernel, args({a, b, 0, 0}));
  if (fixed) record_and_wait(s1, s2);
  model.kernel_launched(at, {s2}, scale_kernel, args({b, sum, 0, 0}));
  model.device_synchronized(at);
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
}
INSTANTIATE_TEST_SUITE_P(Examples, StructExample, ::testing::Bool());

class HostReadExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(HostReadExample, HostReadsWhileTheCopyRuns) {
  const bool fixed = GetParam();
  model.stream_created(at, s1, 1, 0);
  model.allocated(at, a, bytes, memory_kind::device);
  model.allocated(at, pinned, bytes, memory_kind::pinned_host);
  fill({s1}, a);
  model.copied(at, {s1}, {pinned, bytes, memory_side::host}, {a, bytes, memory_side::device},
               true);
  if (fixed) model.stream_synchronized(at, {s1});
  const annotated_range read[] = {{pinned, bytes, access_mode::read}};
  model.host_accessed(at, read, "host read");
  model.stream_synchronized(at, {s1});
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"host-device-race"});
}
INSTANTIATE_TEST_SUITE_P(Examples, HostReadExample, ::testing::Bool());

// ---- implicit synchronization of synchronous calls (issue #10) ----

class MemsetManagedExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(MemsetManagedExample, SynchronousMemsetOfManagedMemoryOrdersTheNextKernel) {
  const bool fixed = GetParam();
  model.stream_created(at, s1, 1, 0);
  model.allocated(at, b, bytes, memory_kind::device);
  model.allocated(at, a, bytes, memory_kind::managed);
  model.allocated(at, sum, 4, memory_kind::device);
  model.memset(at, {0}, {sum, 4, memory_side::device}, false);
  model.device_synchronized(at);
  fill({0}, b);
  model.memset(at, {0}, {a, bytes, memory_side::device}, !fixed);
  sum_into({s1}, a);
  model.copied(at, {s1}, {host_stack, 4, memory_side::host}, {sum, 4, memory_side::device}, true);
  model.stream_synchronized(at, {s1});
  model.device_synchronized(at);
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
}
INSTANTIATE_TEST_SUITE_P(Examples, MemsetManagedExample, ::testing::Bool());

class HostCopyLegacyExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(HostCopyLegacyExample, HostToHostCopyWaitsForBlockingStreamsOnly) {
  const bool fixed = GetParam();
  model.stream_created(at, s1, fixed ? 0 : 1, 0);  // the producer
  model.stream_created(at, s2, 1, 0);              // the uploader
  model.allocated(at, pinned, bytes, memory_kind::pinned_host);
  model.allocated(at, a, bytes, memory_kind::device);
  model.allocated(at, sum, 4, memory_kind::device);
  model.memset(at, {0}, {sum, 4, memory_side::device}, false);
  model.device_synchronized(at);
  fill({s1}, pinned);
  model.copied(at, {0}, {host_stack, 1024, memory_side::host},
               {host_stack + 4096, 1024, memory_side::host}, false);
  model.copied(at, {s2}, {a, bytes, memory_side::device}, {pinned, bytes, memory_side::host},
               true);
  sum_into({s2}, a);
  model.stream_synchronized(at, {s2});
  model.device_synchronized(at);
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
}
INSTANTIATE_TEST_SUITE_P(Examples, HostCopyLegacyExample, ::testing::Bool());

class AsyncHostCopyExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(AsyncHostCopyExample, AsyncHostToHostCopyFollowsItsStream) {
  const bool fixed = GetParam();
  model.stream_created(at, s1, 1, 0);
  model.stream_created(at, s2, 1, 0);
  model.allocated(at, pinned, bytes, memory_kind::pinned_host);
  fill({s1}, pinned);
  model.copied(at, {fixed ? s1 : s2}, {host_stack, bytes, memory_side::host},
               {pinned, bytes, memory_side::host}, true);
  model.device_synchronized(at);
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
}
INSTANTIATE_TEST_SUITE_P(Examples, AsyncHostCopyExample, ::testing::Bool());

class PageableUploadExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(PageableUploadExample, PageableUploadSynchronizesItsStreamOnly) {
  const bool fixed = GetParam();
  model.stream_created(at, s1, 0, 0);  // blocking
  model.allocated(at, pinned, bytes, memory_kind::pinned_host);
  model.allocated(at, a, bytes, memory_kind::device);
  model.device_synchronized(at);
  fill({s1}, pinned);
  model.copied(at, {0}, {a, bytes, memory_side::device}, {host_stack, bytes, memory_side::host},
               false);
  if (fixed) model.stream_synchronized(at, {s1});
  const annotated_range read[] = {{pinned, bytes, access_mode::read}};
  model.host_accessed(at, read, "host read");
  model.device_synchronized(at);
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"host-device-race"});
}
INSTANTIATE_TEST_SUITE_P(Examples, PageableUploadExample, ::testing::Bool());

class EventQueryExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(EventQueryExample, QueryOfANeverRecordedEventIsNotAReportButOrdersNothing) {
  const bool fixed = GetParam();
  model.stream_created(at, s1, 1, 0);
  model.event_created(at, ev, 2);   // done
  model.event_created(at, ev2, 2);  // never recorded
  model.allocated(at, pinned, bytes, memory_kind::pinned_host);
  fill({s1}, pinned);
  if (fixed) {
    model.event_queried(at, ev2, true);
    model.event_recorded(at, ev, {s1});
    model.event_queried(at, ev, false);
    model.event_queried(at, ev, true);
  } else {
    model.event_queried(at, ev2, true);
  }
  const annotated_range read[] = {{pinned, bytes, access_mode::read}};
  model.host_accessed(at, read, "host read");
  model.device_synchronized(at);
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"host-device-race"});
}
INSTANTIATE_TEST_SUITE_P(Examples, EventQueryExample, ::testing::Bool());

class FreeStreamOrderedExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(FreeStreamOrderedExample, CudaFreeOfStreamOrderedMemoryDoesNotSynchronize) {
  const bool fixed = GetParam();
  model.stream_created(at, s1, 1, 0);
  model.allocated(at, a, bytes, memory_kind::stream_ordered, stream_arg{s1});
  fill({s1}, a);
  if (fixed) model.stream_synchronized(at, {s1});
  model.freed(at, a, free_mode::synchronizing);
  model.device_synchronized(at);
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"free-while-in-use"});
}
INSTANTIATE_TEST_SUITE_P(Examples, FreeStreamOrderedExample, ::testing::Bool());

// ---- APIs that were unmodelled (issue #10 item 3) ----

raw_graph_node memset_graph_node(std::uint64_t dst, std::uintptr_t handle = 0) {
  raw_graph_node n;
  n.kind = raw_node_kind::memset;
  n.dst = memory_region{dst, bytes, memory_side::device};
  n.handle = handle;
  return n;
}

class GraphExecEditExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(GraphExecEditExample, AnEditedMemsetNodeWritesItsNewBuffer) {
  const bool fixed = GetParam();
  prologue(1);
  raw_graph g;
  g.nodes = {memset_graph_node(a, 0xa1)};
  driver.graphs[0x9000] = g;
  model.graph_instantiated(at, 0x9100, 0x9000);
  model.graph_exec_node_set(at, 0x9100, 0xa1, memset_graph_node(b),
                            "cudaGraphExecMemsetNodeSetParams");
  model.graph_launched(at, 0x9100, {s1});
  model.copied(at, {s2}, {sum, 4, memory_side::device},
               {fixed ? a : b, 4, memory_side::device}, true);
  model.device_synchronized(at);
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
}
INSTANTIATE_TEST_SUITE_P(Examples, GraphExecEditExample, ::testing::Bool());

// graph_event_edit.cu (Note [Event nodes]): the exec's record node records
// ev2 instead of ev; s2 waits on ev, last recorded before the launch
// (racy), or on ev2, which the launch records after its memset (fixed).
class GraphEventEditExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(GraphEventEditExample, AnEditedRecordNodeRecordsTheNewEvent) {
  const bool fixed = GetParam();
  prologue(1);
  model.event_created(at, ev, 2);
  model.event_created(at, ev2, 2);
  raw_graph g;
  raw_graph_node record;
  record.kind = raw_node_kind::event_record;
  record.event = ev;
  record.handle = 0xa2;
  g.nodes = {memset_graph_node(a, 0xa1), record};
  g.edges = {{0, 1}};
  driver.graphs[0x9000] = g;
  model.graph_instantiated(at, 0x9100, 0x9000);
  record.event = ev2;
  model.graph_exec_node_set(at, 0x9100, 0xa2, record, "cudaGraphExecEventRecordNodeSetEvent");
  model.event_recorded(at, ev, {s1});
  model.graph_launched(at, 0x9100, {s1});
  model.stream_waited_event(at, {s2}, fixed ? ev2 : ev);
  model.copied(at, {s2}, {b, bytes, memory_side::device}, {a, bytes, memory_side::device}, true);
  model.device_synchronized(at);
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
}
INSTANTIATE_TEST_SUITE_P(Examples, GraphEventEditExample, ::testing::Bool());

// graph_child_edit.cu (Note [Child graph edits]): the exec's child graph
// node, read flattened, is given a child that memsets b instead of a.
class GraphChildEditExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(GraphChildEditExample, AnEditedChildGraphWritesItsNewBuffer) {
  const bool fixed = GetParam();
  prologue(1);
  raw_graph g, child;
  raw_graph_node entry, exit_node;
  entry.kind = exit_node.kind = raw_node_kind::empty;
  entry.handle = 0xc1;
  g.nodes = {entry, memset_graph_node(a, 0xd1), exit_node};
  g.edges = {{0, 1}, {1, 2}};
  child.nodes = {memset_graph_node(b, 0xe1)};
  driver.graphs[0x9000] = g;
  driver.graphs[0x9600] = child;
  model.graph_instantiated(at, 0x9100, 0x9000);
  model.graph_exec_child_set(at, 0x9100, 0xc1, 0x9600, "cudaGraphExecChildGraphNodeSetParams");
  model.graph_launched(at, 0x9100, {s1});
  model.copied(at, {s2}, {sum, 4, memory_side::device},
               {fixed ? a : b, 4, memory_side::device}, true);
  model.device_synchronized(at);
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
}
INSTANTIATE_TEST_SUITE_P(Examples, GraphChildEditExample, ::testing::Bool());

// array_copy.cu (Note [CUDA arrays]): s1 uploads into an array, s2 copies
// the array out, without (racy) or after (fixed) an event.
class ArrayCopyExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(ArrayCopyExample, ACopyFromAnArrayWaitsForTheUploadIntoIt) {
  const bool fixed = GetParam();
  prologue(1);
  model.allocated(at, pinned, bytes, memory_kind::pinned_host);
  model.array_created(at, 0xa770, bytes, "cudaMallocArray");
  model.copied(at, {s1}, model.array_region(0xa770), {pinned, bytes, memory_side::host}, true);
  if (fixed) record_and_wait(s1, s2);
  model.copied(at, {s2}, {a, bytes, memory_side::device}, model.array_region(0xa770), true);
  model.device_synchronized(at);
  model.array_destroyed(at, 0xa770);
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
}
INSTANTIATE_TEST_SUITE_P(Examples, ArrayCopyExample, ::testing::Bool());

// texture_read.cu, surface_write.cu, mipmap_level.cu (Note [Texture and
// surface objects], Note [Mipmapped arrays]): kernels that take texture or
// surface objects, against copies into and out of the arrays behind them.
class TextureExample : public Examples, public ::testing::WithParamInterface<bool> {
 protected:
  static constexpr std::uintptr_t reader = 0x7e1, writer = 0x7e2;
  static constexpr std::uintptr_t array = 0xa770, level0 = 0xa780, mipmap = 0xb000;
  static constexpr std::uint64_t object = 1;  // small, as drivers may hand out
  void SetUp() override {
    Examples::SetUp();
    // sum_texture(unsigned long long, int, int, float*, long long)
    driver.kernels[reader] = kernel_description{
        "_Z11sum_textureyiiPfx", {{0, 8}, {8, 4}, {12, 4}, {16, 8}, {24, 8}}, true};
    // fill_surface(unsigned long long, int, int, float, long long)
    driver.kernels[writer] = kernel_description{
        "_Z12fill_surfaceyiifx", {{0, 8}, {8, 4}, {12, 4}, {16, 4}, {24, 8}}, true};
    // Non-blocking streams; the result zeroed on the summing stream.
    model.stream_created(at, s1, 1, 0);
    model.stream_created(at, s2, 1, 0);
    model.allocated(at, pinned, bytes, memory_kind::pinned_host);
    model.allocated(at, a, bytes, memory_kind::device);
    model.allocated(at, sum, 4, memory_kind::device);
    model.memset(at, {s2}, {sum, 4, memory_side::device}, true);
  }
  void upload(memory_region into) {
    fill({s1}, a);  // the spinning kernel that delays the upload
    model.copied(at, {s1}, into, {pinned, 16384, memory_side::host}, true);
  }
};

TEST_P(TextureExample, TextureReadWaitsForTheUploadIntoItsArray) {
  const bool fixed = GetParam();
  model.array_created(at, array, 16384, "cudaMallocArray");
  model.texture_object_created(object, model.array_region(array), access_mode::read);
  upload(model.array_region(array));
  if (fixed) record_and_wait(s1, s2);
  model.kernel_launched(at, {s2}, reader, args({object, 64 | (64ull << 32), sum, 1000}));
  model.device_synchronized(at);
  model.texture_object_destroyed(object);
  model.array_destroyed(at, array);
  EXPECT_EQ(confirmed_kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
  EXPECT_EQ(kinds().size(), fixed ? 0u : 1u);
}

TEST_P(TextureExample, CopyOutOfAnArrayWaitsForTheSurfaceWrite) {
  const bool fixed = GetParam();
  model.array_created(at, array, 16384, "cudaMallocArray");
  model.texture_object_created(object, model.array_region(array), access_mode::read_write);
  model.kernel_launched(at, {s1}, writer, args({object, 64 | (64ull << 32), 0x40a00000, 0}));
  if (fixed) record_and_wait(s1, s2);
  model.copied(at, {s2}, {pinned, 16384, memory_side::host}, model.array_region(array), true);
  model.device_synchronized(at);
  EXPECT_EQ(confirmed_kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
  if (!fixed) {
    EXPECT_EQ(eng.diagnostics().at(0).hazard_kind, hazard::read_after_write);
  }
}

TEST_P(TextureExample, AMipmapReadWaitsForTheUploadIntoALevel) {
  const bool fixed = GetParam();
  const std::vector<std::uint64_t> levels{16384, 4096};
  model.mipmapped_array_created(at, mipmap, levels, "cudaMallocMipmappedArray");
  model.mipmap_level_taken(level0, mipmap, 0);
  model.texture_object_created(object, model.mipmapped_array_region(mipmap), access_mode::read);
  upload(model.array_region(level0));
  if (fixed) record_and_wait(s1, s2);
  model.kernel_launched(at, {s2}, reader, args({object, 64 | (64ull << 32), sum, 1000}));
  model.device_synchronized(at);
  // Synchronous copies on the legacy stream after the device synchronize.
  model.array_created(at, array, 16384, "cudaMallocArray");
  model.copied(at, {0}, model.array_region(array), model.array_region(level0), false);
  model.copied(at, {0}, {pinned, 16384, memory_side::host}, model.array_region(array), false);
  model.mipmapped_array_destroyed(at, mipmap);
  EXPECT_EQ(confirmed_kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
  EXPECT_EQ(kinds().size(), fixed ? 0u : 1u);
}
INSTANTIATE_TEST_SUITE_P(Examples, TextureExample, ::testing::Bool());

class GraphExecUpdateExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(GraphExecUpdateExample, AnUpdatedCopyNodeReadsTheNewSource) {
  const bool fixed = GetParam();
  prologue(1);
  const auto copy_node = [](std::uint64_t from, std::uintptr_t handle) {
    raw_graph_node n;
    n.kind = raw_node_kind::memcpy;
    n.dst = memory_region{sum, 4, memory_side::device};
    n.src = memory_region{from, 4, memory_side::device};
    n.handle = handle;
    return n;
  };
  raw_graph first, second;
  first.nodes = {copy_node(a, 0xa1)};
  second.nodes = {copy_node(b, 0xb1)};
  driver.graphs[0x9000] = first;
  driver.graphs[0x9500] = second;
  model.graph_instantiated(at, 0x9100, 0x9000);
  model.graph_exec_updated(at, 0x9100, 0x9500, "cudaGraphExecUpdate");
  model.graph_launched(at, 0x9100, {s1});
  model.memset(at, {s2}, {fixed ? a : b, bytes, memory_side::device}, true);
  model.device_synchronized(at);
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
}
INSTANTIATE_TEST_SUITE_P(Examples, GraphExecUpdateExample, ::testing::Bool());

class GraphConditionalExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(GraphConditionalExample, TheBodyOfAConditionalRunsInTheLaunch) {
  const bool fixed = GetParam();
  prologue(1);
  raw_graph g, body;
  g.nodes.resize(1);
  g.nodes[0].kind = raw_node_kind::conditional;
  g.nodes[0].handle = 0xc1;
  body.nodes = {memset_graph_node(b)};
  driver.graphs[0x9000] = g;
  driver.graphs[0xb0d1] = body;
  const std::uintptr_t bodies[] = {0xb0d1};
  model.conditional_node_added(at, 0xc1, 0x9000, conditional_kind::if_then, bodies);
  model.graph_instantiated(at, 0x9100, 0x9000);
  model.graph_launched(at, 0x9100, {s1});
  if (fixed) record_and_wait(s1, s2);
  model.copied(at, {s2}, {a, bytes, memory_side::device}, {b, bytes, memory_side::device}, true);
  model.device_synchronized(at);
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
}
INSTANTIATE_TEST_SUITE_P(Examples, GraphConditionalExample, ::testing::Bool());

// Note [Graph allocations]: graph_memory_reader.cu.
class GraphMemoryReaderExample : public Examples, public ::testing::WithParamInterface<bool> {};

// Where the examples' graphs allocate (no other allocation is there).
constexpr std::uint64_t graph_a = 0x7f0000400000, graph_b = 0x7f0000500000;

TEST_P(GraphMemoryReaderExample, MemoryOfAnAllocNodeIsReadOnlyAfterTheLaunch) {
  const bool fixed = GetParam();
  constexpr std::uint64_t a = graph_a;
  prologue(1);
  raw_graph g, frees;
  g.nodes.resize(2);
  g.nodes[0].kind = raw_node_kind::mem_alloc;
  g.nodes[0].dst = memory_region{a, bytes, memory_side::device};
  g.nodes[1].kind = raw_node_kind::kernel;
  g.nodes[1].kernel = fill_kernel;
  g.nodes[1].args = args({a, 1 << 16, 0, 0});
  g.edges = {{0, 1}};
  frees.nodes.resize(1);
  frees.nodes[0].kind = raw_node_kind::mem_free;
  frees.nodes[0].dst = memory_region{a, 0, memory_side::device};
  driver.graphs[0x9000] = g;
  driver.graphs[0x9200] = frees;
  model.graph_instantiated(at, 0x9100, 0x9000);
  model.graph_instantiated(at, 0x9300, 0x9200);
  model.graph_launched(at, 0x9100, {s1});
  if (fixed) record_and_wait(s1, s2);
  sum_into({s2}, a);
  model.graph_launched(at, 0x9300, {s2});
  model.device_synchronized(at);
  const kinds_t found = kinds();
  if (fixed) {
    EXPECT_EQ(found, kinds_t{});
  } else {
    ASSERT_FALSE(found.empty());
    EXPECT_EQ(found[0], "use-before-alloc");
  }
}
INSTANTIATE_TEST_SUITE_P(Examples, GraphMemoryReaderExample, ::testing::Bool());

// Note [Graph allocations]: graph_memory_capture.cu.
class GraphMemoryCaptureExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(GraphMemoryCaptureExample, CapturedAllocationsOutliveTheLaunchUntilFreed) {
  const bool fixed = GetParam();
  constexpr std::uint64_t scratch = graph_a, total = graph_b, host_total = pinned;
  prologue(1);
  model.capture_began(at, {s1});
  driver.captures[s1] = capture_frontier{0x9000, {0x77}};
  model.allocated(at, scratch, bytes, memory_kind::stream_ordered, stream_arg{s1});
  model.allocated(at, total, 4, memory_kind::stream_ordered, stream_arg{s1});
  fill({s1}, scratch);
  model.memset(at, {s1}, {total, 4, memory_side::device}, true);
  model.kernel_launched(at, {s1}, sum_kernel, args({scratch, 1 << 16, total, 0}));
  model.freed(at, scratch, free_mode::stream_ordered, stream_arg{s1});
  driver.captures.erase(s1);
  model.capture_ended(at, {s1}, 0x9000);
  // What the driver reads back: alloc, alloc, fill, memset, sum, free.
  raw_graph g;
  g.nodes.resize(6);
  g.nodes[0].kind = g.nodes[1].kind = raw_node_kind::mem_alloc;
  g.nodes[0].dst = memory_region{scratch, bytes, memory_side::device};
  g.nodes[1].dst = memory_region{total, 4, memory_side::device};
  g.nodes[2].kind = g.nodes[4].kind = raw_node_kind::kernel;
  g.nodes[2].kernel = fill_kernel;
  g.nodes[2].args = args({scratch, 1 << 16, 0, 0});
  g.nodes[3] = memset_graph_node(total);
  g.nodes[3].dst.size = 4;
  g.nodes[4].kernel = sum_kernel;
  g.nodes[4].args = args({scratch, 1 << 16, total, 0});
  g.nodes[5].kind = raw_node_kind::mem_free;
  g.nodes[5].dst = memory_region{scratch, 0, memory_side::device};
  g.edges = {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}};
  driver.graphs[0x9000] = g;
  model.graph_instantiated(at, 0x9100, 0x9000);
  model.graph_launched(at, 0x9100, {s1});
  record_and_wait(s1, s2);
  model.allocated(at, host_total, 4, memory_kind::pinned_host);
  model.copied(at, {s2}, {host_total, 4, memory_side::host}, {total, 4, memory_side::device},
               true);
  if (fixed) record_and_wait(s2, s1, ev2);
  model.freed(at, total, free_mode::stream_ordered, stream_arg{s1});
  model.device_synchronized(at);
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"free-while-in-use"});
}
INSTANTIATE_TEST_SUITE_P(Examples, GraphMemoryCaptureExample, ::testing::Bool());

class StreamWaitValueExample : public Examples, public ::testing::WithParamInterface<bool> {};

TEST_P(StreamWaitValueExample, TheWaitCoversWhatTheStreamDidBeforeTheWrite) {
  const bool fixed = GetParam();
  prologue(1);
  const std::uint64_t flag = sum;
  if (!fixed) model.stream_value_written(at, {s1}, flag, 4, true, "cuStreamWriteValue32");
  model.memset(at, {s1}, {a, 4, memory_side::device}, true);
  if (fixed) model.stream_value_written(at, {s1}, flag, 4, true, "cuStreamWriteValue32");
  model.stream_value_waited(at, {s2}, flag, 4, "cuStreamWaitValue32");
  model.copied(at, {s2}, {b, bytes, memory_side::device}, {a, bytes, memory_side::device}, true);
  model.device_synchronized(at);
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
}
INSTANTIATE_TEST_SUITE_P(Examples, StreamWaitValueExample, ::testing::Bool());

class VmmMapExample : public Examples, public ::testing::WithParamInterface<bool> {};

// Note [Virtual memory management]: the two views are one history.
TEST_P(VmmMapExample, ACopyThroughOneViewWaitsForAFillThroughTheOther) {
  const bool fixed = GetParam();
  prologue(1);
  constexpr std::uint64_t first = 0x7f2000000000, second = 0x7f2000200000;
  constexpr std::uint64_t memory = 0x77, size = 1 << 21;
  model.physical_created(at, memory, size, memory_kind::device, 0);
  model.mapped(at, first, size, 0, memory);
  model.mapped(at, second, size, 0, memory);
  model.physical_released(at, memory);
  model.memset(at, {0}, {first, bytes, memory_side::device}, false);
  model.device_synchronized(at);
  model.event_created(at, ev, 2);
  fill({s1}, first);
  model.memset(at, {s1}, {first, 4, memory_side::device}, true);
  if (fixed) {
    model.event_recorded(at, ev, {s1});
    model.stream_waited_event(at, {s2}, ev);
  }
  model.copied(at, {s2}, {b, bytes, memory_side::device}, {second, bytes, memory_side::device},
               true);
  model.device_synchronized(at);
  model.unmapped(at, first, size);
  model.unmapped(at, second, size);
  model.unmapped(at, first, size);  // cuMemAddressFree: nothing left
  // The memset's exact write is the verdict (the GPU run's); the fill's
  // guessed footprint adds a possible race through the other view.
  EXPECT_EQ(confirmed_kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
  EXPECT_EQ(kinds().size(), fixed ? 0u : 2u);
}
INSTANTIATE_TEST_SUITE_P(Examples, VmmMapExample, ::testing::Bool());

class PdlEventExample : public Examples, public ::testing::WithParamInterface<bool> {};

// Note [Programmatic dependent launch]: the launch records its event after
// the kernel (what launch_handlers.cpp does), and the wait on it is no wait
// on a never-recorded event.
TEST_P(PdlEventExample, AWaitOnTheProgrammaticEventOrdersTheCopy) {
  const bool fixed = GetParam();
  prologue(1);
  model.event_created(at, ev, 2);
  fill({s1}, a);
  model.event_recorded(at, ev, {s1});
  if (fixed) model.stream_waited_event(at, {s2}, ev);
  model.copied(at, {s2}, {b, bytes, memory_side::device}, {a, bytes, memory_side::device}, true);
  model.device_synchronized(at);
  EXPECT_EQ(kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
}
INSTANTIATE_TEST_SUITE_P(Examples, PdlEventExample, ::testing::Bool());

class IpcOpenExample : public Examples, public ::testing::WithParamInterface<bool> {};

// Note [IPC memory handles]: the child's calls (the parent's are another
// process and another log).
TEST_P(IpcOpenExample, TheOpenedMemoryIsAnAllocationOfTheChild) {
  const bool fixed = GetParam();
  prologue(1);
  constexpr std::uint64_t shared = 0x7f3000000000;
  driver.ranges[shared] = bytes;
  model.ipc_memory_opened(at, shared, "cudaIpcOpenMemHandle");
  model.event_created(at, ev, 2);
  fill({s1}, shared);
  model.memset(at, {s1}, {shared, 4, memory_side::device}, true);
  if (fixed) {
    model.event_recorded(at, ev, {s1});
    model.stream_waited_event(at, {s2}, ev);
  }
  model.copied(at, {s2}, {b, bytes, memory_side::device}, {shared, bytes, memory_side::device},
               true);
  model.device_synchronized(at);
  model.ipc_memory_closed(at, shared);
  EXPECT_EQ(confirmed_kinds(), fixed ? kinds_t{} : kinds_t{"stream-race"});
}
INSTANTIATE_TEST_SUITE_P(Examples, IpcOpenExample, ::testing::Bool());

}  // namespace
}  // namespace streamsan::injection
