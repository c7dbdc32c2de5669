#include "sanitizer/report/frame_kind.h"

#include <array>
#include <cctype>
#include <string>

namespace streamsan {
namespace {

using field = frame_rule::field;

// See Note [Stacks start at the user]. Order matters: entry frames first
// (start_thread lives in libc), then streamsan's own functions (its runtime
// is linked into the program), then modules, files and CUDA's C API names.
constexpr std::array rules{
    // Below main and a thread's own function.
    frame_rule{field::exact, "_start", frame_kind::process_entry},
    frame_rule{field::function, "__libc_start", frame_kind::process_entry},
    frame_rule{field::exact, "start_thread", frame_kind::thread_entry},
    frame_rule{field::exact, "clone", frame_kind::thread_entry},
    frame_rule{field::exact, "clone3", frame_kind::thread_entry},
    frame_rule{field::exact, "__clone", frame_kind::thread_entry},
    frame_rule{field::exact, "__clone3", frame_kind::thread_entry},
    frame_rule{field::exact, "__GI___clone", frame_kind::thread_entry},
    frame_rule{field::exact, "__GI___clone3", frame_kind::thread_entry},
    frame_rule{field::exact, "execute_native_thread_routine", frame_kind::thread_entry},
    // streamsan itself: the runtime (linked into the program), the injection
    // library, the recorder.
    frame_rule{field::function, "streamsan::rt::", frame_kind::streamsan},
    frame_rule{field::function, "streamsan::injection::", frame_kind::streamsan},
    frame_rule{field::function, "streamsan::recorder::", frame_kind::streamsan},
    frame_rule{field::module, "libstreamsan", frame_kind::streamsan},
    // The annotation API's inline functions (include/streamsan/annotate.h).
    frame_rule{field::function, "streamsan_", frame_kind::streamsan},
    // Shared CUDA libraries.
    frame_rule{field::module, "libcupti.so", frame_kind::cupti},
    // The Compute Sanitizer API's callback layer (the other capture source).
    frame_rule{field::module, "libsanitizer-public.so", frame_kind::cupti},
    frame_rule{field::module, "libcuda.so", frame_kind::cuda},
    frame_rule{field::module, "libcudart.so", frame_kind::cuda},
    frame_rule{field::module, "libnvrtc", frame_kind::cuda},
    frame_rule{field::module, "libnvJitLink", frame_kind::cuda},
    frame_rule{field::module, "libcublas", frame_kind::cuda},
    frame_rule{field::module, "libcufft", frame_kind::cuda},
    frame_rule{field::module, "libcurand", frame_kind::cuda},
    frame_rule{field::module, "libcusparse", frame_kind::cuda},
    frame_rule{field::module, "libcusolver", frame_kind::cuda},
    frame_rule{field::module, "libcudnn", frame_kind::cuda},
    frame_rule{field::module, "libnccl", frame_kind::cuda},
    // The C and C++ runtimes.
    frame_rule{field::module, "/libc.so", frame_kind::system},
    frame_rule{field::module, "/libstdc++.so", frame_kind::system},
    frame_rule{field::module, "/libgcc_s.so", frame_kind::system},
    frame_rule{field::module, "/ld-linux", frame_kind::system},
    // Code compiled into the program from CUDA's headers and nvcc's stubs.
    frame_rule{field::file, ".cudafe1.stub.c", frame_kind::launch_stub},
    frame_rule{field::file, "cuda_runtime.h", frame_kind::cuda},
    frame_rule{field::file, "cuda_runtime_api.h", frame_kind::cuda},
    frame_rule{field::file, "/crt/", frame_kind::cuda},
    frame_rule{field::file, "/usr/include/c++/", frame_kind::system},
    // CUDA's C++ libraries (CCCL: Thrust, CUB, libcu++), compiled into the
    // program from the toolkit's headers (include/cccl/ since CUDA 13), and
    // by name where the program has no debug information. A Thrust call's
    // frames fold as a CUDA call's do: the user called thrust::reduce at
    // their line; the kernel it launched is named in the folded line.
    frame_rule{field::file, "/include/cccl/", frame_kind::cuda},
    frame_rule{field::file, "/include/thrust/", frame_kind::cuda},
    frame_rule{field::file, "/include/cub/", frame_kind::cuda},
    frame_rule{field::file, "/include/cuda/std/", frame_kind::cuda},
    frame_rule{field::file, "/include/cuda/__", frame_kind::cuda},
    // nvcc's launch stubs and the statically linked CUDA runtime, by name.
    frame_rule{field::function, "__device_stub__", frame_kind::launch_stub},
    frame_rule{field::function, "__cudaPushCallConfiguration", frame_kind::launch_stub},
    frame_rule{field::function, "__cudaPopCallConfiguration", frame_kind::launch_stub},
    frame_rule{field::function, "__cuda", frame_kind::cuda},
    frame_rule{field::function, "cudart::", frame_kind::cuda},
    frame_rule{field::function, "thrust::", frame_kind::cuda},
    frame_rule{field::function, "cub::", frame_kind::cuda},
    frame_rule{field::function, "cuda::std::", frame_kind::cuda},
    frame_rule{field::c_api, "cupti", frame_kind::cupti},
    frame_rule{field::c_api, "cuda", frame_kind::cuda},
    frame_rule{field::c_api, "cu", frame_kind::cuda},
    frame_rule{field::c_api, "nvrtc", frame_kind::cuda},
    frame_rule{field::c_api, "nvtx", frame_kind::cuda},
    // cuda_runtime.h's C++ templates (cudaLaunchKernel<char>) in a program
    // built without debug information, where the file rule cannot see them.
    frame_rule{field::instance, "cuda", frame_kind::cuda},
};

bool is_upper(char c) noexcept { return std::isupper(static_cast<unsigned char>(c)) != 0; }

// A C function: no namespace, no parameter list in the demangled name.
bool is_c_api(std::string_view function, std::string_view base, std::string_view prefix) noexcept {
  if (function.find('(') != std::string_view::npos) return false;
  if (base.find("::") != std::string_view::npos) return false;
  return base.size() > prefix.size() && base.starts_with(prefix) && is_upper(base[prefix.size()]);
}

bool matches(const frame_rule& rule, const symbol_info& symbol, std::string_view base) noexcept {
  switch (rule.where) {
    case field::module:
      return symbol.module.find(rule.pattern) != std::string::npos;
    case field::function:
      return base.starts_with(rule.pattern);
    case field::instance:
      // The name as written is longer than the bare name by its template
      // arguments: "cudaLaunchKernel<char>" for "cudaLaunchKernel".
      return is_c_api(base, base, rule.pattern) &&
             symbol.function.find(std::string(base) + "<") != std::string::npos;
    case field::exact:
      return base == rule.pattern;
    case field::c_api:
      return is_c_api(symbol.function, base, rule.pattern);
    case field::file:
      return symbol.file.find(rule.pattern) != std::string::npos;
  }
  return false;
}

// Skips a bracketed group starting at text[i] ("<...>", "(...)", "{...}"),
// returning the index after it; nested brackets of any kind count.
std::size_t skip_group(std::string_view text, std::size_t i) noexcept {
  int depth = 0;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<' || c == '(' || c == '{' || c == '[') ++depth;
    if (c == '>' || c == ')' || c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return text.size();
}

}  // namespace

std::string_view to_string(frame_kind kind) noexcept {
  switch (kind) {
    case frame_kind::user: return "user";
    case frame_kind::cuda: return "cuda";
    case frame_kind::launch_stub: return "launch-stub";
    case frame_kind::cupti: return "cupti";
    case frame_kind::streamsan: return "streamsan";
    case frame_kind::system: return "system";
    case frame_kind::process_entry: return "process-entry";
    case frame_kind::thread_entry: return "thread-entry";
  }
  return "unknown";
}

std::span<const frame_rule> frame_rules() noexcept { return rules; }

std::string_view frame_base_name(std::string_view function) noexcept {
  constexpr std::string_view anonymous = "(anonymous namespace)";
  constexpr std::string_view call_operator = "operator()";
  // The name ends at the parameter list: the first '(' outside brackets
  // that is not part of "(anonymous namespace)" or "operator()".
  std::size_t start = 0;
  std::size_t end = function.size();
  for (std::size_t i = 0; i < function.size();) {
    const std::string_view rest = function.substr(i);
    if (rest.starts_with(anonymous)) {
      i += anonymous.size();
    } else if (rest.starts_with(call_operator)) {
      i += call_operator.size();
    } else if (rest.starts_with("operator")) {
      // operator<, operator<<, operator>: the brackets are the name.
      i += 8;
      while (i < function.size() && function[i] != '(') ++i;
    } else if (function[i] == '(') {
      end = i;
      break;
    } else if (function[i] == '<' || function[i] == '{' || function[i] == '[') {
      i = skip_group(function, i);
    } else {
      // A space outside brackets ends a return type ("cudaError f<char>").
      if (function[i] == ' ') start = i + 1;
      ++i;
    }
  }
  std::string_view name = function.substr(start, end - start);
  // Template arguments of the function itself.
  if (name.ends_with('>') && !name.ends_with("operator>") && !name.ends_with("->")) {
    int depth = 0;
    for (std::size_t i = name.size(); i-- > 0;) {
      if (name[i] == '>') ++depth;
      if (name[i] == '<' && --depth == 0) {
        name = name.substr(0, i);
        break;
      }
    }
  }
  while (name.ends_with(' ')) name.remove_suffix(1);
  return name;
}

frame_kind classify_frame(const symbol_info& symbol) noexcept {
  const std::string_view base = frame_base_name(symbol.function);
  for (const frame_rule& rule : rules) {
    if (matches(rule, symbol, base)) return rule.kind;
  }
  return frame_kind::user;
}

bool is_main_frame(const symbol_info& symbol) noexcept {
  return frame_base_name(symbol.function) == "main";
}

}  // namespace streamsan
