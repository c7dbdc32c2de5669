#include "sanitizer/log/log_tables.h"

namespace streamsan {

bool log_tables::absorb(const record_body& body) {
  if (const auto* s = std::get_if<string_define>(&body)) {
    define_string(s->id, s->text);
    return true;
  }
  if (const auto* s = std::get_if<stack_define>(&body)) {
    define_stack(s->id, s->frames);
    return true;
  }
  if (const auto* f = std::get_if<frame_symbol>(&body)) {
    define_symbol(f->address, symbol_info{std::string(f->function),
                                          std::string(f->file), f->line,
                                          std::string(f->module), f->module_offset});
    return true;
  }
  return false;
}

bool log_tables::is_sparse(std::uint32_t index, std::size_t dense_size) noexcept {
  constexpr std::size_t dense_slack = 1u << 16;
  return index >= dense_size + dense_slack;
}

void log_tables::define_string(string_id id, std::string_view text) {
  const auto index = raw(id);
  if (is_sparse(index, strings_.size())) {
    sparse_strings_[index].assign(text);
    return;
  }
  if (index >= strings_.size()) {
    strings_.resize(index + 1);
    string_defined_.resize(index + 1);
  }
  strings_[index].assign(text);
  string_defined_[index] = true;
}

void log_tables::define_stack(stack_id id, std::span<const std::uint64_t> frames) {
  const auto index = raw(id);
  if (is_sparse(index, stacks_.size())) {
    sparse_stacks_[index].assign(frames.begin(), frames.end());
    return;
  }
  if (index >= stacks_.size()) {
    stacks_.resize(index + 1);
    stack_defined_.resize(index + 1);
  }
  stacks_[index].assign(frames.begin(), frames.end());
  stack_defined_[index] = true;
}

void log_tables::define_symbol(std::uint64_t address, symbol_info info) {
  symbols_.insert_or_assign(address, std::move(info));
}

std::string_view log_tables::string(string_id id) const noexcept {
  const auto index = raw(id);
  if (index < strings_.size() && string_defined_[index]) return strings_[index];
  if (sparse_strings_.empty()) return {};
  if (const auto it = sparse_strings_.find(index); it != sparse_strings_.end()) {
    return it->second;
  }
  return {};
}

std::span<const std::uint64_t> log_tables::stack(stack_id id) const noexcept {
  const auto index = raw(id);
  if (index < stacks_.size() && stack_defined_[index]) return stacks_[index];
  if (sparse_stacks_.empty()) return {};
  if (const auto it = sparse_stacks_.find(index); it != sparse_stacks_.end()) {
    return it->second;
  }
  return {};
}

const symbol_info* log_tables::symbol(std::uint64_t address) const noexcept {
  const auto it = symbols_.find(address);
  return it == symbols_.end() ? nullptr : &it->second;
}

bool log_tables::has_string(string_id id) const noexcept {
  const auto index = raw(id);
  if (index < string_defined_.size() && string_defined_[index]) return true;
  return sparse_strings_.contains(index);
}

bool log_tables::has_stack(stack_id id) const noexcept {
  const auto index = raw(id);
  if (index < stack_defined_.size() && stack_defined_[index]) return true;
  return sparse_stacks_.contains(index);
}

}  // namespace streamsan
