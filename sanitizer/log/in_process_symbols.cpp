#include "sanitizer/log/in_process_symbols.h"

#include <dlfcn.h>

#include <boost/stacktrace/frame.hpp>

namespace streamsan {

symbol_info symbolize_in_process(std::uint64_t return_address) {
  symbol_info info;
  if (return_address == 0) return info;
  // See Note [Symbolize the call, not the return address].
  const std::uint64_t call = return_address - 1;
  const auto* pointer = reinterpret_cast<const void*>(call);
  const boost::stacktrace::frame frame(pointer);
  info.function = frame.name();
  info.file = frame.source_file();
  info.line = static_cast<std::uint32_t>(frame.source_line());
  Dl_info dl{};
  if (::dladdr(const_cast<void*>(pointer), &dl) != 0 && dl.dli_fname != nullptr) {
    info.module = dl.dli_fname;
    info.module_offset = call - reinterpret_cast<std::uint64_t>(dl.dli_fbase);
  }
  return info;
}

}  // namespace streamsan
