// The report as one self-contained HTML page (`--format html`): every
// warning with its cause and fix, and for each race a timeline picture
// (Note [Race timelines]): a lane per stream and host thread, the
// operations in issue order, the two conflicting ones highlighted, the
// happens-before edges that exist drawn as arrows and the missing one
// dashed. Clicking an operation shows its stack. The page fetches nothing:
// styles, the SVG pictures and the small script are inline, so it can be
// attached to a bug report or archived by CI as it is.
#pragma once

#include <ostream>

#include "sanitizer/report/report_input.h"
#include "sanitizer/report/symbolizer.h"

namespace streamsan {

void print_html_report(std::ostream& out, const report_input& input, symbolizer& symbols,
                       const report_options& options = {});

// Text with &, <, >, " and ' escaped.
std::string html_escaped(std::string_view text);

}  // namespace streamsan
