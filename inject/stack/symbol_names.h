// The symbol at an exact code address of this process (a function pointer,
// or a return address while classifying frames), from the symbol tables of
// the loaded objects via libbacktrace: unlike dladdr it also sees the main
// program's non-exported symbols, which is where a statically linked CUDA
// runtime lives.
#pragma once

#include <cstdint>
#include <string>

namespace streamsan::injection {

// The raw (mangled) symbol name containing `address`; "" when none.
std::string raw_symbol_name(std::uint64_t address);

// Demangled when possible; "0x..." when no symbol is known.
std::string function_name(std::uint64_t address);

// True for the private functions of the statically linked CUDA runtime
// (named libcudart_static_<hash>), which reports do not show.
bool is_static_cudart_private(std::uint64_t address);

}  // namespace streamsan::injection
