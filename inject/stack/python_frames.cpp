#include "inject/stack/python_frames.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "sanitizer/log/interpreter_frame.h"
#include "inject/stack/python_paths.h"

namespace streamsan::injection {
namespace {

// Note [The first walks read safely]
// The layouts are CPython's own (python_layout.cpp) and a walk checks every
// object's type before it reads its fields, but a build the table does not
// describe (a free-threaded or a Py_TRACE_REFS interpreter, a distribution's
// patched one) would send the first walk to addresses that are not mapped.
// So the first walks read through process_vm_readv, which reports an
// unreadable address instead of faulting; once they have all checked out,
// the reader reads memory directly (a walk is then a few loads a frame).
// Where a seccomp policy refuses process_vm_readv (it answers ENOSYS or
// EPERM even for the process itself), the bytes go through a pipe
// instead: write(2) reports EFAULT for an unmapped source just as well.
bool read_through_pipe(const void* from, void* to, std::size_t n) noexcept {
  static std::mutex pipe_mutex;
  static int ends[2] = {-1, -1};
  std::lock_guard lock(pipe_mutex);
  if (ends[0] < 0 && ::pipe2(ends, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  if (::write(ends[1], from, n) != static_cast<ssize_t>(n)) return false;  // EFAULT
  return ::read(ends[0], to, n) == static_cast<ssize_t>(n);
}

bool read_checked(const void* from, void* to, std::size_t n) noexcept {
  static std::atomic<bool> refused{false};
  if (!refused.load(std::memory_order_relaxed)) {
    iovec local{to, n};
    iovec remote{const_cast<void*>(from), n};
    const auto got = ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0);
    if (got == static_cast<ssize_t>(n)) return true;
    if (got >= 0 || errno == EFAULT) return false;
    refused.store(true, std::memory_order_relaxed);  // ENOSYS, EPERM: the pipe from now on
  }
  return read_through_pipe(from, to, n);
}

bool read_direct(const void* from, void* to, std::size_t n) noexcept {
  std::memcpy(to, from, n);
  return true;
}

template <class T>
bool load(const char* at, T& out, bool (*read)(const void*, void*, std::size_t) noexcept) {
  return at != nullptr && read(at, &out, sizeof out);
}

const char* as_bytes(const void* p) { return static_cast<const char*>(p); }

constexpr std::uint32_t ob_type_offset = 8;  // PyObject: ob_refcnt, ob_type
constexpr std::size_t max_name = 1024;
constexpr std::uint32_t first_id = 0x8000'0000u;
constexpr std::size_t max_entries = 1u << 16;

void append_utf8(std::string& out, std::uint32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

template <class T>
T symbol(const char* name) {
  return reinterpret_cast<T>(::dlsym(RTLD_DEFAULT, name));
}

// What a version whose frames are not read is told (python_layout.cpp).
constexpr std::string_view versions_read = "(3.8 to 3.15 are)";

// This process's interpreter, checked: the entry points and layout the
// reader needs, or why there are none ("" and no layout: not CPython).
struct found_interpreter {
  python_entry_points api;
  std::optional<python_layout> layout;
  std::string not_read;
};

found_interpreter find_interpreter() {
  found_interpreter found;
  python_entry_points& api = found.api;
  const auto* version = symbol<const unsigned long*>("Py_Version");
  const auto version_text = symbol<const char* (*)()>("Py_GetVersion");
  api.is_initialized = symbol<int (*)()>("Py_IsInitialized");
  api.this_thread_state = symbol<void* (*)()>("PyGILState_GetThisThreadState");
  api.addr2line = symbol<int (*)(void*, int)>("PyCode_Addr2Line");
  api.code_type = symbol<const void*>("PyCode_Type");
  api.frame_type = symbol<const void*>("PyFrame_Type");
  api.unicode_type = symbol<const void*>("PyUnicode_Type");
  api.runtime = symbol<const void*>("_PyRuntime");
  if (api.is_initialized == nullptr || api.this_thread_state == nullptr) return found;
  // Before 3.11 there is no Py_Version; its text says the same (a
  // function of constants: no lock needed).
  api.version = version != nullptr ? *version
                : version_text != nullptr ? python_version_of_text(version_text())
                                          : 0;
  if (api.version == 0) {
    found.not_read = "this Python's frames are not read: its version is unknown";
    return found;
  }
  const unsigned major = (api.version >> 24) & 0xff, minor = (api.version >> 16) & 0xff;
  const std::string named = "Python " + std::to_string(major) + "." + std::to_string(minor);
  const auto layout = python_layout_for_hex(api.version);
  if (!layout) {
    found.not_read = named + "'s frames are not read " + std::string(versions_read);
  } else if (api.addr2line == nullptr || api.code_type == nullptr ||
             api.unicode_type == nullptr || (layout->frame_objects && api.frame_type == nullptr)) {
    found.not_read = named + "'s frames are not read: an entry point is missing";
  } else if (layout->debug.current_frame != 0 && api.runtime == nullptr) {
    found.not_read = named + "'s frames are not read: its _PyRuntime is not exported";
  } else if (const auto why = python_layout_mismatch(api.runtime, *layout); !why.empty()) {
    found.not_read = named + "'s frames are not read: " + why;
  } else {
    found.layout = layout;
  }
  return found;
}

}  // namespace

python_frames_attachment attach_python_frames(python_frame_definer define) {
  auto found = find_interpreter();
  if (!found.layout) return {nullptr, std::move(found.not_read)};
  return {std::make_unique<python_frames>(found.api, *found.layout, std::move(define)), ""};
}

bool python_frames_readable() { return find_interpreter().layout.has_value(); }

std::string python_frames_unread_line(std::string_view not_read, std::string_view stopped) {
  std::string why(not_read);
  if (why.empty() && !stopped.empty()) {
    why = "Python frames stopped being read: " + std::string(stopped);
  }
  if (why.empty()) return "";
  return "streamsan: " + why + "; the stacks above show native frames\n";
}

python_frames::python_frames(const python_entry_points& api, const python_layout& layout,
                             python_frame_definer define)
    : api_(api), layout_(layout), define_(std::move(define)) {
  static std::atomic<std::uint64_t> readers{0};
  serial_ = readers.fetch_add(1, std::memory_order_relaxed) + 1;
  // Inductor's generated modules where the user put its cache (its
  // default folder is python_paths.cpp's): torch's code, folded.
  if (const char* dir = std::getenv("TORCHINDUCTOR_CACHE_DIR"); dir != nullptr && *dir == '/') {
    inductor_cache_ = dir;
    if (inductor_cache_.back() != '/') inductor_cache_.push_back('/');
  }
}

std::string python_frames::stopped() const {
  std::lock_guard lock(mutex_);
  return stopped_;
}

void python_frames::stop(std::string why) noexcept {
  try {
    std::lock_guard lock(mutex_);
    stop_locked(std::move(why));
  } catch (...) {
    running_.store(false, std::memory_order_relaxed);
  }
}

void python_frames::stop_locked(std::string why) noexcept {
  running_.store(false, std::memory_order_relaxed);
  if (stopped_.empty()) stopped_ = std::move(why);
}

bool python_frames::is_code_object(const char* code, byte_reader read) noexcept {
  const void* type = nullptr;
  if (load(code + ob_type_offset, type, read) && type == api_.code_type) return true;
  stop("a frame's code is not a code object");
  return false;
}

std::size_t python_frames::read_raw(std::span<raw_frame> out, byte_reader read) noexcept {
  const python_layout& l = layout_;
  const char* tstate = as_bytes(api_.this_thread_state());
  if (tstate == nullptr) return 0;  // a thread that never ran Python
  const char* frame = nullptr;
  if (l.frame_objects) {
    if (!load(tstate + l.current_frame, frame, read)) return 0;
    return read_frame_objects(frame, out, read);
  }
  if (l.via_cframe) {
    const char* cframe = nullptr;
    if (!load(tstate + l.tstate_cframe, cframe, read)) return 0;
    if (cframe == nullptr || !load(cframe + l.current_frame, frame, read)) return 0;
  } else if (!load(tstate + l.current_frame, frame, read)) {
    return 0;
  }
  std::size_t n = 0;
  // A recursion deeper than max_walk frames keeps its innermost ones (and
  // a chain that loops, which a real one cannot, ends here too).
  for (std::size_t hops = 0; frame != nullptr && hops < max_walk; ++hops) {
    const char* code = nullptr;
    const char* instr = nullptr;
    std::uint8_t owner = 0;
    if (!load(frame + l.frame_code, code, read) || !load(frame + l.frame_instr, instr, read) ||
        !load(frame + l.frame_owner, owner, read)) {
      stop("a frame could not be read");
      return 0;
    }
    // A shim frame (3.12 on) holds no code of the program's; 3.13's may
    // hold another executable.
    const bool shim = owner >= l.first_shim_owner;
    // A _PyStackRef's tags (3.14 on): objects are at least 8-aligned.
    if (l.executable_tagged) {
      code = reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(code) &
                                           ~std::uintptr_t{7});
    }
    if (!shim && !is_code_object(code, read)) return 0;
    int first_traceable = 0;
    if (!shim && !load(code + l.code_firsttraceable, first_traceable, read)) return 0;
    const char* bytecode = code + l.code_adaptive;
    // An incomplete frame (its function's prologue still running) is not
    // shown, as in the interpreter's own tracebacks.
    const bool incomplete = !shim && owner != l.owner_generator &&
                            instr < bytecode + 2 * static_cast<std::ptrdiff_t>(first_traceable);
    if (!shim && !incomplete && n < out.size()) out[n++] = raw_frame{code, instr - bytecode};
    if (!load(frame + l.frame_previous, frame, read)) return 0;
  }
  return n;
}

std::size_t python_frames::read_frame_objects(const char* frame, std::span<raw_frame> out,
                                              byte_reader read) noexcept {
  const python_layout& l = layout_;
  std::size_t n = 0;
  for (std::size_t hops = 0; frame != nullptr && hops < max_walk; ++hops) {
    const void* type = nullptr;
    const char* code = nullptr;
    int lasti = 0;
    if (!load(frame + ob_type_offset, type, read) || type != api_.frame_type) {
      stop("a frame is not a frame object");
      return 0;
    }
    if (!load(frame + l.frame_code, code, read) || !load(frame + l.frame_instr, lasti, read)) {
      stop("a frame could not be read");
      return 0;
    }
    if (!is_code_object(code, read)) return 0;
    // f_lasti is -1 before the frame's first instruction.
    const std::int64_t unit = l.instr_kind == python_instr_kind::code_unit_index ? 2 : 1;
    if (n < out.size()) out[n++] = raw_frame{code, lasti < 0 ? 0 : lasti * unit};
    if (!load(frame + l.frame_previous, frame, read)) return 0;
  }
  return n;
}

bool python_frames::read_str(const char* s, std::string& out, byte_reader read) const noexcept {
  const python_layout& l = layout_;
  const void* type = nullptr;
  std::int64_t length = 0;
  std::uint32_t state = 0;
  if (!load(s + ob_type_offset, type, read) || type != api_.unicode_type) return false;
  if (!load(s + l.unicode_length, length, read) || !load(s + l.unicode_state, state, read)) {
    return false;
  }
  const unsigned kind = (state >> 2) & 7;
  const bool compact = (state & 0x20) != 0, ascii = (state & 0x40) != 0;
  if (!compact || length < 0 || (kind != 1 && kind != 2 && kind != 4)) return false;
  const std::size_t count = std::min<std::size_t>(static_cast<std::size_t>(length), max_name);
  const char* data = s + (ascii ? l.ascii_header : l.compact_header);
  std::array<char, max_name * 4> chars;
  if (!read(data, chars.data(), count * kind)) return false;
  out.clear();
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t c = 0;
    std::memcpy(&c, chars.data() + i * kind, kind);  // little-endian
    append_utf8(out, c);
  }
  return true;
}

// Note [A new code object at a freed one's address]
// Code objects are not referenced (that would need the GIL), so an entry
// cached for a code object's address may outlive it, and a new code object
// may take the address: a function compiled again (exec of an edited cell,
// a reloaded module) is often freed with its globals by the cyclic
// collector and its successor allocated in the same block. The entry is
// then checked at every use against the code object's filename and
// qualified name objects (often the very same: interned names, one
// filename string), its first line and its line table object. The test
// that found this (python_frames_test.py, `redefined`: a function compiled
// 24 times on other lines) showed stale lines in 17 to 20 of 24 calls with
// the names alone (3.10 to 3.13). A successor that keeps all four still
// kept the old entry's lines: a body moved by a blank line (an edited
// notebook cell run again) has the same names, first line, bytecode and
// line table size, and its table can take the freed table's block (a
// variant of `redefined` that moved only the body showed the old line in
// 24 of 48 calls on 3.13; whether the blocks are reused depends on what
// else the loop allocates, so the test that keeps this is
// PythonFrames.ASameShapedCodeObjectAtAFreedOnesAddressIsReadAgain, over
// a fake interpreter's memory). From 3.12 on the code
// object's co_version tells them apart: each new code object takes the
// next number of the interpreter's counter, and reading it costs one more
// load from the code object's first lines. Before 3.12 nothing short of
// comparing the line table's bytes would, at every walk: that corner
// stays there. A counter run out (all 0, after 2^32 code objects) falls
// back to the four.
bool python_frames::read_names(const raw_frame& f, code_names& out,
                               byte_reader read) const noexcept {
  return load(f.code + layout_.code_filename, out.filename, read) &&
         load(f.code + layout_.code_qualname, out.qualname, read) &&
         load(f.code + layout_.code_linetable, out.linetable, read) &&
         load(f.code + layout_.code_firstlineno, out.first_line, read) &&
         (layout_.code_version == 0 || load(f.code + layout_.code_version, out.version, read));
}

python_frames::entry* python_frames::lookup(const raw_frame& f, byte_reader read) {
  code_names names;
  if (!read_names(f, names, read)) return nullptr;
  const code_key key{f.code, f.offset};
  if (auto it = entries_.find(key); it != entries_.end()) {
    // The same code object, not a new one at a freed one's address.
    if (it->second.names == names) return &it->second;
    entries_.erase(it);
    ++generation_;  // Note [The last walk again]
  }
  if (entries_.size() >= max_entries) {
    entries_.clear();
    ++generation_;
  }
  entry e;
  e.names = names;
  if (!read_str(as_bytes(names.filename), e.file, read) ||
      !read_str(as_bytes(names.qualname), e.function, read)) {
    stop_locked("a code object's name is not a compact string");  // under mutex_
    return nullptr;
  }
  const int line = api_.addr2line(const_cast<char*>(f.code), static_cast<int>(f.offset));
  e.line = line > 0 ? static_cast<std::uint32_t>(line) : 0;
  const bool generated_by_inductor = !inductor_cache_.empty() && e.file.starts_with(inductor_cache_);
  e.kind = static_cast<std::uint8_t>(generated_by_inductor ? python_file_kind::folded
                                                           : classify_python_file(e.file));
  return &entries_.emplace(key, std::move(e)).first->second;
}

std::uint32_t python_frames::id_of(entry& e) {
  if (e.id != 0) return e.id;
  std::string location = e.file;
  location.push_back('\0');
  location += e.function;
  location.push_back('\0');
  location += std::to_string(e.line);
  if (auto it = ids_.find(location); it != ids_.end()) return e.id = it->second;
  if (next_id_ == 0x7FFF'FFFFu) return 0;  // ids spent: the frame goes unshown
  const std::uint32_t id = first_id | ++next_id_;
  define_(interpreter_frame_address(id), e.function, e.file, e.line);
  ids_.emplace(std::move(location), id);
  return e.id = id;
}

namespace {

// Note [The last walk again]
// A thread's CUDA calls repeat from the same few places, and the outer
// frames of its stack (the training loop, main) are the same from call to
// call. Each thread keeps its last walk: the frames shared with it, counted
// from the outermost, reuse its entries without a lookup (what tells a code
// object from a new one at its address is still compared: Note [A new code
// object at a freed one's address]), and a
// walk equal to the last one in full reuses its result. The entries are
// the reader's (node-based: their addresses hold until an erase or a
// clear, which moves the reader's generation on and empties every memo).
struct last_walk {
  // The reader's serial, not its address: a reader made later at a
  // destroyed one's address must not take that one's entries.
  std::uint64_t reader = 0;
  std::uint64_t generation = 0;
  std::size_t count = 0;
  std::array<python_frames::raw_frame, python_frames::max_walk> raw;
  std::array<void*, python_frames::max_walk> found;  // python_frames::entry*
  std::size_t written = 0;
  std::array<std::uint64_t, 64> out;
};
thread_local last_walk this_thread_walk;

bool same_frame(const python_frames::raw_frame& a, const python_frames::raw_frame& b) {
  return a.code == b.code && a.offset == b.offset;
}

}  // namespace

std::size_t python_frames::current(std::span<std::uint64_t> out) noexcept {
  if (!timed_) return walk(out);
  const auto start = std::chrono::steady_clock::now();
  const std::size_t n = walk(out);
  walk_ns_.fetch_add(static_cast<std::uint64_t>(
                         std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::steady_clock::now() - start)
                             .count()),
                     std::memory_order_relaxed);
  return n;
}

// Note [No walk once the interpreter finalizes]
// Py_FinalizeEx clears the initialized flag (which a walk checks first) a
// few instructions before it frees every other thread's state, while
// daemon threads may still be inside a CUDA call. A walk that checked the
// flag just before could then read a freed thread state and, through it,
// unmapped memory. So the reader can be closed earlier in the
// finalization: `streamsan run` has the interpreter's atexit callbacks
// (which run before any of that) call streamsan_inject_python_exiting
// (python/sitecustomize.py), and close() turns the reader off and waits
// for the walks under way. A walk counts itself in before it looks at
// `running_`, and close() clears `running_` before it looks at the count
// (both sequentially consistent), so every walk either sees the reader
// closed or is waited for. A thread's CUDA calls after that keep native
// frames. Without `streamsan run`'s sitecustomize (--no-python) the narrow
// window remains.
void python_frames::close() noexcept {
  running_.store(false, std::memory_order_seq_cst);
  // A walk takes microseconds; a thread stopped in one (by a debugger) is
  // not waited for past a second.
  for (int spins = 0; walking_.load(std::memory_order_seq_cst) != 0 && spins < 100'000; ++spins) {
    std::this_thread::sleep_for(std::chrono::microseconds(10));
  }
}

std::size_t python_frames::walk(std::span<std::uint64_t> out) noexcept {
  if (out.empty()) return 0;
  walking_.fetch_add(1, std::memory_order_seq_cst);
  struct counted_out {
    std::atomic<unsigned>& walking;
    ~counted_out() { walking.fetch_sub(1, std::memory_order_release); }
  } counted{walking_};
  if (!running_.load(std::memory_order_seq_cst)) return 0;
  // Not initialized (or finalizing: Py_FinalizeEx clears it before it
  // frees the thread states): nothing may be read.
  if (api_.is_initialized() == 0) return 0;
  std::array<raw_frame, max_walk> raw;
  const bool checked = safe_walks_left_.load(std::memory_order_relaxed) > 0;
  const byte_reader read = checked ? read_checked : read_direct;
  const std::size_t n = read_raw(raw, read);
  walks_.fetch_add(1, std::memory_order_relaxed);
  if (n == 0) return 0;
  try {
    std::lock_guard lock(mutex_);
    if (!running_.load(std::memory_order_relaxed)) return 0;
    last_walk& last = this_thread_walk;
    if (last.reader != serial_ || last.generation != generation_) last.count = 0;
    // Note [The last walk again]: the shared outer frames.
    std::size_t shared = 0;
    while (shared < n && shared < last.count &&
           same_frame(raw[n - 1 - shared], last.raw[last.count - 1 - shared])) {
      ++shared;
    }
    std::array<entry*, max_walk> found{};
    for (std::size_t k = 0; k < shared; ++k) {
      auto* e = static_cast<entry*>(last.found[last.count - 1 - k]);
      code_names now;
      if (!read_names(raw[n - 1 - k], now, read) || now != e->names) {
        shared = k;
        break;
      }
      found[n - 1 - k] = e;
    }
    if (shared == n && n == last.count && !checked) {
      const std::size_t take = std::min(last.written, out.size());
      std::copy_n(last.out.begin(), take, out.begin());
      return take;
    }
    frames_looked_up_.fetch_add(n - shared, std::memory_order_relaxed);
    for (std::size_t i = 0; i + shared < n; ++i) {
      found[i] = lookup(raw[i], read);
      if (found[i] == nullptr) return 0;
    }
    const std::size_t written = shown_frames(std::span<entry* const>(found.data(), n), out);
    last.reader = serial_;
    last.generation = generation_;
    last.count = n;
    std::copy_n(raw.begin(), n, last.raw.begin());
    std::copy_n(found.begin(), n, last.found.begin());
    last.written = std::min(written, last.out.size());
    std::copy_n(out.begin(), last.written, last.out.begin());
    if (checked) safe_walks_left_.fetch_sub(1, std::memory_order_relaxed);
    return written;
  } catch (...) {
    return 0;
  }
}

std::size_t python_frames::shown_frames(std::span<entry* const> found,
                                        std::span<std::uint64_t> out) {
  std::size_t user = 0, generated = 0;
  for (const entry* e : found) {
    const auto kind = static_cast<python_file_kind>(e->kind);
    user += kind == python_file_kind::user;
    generated += kind == python_file_kind::generated;
  }
  // Note [Folded Python frames]; generated code behind a real file's
  // frames is dropped (the PyTorch support's rule: an exec'd string
  // between two of the user's frames is a framework's glue).
  const auto shown = [&](const entry& e) {
    const auto kind = static_cast<python_file_kind>(e.kind);
    if (user == 0 && generated == 0) return true;
    return kind == python_file_kind::user || (user == 0 && kind == python_file_kind::generated);
  };
  std::size_t written = 0;
  for (std::size_t i = 0; i < found.size() && written < out.size(); ++i) {
    if (!shown(*found[i])) continue;
    if (const auto id = id_of(*found[i]); id != 0) out[written++] = interpreter_frame_address(id);
  }
  return written;
}

python_frames_stats python_frames::stats() const noexcept {
  return {walks_.load(std::memory_order_relaxed),
          frames_looked_up_.load(std::memory_order_relaxed),
          walk_ns_.load(std::memory_order_relaxed)};
}

}  // namespace streamsan::injection
