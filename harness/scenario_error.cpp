#include "harness/scenario_error.h"

namespace streamsan::harness {

std::string to_string(const source_mark& where) {
  if (where.line <= 0) return where.file;
  return where.file + ':' + std::to_string(where.line) + ':' + std::to_string(where.column);
}

scenario_error::scenario_error(source_mark where, const std::string& message)
    : std::runtime_error(to_string(where) + ": " + message),
      where_(std::move(where)),
      message_(message) {}

}  // namespace streamsan::harness
