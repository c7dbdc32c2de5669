// The phrases every report format shares, so that text, JSON and SARIF name
// things the same way: "kernel 'sum' on stream#2 (thread#1)",
// "alloc#3 'A' (device memory, 4096 bytes)", "#0 main demo.cpp:42".
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/log/log_tables.h"
#include "sanitizer/report/symbolizer.h"
#include "sanitizer/report/user_stack.h"

namespace streamsan {

// "alloc#3 'A' (device memory, 4096 bytes)"; with_device adds ", device 0".
std::string describe_allocation(const allocation_ref& a, const log_tables& tables,
                                bool with_device = false);

// "kernel 'sum' on stream#2 (thread#1)", "host access 'h' on thread#1",
// "graph node 'n' (node 3 of graph#2) on stream#1 (thread#1)".
std::string describe_operation(const operation_ref& op, const log_tables& tables);
// A kernel name as text reports show it: without CCCL's ABI namespaces
// (without_abi_namespaces) and a template instance's leading "void ", and
// when longer than `short_name_limit` with its template arguments elided
// ("k<…>(int, …)"); JSON and SARIF keep the full name.
inline constexpr std::size_t short_name_limit = 80;
std::string short_kernel_name(std::string_view name);
// `name` without Thrust's, CUB's and libcu++'s versioned inline namespaces
// ("cub::CUB_300001_SM_900::DeviceReduceKernel" ->
// "cub::DeviceReduceKernel"; Note [CCCL's ABI namespaces]).
std::string without_abi_namespaces(std::string_view name);
// `name` of `op` as reports show it: a kernel's or a graph node's shortened
// (short_kernel_name), any other name as it is.
std::string shown_name(const operation_ref& op, std::string_view name);

// Operations that read or write a byte range (the rest order or free).
bool accesses_memory(operation_kind op) noexcept;

// The access kind as a report names it: "read", "write", "read-write",
// "atomic access", "read+atomic access", ...
std::string access_kind(access_mode mode);

// What the operation did, capitalized: "Read of 4096 bytes at offset 0 by
// kernel 'sum' on stream#2 (thread#1) in range fwd" for memory accesses,
// "Event wait on stream#2 (thread#1)" for everything else. When the
// operation accessed another allocation than `shown` (the report's; a
// caching allocator reused the bytes) it says which: "at offset 0 of alloc#7".
// A kernel footprint that was measured or inferred says so after the bytes:
// "Atomic access of 4 bytes at offset 0 (measured footprint) by kernel ...".
std::string describe_access(const operation_ref& op, const log_tables& tables,
                            alloc_id shown = {});

// "Previous write of 4096 bytes at offset 0 by kernel 'fill' on stream#1 ...".
std::string describe_previous(const operation_ref& op, const log_tables& tables,
                              alloc_id shown = {});

// The allocation a diagnostic's report is about (none when it has none).
alloc_id shown_allocation(const diagnostic& d) noexcept;

// The conflicting byte ranges: "[0, 4096)", "[0, 16), [32, 48)", and ", …"
// when more ranges conflict than the diagnostic lists.
std::string describe_ranges(const diagnostic& d);

// What a report's "Conflicting bytes:" line says: "[0, 4096) of alloc#3",
// "[0, 16), [32, 48) of alloc#3 (32 bytes)", "[0, 16), … of alloc#3
// (40 ranges, 640 bytes)".
std::string describe_conflict_bytes(const diagnostic& d);

// "stream-race (read-after-write)", or just the kind without a hazard.
std::string kind_and_hazard(const diagnostic& d);

// "stream-race (read-after-write) on alloc#3 'A' (device memory, 4096 bytes)",
// "unrecorded-event on event#4".
std::string headline(const diagnostic& d, const log_tables& tables);

// One sentence on why the diagnostic is a problem, citing the rule of
// docs (S-...), for the kinds whose stacks do not say it by themselves.
std::optional<std::string> explanation(const diagnostic& d);

// `file` relative to `root` when it lies under it, else unchanged.
std::string display_path(std::string_view file, const std::filesystem::path& root);

// "main demo.cpp:42", "main", "0x401000 (demo+0x1000)", "0x401000".
std::string describe_frame(std::uint64_t address, const symbol_info& symbol,
                           const std::filesystem::path& root);

// "demo.cpp:42 in main", "in main", "(demo+0x1000)", "0x401000": where a
// SUMMARY line says the problem is.
std::string describe_call_site(const call_site& site, const std::filesystem::path& root);

std::string hex(std::uint64_t value);

}  // namespace streamsan
