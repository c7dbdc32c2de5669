// A shared library that stands in for the CUDA driver in the unwinder tests:
// marked internal, it calls back into the test program through `depth`
// frames of its own, the way CUPTI callbacks are called from deep inside
// libcuda.
#include <cstddef>
#include <cstdint>
#include <span>

namespace streamsan::injection {
struct unwinder_slot;
}

// capture_stack's type.
using capture_fn = std::size_t (*)(std::span<std::uint64_t> out, std::uint64_t key,
                                   streamsan::injection::unwinder_slot* slot) noexcept;

extern "C" __attribute__((visibility("default"), noinline)) std::size_t
streamsan_test_call_through(int depth, capture_fn fn, std::uint64_t* out, std::size_t size,
                            std::uint64_t key) {
  if (depth <= 0) return fn(std::span<std::uint64_t>(out, size), key, nullptr);
  volatile char pad[48];
  pad[0] = static_cast<char>(depth);
  const std::size_t n = streamsan_test_call_through(depth - 1, fn, out, size, key);
  asm volatile("" ::: "memory");
  return n + static_cast<std::size_t>(pad[0] - pad[0]);
}
