// Decoding a launch's footprint table on the host (Note [Slots decoded in
// page order] in inject/precise/footprint_decode.cpp): a streaming kernel's
// table, every page one run, its slots taken in the order warps raced to
// them. The read-back is a memcpy here; on a GPU it is a device-to-host
// copy before this work.
//
//   decode_bench [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <random>
#include <vector>

#include "inject/precise/footprint_decode.h"
#include "inject/precise/footprint_record.h"

namespace sp = streamsan::precise;

namespace {

// A triad's launch over three arrays of `pages_per_array` pages: two read,
// one written, recorded in page order shuffled within runs of 64 slots.
struct streaming_table {
  explicit streaming_table(std::uint32_t pages_per_array)
      : layout(sp::layout_for(std::bit_ceil(pages_per_array * 6))),
        storage(layout.bytes / 8 + 8, 0) {
    base = reinterpret_cast<std::uintptr_t>(storage.data());
    const sp::table_view view = sp::view_at(base, layout);
    std::vector<std::uint64_t> order;
    for (std::uint64_t array = 0; array < 3; ++array) {
      for (std::uint64_t page = 0; page < pages_per_array; ++page) {
        order.push_back(array << 32 | page);
      }
    }
    std::mt19937 rng(1);
    for (std::size_t i = 0; i + 64 <= order.size(); i += 64) {
      std::shuffle(order.begin() + static_cast<std::ptrdiff_t>(i),
                   order.begin() + static_cast<std::ptrdiff_t>(i + 64), rng);
    }
    for (const std::uint64_t o : order) {
      const std::uint64_t array = o >> 32;
      const std::uint64_t page = o & 0xffffffffu;
      const std::uint64_t address = 0x7f0000000000ull + (array << 28) + page * sp::page_bytes;
      sp::record_span(view, address, sp::page_bytes,
                      array == 2 ? sp::footprint_kind::write : sp::footprint_kind::read);
    }
  }
  sp::table_layout layout;
  std::vector<std::uint64_t> storage;
  std::uintptr_t base = 0;
};

// fresh_buffers: each decode with buffers of its own and the heap trimmed
// before it, so that its megabytes come from fresh pages, as a decode
// without the tracker's scratch gets them in a real run (Note [Decoding
// reuses its buffers]).
void decode_streaming_table(benchmark::State& state, bool fresh_buffers) {
  const auto pages_per_array = static_cast<std::uint32_t>(state.range(0));
  const streaming_table table(pages_per_array);
  const auto fetch = [](void* destination, std::uint64_t source, std::size_t size) {
    std::memcpy(destination, reinterpret_cast<const void*>(source), size);
    return true;
  };
  sp::decode_scratch scratch;
  for (auto _ : state) {
    if (fresh_buffers) {
      state.PauseTiming();
      malloc_trim(0);
      state.ResumeTiming();
    }
    const sp::decoded_footprint d =
        fresh_buffers ? sp::decode_footprint(table.layout, table.base, fetch)
                      : sp::decode_footprint(table.layout, table.base, fetch, scratch);
    if (d.intervals.size() != 3 || !d.complete) {
      state.SkipWithError("the table did not decode to three runs");
      return;
    }
    benchmark::DoNotOptimize(d.intervals.data());
  }
  state.counters["pages"] = 3.0 * pages_per_array;
}
void BM_DecodeStreamingTable(benchmark::State& state) { decode_streaming_table(state, false); }
void BM_DecodeStreamingTableFreshBuffers(benchmark::State& state) {
  decode_streaming_table(state, true);
}
// 16,384 pages an array: bench/precise/triad's 64 MiB arrays.
BENCHMARK(BM_DecodeStreamingTable)->Arg(1024)->Arg(16384)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DecodeStreamingTableFreshBuffers)->Arg(1024)->Arg(16384)->Unit(benchmark::kMillisecond);

// A gather's launch: range(0) pages read, each fragmented into range(1)
// runs of 4 bytes spread evenly over the page (Note [Runs found a word at
// a time]).
void BM_DecodeGatherTable(benchmark::State& state) {
  const auto pages = static_cast<std::uint32_t>(state.range(0));
  const auto runs = static_cast<std::uint32_t>(state.range(1));
  const sp::table_layout layout = sp::layout_for(std::bit_ceil(pages * 2));
  std::vector<std::uint64_t> storage(layout.bytes / 8 + 8, 0);
  const auto base = reinterpret_cast<std::uintptr_t>(storage.data());
  const sp::table_view view = sp::view_at(base, layout);
  for (std::uint64_t page = 0; page < pages; ++page) {
    for (std::uint32_t r = 0; r < runs; ++r) {
      const std::uint64_t at =
          0x7f0000000000ull + page * sp::page_bytes + r * (sp::page_bytes / runs);
      sp::record_span(view, at, 4, sp::footprint_kind::read);
    }
  }
  const auto fetch = [](void* destination, std::uint64_t source, std::size_t size) {
    std::memcpy(destination, reinterpret_cast<const void*>(source), size);
    return true;
  };
  sp::decode_scratch scratch;
  for (auto _ : state) {
    const sp::decoded_footprint d = sp::decode_footprint(layout, base, fetch, scratch);
    if (d.intervals.size() != std::size_t{pages} * runs || !d.complete) {
      state.SkipWithError("the table did not decode to its runs");
      return;
    }
    benchmark::DoNotOptimize(d.intervals.data());
  }
  state.counters["pages"] = pages;
}
BENCHMARK(BM_DecodeGatherTable)->Args({4096, 4})->Args({4096, 64})->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
