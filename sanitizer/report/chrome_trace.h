// The race timelines as Chrome trace-event JSON (`--format chrome-trace`),
// for chrome://tracing, Perfetto (ui.perfetto.dev) and other viewers people
// already use. One process per race, named after the warning; a thread per
// lane (host threads, streams, or a graph's chains); one slice per
// operation, in issue order; a flow arrow per happens-before edge, and one
// named "missing order" from the previous to the current access.
//
// Note [Issue order is not time]
// The log records the order in which operations were issued, not when the
// device ran them. Slices are therefore placed at ts = 10 µs * position in
// the timeline, each 8 µs long; the trace's metadata says so. Durations and
// gaps carry no meaning.
#pragma once

#include <nlohmann/json.hpp>

#include "sanitizer/report/report_input.h"
#include "sanitizer/report/symbolizer.h"

namespace streamsan {

nlohmann::ordered_json chrome_trace(const report_input& input, symbolizer& symbols,
                                    const report_options& options = {});

}  // namespace streamsan
