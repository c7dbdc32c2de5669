// The machine-readable report: one JSON object with every confirmed
// diagnostic in "diagnostics", every candidate in "possible_races" (no print
// limit; the same shape, "certainty" tells them apart) and a summary.
// docs/reports.md documents the members.
//
// Strings come from traces and need not be valid UTF-8: dump the result with
// nlohmann::ordered_json::error_handler_t::replace, or dump() throws.
#pragma once

#include <nlohmann/json.hpp>

#include "sanitizer/report/report_input.h"
#include "sanitizer/report/symbolizer.h"

namespace streamsan {

nlohmann::ordered_json json_report(const report_input& input, symbolizer& symbols,
                                   const report_options& options = {});

// The symbolized frames of a stack: [{"address":"0x...","function":...}].
// "kind" says whose frame it is (frame_kind: "user", "cuda", ...).
nlohmann::ordered_json json_stack(stack_id stack, symbolizer& symbols,
                                  const report_options& options = {});

// A race's timeline: operations (lane, name, stack), happens-before edges,
// the missing edge (Note [Race timelines]).
nlohmann::ordered_json json_timeline(const race_timeline& timeline, symbolizer& symbols,
                                     const report_options& options = {});

}  // namespace streamsan
