// The Python stack of the calling thread at a CUDA call, read from the
// interpreter's memory without its lock.
//
// Note [Python frames read in place]
// A Python program's CUDA calls come from extension modules, and most of
// them release the GIL around the call: CuPy's and cuda-python's Cython
// (`with nogil`), ctypes (numba), Triton's launcher. The interpreter's API
// then may not be called (it would need the GIL, which another thread may
// hold while it waits for the driver lock our callback runs under). But the
// thread is inside that call: its own interpreter frames cannot change
// until it returns, and they are plain memory. So they are read in place,
// as an out-of-process profiler does, through the layout of the running
// CPython's minor version (python_layout.h):
//   this thread's PyThreadState (PyGILState_GetThisThreadState, which reads
//   a thread-specific key and needs no lock) -> its innermost
//   _PyInterpreterFrame -> each frame's code object and instruction ->
//   the line (PyCode_Addr2Line, a pure function of the code object) and the
//   code's file and qualified name (compact strings, read in place).
// Every object read is checked to be what it should be (a code object's
// type is PyCode_Type, a name's PyUnicode_Type) before its fields are
// read, and a frame chain longer than any real one ends the walk: a layout
// that does not match the interpreter turns the reader off rather than
// reading further (said once, in the report). An interpreter that is not
// initialized, or is finalizing, is not read: its thread states may be
// freed (Note [No walk once the interpreter finalizes]). Code objects are
// not referenced (that would need the GIL), so a cached code object is
// checked at every hit against what tells it from a new one at its address
// (Note [A new code object at a freed one's address]).
//
// The user's frames (python_paths.h) become interpreter frames of the
// report (Note [Interpreter frames] in inject/capture/call_sites.h), with
// ids of their own from 0x8000'0000 (the PyTorch support's Python side
// numbers from 1, its native hook from 0x4000'0000). The PyTorch support's
// frames, where it set them for an operator, take precedence.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <atomic>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "inject/stack/python_layout.h"

namespace streamsan::injection {

// Names interpreter frame `address` (interpreter_frame_address of an id).
using python_frame_definer = std::function<void(
    std::uint64_t address, std::string_view function, std::string_view file, std::uint32_t line)>;

// The interpreter's entry points the reader calls, found in this process.
struct python_entry_points {
  int (*is_initialized)() = nullptr;
  void* (*this_thread_state)() = nullptr;
  int (*addr2line)(void* code, int byte_offset) = nullptr;
  const void* code_type = nullptr;
  const void* frame_type = nullptr;  // PyFrame_Type: up to 3.10, what a frame is
  const void* unicode_type = nullptr;
  // _PyRuntime, for the debug offsets of 3.13 on (Note [Layouts checked against
  // the interpreter's own offsets] in python_layout.cpp).
  const void* runtime = nullptr;
  unsigned long version = 0;  // Py_Version
};

class python_frames;

struct python_frames_stats {
  std::uint64_t walks = 0;           // captures that asked
  std::uint64_t frames_looked_up = 0;  // frames not reused from the thread's last walk
  std::uint64_t walk_ns = 0;  // time in current(), when timed
};

struct python_frames_attachment {
  std::unique_ptr<python_frames> frames;  // null when not read
  // Why a Python interpreter's frames are not read ("" when they are, or
  // when this process runs no CPython): for the report.
  std::string not_read;
};

// The line a text report ends with when its Python stacks are native frames:
// why the interpreter's frames were not read (attach's `not_read`) or
// stopped being read (python_frames::stopped()); "" when neither.
std::string python_frames_unread_line(std::string_view not_read, std::string_view stopped);

// The reader for this process's interpreter, found through dlsym.
python_frames_attachment attach_python_frames(python_frame_definer define);
// Whether attach_python_frames would return a reader (no session needed).
bool python_frames_readable();

class python_frames {
 public:
  python_frames(const python_entry_points& api, const python_layout& layout,
                python_frame_definer define);

  // Writes the interpreter frame addresses of the calling thread's Python
  // stack, innermost first, the user's frames only (python_paths.h);
  // returns how many. 0 when the thread runs no Python code.
  std::size_t current(std::span<std::uint64_t> out) noexcept;

  // Note [No walk once the interpreter finalizes]: no walk starts after
  // this, and those under way have ended when it returns.
  void close() noexcept;

  // "" while reading; else why it stopped (a layout that did not match).
  std::string stopped() const;
  python_frames_stats stats() const noexcept;
  // Times every walk (for STREAMSAN_DEBUG; a clock read each side).
  void time_walks(bool on) noexcept { timed_ = on; }
  const python_layout& layout() const noexcept { return layout_; }

  struct raw_frame {
    const char* code = nullptr;
    std::int64_t offset = 0;  // the instruction's byte offset in the bytecode
  };
  static constexpr std::size_t max_walk = 256;

 private:
  struct code_key {
    const char* code;
    std::int64_t offset;
    bool operator==(const code_key&) const = default;
  };
  struct code_key_hash {
    std::size_t operator()(const code_key& k) const noexcept {
      return std::hash<const void*>{}(k.code) ^ (static_cast<std::size_t>(k.offset) * 0x9E3779B97F4A7C15ull);
    }
  };
  // A code object's file and name objects, its first line, its line table
  // and its version: what tells a cached code object from a new one at its
  // address (Note [A new code object at a freed one's address]).
  struct code_names {
    const void* filename = nullptr;
    const void* qualname = nullptr;
    const void* linetable = nullptr;
    std::int32_t first_line = 0;
    std::uint32_t version = 0;  // co_version, from 3.12 on (else 0)
    bool operator==(const code_names&) const = default;
  };
  struct entry {
    code_names names;  // the code's, when cached
    std::uint32_t id = 0;  // 0: not defined yet (a folded frame)
    std::uint8_t kind = 0;  // python_file_kind
    std::string file, function;
    std::uint32_t line = 0;
  };

  // current() without its timing.
  std::size_t walk(std::span<std::uint64_t> out) noexcept;
  // Copies `n` bytes at `from`; false when they cannot be read.
  using byte_reader = bool (*)(const void* from, void* to, std::size_t n) noexcept;
  std::size_t read_raw(std::span<raw_frame> out, byte_reader read) noexcept;
  // Whether `code` is a code object; stops the reader when it is not.
  bool is_code_object(const char* code, byte_reader read) noexcept;
  // read_raw's walk up to 3.10, over frame objects from `frame`.
  std::size_t read_frame_objects(const char* frame, std::span<raw_frame> out,
                                 byte_reader read) noexcept;
  bool read_str(const char* s, std::string& out, byte_reader read) const noexcept;
  entry* lookup(const raw_frame& f, byte_reader read);
  bool read_names(const raw_frame& f, code_names& out, byte_reader read) const noexcept;
  // Writes the shown frames' addresses (Note [Folded Python frames]).
  std::size_t shown_frames(std::span<entry* const> found, std::span<std::uint64_t> out);
  std::uint32_t id_of(entry& e);
  void stop(std::string why) noexcept;
  void stop_locked(std::string why) noexcept;  // mutex_ held

  python_entry_points api_;
  python_layout layout_;
  python_frame_definer define_;
  mutable std::mutex mutex_;
  std::unordered_map<code_key, entry, code_key_hash> entries_;
  std::unordered_map<std::string, std::uint32_t> ids_;  // file \0 function \0 line
  std::uint32_t next_id_ = 0;
  std::uint64_t generation_ = 0;  // Note [The last walk again]
  std::uint64_t serial_ = 0;      // this reader's, from 1: what a thread's last walk names
  std::atomic<std::uint64_t> walks_{0};
  std::atomic<std::uint64_t> frames_looked_up_{0};
  std::atomic<std::uint64_t> walk_ns_{0};
  bool timed_ = false;
  std::string stopped_;
  std::string inductor_cache_;  // TORCHINDUCTOR_CACHE_DIR, with a '/'
  std::atomic<bool> running_{true};
  std::atomic<unsigned> walking_{0};  // walks under way (close() waits for them)
  // Note [The first walks read safely]
  std::atomic<unsigned> safe_walks_left_{8};
};

}  // namespace streamsan::injection
