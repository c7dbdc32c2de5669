#include "harness/stat_catalog.h"

#include <array>

namespace streamsan::harness {
namespace {

using namespace std::string_view_literals;

// torch.cuda.memory_stats' keys without the pool level ("allocation.current"
// for "allocation.all.current"); see runtime/memory_stats.h. memory_allocated
// is allocated_bytes.current, memory_reserved is reserved_bytes.current.
constexpr std::array names{
    "allocation.current"sv,
    "allocation.peak"sv,
    "allocation.allocated"sv,
    "allocation.freed"sv,
    "segment.current"sv,
    "segment.peak"sv,
    "segment.allocated"sv,
    "segment.freed"sv,
    "active.current"sv,
    "active.peak"sv,
    "active.allocated"sv,
    "active.freed"sv,
    "allocated_bytes.current"sv,
    "allocated_bytes.peak"sv,
    "allocated_bytes.allocated"sv,
    "allocated_bytes.freed"sv,
    "reserved_bytes.current"sv,
    "reserved_bytes.peak"sv,
    "reserved_bytes.allocated"sv,
    "reserved_bytes.freed"sv,
    "active_bytes.current"sv,
    "active_bytes.peak"sv,
    "active_bytes.allocated"sv,
    "active_bytes.freed"sv,
    "num_alloc_retries"sv,
    "num_ooms"sv,
};

}  // namespace

std::span<const std::string_view> known_stat_names() noexcept { return names; }

}  // namespace streamsan::harness
