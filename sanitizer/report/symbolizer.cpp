#include "sanitizer/report/symbolizer.h"

#include "sanitizer/log/in_process_symbols.h"

namespace streamsan {

const symbol_info& symbolizer::symbolize(std::uint64_t address) {
  if (const symbol_info* known = tables_.symbol(address)) return *known;
  if (const auto it = cache_.find(address); it != cache_.end()) return it->second;
  symbol_info info;
  switch (source_) {
    case symbol_source::log_only:
      break;
    case symbol_source::log_then_this_process:
      info = symbolize_in_process(address);
      break;
  }
  return cache_.emplace(address, std::move(info)).first->second;
}

}  // namespace streamsan
