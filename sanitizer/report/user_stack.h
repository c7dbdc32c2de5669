// A call stack as reports show it: the user's frames, with the CUDA and
// streamsan frames before the first of them folded into one line that says
// what the call was, and main's callers and a thread's entry frames dropped
// (Note [Stacks start at the user] in frame_kind.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/report/frame_kind.h"
#include "sanitizer/report/symbolizer.h"

namespace streamsan {

struct stack_view_options {
  // Every frame as recorded, nothing folded or dropped.
  bool raw = false;
  // User frames shown; 0 shows all that were recorded.
  std::size_t depth = 0;
  // In a stack with Python frames, the native frames before them too
  // (`--cpp-stacks`); else they fold into the first Python frame's line.
  bool native_with_python = false;
};

struct stack_line {
  std::uint64_t address = 0;
  const symbol_info* symbol = nullptr;  // never null; owned by the symbolizer or tables
  frame_kind kind = frame_kind::user;
  // On the first user frame when internal frames before it were folded:
  // what the call was ("launch of k_read<<<…>>>", "cudaMemcpyAsync").
  std::string folded_call;
  std::size_t folded_frames = 0;
};

struct user_stack {
  std::vector<stack_line> lines;
  std::size_t dropped = 0;  // frames neither shown nor folded
};

// `op` (may be null) names the call a folded line describes: a kernel's
// frames fold into "launch of NAME<<<…>>>".
user_stack view_stack(stack_id stack, const operation_ref* op, symbolizer& symbols,
                      const stack_view_options& options);

// "#0 main app.cu:42", or for a folded line
// "#0 launch of k_read<<<…>>> from main at app.cu:42".
std::string describe_stack_line(std::size_t index, const stack_line& line,
                                const std::filesystem::path& root);

// The frame a report points at (SUMMARY, SARIF location): the first user
// frame with a source file, else the first user frame, else the first frame.
// nullopt for an empty stack. `op` (may be null), the operation whose stack
// it is, lets a kernel's own host function be told from the user's frames
// (Note [A kernel's host function is part of its launch]).
struct call_site {
  std::uint64_t address = 0;
  const symbol_info* symbol = nullptr;  // owned by the symbolizer or tables
  bool has_source() const noexcept { return symbol != nullptr && !symbol->file.empty(); }
};
std::optional<call_site> find_call_site(stack_id stack, symbolizer& symbols,
                                        const operation_ref* op = nullptr);

}  // namespace streamsan
