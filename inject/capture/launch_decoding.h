// The kernel and arguments of a launch call, for a source that must know
// them before the launch happens (the Sanitizer API source sizes a launch's
// footprint table and patches its module at the call's entry).
#pragma once

#include <cstdint>
#include <optional>

#include "inject/capture/api_call.h"
#include "inject/model/access_inference.h"

namespace streamsan::injection {

struct launch_request {
  std::uintptr_t kernel = 0;  // a CUkernel or CUfunction (Note [CUkernel or CUfunction])
  kernel_arguments args;
  const void* stream = nullptr;  // the stream argument as passed (0: a default stream)
};

// The driver's kernel launches and the runtime's __cudaLaunchKernel; nullopt
// for any other call (and for runtime launches by host stub, which name no
// kernel handle).
std::optional<launch_request> decode_launch(const api_call& call) noexcept;

// What else the Sanitizer API source must know of a call at its entry
// (Note [A module changes only while none of its kernels runs]).
// host_wait: a stream or event synchronize (the host waited for work to
// end: Note [Module changes back off]). graph_instantiate: an executable
// graph is about to be made (Note [Patched before a graph is instantiated]).
// graph_exec_destroy: what is kept per executable graph goes (Note [A graph
// node keeps its per-launch data]). module_call: a driver call that may
// load, unload or lazily load a module, which no patch or unpatch may
// overlap (Note [No module change while a module loads]).
enum class call_role : std::uint8_t {
  other,
  graph_launch,
  graph_instantiate,
  graph_exec_destroy,
  stream_destroy,
  context_synchronize,
  host_wait,
  module_call
};
struct call_facts {
  call_role role = call_role::other;
  const void* stream = nullptr;  // graph_launch, stream_destroy
  const void* graph_exec = nullptr;  // graph_launch, graph_exec_destroy
};
call_facts decode_call_role(const api_call& call) noexcept;

}  // namespace streamsan::injection
