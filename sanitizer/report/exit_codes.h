// Exit codes shared by every streamsan subcommand and by the injection
// library (which ends a sanitized program with bad_input or cannot_run, and
// with diagnostics_found's default at a report), so that scripts can tell
// "found problems" from "could not run". Here, below both, so that the
// library does not include the command line's headers.
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
