#include "inject/tsan/tsan_attachment.h"

#include <cstdio>
#include <string>

namespace streamsan::injection {

tsan_attachment::tsan_attachment(engine& eng, cuda_model& model, bool enabled)
    : engine_(eng), model_(model) {
  if (!enabled) return;
  const auto probe = tsan::probe_tsan_runtime();
  switch (probe.status) {
    case tsan::probe_status::absent:
      return;
    case tsan::probe_status::refused:
      runtime_found_ = true;
      std::fprintf(stderr, "%s\n", probe.message.c_str());
      return;
    case tsan::probe_status::usable:
      runtime_found_ = true;
      break;
  }
  bridge_ = std::make_unique<tsan::tsan_bridge>(probe.api, eng.tables());
  markers_ = std::make_unique<host_function_markers>(*bridge_, cuda_marker_driver());
  eng.set_order_observer(bridge_.get());
  model.set_host_function_listener(markers_.get());
}

tsan_attachment::~tsan_attachment() {
  if (!bridge_) return;
  model_.set_host_function_listener(nullptr);
  engine_.set_order_observer(nullptr);
}

void tsan_attachment::finish() noexcept {
  if (!bridge_) return;
  try {
    bridge_->give_up_host_functions();
  } catch (...) {
  }
}

std::string tsan_attachment::debug_counters() const {
  if (!bridge_) return {};
  const auto b = bridge_->statistics();
  const auto m = markers_->statistics();
  return "tsan bridge: fibers=" + std::to_string(b.fibers_created) +
         " accesses=" + std::to_string(b.accesses_mirrored) +
         " skipped=" + std::to_string(b.accesses_skipped) +
         " edges=" + std::to_string(b.edges_mirrored) +
         " deferred=" + std::to_string(b.operations_deferred) +
         " host_functions=" + std::to_string(b.host_functions) +
         " unchecked=" + std::to_string(b.host_functions_unchecked) +
         " markers_late=" + std::to_string(m.late) +
         " markers_cancelled=" + std::to_string(m.cancelled) +
         " markers_not_enqueued=" + std::to_string(m.not_enqueued);
}

}  // namespace streamsan::injection
