// NVTX annotations (S-NVTX-1): host-timeline ranges and marks. Each call
// reaches the access log (nvtx_push / nvtx_pop / nvtx_mark), so diagnostics
// can name the innermost range, and the backend (real NVTX3 calls on cuda).
#pragma once

#include <string_view>

namespace streamsan::rt::nvtx {

void range_push(std::string_view message);
// usage_error when the calling thread has no open range.
void range_pop();
void mark(std::string_view message);

// A range for a scope.
class range {
 public:
  explicit range(std::string_view message);
  ~range() noexcept;
  range(const range&) = delete;
  range& operator=(const range&) = delete;
};

}  // namespace streamsan::rt::nvtx
