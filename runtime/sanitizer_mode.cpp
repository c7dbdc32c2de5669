#include "runtime/sanitizer_mode.h"

#include <mutex>

#include "runtime/session/sanitizer_sinks.h"
#include "runtime/session/session.h"

namespace streamsan::rt {

bool sanitizing() noexcept {
  const auto* s = existing_session();
  return s != nullptr && s->options.sanitize;
}

bool logging() noexcept {
  const auto* s = existing_session();
  return s != nullptr && s->logging();
}

std::vector<diagnostic> sanitizer_diagnostics() {
  auto& s = enter();
  return s.sinks ? s.sinks->diagnostics() : std::vector<diagnostic>{};
}

void add_log_sink(record_sink& sink) {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  s.log.add_sink(sink);
  s.set_logging(true);
}

void remove_log_sink(record_sink& sink) {
  auto* s = existing_session();
  if (s == nullptr) return;
  std::lock_guard lock(s->mutex);
  s->log.remove_sink(sink);
}

}  // namespace streamsan::rt
