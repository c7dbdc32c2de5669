// Strong identifiers that streamsan assigns itself.
//
// Note [Never key state by CUDA handles]
// cudaStream_t, cudaEvent_t and device pointers are recycled by the driver:
// a stream destroyed and re-created, or a buffer freed and re-allocated, often
// comes back with the same handle or address. State keyed by them would merge
// the history of two unrelated objects and hide (or invent) races. Every
// object therefore gets an id from a counter that never repeats in a process;
// id 0 means "none".
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

namespace streamsan {

enum class thread_id : std::uint32_t {};
enum class stream_id : std::uint32_t {};
enum class event_id : std::uint32_t {};
enum class alloc_id : std::uint32_t {};
enum class graph_id : std::uint32_t {};
enum class string_id : std::uint32_t {};
enum class stack_id : std::uint32_t {};

template <class Id>
constexpr std::underlying_type_t<Id> raw(Id id) noexcept {
  return static_cast<std::underlying_type_t<Id>>(id);
}

template <class Id>
constexpr bool is_none(Id id) noexcept {
  return raw(id) == 0;
}

// "stream#3", "event#7", ...: the spelling used in every message.
std::string to_string(thread_id id);
std::string to_string(stream_id id);
std::string to_string(event_id id);
std::string to_string(alloc_id id);
std::string to_string(graph_id id);

}  // namespace streamsan
