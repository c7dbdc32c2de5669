// What every report printer reads: the diagnostics (plain data from the
// engine, already filtered by suppressions) and what is needed to resolve
// their ids, plus totals for the summary. Printing never changes detection.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <span>
#include <string>

#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/log/log_tables.h"

namespace streamsan {

// Unmodelled CUDA API calls by name (engine::unmodelled_calls()).
using call_counts = std::map<std::string, std::uint64_t, std::less<>>;

struct report_input {
  std::span<const diagnostic> diagnostics;
  const log_tables& tables;
  const call_counts* unmodelled_calls = nullptr;  // none when null
  std::uint64_t records_processed = 0;
  std::uint64_t suppressed = 0;  // diagnostics removed by suppressions
  // Of those, removed by built-in suppressions (suppressions::builtin()).
  std::uint64_t suppressed_builtin = 0;
};

struct report_options {
  // Text only: print this many warnings, then say how many were left out.
  std::size_t print_limit = std::numeric_limits<std::size_t>::max();
  // Source files under this directory are shown relative to it (and become
  // relative SARIF URIs). Empty: paths are shown as the debug info has them.
  std::filesystem::path source_root;
};

}  // namespace streamsan
