// What the ThreadSanitizer bridge costs (docs/tsan-bridge.md), on the sim.
//
// BM_step/MODE/BYTES: one step of a host/device pipeline through the
// runtime: a kernel writes a pinned buffer of BYTES, the host synchronizes
// the stream and reads one float of it. Modes: 0 = streamsan off, 1 = the
// live engine, 2 = the live engine and the bridge. Built normally there is no ThreadSanitizer, so
// 2 is 1; built with -Db_sanitize=thread (a TSan build of streamsan, the
// runtime and this program instrumented) the three rows are: what TSan alone
// costs, plus streamsan, plus the bridge.
//
// BM_engine_records: the engine fed the same kind of log straight from a
// recorder (8 streams, pinned buffers, a synchronize every 8 launches), alone
// and with the bridge over a no-op TSan interface: the bridge's own
// bookkeeping, without TSan's.
//
// Run: build/bench/tsan/tsan_bridge_bench (and build-tsan/bench/tsan/...).
// `streamsan run` is in between: the program is instrumented, streamsan is
// not; LD_PRELOAD=libtsan.so.2 build/bench/tsan/tsan_bridge_bench gives the
// bridge a real runtime with streamsan uninstrumented.
#include <benchmark/benchmark.h>

#include <array>
#include <vector>

#include "runtime/api.h"
#include "sanitizer/engine/engine.h"
#include "sanitizer/log/recorder.h"
#include "sanitizer/tsan/tsan_bridge.h"

namespace streamsan {
namespace {

void BM_step(benchmark::State& state) {
  rt::runtime_options options;
  options.backend = rt::backend_kind::sim;
  options.sim.policy = rt::sim_policy::eager;
  options.capture_stacks = false;
  options.print_diagnostics = false;
  options.sanitize = state.range(0) >= 1;
  options.tsan_bridge = state.range(0) == 2;
  rt::initialize(options);
  {
    rt::stream s({.non_blocking = true});
    auto pinned = rt::allocate_pinned_host(static_cast<std::uint64_t>(state.range(1)));
    const auto view = pinned.view();
    for (auto _ : state) {
      rt::launch(s, rt::kernels::fill{view, 1.0f});
      s.synchronize();
      benchmark::DoNotOptimize(rt::host_read<float>(view.elements<float>(0, 1)));
    }
  }
  rt::shutdown();
  const char* labels[] = {"streamsan off", "engine", "engine + TSan bridge"};
  state.SetLabel(labels[state.range(0)]);
}
BENCHMARK(BM_step)->ArgsProduct({{0, 1, 2}, {4 << 10, 1 << 20}});

// A TSan interface whose entry points do nothing.
tsan::tsan_api noop_api() {
  tsan::tsan_api a;
  static int fiber;
  a.get_current_fiber = [] { return static_cast<void*>(&fiber); };
  a.create_fiber = [](unsigned) { return static_cast<void*>(&fiber); };
  a.destroy_fiber = [](void*) {};
  a.switch_to_fiber = [](void*, unsigned) {};
  a.acquire = [](void*) {};
  a.release = [](void*) {};
  a.atomic64_store = [](volatile long long* p, long long v, int) { *p = v; };
  a.read_range = [](void*, unsigned long) {};
  a.write_range = [](void*, unsigned long) {};
  a.func_entry = [](void*) {};
  a.func_exit = [] {};
  a.ignore_thread_begin = [] {};
  a.ignore_thread_end = [] {};
  return a;
}

void BM_engine_records(benchmark::State& state) {
  recorder rec({.capture_stacks = false});
  engine eng;
  const tsan::tsan_api api = noop_api();
  std::unique_ptr<tsan::tsan_bridge> bridge;
  if (state.range(0) == 1) {
    bridge = std::make_unique<tsan::tsan_bridge>(api, eng.tables());
    eng.set_order_observer(bridge.get());
  }
  rec.add_sink(eng);
  std::array<stream_id, 8> streams{};
  std::array<alloc_id, 8> buffers{};
  for (std::size_t i = 0; i < streams.size(); ++i) {
    streams[i] = rec.new_stream_id();
    rec.emit(stream_create{streams[i], 0, stream_flavor::non_blocking, 0});
    buffers[i] = rec.new_alloc_id();
    rec.emit(alloc_record{.alloc = buffers[i], .kind = memory_kind::pinned_host, .size = 4096,
                          .address = 0x10000 * (i + 1)});
  }
  const string_id name = rec.intern("fill");
  std::size_t n = 0;
  for (auto _ : state) {
    const std::size_t i = n++ % streams.size();
    const access a{{buffers[i], 0, 4096}, access_mode::write};
    rec.emit(kernel_launch{streams[i], name, std::span<const access>(&a, 1)});
    if (i + 1 == streams.size()) {
      for (const auto s : streams) rec.emit(stream_synchronize{s});
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  rec.remove_sink(eng);
  eng.set_order_observer(nullptr);
  state.SetLabel(state.range(0) == 1 ? "engine + bridge (no-op TSan)" : "engine");
}
BENCHMARK(BM_engine_records)->Arg(0)->Arg(1);

}  // namespace
}  // namespace streamsan

BENCHMARK_MAIN();
