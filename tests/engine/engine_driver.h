// Test helper: drives an engine through a real recorder, so that tests read
// like the CUDA programs they model:
//   engine_driver d;
//   auto s1 = d.stream(), s2 = d.stream();
//   auto buf = d.alloc(1024);
//   d.launch(s1, {d.write(buf)});
//   d.launch(s2, {d.read(buf)});
//   EXPECT_EQ(d.kinds(), (kind_list{diagnostic_kind::stream_race}));
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "sanitizer/engine/engine.h"
#include "sanitizer/log/recorder.h"

namespace streamsan::testing {

using kind_list = std::vector<diagnostic_kind>;

// Every access mode, for tables over mode pairs.
inline constexpr access_mode all_access_modes[] = {
    access_mode::read,        access_mode::write,        access_mode::read_write,
    access_mode::atomic,      access_mode::read_atomic,  access_mode::write_atomic,
    access_mode::read_write_atomic,
};

struct node_spec {
  std::string name;
  std::vector<access> accesses;
  stack_id stack{};  // where the node was added
  graph_node_kind kind = graph_node_kind::kernel;
  alloc_id memory{};  // mem_alloc, mem_free
};

class engine_driver {
 public:
  explicit engine_driver(bool capture_stacks = false, engine_options options = {})
      : rec_({.capture_stacks = capture_stacks, .stack_depth = 16}), eng_(options) {
    rec_.add_sink(eng_);
  }
  ~engine_driver() { rec_.remove_sink(eng_); }

  recorder& rec() { return rec_; }
  engine& eng() { return eng_; }
  const std::vector<diagnostic>& diagnostics() const { return eng_.diagnostics(); }

  kind_list kinds() const {
    kind_list out;
    for (const auto& d : eng_.diagnostics()) out.push_back(d.kind);
    return out;
  }
  std::vector<hazard> hazards() const {
    std::vector<hazard> out;
    for (const auto& d : eng_.diagnostics()) out.push_back(d.hazard_kind);
    return out;
  }

  // ---- streams ----
  stream_id stream(stream_flavor flavor = stream_flavor::blocking, int device = 0) {
    const auto id = rec_.new_stream_id();
    rec_.emit(stream_create{id, device, flavor, 0});
    return id;
  }
  stream_id legacy(int device = 0) { return stream(stream_flavor::legacy_default, device); }
  void destroy(stream_id s) { rec_.emit(stream_destroy{s}); }
  void sync(stream_id s) { rec_.emit(stream_synchronize{s}); }
  void query(stream_id s, bool complete) { rec_.emit(stream_query{s, complete}); }
  void wait_stream(stream_id waiter, stream_id waited) {
    rec_.emit(stream_wait_stream{waiter, waited});
  }
  void device_sync(int device = 0) { rec_.emit(device_synchronize{device}); }

  // ---- events ----
  event_id event() {
    const auto id = rec_.new_event_id();
    rec_.emit(event_create{id, event_flag_none});
    return id;
  }
  void destroy(event_id e) { rec_.emit(event_destroy{e}); }
  void record(event_id e, stream_id s) { rec_.emit(event_record{e, s}); }
  void wait(event_id e, stream_id s) { rec_.emit(event_wait{e, s}); }
  void event_sync(event_id e) { rec_.emit(event_synchronize{e}); }
  void event_query(event_id e, bool complete) { rec_.emit(streamsan::event_query{e, complete}); }

  // ---- memory ----
  alloc_id alloc(std::uint64_t size, memory_kind kind = memory_kind::device, int device = 0) {
    const auto id = rec_.new_alloc_id();
    sizes_[id] = size;
    rec_.emit(alloc_record{.alloc = id, .kind = kind, .device = device, .size = size,
                           .address = 0x100000 * std::uint64_t{raw(id)}});
    return id;
  }
  alloc_id alloc_async(std::uint64_t size, stream_id s) {
    const auto id = rec_.new_alloc_id();
    sizes_[id] = size;
    rec_.emit(alloc_record{.alloc = id, .kind = memory_kind::stream_ordered, .size = size,
                           .stream = s});
    return id;
  }
  // Note [Graph allocations]: memory a graph's alloc node allocates.
  alloc_id graph_alloc(std::uint64_t size) {
    const auto id = rec_.new_alloc_id();
    sizes_[id] = size;
    rec_.emit(alloc_record{.alloc = id, .kind = memory_kind::stream_ordered, .size = size});
    return id;
  }
  alloc_id block(alloc_id segment, std::uint64_t offset, std::uint64_t size, stream_id s = {}) {
    const auto id = rec_.new_alloc_id();
    sizes_[id] = size;
    rec_.emit(alloc_record{.alloc = id, .kind = memory_kind::cached_block, .size = size,
                           .stream = s, .parent = segment, .parent_offset = offset});
    return id;
  }
  void free(alloc_id a, free_mode mode = free_mode::synchronizing, stream_id s = {}) {
    rec_.emit(free_record{a, mode, s});
  }

  access read(alloc_id a) { return {{a, 0, sizes_.at(a)}, access_mode::read}; }
  access write(alloc_id a) { return {{a, 0, sizes_.at(a)}, access_mode::write}; }
  access read(alloc_id a, std::uint64_t offset, std::uint64_t size) {
    return {{a, offset, size}, access_mode::read};
  }
  access write(alloc_id a, std::uint64_t offset, std::uint64_t size) {
    return {{a, offset, size}, access_mode::write};
  }
  // An access with any mode and footprint origin (whole buffer or a range).
  access touch(alloc_id a, access_mode mode, access_origin origin = access_origin::exact) {
    return {{a, 0, sizes_.at(a)}, mode, origin};
  }
  access touch(alloc_id a, std::uint64_t offset, std::uint64_t size, access_mode mode,
               access_origin origin = access_origin::exact) {
    return {{a, offset, size}, mode, origin};
  }
  byte_range whole(alloc_id a) { return {a, 0, sizes_.at(a)}; }

  // ---- work ----
  void launch(stream_id s, std::initializer_list<access> accesses,
              std::string_view kernel = "kernel") {
    const std::vector<access> list(accesses);
    rec_.emit(kernel_launch{s, rec_.intern(kernel), list});
  }
  void launch(stream_id s, const std::vector<access>& accesses, std::string_view kernel) {
    rec_.emit(kernel_launch{s, rec_.intern(kernel), accesses});
  }
  // cudaLaunchCooperativeKernel: all the kernel's blocks are resident at once.
  void cooperative_launch(stream_id s, std::initializer_list<access> accesses,
                          std::string_view kernel = "cooperative_kernel") {
    const std::vector<access> list(accesses);
    rec_.emit(kernel_launch{s, rec_.intern(kernel), list, /*cooperative=*/true});
  }
  void host_func(stream_id s, std::initializer_list<access> accesses) {
    const std::vector<access> list(accesses);
    rec_.emit(streamsan::host_func{s, rec_.intern("host_fn"), list});
  }
  void host(std::initializer_list<access> accesses, std::string_view what = "host") {
    const std::vector<access> list(accesses);
    rec_.emit(host_access{list, rec_.intern(what)});
  }
  void memcpy(stream_id s, byte_range dst, memory_kind dst_kind, byte_range src,
              memory_kind src_kind, bool async) {
    rec_.emit(memcpy_record{s, src, dst, src_kind, dst_kind, async});
  }
  void memset(stream_id s, byte_range dst, memory_kind kind, bool async) {
    rec_.emit(memset_record{s, dst, kind, async});
  }

  // ---- graphs ----
  graph_id graph() { return rec_.new_graph_id(); }
  void capture_begin(stream_id s, graph_id g) { rec_.emit(graph_capture_begin{s, g}); }
  void capture_end(stream_id s, graph_id g) { rec_.emit(graph_capture_end{s, g}); }
  void instantiate(graph_id g, const std::vector<node_spec>& nodes,
                   const std::vector<graph_edge>& edges) {
    std::vector<graph_node> list;
    for (const auto& n : nodes) {
      list.push_back(graph_node{n.kind, rec_.intern(n.name), n.accesses, n.stack, n.memory});
    }
    rec_.emit(graph_instantiate{g, list, edges});
  }
  void launch_graph(graph_id g, stream_id s) { rec_.emit(graph_launch{g, s}); }
  static node_spec alloc_node(alloc_id a) {
    return {"alloc", {}, {}, graph_node_kind::mem_alloc, a};
  }
  static node_spec free_node(alloc_id a) { return {"free", {}, {}, graph_node_kind::mem_free, a}; }

  // ---- annotations ----
  void push(std::string_view message) { rec_.emit(nvtx_push{rec_.intern(message)}); }
  void pop() { rec_.emit(nvtx_pop{}); }
  void unmodelled(std::string_view api) { rec_.emit(unmodelled_call{rec_.intern(api)}); }

  // Runs `f` on another host thread (and waits for it): its records carry
  // that thread's id.
  template <class F>
  void on_other_thread(F&& f) {
    std::thread(std::forward<F>(f)).join();
  }
  // The same, and the thread then ends (logs thread_exit).
  template <class F>
  void on_thread_that_exits(F&& f) {
    std::thread([&] {
      f();
      rec_.thread_exited();
    }).join();
  }

 private:
  recorder rec_;
  engine eng_;
  std::map<alloc_id, std::uint64_t> sizes_;
};

}  // namespace streamsan::testing
