// What a handler of one API family sees, and how it is registered. Only the
// handler files (*_handlers.cpp) and the dispatcher include this.
//
// A handler decodes the parameter struct of its callback id (the generated
// meta headers) and calls cuda_model; the dispatcher has already decided
// whether and when the call is modelled (api_level, Note [Frees and destroys
// on entry]).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>

#include "inject/capture/api_call.h"
#include "inject/capture/call_sites.h"
#include "inject/model/cuda_model.h"

namespace streamsan::injection {

class api_context;
using api_handler_fn = void (*)(api_context&);

// At which level of nesting a call is modelled.
enum class api_level : std::uint8_t {
  // Only a call the program made itself, not one a runtime call makes
  // (Note [Runtime calls are modelled at the runtime level]).
  outermost,
  // Also a driver call nested in a runtime kernel launch: only the driver
  // launch names the kernel by a handle the driver describes.
  in_runtime_launch,
  // At every level, whatever its outcome (module unloads: kernel handles die
  // with their module, whoever unloads it).
  every,
};

struct api_handler {
  // Modelled when the call enters (frees and destroys: Note [Frees and
  // destroys on entry]); the exit then does nothing.
  api_handler_fn on_entry = nullptr;
  // Modelled when the call returns successfully.
  api_handler_fn on_exit = nullptr;
  // Also runs at the entry of an outermost call and at its exit whatever the
  // outcome (after on_exit), for what must bracket the call itself: the
  // ThreadSanitizer bridge's markers around a host function (inject/tsan).
  // api_context::call says which site and outcome.
  api_handler_fn around = nullptr;
  api_level level = api_level::outermost;
  // A query: "not ready" is its answer, not a failure.
  bool answers_not_ready = false;
  // A runtime kernel launch: the driver launch nested in it is modelled
  // (api_level::in_runtime_launch), and the runtime handler only when none was.
  bool kernel_launch = false;
  // The driver call it makes models it whole: its callbacks are switched off
  // (Note [Launches without their runtime callback]); the handler still runs
  // where a source delivers the callback anyway (the fakes in tests).
  bool modelled_by_driver_call = false;
  // The same, but its handler lists a launch whose driver call never showed:
  // switched off only when the dispatcher is told (Note [Runtime launch
  // callbacks on request] in dispatcher.h).
  bool driver_call_suffices = false;
};

// One callback being modelled.
class api_context {
 public:
  api_context(cuda_model& model, const api_call& call, call_site_source& call_sites,
              std::uint64_t path_key, bool per_thread, bool& launch_modelled) noexcept
      : model(model),
        call(call),
        call_sites_(call_sites),
        path_key_(path_key),
        per_thread_(per_thread),
        launch_modelled_(launch_modelled) {}

  cuda_model& model;
  const api_call& call;

  template <class Params>
  const Params& params() const noexcept {
    return *static_cast<const Params*>(call.params);
  }
  // The application's stack for this call.
  call_site here() const noexcept { return call_sites_.capture(path_key_); }
  // A stream as this call passed it: handle 0 is the per-thread default
  // stream in the _ptsz/_ptds variants (of the call, or of the runtime call
  // a nested driver launch runs in).
  stream_arg stream(const void* handle) const noexcept {
    stream_taken_ = stream_arg{reinterpret_cast<std::uintptr_t>(handle), per_thread_};
    return *stream_taken_;
  }
  // The stream of a call that only orders work (an event record, a wait):
  // captured, it adds no node, so it names none.
  stream_arg ordering_stream(const void* handle) const noexcept {
    return stream_arg{reinterpret_cast<std::uintptr_t>(handle), per_thread_};
  }
  // The stream the handler took with stream(), if any: where a captured call added its
  // node (Note [Where graph nodes were made]).
  const std::optional<stream_arg>& stream_taken() const noexcept { return stream_taken_; }
  // A query's answer: true when the call succeeded, false for "not ready".
  bool completed() const noexcept { return outcome_of(call) == api_outcome::succeeded; }
  // Whether the driver launch nested in the current runtime launch was
  // modelled already.
  bool launch_modelled() const noexcept { return launch_modelled_; }
  void set_launch_modelled() noexcept { launch_modelled_ = true; }

 private:
  call_site_source& call_sites_;
  std::uint64_t path_key_;
  bool per_thread_;
  bool& launch_modelled_;
  mutable std::optional<stream_arg> stream_taken_;
};

inline std::uintptr_t handle_of(const void* handle) noexcept {
  return reinterpret_cast<std::uintptr_t>(handle);
}
template <class Function>
std::uintptr_t function_handle(Function* fn) noexcept {
  return reinterpret_cast<std::uintptr_t>(reinterpret_cast<const void*>(fn));
}
inline std::uint64_t address_of(const void* address) noexcept {
  return reinterpret_cast<std::uint64_t>(address);
}

}  // namespace streamsan::injection
