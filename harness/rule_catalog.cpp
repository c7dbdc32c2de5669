#include "harness/rule_catalog.h"

#include <algorithm>
#include <array>

namespace streamsan::harness {
namespace {

using namespace std::string_view_literals;

constexpr std::array ids{
    "S-ASYNC-1"sv,
    "S-ASYNC-2"sv,
    "S-STREAM-1"sv,
    "S-STREAM-2"sv,
    "S-STREAM-3"sv,
    "S-STREAM-4"sv,
    "S-STREAM-5"sv,
    "S-STREAM-6"sv,
    "S-STREAM-7"sv,
    "S-STREAM-8"sv,
    "S-STREAM-9"sv,
    "S-DEFAULT-1"sv,
    "S-DEFAULT-2"sv,
    "S-DEFAULT-3"sv,
    "S-EVENT-1"sv,
    "S-EVENT-2"sv,
    "S-EVENT-3"sv,
    "S-EVENT-4"sv,
    "S-EVENT-5"sv,
    "S-EVENT-6"sv,
    "S-EVENT-7"sv,
    "S-SYNC-1"sv,
    "S-SYNC-2"sv,
    "S-SYNC-3"sv,
    "S-COPY-1"sv,
    "S-COPY-2"sv,
    "S-COPY-3"sv,
    "S-COPY-4"sv,
    "S-COPY-5"sv,
    "S-MEM-1"sv,
    "S-MEM-2"sv,
    "S-MEM-3"sv,
    "S-MEM-4"sv,
    "S-MEM-5"sv,
    "S-MEM-6"sv,
    "S-HOSTFN-1"sv,
    "S-GRAPH-1"sv,
    "S-GRAPH-2"sv,
    "S-NVTX-1"sv,
    "S-COMM-1"sv,
    "S-DEV-1"sv,
    "S-DEV-2"sv,
};

}  // namespace

std::span<const std::string_view> known_rule_ids() noexcept { return ids; }

bool is_known_rule(std::string_view id) noexcept {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace streamsan::harness
