#include "tests/log/sample_log.h"

#include <array>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <unistd.h>

namespace streamsan::testing {
namespace {

constexpr std::array<std::uint64_t, 3> frames = {0x401000, 0x402abc, 0xffffffffffffffffull};
constexpr std::array<access, 3> kernel_accesses = {
    access{{alloc_id{1}, 0, 4096}, access_mode::write},
    access{{alloc_id{2}, 16, 32}, access_mode::read, access_origin::measured},
    access{{alloc_id{3}, 8, 4}, access_mode::read_atomic, access_origin::inferred},
};
constexpr std::array<access, 1> func_accesses = {
    access{{alloc_id{1}, 0, 8}, access_mode::read_write},
};
constexpr std::array<access, 1> host_accesses = {
    access{{alloc_id{2}, 1ull << 40, 1}, access_mode::read},
};
constexpr std::array<access, 2> node2_accesses = {
    access{{alloc_id{1}, 64, 64}, access_mode::write},
    access{{alloc_id{2}, 0, 4}, access_mode::read},
};
const std::array<graph_node, 4> nodes = {
    graph_node{graph_node_kind::kernel, string_id{7}, kernel_accesses, stack_id{1}},
    graph_node{graph_node_kind::memcpy, string_id{}, {}},
    graph_node{graph_node_kind::host_func, string_id{2}, node2_accesses},
    graph_node{graph_node_kind::mem_free, string_id{}, {}, stack_id{}, alloc_id{2}},
};
constexpr std::array<graph_edge, 3> edges = {graph_edge{0, 1}, graph_edge{1, 2},
                                             graph_edge{2, 3}};

}  // namespace

std::vector<record> sample_log() {
  std::vector<record> log;
  std::uint64_t seq = 1;
  const auto def = [&](record_body body) {
    log.push_back(record{{seq++, thread_id{}, stack_id{}}, std::move(body)});
  };
  const auto op = [&](record_body body) {
    // A gap in the sequence and a large value exercise the delta encoding.
    seq += 3;
    log.push_back(record{{seq++, thread_id{1}, stack_id{1}}, std::move(body)});
  };
  def(string_define{string_id{1}, "fill"});
  def(string_define{string_id{2}, "sum"});
  def(string_define{string_id{3}, "A"});
  def(string_define{string_id{4}, "main thread"});
  def(string_define{string_id{5}, "forward/attention"});
  def(string_define{string_id{6}, "cudaMemPrefetchAsync"});
  def(string_define{string_id{7}, "node0"});
  def(stack_define{stack_id{1}, frames});
  def(frame_symbol{0x401000, "main", "demo.cpp", 42, "/usr/bin/demo", 0x1000});
  log.push_back(record{{seq++, thread_id{1}, stack_id{}}, thread_start{string_id{4}}});
  op(stream_create{stream_id{1}, 0, stream_flavor::blocking, -1});
  op(stream_create{stream_id{2}, 1, stream_flavor::per_thread_default, 0});
  op(stream_destroy{stream_id{2}});
  op(stream_synchronize{stream_id{1}});
  op(stream_query{stream_id{1}, true});
  op(stream_wait_stream{stream_id{1}, stream_id{2}});
  op(device_synchronize{3});
  op(event_create{event_id{1}, event_flag_timing | event_flag_interprocess});
  op(event_destroy{event_id{1}});
  op(event_record{event_id{2}, stream_id{1}});
  op(event_wait{event_id{2}, stream_id{2}});
  op(event_synchronize{event_id{2}});
  op(event_query{event_id{2}, true});
  op(alloc_record{alloc_id{1}, memory_kind::managed, 2, 4096, 0x7f0000001000, stream_id{1},
                  alloc_id{9}, 128, string_id{3}});
  op(free_record{alloc_id{1}, free_mode::stream_ordered, stream_id{2}});
  op(memcpy_record{stream_id{1}, {alloc_id{1}, 0, 64}, {alloc_id{2}, 128, 64},
                   memory_kind::pinned_host, memory_kind::managed, true});
  op(memset_record{stream_id{2}, {alloc_id{1}, 8, 16}, memory_kind::cached_block, true});
  op(kernel_launch{stream_id{1}, string_id{1}, kernel_accesses, /*cooperative=*/true});
  op(host_func{stream_id{2}, string_id{2}, func_accesses});
  op(host_access{host_accesses, string_id{3}});
  op(graph_capture_begin{stream_id{1}, graph_id{1}});
  op(graph_capture_end{stream_id{1}, graph_id{1}});
  op(graph_instantiate{graph_id{1}, nodes, edges});
  op(graph_launch{graph_id{1}, stream_id{2}});
  op(nvtx_push{string_id{5}});
  op(nvtx_pop{});
  op(nvtx_mark{string_id{5}});
  op(unmodelled_call{string_id{6}});
  op(thread_exit{});
  return log;
}

void write_trace(const std::filesystem::path& path, const std::vector<record>& records,
                 trace_writer_options options) {
  trace_writer writer(path, options);
  for (const auto& r : records) writer.on_record(r);
  writer.close();
}

std::string read_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

namespace {

// Removes the scratch directories when the test program exits.
struct scratch_dirs {
  std::vector<std::filesystem::path> dirs;
  ~scratch_dirs() {
    for (const auto& dir : dirs) {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  }
};

}  // namespace

std::filesystem::path scratch_dir(const std::string& test_name) {
  static scratch_dirs created;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("streamsan-test-" + std::to_string(::getpid()) + "-" + test_name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  created.dirs.push_back(dir);
  return dir;
}

}  // namespace streamsan::testing
