// Turns stack frame addresses into function / file / line for reports.
//
// A trace read from a file holds another process's addresses: only the
// frame_symbol records that came with it (Note [Symbols travel with the
// trace]) can name them, and looking them up in this process would print
// confident nonsense. Live reports, printed by the process that captured the
// stacks, may also ask this process (Boost.Stacktrace + dladdr). The caller
// says which applies; there is no default.
//
// Lookups are lazy (only frames that are printed) and cached per address.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "sanitizer/log/log_tables.h"

namespace streamsan {

enum class symbol_source : std::uint8_t {
  // Only the log's frame_symbol records (a trace from another process).
  log_only,
  // The log's frame_symbol records, then this process (live reports).
  log_then_this_process,
};

class symbolizer {
 public:
  symbolizer(const log_tables& tables, symbol_source source) : tables_(tables), source_(source) {}

  // Fields are empty when nothing is known. The reference stays valid as
  // long as the symbolizer and the tables do.
  const symbol_info& symbolize(std::uint64_t address);

  const log_tables& tables() const noexcept { return tables_; }

 private:
  const log_tables& tables_;
  symbol_source source_;
  std::unordered_map<std::uint64_t, symbol_info> cache_;
};

}  // namespace streamsan
