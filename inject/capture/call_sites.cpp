#include "inject/capture/call_sites.h"

#include <algorithm>
#include <array>
#include <span>

#include "inject/stack/fast_unwinder.h"

namespace streamsan::injection {
namespace {

constexpr unsigned max_depth = 64;

// The frames of the last capture on this thread (what call_site points to).
thread_local std::array<std::uint64_t, max_depth> frames{};

}  // namespace

unwinder_call_sites::unwinder_call_sites(unsigned depth) noexcept
    : depth_(std::min(depth, max_depth)) {}

call_site unwinder_call_sites::capture(std::uint64_t path_key) noexcept {
  if (depth_ == 0) return {};
  const std::size_t n = capture_stack(std::span<std::uint64_t>(frames.data(), depth_), path_key);
  return call_site{std::span<const std::uint64_t>(frames.data(), n)};
}

}  // namespace streamsan::injection
