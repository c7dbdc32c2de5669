#include "sanitizer/report/user_stack.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <span>

#include "sanitizer/log/interpreter_frame.h"
#include "sanitizer/report/describe.h"

namespace streamsan {
namespace {

struct classified {
  std::uint64_t address;
  const symbol_info* symbol;
  frame_kind kind;
};

bool is_kernel(const operation_ref* op) noexcept {
  return op != nullptr &&
         (op->op == operation_kind::kernel || op->op == operation_kind::graph_node);
}

// Note [A kernel's host function is part of its launch]
// nvcc turns a __global__ function into a host function of the same
// (mangled, so demangled) name that the launch expression calls and that
// calls the __device_stub__. A non-template kernel's lies in the
// .cudafe1.stub.c file; a template kernel's instance has the line of the
// kernel's definition ("void k<float>(float*) at kernels.cuh:10"), which is
// neither where the program launched it nor a frame of the user's call
// chain. A frame named exactly as the launched kernel is that function.
std::vector<classified> classify(std::span<const std::uint64_t> frames, symbolizer& symbols,
                                 const operation_ref* op) {
  const std::string_view kernel = is_kernel(op) ? symbols.tables().string(op->name) : "";
  std::vector<classified> out;
  out.reserve(frames.size());
  for (const auto address : frames) {
    const symbol_info& symbol = symbols.symbolize(address);
    const bool host_function = !kernel.empty() && symbol.function == kernel;
    out.push_back(
        {address, &symbol, host_function ? frame_kind::launch_stub : classify_frame(symbol)});
  }
  return out;
}

// The frames that belong to the program's own call chain: up to and
// including main, and before a thread's entry frames.
std::span<const classified> up_to_entry(std::span<const classified> frames) {
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (is_entry(frames[i].kind)) return frames.first(i);
    if (is_main_frame(*frames[i].symbol)) return frames.first(i + 1);
  }
  return frames;
}

// A kernel launch's frames: nvcc's stub, CUDA's launch calls, the runtime's.
bool is_launch_frame(const classified& f) {
  if (f.kind == frame_kind::launch_stub) return true;
  const std::string_view base = frame_base_name(f.symbol->function);
  return base.starts_with("cudaLaunch") || base.starts_with("cuLaunch") ||
         base == "streamsan::rt::launch";
}

// A CUDA API function's bare name ("cudaMalloc", "cuMemAlloc_v2", and
// cuda_runtime.h's "cudaLaunchKernel<char>" as frame_base_name leaves it).
bool is_cuda_api_name(std::string_view base) {
  if (base.find("::") != std::string_view::npos) return false;
  const auto upper_after = [&](std::string_view prefix) {
    return base.size() > prefix.size() && base.starts_with(prefix) &&
           std::isupper(static_cast<unsigned char>(base[prefix.size()])) != 0;
  };
  return upper_after("cuda") || upper_after("cu");
}

// The name a user knows the folded call by: the outermost internal function
// (the one the program called), without streamsan's namespace, shortened
// as kernel names are. When that is a library's function (Thrust's
// vector constructor) and a CUDA call lies inside it, both:
// "cudaMalloc via thrust::detail::vector_base<…>::vector_base".
std::string called_function(std::span<const classified> folded) {
  for (std::size_t i = folded.size(); i-- > 0;) {
    std::string_view base = frame_base_name(folded[i].symbol->function);
    if (base.empty()) continue;
    if (base.starts_with("streamsan::")) base.remove_prefix(11);
    std::string outer = short_kernel_name(base);
    if (is_cuda_api_name(base)) return outer;
    for (std::size_t j = i; j-- > 0;) {
      const std::string_view api = frame_base_name(folded[j].symbol->function);
      if (is_cuda_api_name(api)) return std::string(api) + " via " + outer;
    }
    return outer;
  }
  return {};
}

// What the user called, when no folded frame has a name (a stripped program
// with the CUDA runtime linked in): the library as they know it. The
// capture's callback layer (CUPTI or the Compute Sanitizer API) is
// streamsan's detail, inside the CUDA call the program made.
std::string_view called_library(frame_kind kind) noexcept {
  switch (kind) {
    case frame_kind::cuda:
    case frame_kind::launch_stub:
    case frame_kind::cupti: return "CUDA";
    case frame_kind::streamsan: return "streamsan";
    case frame_kind::system: return "the C and C++ runtime";
    case frame_kind::user:
    case frame_kind::process_entry:
    case frame_kind::thread_entry: return to_string(kind);  // never folded
  }
  return to_string(kind);
}

std::string folded_call(const operation_ref* op, std::span<const classified> folded,
                        const log_tables& tables) {
  const std::string_view name = op != nullptr ? tables.string(op->name) : std::string_view{};
  const bool launch =
      op != nullptr && !name.empty() &&
      (op->op == operation_kind::kernel ||
       (op->op == operation_kind::graph_node &&
        std::any_of(folded.begin(), folded.end(), is_launch_frame)));
  if (launch) return "launch of " + short_kernel_name(name) + "<<<…>>>";
  if (auto function = called_function(folded); !function.empty()) return function;
  return "call into " + std::string(called_library(folded.back().kind));
}

stack_line line_of(const classified& f) { return stack_line{f.address, f.symbol, f.kind, {}, 0}; }

std::string frame_at(const stack_line& line, const std::filesystem::path& root) {
  const symbol_info& s = *line.symbol;
  std::string text = s.function.empty() ? hex(line.address) : s.function;
  if (!s.file.empty()) {
    text += " at " + display_path(s.file, root);
    if (s.line != 0) text += ":" + std::to_string(s.line);
  } else if (!s.module.empty()) {
    text += " (" + std::filesystem::path(s.module).filename().string() + "+" +
            hex(s.module_offset) + ")";
  }
  return text;
}

// The index of the first frame of the program's own (frames.size() when
// there is none).
std::size_t first_user_frame(std::span<const classified> frames) {
  std::size_t i = 0;
  while (i < frames.size() && is_internal(frames[i].kind)) ++i;
  return i;
}

// Note [Python stacks fold their native frames]
// Where the capture read a Python program's frames from its interpreter
// (Note [Python frames read in place] in inject/stack/python_frames.h), it
// keeps the native frames in front of them: the call site's module
// decides the library suppressions, and `--cpp-stacks` shows them. A
// report shows the Python frames by default, so the native ones fold
// into the first Python frame's line as the CUDA frames before a native
// user frame do: "launch of k<<<…>>> from step at train.py:12". The
// call's description comes from the CUDA frames before the first native
// frame of the program's (an extension's), as in a native stack.
std::optional<user_stack> python_view(std::span<const classified> all, const operation_ref* op,
                                      symbolizer& symbols, const stack_view_options& options) {
  const auto first_python = std::find_if(all.begin(), all.end(), [](const classified& f) {
    return is_interpreter_frame(f.address);
  });
  if (first_python == all.begin() || first_python == all.end()) return std::nullopt;
  const auto native = all.first(static_cast<std::size_t>(first_python - all.begin()));
  const std::size_t first_user = first_user_frame(native);
  user_stack view;
  for (auto it = first_python; it != all.end(); ++it) {
    if (!is_interpreter_frame(it->address)) continue;  // cannot happen: Python frames come last
    if (options.depth != 0 && view.lines.size() == options.depth) {
      view.dropped += static_cast<std::size_t>(all.end() - it);
      break;
    }
    view.lines.push_back(line_of(*it));
  }
  const auto described = first_user > 0 ? native.first(first_user) : native;
  view.lines.front().folded_call = folded_call(op, described, symbols.tables());
  view.lines.front().folded_frames = native.size();
  return view;
}

}  // namespace

user_stack view_stack(stack_id stack, const operation_ref* op, symbolizer& symbols,
                      const stack_view_options& options) {
  const auto all = classify(symbols.tables().stack(stack), symbols, op);
  user_stack view;
  if (options.raw) {
    for (const auto& f : all) view.lines.push_back(line_of(f));
    return view;
  }
  if (!options.native_with_python) {
    if (auto python = python_view(all, op, symbols, options)) return std::move(*python);
  }
  const auto chain = up_to_entry(all);
  view.dropped = all.size() - chain.size();
  const std::size_t first_user = first_user_frame(chain);
  if (first_user == chain.size()) {
    // Nothing of the program's own (a CUDA-internal thread, or symbols
    // unknown): show what there is rather than an empty stack.
    for (const auto& f : chain) view.lines.push_back(line_of(f));
    return view;
  }
  std::size_t last_user = chain.size() - 1;
  while (is_internal(chain[last_user].kind)) --last_user;
  std::size_t user_frames = 0;
  for (std::size_t i = first_user; i <= last_user; ++i) {
    if (!is_internal(chain[i].kind)) {
      if (options.depth != 0 && user_frames == options.depth) {
        view.dropped += last_user + 1 - i;
        break;
      }
      ++user_frames;
    }
    view.lines.push_back(line_of(chain[i]));
  }
  view.dropped += chain.size() - 1 - last_user;
  if (first_user > 0) {
    const auto folded = chain.first(first_user);
    view.lines.front().folded_call = folded_call(op, folded, symbols.tables());
    view.lines.front().folded_frames = folded.size();
  }
  return view;
}

std::string describe_stack_line(std::size_t index, const stack_line& line,
                                const std::filesystem::path& root) {
  std::string text = "#" + std::to_string(index) + " ";
  if (line.folded_frames > 0) return text + line.folded_call + " from " + frame_at(line, root);
  return text + describe_frame(line.address, *line.symbol, root);
}

std::optional<call_site> find_call_site(stack_id stack, symbolizer& symbols,
                                        const operation_ref* op) {
  const auto view = view_stack(stack, op, symbols, {});
  if (view.lines.empty()) return std::nullopt;
  const stack_line* first_user = nullptr;
  for (const auto& line : view.lines) {
    if (is_internal(line.kind)) continue;
    if (!line.symbol->file.empty()) return call_site{line.address, line.symbol};
    if (first_user == nullptr) first_user = &line;
  }
  const stack_line& pick = first_user != nullptr ? *first_user : view.lines.front();
  return call_site{pick.address, pick.symbol};
}

}  // namespace streamsan
