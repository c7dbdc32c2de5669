// What a kernel's name says about its parameters.
//
// The driver gives a kernel's mangled name and its parameter layout (offset
// and size of each parameter) but not the parameter types. The types are in
// the mangled name: "_Z5scalePKfPfi" demangles to "scale(float const*, float*,
// int)". A `const T*` parameter is only read by the kernel; any other pointer
// may be written; an arithmetic scalar never holds an address; anything else
// (a struct by value, an extern "C" kernel without types) may hold pointers
// anywhere and is scanned word by word (see access_inference.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace streamsan::injection {

enum class param_class : std::uint8_t {
  pointer_to_const,  // T const*  -> read
  pointer,           // T*        -> read-write
  scalar,            // int, float, ... -> never an address
  // unsigned long long: never an address, but the type of every texture and
  // surface object (cudaTextureObject_t, cudaSurfaceObject_t, CUtexObject,
  // CUsurfObject), so its value may name one (Note [Texture and surface
  // objects] in cuda_model_textures.cpp).
  wide_integer,
  unknown,           // struct by value, unknown type -> scan every word
};

struct kernel_signature {
  std::string name;  // demangled when possible, else as given
  // One entry per parameter when the name carried types; empty otherwise.
  std::vector<param_class> params;
  bool has_types = false;
};

// abi::__cxa_demangle; nullopt when `mangled` is not a mangled C++ name.
std::optional<std::string> demangle(std::string_view mangled);

// The top-level parameter type strings of a demangled function name, e.g.
// {"float const*", "float*", "int"}; nullopt when there is no parameter list.
std::optional<std::vector<std::string>> parameter_types(std::string_view demangled);

param_class classify_parameter(std::string_view type);

kernel_signature parse_kernel_signature(std::string_view mangled_name);

}  // namespace streamsan::injection
