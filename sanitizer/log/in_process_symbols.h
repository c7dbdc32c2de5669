// Symbolizes a return address of the current process with Boost.Stacktrace
// (libbacktrace: DWARF function, file and line) and dladdr (module and
// offset). Only meaningful in the process that captured the address: the
// trace writer calls it before the process ends (frame_symbol records), the
// report symbolizer for live reports.
//
// Note [Symbolize the call, not the return address]
// Stacks hold return addresses: the instruction after each call. Looked up
// as they are, they can name the next source line or, after a call to a
// noreturn function, even the next function. Like ThreadSanitizer we look up
// address - 1, which lies inside the call instruction.
#pragma once

#include <cstdint>

#include "sanitizer/log/log_tables.h"

namespace streamsan {

// Empty fields for what cannot be found; never throws for a bad address.
symbol_info symbolize_in_process(std::uint64_t return_address);

}  // namespace streamsan
