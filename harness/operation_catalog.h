// The operations of the scenario format and the keys each one accepts: one
// table for the parser, its error messages, and the test that holds the JSON
// Schema (harness/scenario.schema.json) to the parser.
#pragma once

#include <span>
#include <string_view>
#include <vector>

namespace streamsan::harness {

struct operation_spec {
  std::string_view name;  // the value of 'op'
  // Keys besides 'op' and 'label'; for launch, besides the kernel's
  // parameters (harness/kernel_catalog.h).
  std::span<const std::string_view> keys;
};

std::span<const operation_spec> operation_catalog() noexcept;
const operation_spec* find_operation(std::string_view name) noexcept;
std::vector<std::string_view> operation_names();

}  // namespace streamsan::harness
