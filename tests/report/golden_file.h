// Golden files in the spirit of ThreadSanitizer's lit tests: a report is
// compared, after normalization, with tests/report/golden/NAME.
// STREAMSAN_UPDATE_GOLDEN=1 rewrites the file instead (review the diff
// before committing it); docs/reports.md is generated from these files
// (tools/report-docs).
#pragma once

#include <string>

namespace streamsan::testing {

// Addresses become 0x…, and the ids of each kind (stream#, event#, alloc#,
// graph#, thread#) are renumbered 1, 2, ... in their order, so that a report
// does not change when a program creates one more object earlier.
std::string normalized_report(const std::string& text);

// Compares `actual` with the golden file `name` (a path under
// tests/report/golden), as a GoogleTest expectation.
void expect_golden(const std::string& name, const std::string& actual);

}  // namespace streamsan::testing
