#include "inject/model/access_inference.h"

#include <algorithm>
#include <cstring>

namespace streamsan::injection {

std::vector<param_plan> make_param_plans(std::span<const param_layout> layout,
                                         const kernel_signature& signature) {
  const bool typed = signature.has_types && signature.params.size() == layout.size();
  std::vector<param_plan> plans;
  plans.reserve(layout.size());
  for (std::size_t i = 0; i < layout.size(); ++i) {
    param_class kind = typed ? signature.params[i] : param_class::unknown;
    // A "pointer" whose slot is not one pointer wide is not what we think.
    if ((kind == param_class::pointer || kind == param_class::pointer_to_const) &&
        layout[i].size != sizeof(std::uint64_t)) {
      kind = param_class::unknown;
    }
    plans.push_back(param_plan{layout[i].offset, layout[i].size, kind});
  }
  return plans;
}

kernel_arguments kernel_arguments::from_launch(void* const* kernel_params,
                                               void* const* extra) noexcept {
  if (kernel_params != nullptr) return from_pointers(kernel_params);
  if (extra == nullptr) return {};
  // CU_LAUNCH_PARAM_END, _BUFFER_POINTER and _BUFFER_SIZE are the pointer
  // values 0, 1 and 2 (cuda.h).
  const auto key = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
  const void* buffer = nullptr;
  std::size_t size = 0;
  for (void* const* e = extra; key(e[0]) != 0; e += 2) {
    if (key(e[0]) == 1) buffer = e[1];
    if (key(e[0]) == 2 && e[1] != nullptr) size = *static_cast<const std::size_t*>(e[1]);
  }
  return buffer != nullptr ? from_buffer(buffer, size) : kernel_arguments{};
}

bool kernel_arguments::read_word(std::size_t index, const param_plan& p, std::uint32_t at,
                                 std::uint64_t& out) const noexcept {
  if (at + sizeof out > p.size) return false;
  if (params_ != nullptr) {
    const void* value = params_[index];
    if (value == nullptr) return false;
    std::memcpy(&out, static_cast<const unsigned char*>(value) + at, sizeof out);
    return true;
  }
  if (buffer_ != nullptr) {
    const std::size_t pos = std::size_t{p.offset} + at;
    if (pos + sizeof out > buffer_size_) return false;
    std::memcpy(&out, buffer_ + pos, sizeof out);
    return true;
  }
  return false;
}

void add_access(std::vector<access>& out, const access& a) {
  for (auto& existing : out) {
    if (existing.range.alloc != a.range.alloc) continue;
    const std::uint64_t end = std::max(existing.range.offset + existing.range.size,
                                       a.range.offset + a.range.size);
    existing.range.offset = std::min(existing.range.offset, a.range.offset);
    existing.range.size = end - existing.range.offset;
    existing.mode = static_cast<access_mode>(static_cast<unsigned>(existing.mode) |
                                             static_cast<unsigned>(a.mode));
    return;
  }
  out.push_back(a);
}

void infer_accesses(std::span<const param_plan> plans, const kernel_arguments& args,
                    const allocation_map& allocations, std::vector<access>& out) {
  out.clear();
  if (args.empty()) return;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const param_plan& p = plans[i];
    if (p.kind == param_class::scalar) continue;
    const access_mode mode =
        p.kind == param_class::pointer_to_const ? access_mode::read : access_mode::read_write;
    // The words of this parameter that are 8-byte aligned in the buffer.
    const std::uint32_t first = (8 - p.offset % 8) % 8;
    for (std::uint32_t at = first; at + 8 <= p.size; at += 8) {
      std::uint64_t word = 0;
      if (!args.read_word(i, p, at, word) || word == 0) continue;
      const auto hit = allocations.find(word);
      if (!hit) continue;
      const std::uint64_t size = hit->block.size > hit->offset ? hit->block.size - hit->offset : 0;
      add_access(out, access{byte_range{hit->block.id, hit->offset, size}, mode});
    }
  }
}

}  // namespace streamsan::injection
