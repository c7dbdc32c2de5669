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

enum class report_format : std::uint8_t { text, json, sarif, html, chrome_trace };

inline std::string_view to_string(report_format format) noexcept {
  switch (format) {
    case report_format::text: return "text";
    case report_format::json: return "json";
    case report_format::sarif: return "sarif";
    case report_format::html: return "html";
    case report_format::chrome_trace: return "chrome-trace";
  }
  return "?";
}

inline constexpr std::string_view report_format_names = "text, json, sarif, html or chrome-trace";

// One of report_format_names; nullopt for anything else (the caller names
// the option in its error).
inline std::optional<report_format> parse_report_format(std::string_view text) noexcept {
  if (text == "text") return report_format::text;
  if (text == "json") return report_format::json;
  if (text == "sarif") return report_format::sarif;
  if (text == "html") return report_format::html;
  if (text == "chrome-trace") return report_format::chrome_trace;
  return std::nullopt;
}

// Formats that draw race timelines: the engine must keep an operation
// window for them (engine_options::timeline_window, Note [Race timelines]).
inline bool draws_timelines(report_format format) noexcept {
  switch (format) {
    case report_format::html:
    case report_format::chrome_trace:
      return true;
    case report_format::text:
    case report_format::json:
    case report_format::sarif:
      return false;
  }
  return false;
}

// Prints the whole report in `format`. Kernel and file names come from the
// program and need not be UTF-8: JSON and SARIF replace invalid bytes rather
// than throw, so a report is never lost to a name.
void print_report(std::ostream& out, report_format format, const report_input& input,
                  symbolizer& symbols, const report_options& options);

}  // namespace streamsan
