// What each diagnostic kind means, for SARIF rules and documentation.
#pragma once

#include <string_view>

#include "sanitizer/engine/diagnostic.h"

namespace streamsan {

struct kind_description {
  std::string_view short_text;  // one line
  std::string_view full_text;   // what was detected
  std::string_view help;        // how to fix it
  // SARIF level: "error" for races and memory errors, "warning" for
  // synchronization mistakes that order nothing.
  std::string_view level;
};

const kind_description& describe(diagnostic_kind kind) noexcept;

}  // namespace streamsan
