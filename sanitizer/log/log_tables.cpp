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

void log_tables::define_string(string_id id, std::string_view text) {
  const auto index = raw(id);
  if (index >= strings_.size()) {
    strings_.resize(index + 1);
    string_defined_.resize(index + 1);
  }
  strings_[index].assign(text);
  string_defined_[index] = true;
}

void log_tables::define_stack(stack_id id, std::span<const std::uint64_t> frames) {
  const auto index = raw(id);
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
  return index < strings_.size() ? std::string_view(strings_[index]) : std::string_view();
}

std::span<const std::uint64_t> log_tables::stack(stack_id id) const noexcept {
  const auto index = raw(id);
  if (index >= stacks_.size()) return {};
  return stacks_[index];
}

const symbol_info* log_tables::symbol(std::uint64_t address) const noexcept {
  const auto it = symbols_.find(address);
  return it == symbols_.end() ? nullptr : &it->second;
}

bool log_tables::has_string(string_id id) const noexcept {
  const auto index = raw(id);
  return index < string_defined_.size() && string_defined_[index];
}

bool log_tables::has_stack(stack_id id) const noexcept {
  const auto index = raw(id);
  return index < stack_defined_.size() && stack_defined_[index];
}

}  // namespace streamsan
