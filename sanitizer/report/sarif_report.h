// The report as SARIF 2.1.0 for GitHub code scanning and other SARIF
// viewers: one rule per diagnostic kind, one result per diagnostic, located
// at the first frame of the current stack that has a source file, with the
// previous access and the allocation as related locations and a stable
// fingerprint of the kind and the call sites. A candidate (Note [Candidates
// and confirmed diagnostics]) is a result of level "note"; every result's
// property bag carries the certainty, each side's mode and footprint origin,
// and the conflicting bytes. docs/reports.md has details.
//
// Strings come from traces and need not be valid UTF-8: dump the result with
// nlohmann::ordered_json::error_handler_t::replace, or dump() throws.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "sanitizer/report/report_input.h"
#include "sanitizer/report/symbolizer.h"

namespace streamsan {

// report_options::source_root, when set, makes artifact URIs relative to
// it (uriBaseId %SRCROOT%); GitHub expects paths relative to the repository.
nlohmann::ordered_json sarif_report(const report_input& input, symbolizer& symbols,
                                    const report_options& options = {});

}  // namespace streamsan
