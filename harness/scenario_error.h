// A malformed scenario file: parse or validation error. what() is
// "FILE:LINE:COLUMN: message", the form editors jump to.
#pragma once

#include <stdexcept>
#include <string>

#include "harness/source_mark.h"

namespace streamsan::harness {

class scenario_error : public std::runtime_error {
 public:
  scenario_error(source_mark where, const std::string& message);

  const source_mark& where() const noexcept { return where_; }
  const std::string& message() const noexcept { return message_; }

 private:
  source_mark where_;
  std::string message_;
};

}  // namespace streamsan::harness
