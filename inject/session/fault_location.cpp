#include "inject/session/fault_location.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <ucontext.h>

#include <algorithm>
#include <array>

namespace streamsan::injection {
namespace {

// A hexadecimal number, without allocating.
struct hex_text {
  std::array<char, 19> digits{};  // "0x" and 16 digits, then the terminator
  explicit hex_text(std::uintptr_t value) noexcept {
    char reversed[16];
    std::size_t n = 0;
    do {
      reversed[n++] = "0123456789abcdef"[value & 0xf];
      value >>= 4;
    } while (value != 0 && n < sizeof reversed);
    digits[0] = '0';
    digits[1] = 'x';
    for (std::size_t i = 0; i < n; ++i) digits[2 + i] = reversed[n - 1 - i];
    digits[2 + n] = '\0';
  }
  const char* c_str() const noexcept { return digits.data(); }
};

std::uintptr_t faulting_pc(const void* ucontext) noexcept {
  if (ucontext == nullptr) return 0;
  const auto& mc = static_cast<const ucontext_t*>(ucontext)->uc_mcontext;
#if defined(__x86_64__)
  return static_cast<std::uintptr_t>(mc.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<std::uintptr_t>(mc.pc);
#else
  (void)mc;
  return 0;
#endif
}

// "OBJECT+0xOFFSET", or the bare address outside every object; returns
// the object's path (null outside every object).
const char* say_address(std::uintptr_t address, write_text_fn write) noexcept {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(address), &info) != 0 && info.dli_fname != nullptr) {
    write(info.dli_fname);
    write("+");
    write(hex_text(address - reinterpret_cast<std::uintptr_t>(info.dli_fbase)).c_str());
    return info.dli_fname;
  }
  write(hex_text(address).c_str());
  return nullptr;
}

}  // namespace

object_owner owner_of(std::string_view path) noexcept {
  const std::string_view name = path.substr(std::min(path.size(), path.rfind('/') + 1));
  if (name.starts_with("libstreamsan_inject")) return object_owner::streamsan;
  if (name.starts_with("libsanitizer-public")) return object_owner::sanitizer_api;
  return object_owner::program;
}

void warm_fault_location() noexcept {
  void* frames[2];
  backtrace(frames, 2);
}

void say_fault_location(const siginfo_t* info, const void* ucontext, write_text_fn write,
                        std::size_t frames) noexcept {
  const std::uintptr_t pc = faulting_pc(ucontext);
  write("streamsan: the fault");
  if (info != nullptr) {
    write(" (address ");
    write(hex_text(reinterpret_cast<std::uintptr_t>(info->si_addr)).c_str());
    write(")");
  }
  write(" was at ");
  const char* object = say_address(pc, write);
  write("\n");
  // backtrace() from here starts with this function, the signal handler and
  // the kernel's trampoline; the interrupted frames follow, the faulting
  // function first (its pc again, or its caller when it had no frame).
  constexpr std::size_t most = 40;
  void* trace[most];
  const int n = backtrace(trace, static_cast<int>(most));
  // Where the unwinder did not find the pc again, every frame is said.
  int first = 0;
  for (int i = 0; i < n; ++i) {
    if (reinterpret_cast<std::uintptr_t>(trace[i]) == pc) {
      first = i + 1;
      break;
    }
  }
  for (int i = first; i < n && static_cast<std::size_t>(i - first) < frames; ++i) {
    write("streamsan:   called from ");
    say_address(reinterpret_cast<std::uintptr_t>(trace[i]), write);
    write("\n");
  }
  switch (owner_of(object != nullptr ? object : "")) {
    case object_owner::streamsan:
      write("streamsan: the faulting instruction is streamsan's own (libstreamsan_inject.so): "
            "a bug of streamsan; please report it with these lines\n");
      return;
    case object_owner::sanitizer_api:
      write("streamsan: the faulting instruction is in the Compute Sanitizer API's library, "
            "which streamsan loaded; please report it to streamsan with these lines\n");
      return;
    case object_owner::program:
      return;
  }
}

}  // namespace streamsan::injection
