#include "sanitizer/log/trace_error.h"

namespace streamsan {

trace_error::trace_error(std::string_view file, std::uint64_t offset, std::string_view reason)
    : std::runtime_error(std::string(file) + ": offset " + std::to_string(offset) + ": " +
                         std::string(reason)),
      file_(file),
      offset_(offset),
      reason_(reason) {}

trace_error::trace_error(std::string_view file, std::string_view reason)
    : std::runtime_error(std::string(file) + ": " + std::string(reason)),
      file_(file),
      reason_(reason) {}

}  // namespace streamsan
