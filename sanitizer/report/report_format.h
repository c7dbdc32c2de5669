// The report formats every streamsan front end offers (`streamsan analyze
// --format`, `streamsan run --format` / STREAMSAN_OPTIONS format=), and the
// one place that turns a report into any of them.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string_view>

#include "sanitizer/report/report_input.h"
#include "sanitizer/report/symbolizer.h"

namespace streamsan {

enum class report_format : std::uint8_t { text, json, sarif };

inline std::string_view to_string(report_format format) noexcept {
  switch (format) {
    case report_format::text: return "text";
    case report_format::json: return "json";
    case report_format::sarif: return "sarif";
  }
  return "?";
}

// "text", "json" or "sarif"; nullopt for anything else (the caller names the
// option in its error).
inline std::optional<report_format> parse_report_format(std::string_view text) noexcept {
  if (text == "text") return report_format::text;
  if (text == "json") return report_format::json;
  if (text == "sarif") return report_format::sarif;
  return std::nullopt;
}

// Prints the whole report in `format`. Kernel and file names come from the
// program and need not be UTF-8: JSON and SARIF replace invalid bytes rather
// than throw, so a report is never lost to a name.
void print_report(std::ostream& out, report_format format, const report_input& input,
                  symbolizer& symbols, const report_options& options);

}  // namespace streamsan
