// Sanitizer mode: the runtime's access log feeds a live engine
// (sanitizer/engine/engine.h). Chosen when the runtime starts
// (runtime_options::sanitize, STREAMSAN=1); diagnostics are printed as they
// are found and summarized at shutdown; optionally the log also goes to a
// trace file (STREAMSAN_TRACE) for `streamsan analyze`.
//
// Note [Instrumentation costs one branch when off]
// Every API call checks logging() -- one relaxed atomic load, a
// predictable branch -- before it builds any record. Ids are still assigned
// (creation is rare and messages need them), but nothing is interned, no
// stack is captured and no record is built.
#pragma once

#include <cstdint>
#include <vector>

#include "sanitizer/engine/diagnostic.h"

namespace streamsan {
class record_sink;
}

namespace streamsan::rt {

// True when the running session sanitizes (a live engine is attached).
bool sanitizing() noexcept;

// True when records are produced: sanitizing, writing a trace, or a sink
// added with add_log_sink.
bool logging() noexcept;

// The diagnostics found so far (deduplicated, in order found); empty when
// not sanitizing.
std::vector<diagnostic> sanitizer_diagnostics();

// Adds a consumer of the session's access log (a test collecting records, a
// second writer) and turns logging on. Not owned; remove it before it dies.
// Add it right after initialize(): it sees only records made after this call
// (plus the interned strings, which the recorder replays). The sink is
// dropped when the session ends.
void add_log_sink(record_sink& sink);
void remove_log_sink(record_sink& sink);

}  // namespace streamsan::rt
