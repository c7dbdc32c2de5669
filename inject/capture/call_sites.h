// Where a call came from: the stack capture a source provides to the
// handlers.
#pragma once

#include <cstdint>

#include "inject/model/cuda_model.h"

namespace streamsan::injection {

class call_site_source {
 public:
  virtual ~call_site_source() = default;
  // The calling thread's application frames, innermost first; valid until
  // the next capture on this thread. `path_key` names the callback path
  // (Note [Path cache] in inject/stack/fast_unwinder.h); 0 for none.
  virtual call_site capture(std::uint64_t path_key) noexcept = 0;
};

// The caching unwinder of inject/stack, for any source whose callbacks run
// on the application's thread (CUPTI's and the Sanitizer API's do).
class unwinder_call_sites final : public call_site_source {
 public:
  // At most 64 frames are kept.
  explicit unwinder_call_sites(unsigned depth) noexcept;
  call_site capture(std::uint64_t path_key) noexcept override;

 private:
  unsigned depth_;
};

// The domains a path key tells apart: the dispatcher's two, then the ones a
// source handles itself.
enum class path_domain : std::uint8_t { runtime = 1, driver = 2, nvtx = 3 };

// One key per callback path: the callback, where in the call it runs, and
// for a driver call nested in a runtime call, the runtime call
// (`enclosing_cbid`, 0 when the call is not nested). Never 0.
constexpr std::uint64_t path_key(path_domain domain, std::uint32_t cbid,
                                 std::uint32_t enclosing_cbid, std::uint32_t site) noexcept {
  const std::uint64_t nested = enclosing_cbid == 0 ? 0 : std::uint64_t{enclosing_cbid} + 1;
  return ((std::uint64_t{static_cast<std::uint8_t>(domain)} << 56) |
          (std::uint64_t{cbid} << 32) | (nested << 2) | site) +
         1;
}

}  // namespace streamsan::injection
