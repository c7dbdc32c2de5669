// The human-readable report, in the shape people know from
// ThreadSanitizer:
//
//   ==================
//   WARNING: streamsan: stream-race (read-after-write) on alloc#3 'A' (...)
//     Read of 4096 bytes at offset 0 by kernel 'sum' on stream#2 (thread#1):
//       #0 main demo.cpp:42
//     Previous write of 4096 bytes at offset 0 by kernel 'fill' on ...:
//       #0 main demo.cpp:40
//     Conflicting bytes: [0, 4096) of alloc#3
//     Allocation alloc#3 'A' (device memory, 4096 bytes, device 0) allocated at:
//       #0 main demo.cpp:30
//   SUMMARY: streamsan: stream-race (read-after-write) demo.cpp:42 in main
//   ==================
//   streamsan: reported 1 warning
//
// Candidates (Note [Candidates and confirmed diagnostics]) are not warnings:
// after the warnings, two lines each under
//
//   streamsan: possible races (guessed footprints, not confirmed by a measurement): 1
//     stream-race (write-after-write), 4096 bytes of alloc#3 'A' at [0, 4096):
//       kernel 'fill' on stream#2 (thread#1) at demo.cpp:41 (read-write, inferred footprint) after ...
//   streamsan: rerun with --precise to measure every launch
//
// and the last line counts them: "streamsan: reported 1 warning; 1 possible
// race not confirmed".
//
// docs/reports.md shows the shape of every diagnostic kind.
#pragma once

#include <ostream>

#include "sanitizer/report/report_input.h"
#include "sanitizer/report/symbolizer.h"

namespace streamsan {

// One warning block, from "==================" to "==================".
// For live printing as the engine finds problems. Meant for confirmed
// diagnostics; a candidate's block is headed "NOTE: streamsan: possible ...".
void print_text_diagnostic(std::ostream& out, const diagnostic& d, symbolizer& symbols,
                           const report_options& options = {});

// Every confirmed warning (up to options.print_limit), the possible races,
// the unmodelled-call line and the final "streamsan: reported N warnings"
// line.
void print_text_report(std::ostream& out, const report_input& input, symbolizer& symbols,
                       const report_options& options = {});

// The closing lines alone ("… and K more not printed", the possible races,
// unmodelled calls, "streamsan: reported N warnings"), for callers that
// printed `printed` confirmed warnings live with print_text_diagnostic.
void print_text_summary(std::ostream& out, const report_input& input, std::size_t printed,
                        symbolizer& symbols, const report_options& options = {});

// The possible-races section alone (nothing when there are no candidates):
// the header line, two lines per candidate (up to options.print_limit) and
// the hint to rerun with --precise.
void print_possible_races(std::ostream& out, const report_input& input, symbolizer& symbols,
                          const report_options& options = {});

}  // namespace streamsan
