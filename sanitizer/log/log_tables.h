// The interned strings, stacks and frame symbols a consumer has seen so far.
// Every consumer that must resolve ids (the engine, report printers, the
// JSON-lines dumper) keeps one and feeds it the definition records.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sanitizer/log/record.h"

namespace streamsan {

struct symbol_info {
  std::string function;
  std::string file;
  std::uint32_t line = 0;
  std::string module;  // see frame_symbol
  std::uint64_t module_offset = 0;
};

class log_tables {
 public:
  // Returns true when the record was a definition (and was absorbed).
  bool absorb(const record_body& body);

  void define_string(string_id id, std::string_view text);
  void define_stack(stack_id id, std::span<const std::uint64_t> frames);
  void define_symbol(std::uint64_t address, symbol_info info);

  // "" for none or unknown ids.
  std::string_view string(string_id id) const noexcept;
  // Empty for none or unknown ids.
  std::span<const std::uint64_t> stack(stack_id id) const noexcept;
  // Symbols that came with the log (a trace written in another process).
  const symbol_info* symbol(std::uint64_t address) const noexcept;

  bool has_string(string_id id) const noexcept;
  bool has_stack(stack_id id) const noexcept;

 private:
  // Note [Sparse ids]
  // Producers number strings and stacks densely from 1, so the tables are
  // vectors. An id far beyond the dense range (a consumer's own ids, such as
  // the engine's NVTX paths at 0x80000000, or a corrupt trace) goes to a map
  // instead of growing a vector to billions of entries.
  static bool is_sparse(std::uint32_t index, std::size_t dense_size) noexcept;
  std::vector<std::string> strings_;               // index = raw(string_id)
  std::vector<std::vector<std::uint64_t>> stacks_;  // index = raw(stack_id)
  std::vector<bool> string_defined_;
  std::vector<bool> stack_defined_;
  std::unordered_map<std::uint64_t, symbol_info> symbols_;
  std::unordered_map<std::uint32_t, std::string> sparse_strings_;
  std::unordered_map<std::uint32_t, std::vector<std::uint64_t>> sparse_stacks_;
};

}  // namespace streamsan
