#include <string>

#include "runtime/backend/backend.h"

namespace streamsan::rt {

std::string_view to_string(backend_kind kind) noexcept {
  switch (kind) {
    case backend_kind::sim: return "sim";
    case backend_kind::cuda: return "cuda";
    case backend_kind::automatic: return "auto";
  }
  return "auto";
}

backend_kind parse_backend_kind(std::string_view text, std::string_view where) {
  if (text == "sim") return backend_kind::sim;
  if (text == "cuda") return backend_kind::cuda;
  if (text == "auto" || text.empty()) return backend_kind::automatic;
  throw usage_error(std::string(where) + ": unknown backend '" + std::string(text) +
                    "' (expected sim, cuda or auto)");
}

std::unique_ptr<backend> make_backend(backend_kind kind, const sim_options& sim) {
  switch (kind) {
    case backend_kind::sim: return make_sim_backend(sim);
    case backend_kind::cuda: return make_cuda_backend();
    case backend_kind::automatic:
      return cuda_device_present() ? make_cuda_backend() : make_sim_backend(sim);
  }
  return make_sim_backend(sim);
}

}  // namespace streamsan::rt
