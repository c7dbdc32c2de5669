// What every report printer reads: the diagnostics (plain data from the
// engine, already filtered by suppressions) and what is needed to resolve
// their ids, plus totals for the summary. Printing never changes detection.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>

#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/log/log_tables.h"
#include "sanitizer/report/user_stack.h"

namespace streamsan {

// Unmodelled CUDA API calls by name (engine::unmodelled_calls()).
using call_counts = std::map<std::string, std::uint64_t, std::less<>>;

struct report_input {
  // Confirmed diagnostics and candidates alike; each printer keeps them apart.
  std::span<const diagnostic> diagnostics;
  const log_tables& tables;
  const call_counts* unmodelled_calls = nullptr;  // none when null
  std::uint64_t records_processed = 0;
  std::uint64_t suppressed = 0;  // diagnostics removed by suppressions (either certainty)
  // Of those, removed by built-in suppressions (suppressions::builtin()).
  std::uint64_t suppressed_builtin = 0;
  // Conflicts the engine did not check: between cooperative launches on
  // different devices (Note [Kernels that synchronize on the device]).
  std::uint64_t device_synchronized_conflicts = 0;
  // Conflicts whose earlier side a host thread had seen complete first: host
  // threads may order them unseen (Note [Host threads order what the log
  // does not show]).
  std::uint64_t host_ordered_conflicts = 0;
};

// How many of `diagnostics` are confirmed: what an exit status counts
// (candidates never make a program fail; Note [Candidates and confirmed
// diagnostics]).
inline std::size_t confirmed_count(std::span<const diagnostic> diagnostics) noexcept {
  std::size_t n = 0;
  for (const auto& d : diagnostics) n += is_candidate(d) ? 0 : 1;
  return n;
}

// A process named in its report, when one run sanitized several
// (Note [Reports of several processes] in inject/session/process_name.cpp).
struct process_name {
  std::int64_t pid = 0;
  std::string command;  // its command line, arguments separated by spaces
};

// The words a fix hint uses (Note [Fix hints] in fix_hint.h): CUDA's API
// for programs that call it (`streamsan run`), or the runtime's torch-shaped
// API (its sanitizer mode, and Python programs under `streamsan run`).
enum class fix_vocabulary : std::uint8_t { cuda, runtime };

struct report_options {
  // Text only: print this many warnings (and list this many possible
  // races), then say how many were left out.
  std::size_t print_limit = std::numeric_limits<std::size_t>::max();
  // Source files under this directory are shown relative to it (and become
  // relative SARIF URIs). Empty: paths are shown as the debug info has them.
  std::filesystem::path source_root;
  // Which frames stacks show (Note [Stacks start at the user]).
  stack_view_options stacks = {};
  fix_vocabulary vocabulary = fix_vocabulary::cuda;
  // Text only: ANSI colours, for a terminal (the front end decides).
  bool color = false;
  // Text and JSON: the process the report is about, named (none: unnamed).
  std::optional<process_name> process = std::nullopt;
};

}  // namespace streamsan
