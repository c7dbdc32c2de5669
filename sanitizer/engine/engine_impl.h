// The engine's state and rules. Private to sanitizer/engine.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/engine/engine.h"
#include "sanitizer/log/log_tables.h"
#include "sanitizer/log/record.h"

namespace streamsan {

class engine_impl {
 public:
  explicit engine_impl(engine_options options) : options_(options) {}

  void on_record(const record& r);

  engine_options options_;
  log_tables tables_;
  std::vector<diagnostic> diagnostics_;
  std::function<void(const diagnostic&)> callback_;
  std::map<std::string, std::uint64_t, std::less<>> unmodelled_;
  engine_statistics stats_;
};

}  // namespace streamsan
