// One line per report on how to fix it, in the program's own terms.
//
// Note [Fix hints]
// A hint names the objects of the report (stream#2, event#4, the kernels by
// name) and the calls that would create the missing order, in the
// vocabulary of the API the program uses: CUDA's (`cudaEventRecord(e,
// stream#1)`, `cudaStreamWaitEvent(stream#2, e)`) for programs under
// `streamsan run`, the runtime's torch-shaped one (`stream#2.wait_stream(
// stream#1)`, `record_stream`) for programs on the runtime and later
// PyTorch. The front end that knows which API the program uses sets
// report_options::vocabulary. When the report has a cause (Note [Causes]),
// the hint repairs that call rather than suggesting a new one.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/log/log_tables.h"
#include "sanitizer/report/report_input.h"
#include "sanitizer/report/symbolizer.h"

namespace streamsan {

std::string fix_hint(const diagnostic& d, const log_tables& tables, fix_vocabulary vocabulary);

std::string_view to_string(fix_vocabulary vocabulary) noexcept;
// "cuda" or "runtime"; nullopt otherwise.
std::optional<fix_vocabulary> parse_fix_vocabulary(std::string_view text) noexcept;

// For a trace whose producer is unknown: runtime when a stack of the
// diagnostics passes through the streamsan runtime's API, else cuda.
fix_vocabulary detect_vocabulary(std::span<const diagnostic> diagnostics, symbolizer& symbols);

}  // namespace streamsan
