// The entry points of the PyTorch support (python/streamsan_torch, through
// ctypes). A small C ABI, versioned by streamsan_inject_torch_abi(): the
// Python side refuses a library whose version it does not know, and says so
// in one line. Spans are flat arrays of (address, bytes, mode) triples of
// uint64, mode as in include/streamsan/annotate.h (1 read, 2 write, 3 both)
// in the low bits, flags above them (Note [A span flagged as a hull]);
// frames are the ids of frames defined by streamsan_inject_torch_frame,
// innermost first (Note [Interpreter frames]). Every entry point is a no-op
// before CUDA is initialized (no session yet) and never throws.
//
// Note [A span flagged as a hull]
// A span is a promise: its accesses are exact (Note [Operators narrow kernel
// footprints]), and a conflict through them is reported. A strided view the
// operator hook cannot tell as a few runs (Note [Strided views are told as
// runs] in python/streamsan_torch/op_hook.cpp: a column slice of a tall
// matrix) is told as its hull, first element to last, which holds bytes the
// tensor does not. Its mode word says so with span_hull (0x100; bits 0-1
// the mode, bits 2-7 and 9-63 zero; torch_spans.h): its accesses are
// `inferred`, so a conflict through the hull is a candidate (Note
// [Candidates and confirmed diagnostics]), whose kernels are measured on
// their next launches; a
// measured footprint decides (Note [Measured footprints of an operator's
// launches] in inject/model/cuda_model_ops.cpp), and an unconfirmed one is
// listed at exit as a possible race. A high bit, not the next mode value:
// the modes are annotate.h's, which may grow. ABI 3 added the flag: a hook
// of ABI 2 never sets it, but ABI 2's library would read a flagged span as
// read-write and exact, so the Python side refuses a library of another
// version (python/streamsan_torch/_native.py) and the hook and the Python
// fallback (_support.py) set it by the same rule.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "include/streamsan/annotate.h"
#include "inject/capture/call_sites.h"
#include "inject/session/options.h"
#include "inject/session/process_session.h"
#include "inject/session/torch_spans.h"
#include "inject/stack/python_frames.h"

#define STREAMSAN_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using streamsan::injection::annotated_range;
using streamsan::injection::call_site;
namespace process_session = streamsan::injection::process_session;

// 3: span_hull (Note [A span flagged as a hull]); 4: op_begin's flag 2 (Note
// [An operator's outputs are its blocks] in inject/model/cuda_model_ops.cpp).
constexpr int torch_abi_version = 4;

// op_begin's flags.
constexpr std::uint32_t returns_new_tensors = 1;  // op_end names them
constexpr std::uint32_t outputs_are_blocks = 2;   // the blocks handed out inside it

streamsan::injection::op_outputs outputs_of(std::uint32_t flags) {
  using streamsan::injection::op_outputs;
  if ((flags & outputs_are_blocks) != 0) return op_outputs::blocks;
  return (flags & returns_new_tensors) != 0 ? op_outputs::named_at_end : op_outputs::none;
}

// The spans as ranges, in the calling thread's buffer: op_begin and op_end
// come at every operator, and the model copies what it keeps, so the
// buffer serves the next call (a vector per call was two allocations per
// operator). Valid until the thread's next call.
std::span<const annotated_range> ranges_of(const std::uint64_t* spans, std::size_t count) {
  thread_local std::vector<annotated_range> out;
  out.clear();
  if (spans == nullptr) return out;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t* t = spans + 3 * i;
    if (t[1] == 0) continue;  // an empty tensor touches nothing
    out.push_back(streamsan::injection::torch_span(t[0], t[1], t[2]));
  }
  return out;
}

std::span<const std::uint32_t> frames_of(const std::uint32_t* frames, std::size_t count) {
  if (frames == nullptr) return {};
  return {frames, count};
}

}  // namespace

STREAMSAN_EXPORT int streamsan_inject_torch_abi(void) { return torch_abi_version; }

// Nonzero once the session runs (CUDA initialized under streamsan).
STREAMSAN_EXPORT int streamsan_inject_torch_active(void) {
  auto* s = process_session::current();
  if (s == nullptr) return 0;
  s->python_support_attached();
  return 1;
}

// Frame `id` (chosen by the caller, once per code location) is `function` at
// `file`:`line`; an empty file names an operator pseudo-frame.
STREAMSAN_EXPORT void streamsan_inject_torch_frame(std::uint32_t id, const char* function,
                                                   const char* file, std::uint32_t line) {
  auto* s = process_session::current();
  if (s == nullptr) return;
  try {
    s->model().symbol_defined(streamsan::interpreter_frame_address(id),
                              function ? function : "", file ? file : "", line, "");
  } catch (...) {
  }
}

// The calling thread's interpreter frames for the CUDA calls that follow
// (none: native frames again).
STREAMSAN_EXPORT void streamsan_inject_torch_frames(const std::uint32_t* frames,
                                                    std::size_t count) {
  streamsan::injection::set_interpreter_frames(frames_of(frames, count));
}

// 1 when the library reads this interpreter's Python frames itself at the
// CUDA calls outside operators (Note [Python frames read in place] in
// inject/stack/python_frames.h): STREAMSAN_OPTIONS keeps stacks and
// python_frames on, and the interpreter is one it can read. Asked before
// CUDA runs (no session yet); the PyTorch support then leaves Triton's
// launch hooks out (Note [Triton launches without hooks] in
// python/streamsan_torch/_support.py).
STREAMSAN_EXPORT int streamsan_inject_reads_python_frames(void) {
  try {
    const char* text = std::getenv(std::string(streamsan::injection::options_variable).c_str());
    const auto options = streamsan::injection::parse_options(text != nullptr ? text : "");
    return streamsan::injection::wants_python_frames(options) &&
                   streamsan::injection::python_frames_readable()
               ? 1
               : 0;
  } catch (...) {
    return 0;
  }
}

// The interpreter runs its atexit callbacks: it is about to finalize, and its
// frames must no longer be read (Note [No walk once the interpreter
// finalizes] in inject/stack/python_frames.cpp). Called by streamsan run's
// sitecustomize, for every Python program, torch or not.
STREAMSAN_EXPORT void streamsan_inject_python_exiting(void) {
  if (auto* s = process_session::current()) s->python_exiting();
}

// An operator begins on the calling thread with these tensor spans; its
// launches take them (Note [Operators narrow kernel footprints]). Flag 1:
// the operator returns new tensors (op_end names them). Flag 2 (over 1):
// its new tensors are the caching allocator blocks handed out on this
// thread until op_end, which then names none (Note [An operator's outputs
// are its blocks]).
STREAMSAN_EXPORT void streamsan_inject_torch_op_begin(const std::uint64_t* spans,
                                                      std::size_t count,
                                                      const std::uint32_t* frames,
                                                      std::size_t frame_count,
                                                      std::uint32_t flags) {
  streamsan::injection::set_interpreter_frames(frames_of(frames, frame_count));
  auto* s = process_session::current();
  if (s == nullptr) return;
  try {
    s->model().op_began(ranges_of(spans, count), outputs_of(flags));
  } catch (...) {
  }
}

// The operator returned these tensors; the interpreter frames are cleared.
STREAMSAN_EXPORT void streamsan_inject_torch_op_end(const std::uint64_t* spans,
                                                    std::size_t count) {
  auto* s = process_session::current();
  if (s != nullptr) {
    try {
      s->model().op_ended(ranges_of(spans, count));
    } catch (...) {
    }
  }
  streamsan::injection::set_interpreter_frames({});
}

// The host reads or writes these spans now (a CPU operator on pinned
// tensors, .numpy(), .item(), .tolist()); memory streamsan does not track
// (pageable) is ignored.
STREAMSAN_EXPORT void streamsan_inject_torch_host_access(const std::uint64_t* spans,
                                                         std::size_t count, const char* label,
                                                         const std::uint32_t* frames,
                                                         std::size_t frame_count) {
  auto* s = process_session::current();
  if (s == nullptr) return;
  try {
    streamsan::injection::set_interpreter_frames(frames_of(frames, frame_count));
    const auto ranges = ranges_of(spans, count);
    s->model().host_accessed(s->capture_call_site(), ranges, label ? label : "host access");
    streamsan::injection::set_interpreter_frames({});
  } catch (...) {
    streamsan::injection::set_interpreter_frames({});
  }
}

// Note [Caching allocator blocks] (inject/model/cuda_model_blocks.cpp): the
// caching allocator handed out `size` bytes at `address` of `device` for the
// stream `stream` (a cudaStream_t; 0 the legacy default stream). Called from
// the allocator's trace tracker, under the allocator's lock, on the
// allocating thread: it takes the model's lock (never the other way round)
// and never the GIL.
//
// Note [A block's stack is its operator's]
// A block's stack is its allocation site in a report (a reused block
// without record_stream is named with where it was allocated). It is
// captured under the allocator's lock, but almost never unwound: nearly
// every block is handed out inside an operator the hook entered (an
// operator allocates its outputs and temporaries, and factories are
// operators), where the thread's interpreter frames are set (op_begin), and
// the capture returns them as they are, without a native walk (Note
// [Interpreter frames]): the operator's pseudo-frame and the user's lines,
// the frames the operator's launches get, and what the report should show.
// Only a block handed out outside every operator the hook entered (a C++
// extension's raw allocation, code under an operator the hook passes at the
// outermost level) or with cpp_stacks=1 (native frames asked for) costs a
// walk, through the caching unwinder (Note [Why a caching unwinder]). A
// path key (Note [Path cache]) would save only the walk over this library's
// own few frames: the first frame outside it is the hook's tracker, right
// above. Capturing nothing there would leave such a block without an
// allocation site. STREAMSAN_DEBUG counts the walks (`unwound=` on the
// caching allocator's line), for a profile that shows them.
STREAMSAN_EXPORT void streamsan_inject_torch_block_alloc(std::uint64_t address, std::uint64_t size,
                                                         std::int32_t device,
                                                         std::uint64_t stream) {
  auto* s = process_session::current();
  // Before the unwind (Note [Blocks unseen while the subscription is
  // dropped] in cuda_model_blocks.cpp).
  if (s == nullptr || s->model().blocks_unseen()) return;
  try {
    s->model().block_allocated(s->capture_block_call_site(), address, size, device,
                               {static_cast<std::uintptr_t>(stream)});
  } catch (...) {
  }
}

// The block at `address` is back in the allocator's pool (FREE_COMPLETED:
// after the events of record_stream completed).
STREAMSAN_EXPORT void streamsan_inject_torch_block_free(std::uint64_t address) {
  auto* s = process_session::current();
  if (s == nullptr) return;
  try {
    // No stack: accesses resolve to the block live at their launch, so no
    // report names a block's free (it would be shown for a use after
    // free), and the unwind would be paid at every tensor's death.
    s->model().block_freed(call_site{}, address);
  } catch (...) {
  }
}
