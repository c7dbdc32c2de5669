// Fuzz target: what a kernel's mangled name says about its parameters
// (inject/model/kernel_signature.h). The name comes from the program's own
// binary, so any bytes may arrive: the demangler and the parameter-list
// reader must end, quickly, and agree with each other. The input is read as
// a mangled name, and also as an already demangled one.
#include <string>

#include "inject/model/kernel_signature.h"
#include "tests/fuzz/fuzz_target.h"

namespace {

using namespace streamsan::injection;

void check_signature(std::string_view mangled) {
  const kernel_signature s = parse_kernel_signature(mangled);
  FUZZ_CHECK(!s.name.empty() || mangled.empty());
  if (!s.has_types) {
    FUZZ_CHECK(s.params.empty());
    return;
  }
  const auto types = parameter_types(s.name);
  FUZZ_CHECK(types.has_value());
  FUZZ_CHECK(types->size() == s.params.size());
  for (std::size_t i = 0; i < types->size(); ++i) {
    FUZZ_CHECK(classify_parameter((*types)[i]) == s.params[i]);
  }
}

void check_demangled(std::string_view demangled) {
  const auto types = parameter_types(demangled);
  if (!types) return;
  for (const auto& t : *types) {
    FUZZ_CHECK(t.size() <= demangled.size());
    (void)classify_parameter(t);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = streamsan::fuzz::as_text(data, size);
  check_signature(text);
  check_demangled(text);
  return 0;
}
