#include "harness/scenario_result.h"

#include "harness/outcome_check.h"

namespace streamsan::harness {

std::string_view to_string(result_status status) noexcept {
  switch (status) {
    case result_status::passed: return "pass";
    case result_status::failed: return "FAIL";
    case result_status::skipped: return "skip";
  }
  return "unknown";
}

std::string describe(const witness& w) {
  return "seed " + std::to_string(w.seed) + " gave " + w.where + " = " + format_number(w.seen) +
         " at index " + std::to_string(w.index) + " where the " + w.reference + " gives " +
         format_number(w.expected);
}

}  // namespace streamsan::harness
