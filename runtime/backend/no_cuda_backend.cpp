// Built only without CUDA (STREAMSAN_HAVE_CUDA undefined): runtime/cuda
// provides these otherwise.
#include "runtime/backend/backend.h"

namespace streamsan::rt {

std::unique_ptr<backend> make_cuda_backend() {
  throw runtime_error("make_cuda_backend: streamsan was built without CUDA");
}

bool cuda_device_present() noexcept { return false; }

}  // namespace streamsan::rt
