#include "harness/operation_catalog.h"

#include <algorithm>
#include <array>

namespace streamsan::harness {
namespace {

using namespace std::string_view_literals;

constexpr std::array launch_keys{"kernel"sv, "stream"sv};
constexpr std::array copy_keys{"dst"sv, "src"sv, "async"sv, "stream"sv};
constexpr std::array set_keys{"dst"sv, "value"sv, "async"sv, "stream"sv};
constexpr std::array event_on_stream{"event"sv, "stream"sv};
constexpr std::array wait_stream_keys{"stream"sv, "other"sv};
constexpr std::array synchronize_keys{"stream"sv, "event"sv, "device"sv};
constexpr std::array query_keys{"stream"sv, "event"sv, "until"sv};
constexpr std::array elapsed_keys{"start"sv, "end"sv};
constexpr std::array stream_or_event{"stream"sv, "event"sv};
constexpr std::array buffer_key{"buffer"sv};
constexpr std::array buffer_on_stream{"buffer"sv, "stream"sv};
constexpr std::array<std::string_view, 0> no_keys{};
constexpr std::array fraction_keys{"fraction"sv, "device"sv};
constexpr std::array host_write_keys{"dst"sv, "values"sv};
constexpr std::array host_read_keys{"src"sv};
constexpr std::array host_func_keys{"stream"sv, "reads"sv, "writes"sv, "value"sv};
constexpr std::array capture_begin_keys{"stream"sv, "graph"sv};
constexpr std::array stream_key{"stream"sv};
constexpr std::array graph_launch_keys{"graph"sv, "stream"sv};
constexpr std::array device_guard_keys{"device"sv, "body"sv};
constexpr std::array stream_guard_keys{"stream"sv, "body"sv};
constexpr std::array device_key{"device"sv};
constexpr std::array message_key{"message"sv};
constexpr std::array mode_key{"mode"sv};

constexpr std::array<operation_spec, 30> catalog{{
    {"launch", launch_keys},
    {"memcpy", copy_keys},
    {"memset", set_keys},
    {"record", event_on_stream},
    {"wait", event_on_stream},
    {"wait_stream", wait_stream_keys},
    {"synchronize", synchronize_keys},
    {"query", query_keys},
    {"elapsed_time", elapsed_keys},
    {"destroy", stream_or_event},
    {"alloc", buffer_key},
    {"free", buffer_on_stream},
    {"record_stream", buffer_on_stream},
    {"empty_cache", no_keys},
    {"memory_fraction", fraction_keys},
    {"reset_peak_stats", no_keys},
    {"memory_stats", no_keys},
    {"host_write", host_write_keys},
    {"host_read", host_read_keys},
    {"host_func", host_func_keys},
    {"capture_begin", capture_begin_keys},
    {"capture_end", stream_key},
    {"graph_launch", graph_launch_keys},
    {"device_guard", device_guard_keys},
    {"stream_guard", stream_guard_keys},
    {"set_device", device_key},
    {"nvtx_push", message_key},
    {"nvtx_pop", no_keys},
    {"nvtx_mark", message_key},
    {"sync_debug_mode", mode_key},
}};

}  // namespace

std::span<const operation_spec> operation_catalog() noexcept { return catalog; }

const operation_spec* find_operation(std::string_view name) noexcept {
  const auto it = std::find_if(catalog.begin(), catalog.end(),
                               [&](const operation_spec& s) { return s.name == name; });
  return it == catalog.end() ? nullptr : &*it;
}

std::vector<std::string_view> operation_names() {
  std::vector<std::string_view> out;
  for (const auto& s : catalog) out.push_back(s.name);
  return out;
}

}  // namespace streamsan::harness
