// Exit codes shared by every streamsan subcommand, so that scripts can tell
// "found problems" from "could not run".
#pragma once

namespace streamsan::exit_code {

inline constexpr int ok = 0;
// Scenario failures (streamsan test) or a failed check.
inline constexpr int failed = 1;
// Unknown option, missing argument, bad option value.
inline constexpr int usage = 2;
// An input file (trace, scenario, suppressions) is unreadable or malformed.
inline constexpr int bad_input = 3;
// The program under `streamsan run` could not be started.
inline constexpr int cannot_run = 127;
// Default for --error-exitcode, as ThreadSanitizer does.
inline constexpr int diagnostics_found = 66;

}  // namespace streamsan::exit_code
