// Identifier spellings of the access-log enums and record kinds, as they
// appear in the JSON-lines dump and in trace error messages ("pinned_host",
// "kernel_launch"). Reports use the prose spellings of
// sanitizer/engine/diagnostic.h instead ("pinned host").
//
// Each function returns "" for a value outside its enum, which is how the
// trace reader validates enum fields: the exhaustive switch is the single
// source of truth for which values exist.
#pragma once

#include <cstddef>
#include <string_view>
#include <type_traits>
#include <variant>

#include "sanitizer/log/record.h"

namespace streamsan {

std::string_view enumerator_name(memory_kind value) noexcept;
std::string_view enumerator_name(access_mode value) noexcept;
std::string_view enumerator_name(access_origin value) noexcept;
std::string_view enumerator_name(stream_flavor value) noexcept;
std::string_view enumerator_name(free_mode value) noexcept;
std::string_view enumerator_name(graph_node_kind value) noexcept;

inline constexpr std::size_t record_kind_count = std::variant_size_v<record_body>;

// "kernel_launch" for the index of kernel_launch in record_body; "" past the end.
std::string_view record_kind_name(std::size_t index) noexcept;

inline std::string_view record_kind_name(const record_body& body) noexcept {
  return record_kind_name(body.index());
}

// The index of alternative T in record_body.
template <class T, std::size_t I = 0>
constexpr std::size_t record_index() noexcept {
  if constexpr (std::is_same_v<std::variant_alternative_t<I, record_body>, T>) {
    return I;
  } else {
    return record_index<T, I + 1>();
  }
}

}  // namespace streamsan
