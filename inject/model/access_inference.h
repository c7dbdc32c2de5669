// Which memory a kernel launch touches, inferred from its arguments.
//
// Note [Kernel access inference]
// A launch carries its arguments as bytes laid out like the kernel's
// parameter buffer. Every 8-byte-aligned word of that buffer that holds an
// address inside a tracked allocation is taken as an access to that
// allocation, from the address to the end of the allocation (a kernel may
// index anywhere past a pointer it is given; without an annotation nothing
// tighter is sound). This finds pointers inside struct parameters too. The
// mode comes from the parameter's type when the mangled name has one:
// `const T*` is read, every other pointer or unknown word read-write;
// arithmetic parameters are skipped, so an `int` that happens to equal an
// address is never mistaken for one. Several words into one allocation fold
// into a single access (lowest offset, union of modes).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "inject/model/allocation_map.h"
#include "inject/model/kernel_signature.h"
#include "sanitizer/log/record.h"

namespace streamsan::injection {

// One parameter as the driver reports it (cuKernelGetParamInfo).
struct param_layout {
  std::uint32_t offset = 0;  // in the parameter buffer
  std::uint32_t size = 0;
};

struct param_plan {
  std::uint32_t offset = 0;
  std::uint32_t size = 0;
  param_class kind = param_class::unknown;
};

// Joins the driver's layout with the types from the name. A name whose
// parameter count disagrees with the layout is not trusted: every parameter
// is then scanned as unknown.
std::vector<param_plan> make_param_plans(std::span<const param_layout> layout,
                                         const kernel_signature& signature);

// A launch's argument bytes: either one pointer per parameter
// (kernelParams) or one packed buffer (CU_LAUNCH_PARAM_BUFFER_POINTER).
class kernel_arguments {
 public:
  static kernel_arguments from_pointers(void* const* params) noexcept {
    kernel_arguments a;
    a.params_ = params;
    return a;
  }
  static kernel_arguments from_buffer(const void* buffer, std::size_t size) noexcept {
    kernel_arguments a;
    a.buffer_ = static_cast<const unsigned char*>(buffer);
    a.buffer_size_ = size;
    return a;
  }
  // What cuLaunchKernel takes: kernelParams, else the `extra` array's
  // CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE pairs; empty when neither.
  static kernel_arguments from_launch(void* const* kernel_params, void* const* extra) noexcept;
  // Reads 8 bytes of parameter `index` starting `at` bytes into it.
  bool read_word(std::size_t index, const param_plan& p, std::uint32_t at,
                 std::uint64_t& out) const noexcept;
  bool empty() const noexcept { return params_ == nullptr && buffer_ == nullptr; }

 private:
  void* const* params_ = nullptr;
  const unsigned char* buffer_ = nullptr;
  std::size_t buffer_size_ = 0;
};

// Appends the inferred accesses to `out` (cleared first).
void infer_accesses(std::span<const param_plan> plans, const kernel_arguments& args,
                    const allocation_map& allocations, std::vector<access>& out);

// Adds an access to `out`, folding it into an existing access to the same
// allocation (lowest offset, extent to the furthest end, union of modes).
void add_access(std::vector<access>& out, const access& a);

}  // namespace streamsan::injection
