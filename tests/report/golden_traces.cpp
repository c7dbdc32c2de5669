#include "tests/report/golden_traces.h"

#include <array>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "sanitizer/log/recorder.h"
#include "sanitizer/log/trace_writer.h"

namespace streamsan::testing {
namespace {

using stack = std::vector<std::uint64_t>;

// Where the modules of the program are mapped (any distinct bases will do).
struct module_info {
  std::string_view path;
  std::uint64_t base;
};
constexpr module_info app{"/home/user/app/app", 0x555555554000};
constexpr module_info libc{"/usr/lib/x86_64-linux-gnu/libc.so.6", 0x7ffff7829000};
constexpr module_info libstdcxx{"/usr/lib/x86_64-linux-gnu/libstdc++.so.6", 0x7ffff7a00000};
constexpr module_info libcudart{"/usr/local/cuda-13.0/lib64/libcudart.so.13", 0x7ffff6800000};
constexpr module_info libcuda{"/usr/lib/x86_64-linux-gnu/libcuda.so.1", 0x7ffff4000000};

constexpr std::string_view cuda_runtime_h =
    "/usr/local/cuda-13.0/targets/x86_64-linux/include/cuda_runtime.h";

// One program: its records and the symbols of the frames its stacks use.
class program {
 public:
  program(const std::filesystem::path& out, std::string source)
      : rec_({.capture_stacks = true, .stack_depth = 32}),
        writer_(out, {.symbolize = false}),
        source_(std::string(golden_source_root) + "/" + std::move(source)) {
    rec_.add_sink(writer_);
    rec_.name_current_thread("main");
  }

  // A frame; the same function, file and line always get the same address.
  std::uint64_t frame(const module_info& module, std::string function, std::string file = {},
                      std::uint32_t line = 0) {
    const auto key = std::tuple(std::string(module.path), function, file, line);
    if (const auto it = addresses_.find(key); it != addresses_.end()) return it->second;
    const std::uint64_t offset = 0x1a40 + 0x40 * symbols_.size();
    const std::uint64_t address = module.base + offset;
    addresses_.emplace(key, address);
    // A frame without symbols keeps its line only as part of the key.
    const std::uint32_t shown_line = file.empty() ? 0 : line;
    symbols_.push_back({address, std::move(function), std::move(file), shown_line,
                        std::string(module.path), offset});
    return address;
  }

  // A frame of the program's own source file.
  std::uint64_t user(std::string function, std::uint32_t line) {
    return frame(app, std::move(function), source_, line);
  }

  // main at `line`, and libc below it.
  stack from_main(std::uint32_t line) {
    return {user("main", line),
            frame(libc, "__libc_start_call_main", "../sysdeps/nptl/libc_start_call_main.h", 58),
            frame(libc, "__libc_start_main", "../csu/libc-start.c", 360),
            frame(app, "_start")};
  }

  // A CUDA runtime call, statically linked into the program, from `callers`.
  stack call(std::string_view api, const stack& callers) {
    stack s{frame(app, std::string(api))};
    s.insert(s.end(), callers.begin(), callers.end());
    return s;
  }

  // kernel<<<...>>>(args) from `callers`: cudaLaunchKernel, nvcc's stub,
  // cuda_runtime.h's template.
  stack launch(std::string_view stub, std::string_view parameters, const stack& callers) {
    stack s{frame(app, "cudaLaunchKernel"),
            frame(app, std::string(stub) + "(" + std::string(parameters) + ")",
                  "/tmp/tmpxft_00002d41_00000000-6_" + stem() + ".cudafe1.stub.c", 14),
            frame(app,
                  "cudaError cudaLaunchKernel<char>(char const*, dim3, dim3, void**, unsigned "
                  "long, CUstream_st*)",
                  std::string(cuda_runtime_h), 216)};
    s.insert(s.end(), callers.begin(), callers.end());
    return s;
  }

  // A call into the shared CUDA runtime and driver (the graph API); the
  // driver's frames have no symbols.
  stack shared_call(std::string_view api, const stack& callers) {
    stack s{frame(libcuda, "", "", 1), frame(libcuda, "", "", 2),
            frame(libcudart, std::string(api))};
    s.insert(s.end(), callers.begin(), callers.end());
    return s;
  }

  void emit(const record_body& body, const stack& s) { rec_.emit_with_stack(body, s); }
  void emit(const record_body& body) { rec_.emit_with_stack(body, {}); }

  recorder& rec() { return rec_; }
  string_id name(std::string_view text) { return rec_.intern(text); }

  stream_id stream(const stack& s, stream_flavor flavor = stream_flavor::blocking) {
    const stream_id id = rec_.new_stream_id();
    emit(stream_create{id, 0, flavor, 0}, s);
    return id;
  }
  event_id event(const stack& s) {
    const event_id id = rec_.new_event_id();
    emit(event_create{id, event_flag_none}, s);
    return id;
  }
  alloc_id alloc(memory_kind kind, std::uint64_t size, std::string_view label, const stack& s,
                 stream_id on = {}) {
    const alloc_id id = rec_.new_alloc_id();
    emit(alloc_record{id, kind, 0, size, std::uint64_t{0x7ffe00000000} + std::uint64_t{0x100000} * raw(id), on, {}, 0,
                      name(label)},
         s);
    return id;
  }

  void finish() {
    for (const auto& s : symbols_) {
      emit(frame_symbol{s.address, s.function, s.file, s.line, s.module, s.module_offset});
    }
    rec_.remove_sink(writer_);
    writer_.close();
  }

 private:
  struct symbol {
    std::uint64_t address;
    std::string function, file;
    std::uint32_t line;
    std::string module;
    std::uint64_t module_offset;
  };
  std::string stem() const { return std::filesystem::path(source_).stem().string(); }

  recorder rec_;
  trace_writer writer_;
  std::string source_;
  std::map<std::tuple<std::string, std::string, std::string, std::uint32_t>, std::uint64_t>
      addresses_;
  std::vector<symbol> symbols_;
};

std::array<access, 1> one(alloc_id a, std::uint64_t size, access_mode mode) {
  return {access{{a, 0, size}, mode}};
}

constexpr std::uint64_t n_bytes = 4096;

// stream_race.cu
//   10  __global__ void k_write(float* a, int n);
//   11  __global__ void k_read(const float* a, float* out, int n);
//   30  int main() {
//   31    cudaStream_t s1, s2;
//   32    cudaStreamCreate(&s1);
//   33    cudaStreamCreate(&s2);
//   35    cudaMalloc(&a, 4096); cudaMalloc(&out, 4096);
//   40    k_write<<<4, 256, 0, s1>>>(a, n);
//   42    k_read<<<4, 256, 0, s2>>>(a, out, n);       // s2 never waits for s1
void stream_race(program& p) {
  const auto s1 = p.stream(p.call("cudaStreamCreate", p.from_main(32)));
  const auto s2 = p.stream(p.call("cudaStreamCreate", p.from_main(33)));
  const auto a = p.alloc(memory_kind::device, n_bytes, "a", p.call("cudaMalloc", p.from_main(35)));
  const auto out = p.alloc(memory_kind::device, n_bytes, "out", p.call("cudaMalloc", p.from_main(35)));
  p.emit(kernel_launch{s1, p.name("k_write"), one(a, n_bytes, access_mode::write)},
         p.launch("__device_stub__Z7k_writePfi", "float*, int", p.from_main(40)));
  const std::array<access, 2> reads{access{{a, 0, n_bytes}, access_mode::read},
                                    access{{out, 0, n_bytes}, access_mode::write}};
  p.emit(kernel_launch{s2, p.name("k_read"), reads},
         p.launch("__device_stub__Z6k_readPKfPfi", "float const*, float*, int", p.from_main(42)));
}

// unrecorded_event.cu
//   40    k_write<<<4, 256, 0, s1>>>(a, n);
//   41    // forgot: cudaEventRecord(written, s1);
//   42    cudaStreamWaitEvent(s2, written, 0);        // never recorded: a no-op
//   43    k_read<<<4, 256, 0, s2>>>(a, out, n);
void unrecorded_event(program& p) {
  const auto s1 = p.stream(p.call("cudaStreamCreate", p.from_main(32)));
  const auto s2 = p.stream(p.call("cudaStreamCreate", p.from_main(33)));
  const auto written = p.event(p.call("cudaEventCreate", p.from_main(34)));
  const auto a = p.alloc(memory_kind::device, n_bytes, "a", p.call("cudaMalloc", p.from_main(35)));
  p.emit(kernel_launch{s1, p.name("k_write"), one(a, n_bytes, access_mode::write)},
         p.launch("__device_stub__Z7k_writePfi", "float*, int", p.from_main(40)));
  p.emit(event_wait{written, s2}, p.call("cudaStreamWaitEvent", p.from_main(42)));
  p.emit(kernel_launch{s2, p.name("k_read"), one(a, n_bytes, access_mode::read)},
         p.launch("__device_stub__Z6k_readPKfPfi", "float const*, float*, int", p.from_main(43)));
}

// event_recorded_early.cu
//   40    cudaEventRecord(ready, s1);                 // before the work it should cover
//   41    k_write<<<4, 256, 0, s1>>>(a, n);
//   42    cudaStreamWaitEvent(s2, ready, 0);
//   43    k_read<<<4, 256, 0, s2>>>(a, out, n);
void event_recorded_early(program& p) {
  const auto s1 = p.stream(p.call("cudaStreamCreate", p.from_main(32)));
  const auto s2 = p.stream(p.call("cudaStreamCreate", p.from_main(33)));
  const auto ready = p.event(p.call("cudaEventCreate", p.from_main(34)));
  const auto a = p.alloc(memory_kind::device, n_bytes, "a", p.call("cudaMalloc", p.from_main(35)));
  p.emit(event_record{ready, s1}, p.call("cudaEventRecord", p.from_main(40)));
  p.emit(kernel_launch{s1, p.name("k_write"), one(a, n_bytes, access_mode::write)},
         p.launch("__device_stub__Z7k_writePfi", "float*, int", p.from_main(41)));
  p.emit(event_wait{ready, s2}, p.call("cudaStreamWaitEvent", p.from_main(42)));
  p.emit(kernel_launch{s2, p.name("k_read"), one(a, n_bytes, access_mode::read)},
         p.launch("__device_stub__Z6k_readPKfPfi", "float const*, float*, int", p.from_main(43)));
}

// wrong_stream_sync.cu
//   20  void download(float* host, const float* dev, cudaStream_t s) {
//   21    cudaMemcpyAsync(host, dev, 4096, cudaMemcpyDeviceToHost, s);
//   22  }
//   40    download(h, d, s1);
//   41    cudaStreamSynchronize(s2);                  // the copy runs on s1
//   42    printf("%f\n", h[0]);                       // (annotated host read)
void wrong_stream_sync(program& p) {
  const auto s1 = p.stream(p.call("cudaStreamCreate", p.from_main(32)));
  const auto s2 = p.stream(p.call("cudaStreamCreate", p.from_main(33)));
  const auto d = p.alloc(memory_kind::device, n_bytes, "d", p.call("cudaMalloc", p.from_main(35)));
  const auto h =
      p.alloc(memory_kind::pinned_host, n_bytes, "h", p.call("cudaMallocHost", p.from_main(36)));
  stack in_download = p.from_main(40);
  in_download.insert(in_download.begin(), p.user("download(float*, float const*, CUstream_st*)", 21));
  p.emit(memcpy_record{s1, {d, 0, n_bytes}, {h, 0, n_bytes}, memory_kind::device,
                       memory_kind::pinned_host, true},
         p.call("cudaMemcpyAsync", in_download));
  p.emit(stream_synchronize{s2}, p.call("cudaStreamSynchronize", p.from_main(41)));
  p.emit(host_access{one(h, 4, access_mode::read), p.name("h[0]")}, p.from_main(42));
}

// query_not_ready.cu
//   40    cudaMemcpyAsync(h, d, 4096, cudaMemcpyDeviceToHost, s1);
//   41    if (cudaStreamQuery(s1) == cudaErrorNotReady) log("still copying");
//   42    use(h[0]);                                  // whether or not it was ready
void query_not_ready(program& p) {
  const auto s1 = p.stream(p.call("cudaStreamCreate", p.from_main(32)));
  const auto d = p.alloc(memory_kind::device, n_bytes, "d", p.call("cudaMalloc", p.from_main(35)));
  const auto h =
      p.alloc(memory_kind::pinned_host, n_bytes, "h", p.call("cudaMallocHost", p.from_main(36)));
  p.emit(memcpy_record{s1, {d, 0, n_bytes}, {h, 0, n_bytes}, memory_kind::device,
                       memory_kind::pinned_host, true},
         p.call("cudaMemcpyAsync", p.from_main(40)));
  p.emit(stream_query{s1, false}, p.call("cudaStreamQuery", p.from_main(41)));
  p.emit(host_access{one(h, 4, access_mode::read), p.name("h[0]")}, p.from_main(42));
}

// wrong_event.cu
//   40    k_write<<<4, 256, 0, s1>>>(a, n);
//   41    cudaEventRecord(done, s3);                  // s3, not s1
//   42    cudaStreamWaitEvent(s2, done, 0);
//   43    k_read<<<4, 256, 0, s2>>>(a, out, n);
void wrong_event(program& p) {
  const auto s1 = p.stream(p.call("cudaStreamCreate", p.from_main(31)));
  const auto s2 = p.stream(p.call("cudaStreamCreate", p.from_main(32)));
  const auto s3 = p.stream(p.call("cudaStreamCreate", p.from_main(33)));
  const auto done = p.event(p.call("cudaEventCreate", p.from_main(34)));
  const auto a = p.alloc(memory_kind::device, n_bytes, "a", p.call("cudaMalloc", p.from_main(35)));
  p.emit(kernel_launch{s1, p.name("k_write"), one(a, n_bytes, access_mode::write)},
         p.launch("__device_stub__Z7k_writePfi", "float*, int", p.from_main(40)));
  p.emit(event_record{done, s3}, p.call("cudaEventRecord", p.from_main(41)));
  p.emit(event_wait{done, s2}, p.call("cudaStreamWaitEvent", p.from_main(42)));
  p.emit(kernel_launch{s2, p.name("k_read"), one(a, n_bytes, access_mode::read)},
         p.launch("__device_stub__Z6k_readPKfPfi", "float const*, float*, int", p.from_main(43)));
}

// host_function.cu
//   40    k_write<<<4, 256, 0, s1>>>(a, n);
//   41    cudaLaunchHostFunc(s2, report_progress, h);  // reads h, which k_write fills
void host_function(program& p) {
  const auto s1 = p.stream(p.call("cudaStreamCreate", p.from_main(32)));
  const auto s2 = p.stream(p.call("cudaStreamCreate", p.from_main(33)));
  const auto h =
      p.alloc(memory_kind::pinned_host, n_bytes, "h", p.call("cudaMallocHost", p.from_main(35)));
  p.emit(kernel_launch{s1, p.name("k_write"), one(h, n_bytes, access_mode::write)},
         p.launch("__device_stub__Z7k_writePfi", "float*, int", p.from_main(40)));
  p.emit(host_func{s2, p.name("report_progress"), one(h, n_bytes, access_mode::read)},
         p.call("cudaLaunchHostFunc", p.from_main(41)));
}

// graph_missing_edge.cu (the graph API, through the shared runtime)
//   50    cudaGraphAddKernelNode(&init, g, nullptr, 0, &init_params);
//   51    cudaGraphAddKernelNode(&write, g, &init, 1, &write_params);
//   52    cudaGraphAddKernelNode(&read, g, &init, 1, &read_params);   // needs &write too
//   55    cudaGraphInstantiate(&exec, g, 0);
//   56    cudaGraphLaunch(exec, s1);
void graph_missing_edge(program& p) {
  const auto s1 = p.stream(p.call("cudaStreamCreate", p.from_main(32)));
  const auto a = p.alloc(memory_kind::device, n_bytes, "a", p.call("cudaMalloc", p.from_main(35)));
  const auto graph = p.rec().new_graph_id();
  const auto added_at = [&](std::uint32_t line) {
    return p.rec().intern_stack(p.shared_call("cudaGraphAddKernelNode", p.from_main(line)));
  };
  const auto init_writes = one(a, n_bytes, access_mode::write);
  const auto write_writes = one(a, n_bytes, access_mode::write);
  const auto read_reads = one(a, n_bytes, access_mode::read);
  const std::array<graph_node, 3> nodes{
      graph_node{graph_node_kind::kernel, p.name("k_init"), init_writes, added_at(50)},
      graph_node{graph_node_kind::kernel, p.name("k_write"), write_writes, added_at(51)},
      graph_node{graph_node_kind::kernel, p.name("k_read"), read_reads, added_at(52)}};
  const std::array<graph_edge, 2> edges{graph_edge{0, 1}, graph_edge{0, 2}};
  p.emit(graph_instantiate{graph, nodes, edges},
         p.shared_call("cudaGraphInstantiate", p.from_main(55)));
  p.emit(graph_launch{graph, s1}, p.shared_call("cudaGraphLaunch", p.from_main(56)));
}

// free_async.cu
//   40    k_read<<<4, 256, 0, s1>>>(a, out, n);
//   41    cudaFreeAsync(a, s2);                       // s2 does not wait for k_read
void free_async(program& p) {
  const auto s1 = p.stream(p.call("cudaStreamCreate", p.from_main(32)));
  const auto s2 = p.stream(p.call("cudaStreamCreate", p.from_main(33)));
  const auto a = p.alloc(memory_kind::stream_ordered, n_bytes, "a",
                         p.call("cudaMallocAsync", p.from_main(35)), s1);
  p.emit(device_synchronize{0}, p.call("cudaDeviceSynchronize", p.from_main(36)));
  p.emit(kernel_launch{s1, p.name("k_read"), one(a, n_bytes, access_mode::read)},
         p.launch("__device_stub__Z6k_readPKfPfi", "float const*, float*, int", p.from_main(40)));
  p.emit(free_record{a, free_mode::stream_ordered, s2}, p.call("cudaFreeAsync", p.from_main(41)));
}

// use_after_free.cu
//   40    cudaFree(a);
//   41    k_read<<<4, 256, 0, s1>>>(a, out, n);
void use_after_free(program& p) {
  const auto s1 = p.stream(p.call("cudaStreamCreate", p.from_main(32)));
  const auto a = p.alloc(memory_kind::device, n_bytes, "a", p.call("cudaMalloc", p.from_main(35)));
  p.emit(free_record{a, free_mode::synchronizing, {}}, p.call("cudaFree", p.from_main(40)));
  p.emit(kernel_launch{s1, p.name("k_read"), one(a, n_bytes, access_mode::read)},
         p.launch("__device_stub__Z6k_readPKfPfi", "float const*, float*, int", p.from_main(41)));
}

// use_before_alloc.cu
//   40    cudaMallocAsync(&a, 4096, s1);
//   41    k_write<<<4, 256, 0, s2>>>(a, n);           // s2 does not wait for the allocation
void use_before_alloc(program& p) {
  const auto s1 = p.stream(p.call("cudaStreamCreate", p.from_main(32)));
  const auto s2 = p.stream(p.call("cudaStreamCreate", p.from_main(33)));
  const auto a = p.alloc(memory_kind::stream_ordered, n_bytes, "a",
                         p.call("cudaMallocAsync", p.from_main(40)), s1);
  p.emit(kernel_launch{s2, p.name("k_write"), one(a, n_bytes, access_mode::write)},
         p.launch("__device_stub__Z7k_writePfi", "float*, int", p.from_main(41)));
}

// graph_memory.cu (Note [Graph allocations])
//   50    cudaGraphAddMemAllocNode(&alloc, graph, nullptr, 0, &params);  a = params.dptr
//   51    cudaGraphAddKernelNode(&fill, graph, &alloc, 1, &k_fill_params);
//   55    cudaGraphInstantiate(&exec, graph, 0);
//   56    cudaGraphLaunch(exec, s1);
//   57    k_read<<<4, 256, 0, s2>>>(a, out, n);      // s2 does not wait for the launch
void graph_memory(program& p) {
  const auto s1 = p.stream(p.call("cudaStreamCreate", p.from_main(32)));
  const auto s2 = p.stream(p.call("cudaStreamCreate", p.from_main(33)));
  const auto instantiate = p.shared_call("cudaGraphInstantiate", p.from_main(55));
  // The model declares the graph's allocation at instantiation: no stream.
  const auto a = p.alloc(memory_kind::stream_ordered, n_bytes, "", instantiate);
  const auto graph = p.rec().new_graph_id();
  const auto fill_writes = one(a, n_bytes, access_mode::write);
  const std::array<graph_node, 2> nodes{
      graph_node{graph_node_kind::mem_alloc, p.name("graph allocation"), {},
                 p.rec().intern_stack(p.shared_call("cudaGraphAddMemAllocNode", p.from_main(50))),
                 a},
      graph_node{graph_node_kind::kernel, p.name("k_fill"), fill_writes,
                 p.rec().intern_stack(p.shared_call("cudaGraphAddKernelNode", p.from_main(51)))}};
  const std::array<graph_edge, 1> edges{graph_edge{0, 1}};
  p.emit(graph_instantiate{graph, nodes, edges}, instantiate);
  p.emit(graph_launch{graph, s1}, p.shared_call("cudaGraphLaunch", p.from_main(56)));
  p.emit(kernel_launch{s2, p.name("k_read"), one(a, n_bytes, access_mode::read)},
         p.launch("__device_stub__Z6k_readPKfPfi", "float const*, float*, int", p.from_main(57)));
}

// destroyed_objects.cu
//   40    cudaStreamDestroy(s2);
//   41    k_read<<<4, 256, 0, s2>>>(a, out, n);
//   42    cudaEventDestroy(e);
//   43    cudaEventRecord(e, s1);
void destroyed_objects(program& p) {
  const auto s1 = p.stream(p.call("cudaStreamCreate", p.from_main(32)));
  const auto s2 = p.stream(p.call("cudaStreamCreate", p.from_main(33)));
  const auto e = p.event(p.call("cudaEventCreate", p.from_main(34)));
  const auto a = p.alloc(memory_kind::device, n_bytes, "a", p.call("cudaMalloc", p.from_main(35)));
  p.emit(stream_destroy{s2}, p.call("cudaStreamDestroy", p.from_main(40)));
  p.emit(kernel_launch{s2, p.name("k_read"), one(a, n_bytes, access_mode::read)},
         p.launch("__device_stub__Z6k_readPKfPfi", "float const*, float*, int", p.from_main(41)));
  p.emit(event_destroy{e}, p.call("cudaEventDestroy", p.from_main(42)));
  p.emit(event_record{e, s1}, p.call("cudaEventRecord", p.from_main(43)));
}

// capture_sync.cu
//   40    cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal);
//   41    k_write<<<4, 256, 0, s1>>>(a, n);
//   42    cudaDeviceSynchronize();                    // illegal while s1 captures
void capture_sync(program& p) {
  const auto s1 = p.stream(p.call("cudaStreamCreate", p.from_main(32)));
  const auto a = p.alloc(memory_kind::device, n_bytes, "a", p.call("cudaMalloc", p.from_main(35)));
  const auto graph = p.rec().new_graph_id();
  p.emit(graph_capture_begin{s1, graph}, p.call("cudaStreamBeginCapture", p.from_main(40)));
  p.emit(kernel_launch{s1, p.name("k_write"), one(a, n_bytes, access_mode::write)},
         p.launch("__device_stub__Z7k_writePfi", "float*, int", p.from_main(41)));
  p.emit(device_synchronize{0}, p.call("cudaDeviceSynchronize", p.from_main(42)));
}

// two_devices.cu
//   40    cudaEventRecord(e, s_dev0);
//   41    cudaEventRecord(e, s_dev1);                 // e belongs to device 0
void two_devices(program& p) {
  const stream_id s0 = p.rec().new_stream_id();
  p.emit(stream_create{s0, 0, stream_flavor::blocking, 0},
         p.call("cudaStreamCreate", p.from_main(32)));
  const stream_id s1 = p.rec().new_stream_id();
  p.emit(stream_create{s1, 1, stream_flavor::blocking, 0},
         p.call("cudaStreamCreate", p.from_main(34)));
  const auto e = p.event(p.call("cudaEventCreate", p.from_main(35)));
  p.emit(event_record{e, s0}, p.call("cudaEventRecord", p.from_main(40)));
  p.emit(event_record{e, s1}, p.call("cudaEventRecord", p.from_main(41)));
}

// worker_thread.cu
//   20  void consume(const float* a, float* out, cudaStream_t s) {
//   21    k_read<<<4, 256, 0, s>>>(a, out, n);
//   22  }
//   40    k_write<<<4, 256, 0, s1>>>(a, n);
//   41    std::thread worker([&] { consume(a, out, s2); });   // no wait for s1
void worker_thread(program& p) {
  const auto s1 = p.stream(p.call("cudaStreamCreate", p.from_main(32)));
  const auto s2 = p.stream(p.call("cudaStreamCreate", p.from_main(33)));
  const auto a = p.alloc(memory_kind::device, n_bytes, "a", p.call("cudaMalloc", p.from_main(35)));
  p.emit(kernel_launch{s1, p.name("k_write"), one(a, n_bytes, access_mode::write)},
         p.launch("__device_stub__Z7k_writePfi", "float*, int", p.from_main(40)));
  std::thread worker([&] {
    p.rec().name_current_thread("worker");
    const stack thread_entry{
        p.user("consume(float const*, float*, CUstream_st*)", 21),
        p.user("main::{lambda()#1}::operator()() const", 41),
        p.frame(app, "void std::__invoke_impl<void, main::{lambda()#1}>(std::__invoke_other, "
                     "main::{lambda()#1}&&)", "/usr/include/c++/12/bits/invoke.h", 61),
        p.frame(app, "std::thread::_State_impl<std::thread::_Invoker<std::tuple<main::{lambda()#1}> "
                     "> >::_M_run()", "/usr/include/c++/12/bits/std_thread.h", 253),
        p.frame(libstdcxx, "execute_native_thread_routine"),
        p.frame(libc, "start_thread", "./nptl/pthread_create.c", 447),
        p.frame(libc, "clone3", "../sysdeps/unix/sysv/linux/x86_64/clone3.S", 78)};
    p.emit(kernel_launch{s2, p.name("k_read"), one(a, n_bytes, access_mode::read)},
           p.launch("__device_stub__Z6k_readPKfPfi", "float const*, float*, int", thread_entry));
  });
  worker.join();
}

using writer_fn = void (*)(program&);
struct golden_case {
  std::string_view name;
  writer_fn write;
};

constexpr std::array cases{
    golden_case{"stream_race", stream_race},
    golden_case{"unrecorded_event", unrecorded_event},
    golden_case{"event_recorded_early", event_recorded_early},
    golden_case{"wrong_stream_sync", wrong_stream_sync},
    golden_case{"query_not_ready", query_not_ready},
    golden_case{"wrong_event", wrong_event},
    golden_case{"host_function", host_function},
    golden_case{"graph_missing_edge", graph_missing_edge},
    golden_case{"free_async", free_async},
    golden_case{"use_after_free", use_after_free},
    golden_case{"use_before_alloc", use_before_alloc},
    golden_case{"graph_memory", graph_memory},
    golden_case{"destroyed_objects", destroyed_objects},
    golden_case{"capture_sync", capture_sync},
    golden_case{"two_devices", two_devices},
    golden_case{"worker_thread", worker_thread},
};

}  // namespace

std::span<const std::string_view> golden_trace_names() {
  static const auto names = [] {
    std::array<std::string_view, cases.size()> out{};
    for (std::size_t i = 0; i < cases.size(); ++i) out[i] = cases[i].name;
    return out;
  }();
  return names;
}

void write_golden_trace(std::string_view name, const std::filesystem::path& path) {
  for (const auto& c : cases) {
    if (c.name != name) continue;
    program p(path, std::string(name) + ".cu");
    c.write(p);
    p.finish();
    return;
  }
  throw std::invalid_argument("no golden trace named '" + std::string(name) + "'");
}

}  // namespace streamsan::testing
