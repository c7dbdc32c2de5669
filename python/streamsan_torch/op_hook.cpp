// streamsan's native PyTorch operator hook (issue #9): what the Python
// TorchDispatchMode of _support.py does, from a C++ RecordFunction callback
// that never enters the interpreter's eval loop. Built the first time it is
// needed against the program's own torch (_native_hook.py), loaded with
// ctypes; it calls the injection library's PyTorch C ABI
// (inject/session/torch_entry.cpp) through the function pointers the Python
// side hands to streamsan_torch_hook_init().
//
// Note [The operator hook is a RecordFunction callback]
// A TorchDispatchMode costs 1.74x on a launch-bound training loop before it
// does anything (docs/pytorch.md, Overhead): every operator leaves C++ for
// the interpreter and comes back. at::addGlobalCallback() registers a C++
// function that the dispatcher calls at every operator it dispatches, on
// every thread, with the operator's schema and (needsInputs/needsOutputs)
// its boxed arguments and results. It is public, stable since torch 1.10,
// and needs no dispatch key of ours. The differences from the mode:
// - it sees an operator where the program calls it, before autograd and
//   before a composite operator is decomposed: `aten::linear` and inside it
//   `aten::addmm`. Operators nest; the model adds an inner operator's spans
//   to the outer's (cuda_model::op_began), and this hook names the innermost
//   operator as the kernels' pseudo-frame, the outer's again once the inner
//   one returns;
// - it sees every thread, not only those that inherited the mode;
// - it costs the boxing of arguments and results, which torch does for us.
// A dispatcher fallback kernel on a dispatch key of our own would see
// decomposed operators only, but needs a key torch does not reserve for
// this, and a boxed fallback re-dispatch per operator; RecordFunction is the
// supported observer API (the profiler is built on it).
//
// Note [Python frames from a native hook]
// The user's frames are read with the few functions of CPython's stable
// ABI, resolved with dlsym from the running process (no Python.h, so one
// build serves every Python). Operators run with the GIL released when
// called from Python; the walk takes it (PyGILState_Ensure) only for the
// walk, and only on a thread that has a Python thread state
// (PyGILState_GetThisThreadState, which needs no GIL). A thread without one
// (a C++ thread of torch's: TorchScript's fork pool, a thread of a C++
// extension) gets the operator's pseudo-frame alone, without taking the
// GIL. Autograd's device threads have a thread state but no Python frame
// while they run the backward pass (the user's `loss.backward()` line is on
// another thread): their operators show the operator alone too, as with the
// Python mode. Code objects are held (a reference each, never released) so
// their addresses can key the caches: a code object is folded or not once,
// and a user's (code, line) is one frame id, defined once. The caches are
// touched only under the GIL. Frames are walked once per outermost
// operator: the Python stack cannot change while a native operator runs
// another (a Python kernel of a custom operator is the exception; its
// operators keep the caller's frames). During interpreter shutdown
// (Py_IsFinalizing) no walk is made.
//
// Note [The caching allocator's blocks reach the engine]
// Built with STREAMSAN_ALLOCATOR_TRACKER (when _native_hook.py finds CUDA's
// headers, which c10/cuda/CUDACachingAllocator.h needs: torch's wheels do
// not ship cuda_runtime_api.h), the hook also attaches a trace tracker to
// torch's CUDA caching allocator (attachAllocatorTraceTracker), and forwards
// ALLOC (a block handed out: address, requested size, device, stream) and
// FREE_COMPLETED (the block back in the pool; after record_stream's events
// completed) to the injection library (Note [Caching allocator blocks] in
// inject/model/cuda_model_blocks.cpp). FREE_REQUESTED is not forwarded (the
// block is not reusable yet), nor are the SEGMENT_* entries (the cudaMalloc,
// cudaFree and cuMemMap calls behind them are seen as any CUDA call).
// What this relies on, read in torch 2.11's sources:
// - attachAllocatorTraceTracker() adds the tracker to the device
//   allocators that exist then, and the native allocator makes them all in
//   init(device_count), at CUDA's lazy initialization; attached earlier, it
//   attaches to none. So the hook attaches at the first operator that finds
//   `allocator` set and initialized() true (CUDACachingAllocator.h: the
//   allocator the program uses; initialized() is "the device allocators
//   exist"), and until then tries again at each operator (a relaxed load).
//   A Python CUDA call lazily initializes CUDA before it dispatches, so the
//   first CUDA tensor's ALLOC is seen; allocations before the first
//   operator after initialization are not, and their frees are ignored.
// - The tracker runs for every trace entry whether or not memory history is
//   recorded, under the device allocator's lock: it must not take the GIL
//   (the header says so) nor call torch. It calls the library's C entry
//   points, which take the model's lock (the model never calls torch, so
//   the order is always allocator lock, then model lock) and unwind the
//   thread's stack for the report.
// - name() is "native" for the caching allocator; any other backend
//   (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, a pluggable allocator)
//   is said once and left alone (its cudaMallocAsync/cudaFreeAsync calls
//   are seen as such).
//
// Every entry of this file catches everything: an error of ours is said
// once and the hook passes every operator through from then on; an
// operator's own exception is the program's (RecordFunction calls the end
// callback as the operator unwinds).
#ifndef NDEBUG
#error "build with -DNDEBUG, as torch is: RecordFunction's layout depends on it"
#endif
#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#ifdef STREAMSAN_ALLOCATOR_TRACKER
#include <c10/cuda/CUDACachingAllocator.h>
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#define STREAMSAN_HOOK_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// ---- the injection library's C ABI (torch_entry.cpp), as handed to init ----

struct injection_abi {
  int (*active)();
  void (*frame)(std::uint32_t id, const char* function, const char* file, std::uint32_t line);
  void (*frames)(const std::uint32_t* ids, std::size_t count);
  void (*op_begin)(const std::uint64_t* spans, std::size_t count, const std::uint32_t* frames,
                   std::size_t frame_count, std::uint32_t flags);
  void (*op_end)(const std::uint64_t* spans, std::size_t count);
  void (*host_access)(const std::uint64_t* spans, std::size_t count, const char* label,
                      const std::uint32_t* frames, std::size_t frame_count);
  void (*block_alloc)(std::uint64_t address, std::uint64_t size, std::int32_t device,
                      std::uint64_t stream);
  void (*block_free)(std::uint64_t address);
};

// What init() is told besides the ABI. The device types are c10::DeviceType
// values: CUDA tensors are the device's, CPU tensors the host's; the tests
// on a machine without a GPU name the CPU as the device (host -1: none).
struct hook_config {
  std::int32_t device_type;
  std::int32_t host_type;
  const char* folded_prefixes;  // '\n'-separated folders of torch, stdlib, ...
};

constexpr std::uint64_t read_mode = 1, write_mode = 2, read_write_mode = 3;
// Note [A span flagged as a hull] in inject/session/torch_entry.cpp: the span
// covers bytes the tensor does not hold; the library takes it as inferred.
constexpr std::uint64_t hull_flag = 0x100;
// op_begin's flags (torch_entry.cpp): 1 the operator returns new tensors,
// named at op_end; 2 they are the caching allocator's blocks handed out
// inside it, and op_end names none (Note [An operator's outputs are its
// blocks] in inject/model/cuda_model_ops.cpp).
constexpr std::uint32_t outputs_are_blocks_flag = 2;
constexpr std::uint8_t metadata_mode = 0;  // reads the shape only: no span
constexpr std::size_t max_user_frames = 16;
constexpr std::size_t max_walked_frames = 512;
constexpr std::size_t max_shapes = 4;
constexpr std::size_t max_depth = 64;
// Frame ids of ours start here: the Python side (Tensor.numpy()/tolist()
// wrappers) numbers its own frames from 1.
constexpr std::uint32_t first_frame_id = 0x4000'0000u;

injection_abi abi{};
std::atomic<bool> configured{false};
std::atomic<bool> broken{false};
std::atomic<bool> session_active{false};
// STREAMSAN_TORCH_CHECK_FRAMES: every walk is made both ways and compared
// (Note [Frames without frame objects]); for the tests.
bool check_every_walk = false;
c10::DeviceType device_type = c10::DeviceType::CUDA;
int host_type = static_cast<int>(c10::DeviceType::CPU);
std::vector<std::string> folded_prefixes;
std::atomic<std::uint32_t> next_frame_id{first_frame_id};
std::mutex setup_mutex;
at::CallbackHandle callback_handle = at::INVALID_CALLBACK_HANDLE;
bool callback_enabled = false;  // under setup_mutex
// Note [Outputs named by their blocks]: set once the allocator tracker is
// attached (or by a test); read at every operator.
std::atomic<bool> outputs_from_blocks{false};

// Said once, on one line (torch's messages go on with a C++ backtrace).
void say_broken(const char* what) noexcept {
  if (!broken.exchange(true)) {
    const char* nl = std::strchr(what, '\n');
    const int length = nl == nullptr ? static_cast<int>(std::strlen(what))
                                     : static_cast<int>(nl - what);
    std::fprintf(stderr,
                 "streamsan: the PyTorch operator hook stopped after an internal error (%.*s); "
                 "the generic capture continues\n",
                 length, what);
  }
}

// ---- per-operator plans (what _support.py's _Plan holds) ----

struct plan {
  std::string name;        // aten::add_.Tensor
  std::string host_label;  // aten::add_.Tensor on the CPU
  std::string base_name, overload;  // to check a cache hit against the schema
  std::vector<std::uint8_t> modes;  // per argument, in schema order
  std::vector<bool> fresh_returns;  // returns without alias: new tensors
  std::uint32_t flags = 0;          // op_begin flag 1: new tensors come back
  bool view = false;                // returns an alias, writes nothing
};

bool written(const c10::AliasInfo* info) {
  if (info == nullptr) return false;
  if (info->isWrite()) return true;
  for (const auto& contained : info->containedTypes()) {  // Tensor(a!)[]
    if (written(&contained)) return true;
  }
  return false;
}

plan* make_plan(const c10::FunctionSchema& schema) {
  auto p = std::make_unique<plan>();
  p->base_name = schema.name();
  p->overload = schema.overload_name();
  p->name = p->base_name + (p->overload.empty() ? "" : "." + p->overload);
  p->host_label = p->name + " on the CPU";
  const auto colon = p->base_name.rfind("::");
  const std::string base =
      colon == std::string::npos ? p->base_name : p->base_name.substr(colon + 2);
  // *_like and new_* operators read only their argument's metadata (shape,
  // dtype, device): no span, or each kernel they launch (a fill) would also
  // "read" it.
  const bool metadata_only = (base.size() >= 5 && base.compare(base.size() - 5, 5, "_like") == 0) ||
                             base.rfind("new_", 0) == 0;
  bool writes = false;
  for (const auto& arg : schema.arguments()) {
    const bool w = written(arg.alias_info());
    writes = writes || w;
    p->modes.push_back(w ? read_write_mode : (metadata_only ? metadata_mode : read_mode));
  }
  bool all_aliases_unwritten = !schema.returns().empty();
  for (const auto& ret : schema.returns()) {
    p->fresh_returns.push_back(ret.alias_info() == nullptr);
    if (ret.alias_info() == nullptr || ret.alias_info()->isWrite()) all_aliases_unwritten = false;
    if (ret.alias_info() == nullptr) p->flags = 1;
  }
  p->view = !writes && all_aliases_unwritten;
  return p.release();  // plans live as long as the process
}

// Plans by the address of the schema's name string, which is stable per
// registered schema (RecordFunction::name() points into the schema): an
// open-addressed table read without a lock, written under one. A hit is
// checked against the names, so a schema freed and another made at its
// address (a custom operator deregistered) gets a plan of its own.
constexpr std::size_t plan_slots = 1 << 14;
struct plan_slot {
  std::atomic<const char*> key{nullptr};
  std::atomic<plan*> value{nullptr};
};
plan_slot plan_table[plan_slots];
std::mutex plan_mutex;

std::size_t slot_of(const char* key) {
  auto h = reinterpret_cast<std::uintptr_t>(key);
  h ^= h >> 17;
  h *= 0x9E3779B97F4A7C15ull;
  return static_cast<std::size_t>(h >> 40) & (plan_slots - 1);
}

bool matches(const plan* p, const at::RecordFunction& fn) {
  return p->base_name == fn.name() && p->overload == fn.overload_name();
}

const plan* plan_of(const at::RecordFunction& fn) {
  const char* key = fn.name();
  std::size_t i = slot_of(key);
  for (std::size_t probe = 0; probe < 64; ++probe, i = (i + 1) & (plan_slots - 1)) {
    const char* k = plan_table[i].key.load(std::memory_order_acquire);
    if (k == nullptr) break;
    if (k == key) {
      plan* p = plan_table[i].value.load(std::memory_order_acquire);
      if (p != nullptr && matches(p, fn)) return p;
      break;
    }
  }
  // A miss: the schema (a copy, once per operator), outside the table's lock.
  const auto schema = fn.operator_schema();
  if (!schema) return nullptr;  // a named range, not an operator
  plan* made = make_plan(*schema);
  std::lock_guard lock(plan_mutex);
  i = slot_of(key);
  for (std::size_t probe = 0; probe < 64; ++probe, i = (i + 1) & (plan_slots - 1)) {
    const char* k = plan_table[i].key.load(std::memory_order_relaxed);
    if (k == nullptr || k == key) {
      plan_table[i].value.store(made, std::memory_order_release);
      plan_table[i].key.store(key, std::memory_order_release);
      return made;
    }
  }
  return made;  // the neighbourhood is full: this plan is not cached
}

// ---- dtype names as torch prints them (float32, not Float) ----

const char* dtype_name(c10::ScalarType t) {
  using S = c10::ScalarType;
  static const std::pair<S, const char*> names[] = {
      {S::Byte, "uint8"},         {S::Char, "int8"},
      {S::Short, "int16"},        {S::Int, "int32"},
      {S::Long, "int64"},         {S::Half, "float16"},
      {S::Float, "float32"},      {S::Double, "float64"},
      {S::ComplexHalf, "complex32"}, {S::ComplexFloat, "complex64"},
      {S::ComplexDouble, "complex128"}, {S::Bool, "bool"},
      {S::BFloat16, "bfloat16"},  {S::Float8_e5m2, "float8_e5m2"},
      {S::Float8_e4m3fn, "float8_e4m3fn"},
  };  // (the rest as c10 names them: UInt16, ...; torch 2.1's types only)
  for (const auto& [type, name] : names) {
    if (type == t) return name;
  }
  return c10::toString(t);
}

// ---- Python frames (Note [Python frames from a native hook]) ----

struct python_api {
  int (*gil_ensure)() = nullptr;
  void (*gil_release)(int) = nullptr;
  void* (*this_thread_state)() = nullptr;
  void* (*thread_state_get)() = nullptr;
  void* (*thread_state_frame)(void*) = nullptr;  // new reference
  void* (*frame_back)(void*) = nullptr;          // new reference
  void* (*frame_code)(void*) = nullptr;          // new reference
  int (*frame_line)(void*) = nullptr;
  int (*frame_lasti)(void*) = nullptr;  // 3.11+; optional (Note [Frames by offset])
  void (*inc_ref)(void*) = nullptr;
  void (*dec_ref)(void*) = nullptr;
  void* (*get_attr)(void*, const char*) = nullptr;
  const char* (*utf8)(void*) = nullptr;
  void (*err_fetch)(void**, void**, void**) = nullptr;
  void (*err_restore)(void*, void*, void*) = nullptr;
  int (*finalizing)() = nullptr;
  const void* frame_type = nullptr;         // &PyFrame_Type (Note [Frames without frame objects])
  const char* (*version)() = nullptr;       // Py_GetVersion
  bool ok = false;
};
python_api py;

template <class F>
bool resolve(F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  return f != nullptr;
}

// Empty when every function is there, else the first one missing.
std::string resolve_python() {
  const std::pair<bool, const char*> found[] = {
      {resolve(py.gil_ensure, "PyGILState_Ensure"), "PyGILState_Ensure"},
      {resolve(py.gil_release, "PyGILState_Release"), "PyGILState_Release"},
      {resolve(py.this_thread_state, "PyGILState_GetThisThreadState"),
       "PyGILState_GetThisThreadState"},
      {resolve(py.thread_state_get, "PyThreadState_Get"), "PyThreadState_Get"},
      {resolve(py.thread_state_frame, "PyThreadState_GetFrame"), "PyThreadState_GetFrame"},
      {resolve(py.frame_back, "PyFrame_GetBack"), "PyFrame_GetBack"},
      {resolve(py.frame_code, "PyFrame_GetCode"), "PyFrame_GetCode"},
      {resolve(py.frame_line, "PyFrame_GetLineNumber"), "PyFrame_GetLineNumber"},
      {resolve(py.inc_ref, "Py_IncRef"), "Py_IncRef"},
      {resolve(py.dec_ref, "Py_DecRef"), "Py_DecRef"},
      {resolve(py.get_attr, "PyObject_GetAttrString"), "PyObject_GetAttrString"},
      {resolve(py.utf8, "PyUnicode_AsUTF8"), "PyUnicode_AsUTF8"},
      {resolve(py.err_fetch, "PyErr_Fetch"), "PyErr_Fetch"},
      {resolve(py.err_restore, "PyErr_Restore"), "PyErr_Restore"},
  };
  for (const auto& [ok, name] : found) {
    if (!ok) return name;
  }
  // Py_IsFinalizing is public from 3.13, _Py_IsFinalizing before.
  if (!resolve(py.finalizing, "Py_IsFinalizing")) resolve(py.finalizing, "_Py_IsFinalizing");
  resolve(py.frame_lasti, "PyFrame_GetLasti");
  py.frame_type = dlsym(RTLD_DEFAULT, "PyFrame_Type");
  resolve(py.version, "Py_GetVersion");
  py.ok = true;
  return {};
}

// The caches of frames; touched only under the GIL.
struct code_line_hash {
  std::size_t operator()(const std::pair<void*, int>& k) const noexcept {
    return std::hash<void*>()(k.first) * 31u + static_cast<std::size_t>(k.second);
  }
};
std::unordered_map<void*, bool> folded_code;  // code -> folded (a reference held)
std::unordered_map<std::pair<void*, int>, std::uint32_t, code_line_hash> user_frames;
// Note [Frames by offset]
// PyFrame_GetLineNumber maps the frame's instruction offset to a line by
// reading the code's line table from its start, at every frame of every
// walk; a walk through a training loop's frames (the loop, nn.Module's
// __call__ and forward: a dozen frames) paid about 0.14 us a frame on the
// development machine (bench/torch/op_hook_cost.py). The same call sites
// come back at every iteration, so where PyFrame_GetLasti exists (3.11+) a
// user's frame is found by (code, instruction offset), and the line is read
// once per call site. Code objects are held (folded_code), so their
// addresses stay valid keys.
std::unordered_map<std::pair<void*, int>, std::uint32_t, code_line_hash> user_frames_at;
// Note [Code without a file behind a file]
// Code compiled from a string has a pseudo-file (`<string>`): the user's
// own with `python -c`, but a library's when the library makes code at run
// time, as Inductor does for each kernel's launcher (`launcher <string>:5`
// was the innermost frame, and so the summary line, of every race of a
// compiled program). So such frames are dropped when the user's frames
// hold a frame of a real file; alone they stay. Ids of such frames:
std::unordered_set<std::uint32_t> pseudo_frames;

// Drops the pseudo-file frames of out[first..] when a real file's is there.
void drop_generated(std::vector<std::uint32_t>& out, std::size_t first) {
  const auto begin = out.begin() + static_cast<std::ptrdiff_t>(first);
  const auto pseudo = [](std::uint32_t id) { return pseudo_frames.count(id) != 0; };
  if (std::all_of(begin, out.end(), pseudo) || std::none_of(begin, out.end(), pseudo)) return;
  out.erase(std::remove_if(begin, out.end(), pseudo), out.end());
}

// A str attribute of a code object, or "" (any error cleared).
std::string code_string(void* code, const char* attribute) {
  void* value = py.get_attr(code, attribute);
  std::string out;
  if (value != nullptr) {
    const char* s = py.utf8(value);
    if (s != nullptr) out = s;
    py.dec_ref(value);
  }
  return out;
}

bool is_folded(void* code) {
  const auto it = folded_code.find(code);
  if (it != folded_code.end()) return it->second;
  void *type = nullptr, *value = nullptr, *trace = nullptr;
  py.err_fetch(&type, &value, &trace);
  const std::string file = code_string(code, "co_filename");
  // The interpreter's own code (<frozen runpy>) and library folders are
  // folded; `python -c` (<string>), <stdin> and notebook cells are the user's.
  bool folded = file.rfind("<frozen", 0) == 0 || file.rfind("<built-in", 0) == 0;
  for (const auto& prefix : folded_prefixes) {
    folded = folded || file.rfind(prefix, 0) == 0;
  }
  py.err_restore(type, value, trace);
  py.inc_ref(code);  // the address stays this code object's
  folded_code.emplace(code, folded);
  return folded;
}

std::string absolute(const std::string& file) {
  if (file.empty() || file[0] == '/' || file[0] == '<') return file;
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd) == nullptr) return file;
  std::string rel = file;
  while (rel.rfind("./", 0) == 0) rel.erase(0, 2);
  return std::string(cwd) + "/" + rel;
}

std::uint32_t user_frame(void* code, int line) {
  const auto key = std::make_pair(code, line);
  const auto it = user_frames.find(key);
  if (it != user_frames.end()) return it->second;
  void *type = nullptr, *value = nullptr, *trace = nullptr;
  py.err_fetch(&type, &value, &trace);
  std::string function = code_string(code, "co_qualname");
  if (function.empty()) function = code_string(code, "co_name");
  const std::string file = absolute(code_string(code, "co_filename"));
  py.err_restore(type, value, trace);
  const std::uint32_t id = next_frame_id.fetch_add(1);
  abi.frame(id, function.c_str(), file.c_str(), line < 0 ? 0u : static_cast<std::uint32_t>(line));
  user_frames.emplace(key, id);
  if (!file.empty() && file[0] == '<') pseudo_frames.insert(id);
  return id;
}

// The user frame of `frame`, running `code` (Note [Frames by offset]).
std::uint32_t user_frame_of(void* code, void* frame) {
  if (py.frame_lasti == nullptr) return user_frame(code, py.frame_line(frame));
  const auto key = std::make_pair(code, py.frame_lasti(frame));
  const auto it = user_frames_at.find(key);
  if (it != user_frames_at.end()) return it->second;
  const std::uint32_t id = user_frame(code, py.frame_line(frame));
  user_frames_at.emplace(key, id);
  return id;
}

// Note [Frames without frame objects]
// PyThreadState_GetFrame and PyFrame_GetBack hand out frame objects, which
// CPython 3.11+ makes only on demand: each walk made one for every frame
// that began since the last (a training loop's nn.Module calls are new at
// every operator), each a garbage-collected object that the frame's exit
// then fills, and the cyclic collector ran more often for them. With 8 new
// frames per operator the walk was about 0.9 of the hook's 1.6 us an
// operator on the development machine (CPython 3.11, the no-op ABI of
// bench/torch/op_hook_cost.py). So on CPython 3.11 to 3.13 (not a
// free-threaded or trace-refs build) the walk reads the interpreter's own
// frames, as profilers do: the current frame from the thread state, then
// each frame's code object, instruction pointer and previous frame, and
// the shim frames of 3.12+ (owned by the C stack) are skipped, as
// PyFrame_GetBack skips them. A (code, instruction) pair is a call site,
// known from an earlier walk through frame objects (the Python stack
// below); any frame not known yet, or a code object not seen, makes this
// walk go through frame objects instead, and teach the pairs. Where the
// fields are is not taken from headers (there are none: Note [Python
// frames from a native hook]) but found at the first walk with two frames,
// from the frame objects that walk made, and the thread state's word that
// leads to the current frame is only followed into this thread's stack;
// the two walks must then name the same code objects, and every 256th walk
// does both and compares them again. Any disagreement is said once and the
// frame objects' walk is used from then on.
// Opt-in (STREAMSAN_TORCH_FAST_FRAMES=1) until it has run on the GPU
// machine's CPython 3.12: on the development machine's 3.11 it took the
// same frames in the tests (STREAMSAN_TORCH_CHECK_FRAMES compares every
// walk) and saved about 0.2 us of CPU time an operator with 8 new frames
// per operator (2.81 -> 2.61 us, medians of 5; /tmp experiments, the
// no-op ABI), less than the walk's share suggested.
struct raw_layout {
  enum class state : std::uint8_t { untried, on, off } status = state::untried;
  int tries = 0;                    // discovery needs two frames; a few tries
  bool direct = false;              // 3.13: the thread state holds the frame
  std::size_t state_word = 0;       // the thread state's word that leads there
  std::size_t cframe_word = 0;      // else the C frame's word that holds it (3.11: 1)
  std::size_t code_word = 0;        // f_code / f_executable
  std::size_t previous_word = 0;
  std::size_t instr_word = 7;       // prev_instr (3.11, 3.12), instr_ptr (3.13)
  std::ptrdiff_t owner_byte = -1;   // 3.12+: FRAME_OWNED_BY_CSTACK frames skipped
  std::uint64_t walks = 0;
};
raw_layout raw;
constexpr std::size_t frame_object_frame_word = 3;  // PyFrameObject::f_frame
constexpr unsigned char owned_by_c_stack = 3;
constexpr std::uint64_t compare_every = 256;

struct code_instr_hash {
  std::size_t operator()(const std::pair<void*, void*>& k) const noexcept {
    return std::hash<void*>()(k.first) * 31u + std::hash<void*>()(k.second);
  }
};
std::unordered_map<std::pair<void*, void*>, std::uint32_t, code_instr_hash> user_frames_raw;

void* word_at(const void* p, std::size_t word) {
  void* out = nullptr;
  std::memcpy(&out, static_cast<const char*>(p) + word * sizeof(void*), sizeof out);
  return out;
}
void* interpreter_frame(void* frame_object) {
  return word_at(frame_object, frame_object_frame_word);
}

void raw_off(const char* why) {
  raw.status = raw_layout::state::off;
  std::fprintf(stderr, "streamsan: Python frames: %s; walking frame objects (slower)\n", why);
}

// 11 for "3.11.7 (main, ...)"; 0 when not CPython 3.x or a free-threaded build.
int python_minor() {
  if (py.version == nullptr) return 0;
  const char* v = py.version();
  if (v == nullptr || std::strncmp(v, "3.", 2) != 0) return 0;
  if (std::strstr(v, "free-threading") != nullptr) return 0;
  return std::atoi(v + 2);
}

// This thread's stack, [first, second); empty when unknown.
std::pair<const char*, const char*> this_stack() {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return {nullptr, nullptr};
  void* base = nullptr;
  std::size_t size = 0;
  const bool got = pthread_attr_getstack(&attr, &base, &size) == 0;
  pthread_attr_destroy(&attr);
  if (!got) return {nullptr, nullptr};
  return {static_cast<const char*>(base), static_cast<const char*>(base) + size};
}

// The current interpreter frame of `tstate`, by the layout found.
void* raw_current(void* tstate) {
  void* w = word_at(tstate, raw.state_word);
  return raw.direct || w == nullptr ? w : word_at(w, raw.cframe_word);
}

// A 3.12+ shim frame, owned by the C stack: PyFrame_GetBack skips it.
bool c_stack_shim(const void* f) {
  return raw.owner_byte >= 0 &&
         static_cast<const unsigned char*>(f)[raw.owner_byte] == owned_by_c_stack;
}

// The code objects of the raw walk from the current frame, or false.
bool raw_codes(void* tstate, std::vector<void*>& out) {
  void* f = raw_current(tstate);
  for (std::size_t walked = 0; f != nullptr && walked < max_walked_frames; ++walked) {
    if (!c_stack_shim(f)) out.push_back(word_at(f, raw.code_word));
    f = word_at(f, raw.previous_word);
  }
  return f == nullptr;
}

// The index of the first of the first 8 words of `frame` for which
// `is` holds; -1 when none does.
template <class F>
int word_where(const void* frame, F&& is) {
  for (int k = 0; k < 8; ++k) {
    if (is(word_at(frame, static_cast<std::size_t>(k)), k)) return k;
  }
  return -1;
}

// The code and previous-frame words of the interpreter frames i0 (of frame
// object f0, running c0) and i1 (its caller, running c1), checked by the
// words that must hold f0 and an instruction inside c0; -1 for previous
// when i0 does not link to i1 (a shim frame between them).
bool find_frame_words(void* f0, void* i0, void* i1, void* c0, void* c1, int& previous) {
  const int code = word_where(i0, [&](void* w, int k) { return w == c0 && word_at(i1, k) == c1; });
  previous = word_where(i0, [&](void* w, int) { return w == i1; });
  const bool frame_object = word_where(i0, [&](void* w, int) { return w == f0; }) >= 0;
  const auto instr = reinterpret_cast<std::uintptr_t>(word_at(i0, raw.instr_word));
  const auto code_at = reinterpret_cast<std::uintptr_t>(c0);
  if (code < 0 || !frame_object || instr <= code_at || instr >= code_at + (1u << 24)) return false;
  raw.code_word = static_cast<std::size_t>(code);
  if (previous >= 0) raw.previous_word = static_cast<std::size_t>(previous);
  return true;
}

// The thread state's word that leads to the current frame i0: 3.13 keeps
// the frame there, 3.11 and 3.12 in a C frame on this thread's stack
// (followed only there).
bool find_thread_state_word(void* tstate, void* i0) {
  const auto [low, high] = this_stack();
  for (std::size_t k = 0; k < 128; ++k) {
    void* w = word_at(tstate, k);
    const auto* at = static_cast<const char*>(w);
    if (w == i0) {
      raw.direct = true, raw.state_word = k;
      return true;
    }
    if (at < low || at + 2 * sizeof(void*) > high) continue;
    for (std::size_t c = 0; c < 2; ++c) {
      if (word_at(w, c) == i0) {
        raw.direct = false, raw.state_word = k, raw.cframe_word = c;
        return true;
      }
    }
  }
  return false;
}

// Whether the raw walk names the code objects that frame objects do.
bool walks_agree(void* tstate) {
  std::vector<void*> codes, objects;
  for (void* f = py.thread_state_frame(tstate); f != nullptr;) {
    void* c = py.frame_code(f);
    objects.push_back(c);
    py.dec_ref(c);
    void* back = py.frame_back(f);
    py.dec_ref(f);
    f = back;
  }
  return raw_codes(tstate, codes) && codes == objects;
}

// Why frames f0 and f1 (its caller), running c0 and c1, show no usable
// layout; nullptr when they do, "" when this pair cannot tell (try later).
const char* layout_from(void* tstate, void* f0, void* f1, void* c0, void* c1, int minor) {
  if (word_at(f0, 1) != py.frame_type || word_at(f1, 1) != py.frame_type) {
    return "frame objects are not laid out as in CPython 3.11-3.13";
  }
  void* i0 = interpreter_frame(f0);
  int previous = -1;
  raw.owner_byte = minor >= 12 ? 70 : -1;
  if (!find_frame_words(f0, i0, interpreter_frame(f1), c0, c1, previous) ||
      !find_thread_state_word(tstate, i0)) {
    return "the interpreter's frames are not where CPython 3.11-3.13 keeps them";
  }
  if (previous < 0) return ++raw.tries < 8 ? "" : "no link between two frames was found";
  return walks_agree(tstate) ? nullptr : "the two walks disagreed";
}

// Finds where the fields are (Note [Frames without frame objects]) from
// the top two frame objects, once there are two.
void discover_layout(void* tstate) {
  const int minor = python_minor();
  if (minor < 11 || minor > 13 || py.frame_type == nullptr || py.frame_lasti == nullptr) {
    raw.status = raw_layout::state::off;  // nothing to find: frame objects, silently
    return;
  }
  void* f0 = py.thread_state_frame(tstate);
  if (f0 == nullptr) return;
  void* f1 = py.frame_back(f0);
  if (f1 != nullptr) {
    void* c0 = py.frame_code(f0);
    void* c1 = py.frame_code(f1);
    const char* why = layout_from(tstate, f0, f1, c0, c1, minor);
    if (why == nullptr) {
      raw.status = raw_layout::state::on;
    } else if (*why != '\0') {
      raw_off(why);
    }
    if (c0 != nullptr) py.dec_ref(c0);
    if (c1 != nullptr) py.dec_ref(c1);
    py.dec_ref(f1);
  }
  py.dec_ref(f0);
}

// Appends the calling thread's user frames by the raw walk; false (and
// nothing appended) where a call site or code object is not known yet.
bool raw_stack(void* tstate, std::vector<std::uint32_t>& out) {
  const std::size_t first = out.size();
  std::size_t users = 0;
  void* f = raw_current(tstate);
  for (std::size_t walked = 0; f != nullptr && walked < max_walked_frames;
       ++walked, f = word_at(f, raw.previous_word)) {
    if (c_stack_shim(f)) continue;
    void* code = word_at(f, raw.code_word);
    const auto folded = folded_code.find(code);
    if (folded == folded_code.end()) break;
    if (folded->second) continue;
    const auto id = user_frames_raw.find({code, word_at(f, raw.instr_word)});
    if (id == user_frames_raw.end()) break;
    out.push_back(id->second);
    if (++users >= max_user_frames) return true;
  }
  if (f == nullptr) return true;
  out.resize(first);
  return false;
}

// Appends the same through frame objects (the stable ABI); teaches the raw
// walk each call site it passes.
void object_stack(void* tstate, std::vector<std::uint32_t>& out) {
  void* f = py.thread_state_frame(tstate);
  std::size_t users = 0;
  for (std::size_t walked = 0; f != nullptr && walked < max_walked_frames; ++walked) {
    void* code = py.frame_code(f);
    if (code != nullptr) {
      if (!is_folded(code)) {
        const std::uint32_t id = user_frame_of(code, f);
        out.push_back(id);
        ++users;
        if (raw.status == raw_layout::state::on) {
          user_frames_raw.emplace(std::make_pair(code, word_at(interpreter_frame(f), raw.instr_word)),
                                  id);
        }
      }
      py.dec_ref(code);
    }
    if (users >= max_user_frames) break;
    void* back = py.frame_back(f);
    py.dec_ref(f);
    f = back;
  }
  if (f != nullptr) py.dec_ref(f);
}

// Appends the calling thread's user frames, innermost first.
void python_stack(std::vector<std::uint32_t>& out) {
  if (!py.ok || py.this_thread_state() == nullptr) return;  // no Python here
  if (py.finalizing != nullptr && py.finalizing() != 0) return;
  const int gil = py.gil_ensure();
  void* tstate = py.thread_state_get();
  if (raw.status == raw_layout::state::untried) discover_layout(tstate);
  const std::size_t first = out.size();
  const bool raw_done = raw.status == raw_layout::state::on && raw_stack(tstate, out);
  if (!raw_done) {
    object_stack(tstate, out);
  } else if (++raw.walks % compare_every == 0 || check_every_walk) {
    // The frame objects' answer is the one kept.
    const std::vector<std::uint32_t> mine(out.begin() + static_cast<std::ptrdiff_t>(first),
                                          out.end());
    out.resize(first);
    object_stack(tstate, out);
    if (!std::equal(mine.begin(), mine.end(), out.begin() + static_cast<std::ptrdiff_t>(first),
                    out.end())) {
      raw_off("the two walks disagreed");
    }
  }
  drop_generated(out, first);
  py.gil_release(gil);
}

// ---- the caching allocator's blocks (Note [The caching allocator's blocks
// reach the engine]) ----

enum class tracker_state : int { waiting, attached, refused };
std::atomic<tracker_state> tracker{tracker_state::waiting};

// Said once, on one line.
void say_no_blocks(const std::string& why) noexcept {
  std::fprintf(stderr,
               "streamsan: PyTorch's caching allocator blocks are not tracked (%s); reuse "
               "races are reported on the segments\n",
               why.c_str());
}

#ifdef STREAMSAN_ALLOCATOR_TRACKER
using c10::CachingDeviceAllocator::TraceEntry;

// Under the allocator's lock: no GIL, no torch, nothing that throws.
void on_trace(const TraceEntry& e) noexcept {
  switch (e.action_) {
    case TraceEntry::ALLOC:
      abi.block_alloc(e.addr_, e.size_, e.device_,
                      reinterpret_cast<std::uintptr_t>(e.stream_));
      return;
    case TraceEntry::FREE_COMPLETED:
      abi.block_free(e.addr_);
      return;
    case TraceEntry::FREE_REQUESTED:  // not in the pool yet
    case TraceEntry::SEGMENT_ALLOC:   // the CUDA calls are seen themselves
    case TraceEntry::SEGMENT_FREE:
    case TraceEntry::SEGMENT_MAP:
    case TraceEntry::SEGMENT_UNMAP:
    case TraceEntry::SNAPSHOT:
    case TraceEntry::OOM:
      return;
  }
  // torch's enumeration, which later versions may extend: nothing else is
  // a block.
}

void outputs_from_blocks_locked();

// At an operator, until it has been decided.
void attach_tracker() {
  auto* allocator = c10::cuda::CUDACachingAllocator::allocator.load();
  if (allocator == nullptr || !allocator->initialized()) return;  // CUDA not initialized yet
  std::lock_guard lock(setup_mutex);
  if (tracker.load() != tracker_state::waiting) return;
  if (abi.block_alloc == nullptr || abi.block_free == nullptr) {
    tracker.store(tracker_state::refused);
    return;
  }
  const std::string name = allocator->name();
  if (name != "native") {
    tracker.store(tracker_state::refused);
    say_no_blocks("the CUDA allocator backend is " + name + ", not the caching allocator");
    return;
  }
  try {
    allocator->attachAllocatorTraceTracker(
        [](const TraceEntry& e) { on_trace(e); });
    tracker.store(tracker_state::attached);
    outputs_from_blocks_locked();
  } catch (const std::exception& e) {
    tracker.store(tracker_state::refused);
    say_no_blocks(std::string("attaching the tracker failed: ") + e.what());
  }
}
#else
void attach_tracker() { tracker.store(tracker_state::refused); }
#endif

// ---- the operator's pseudo-frame: name, dtypes, shapes ----

std::mutex op_frame_mutex;
std::unordered_map<std::string, std::uint32_t> op_frames;

struct shape_ref {
  c10::ScalarType dtype;
  c10::IntArrayRef sizes;
};

std::string describe(const plan& p, const shape_ref* shapes, std::size_t n) {
  std::string out = p.name + "(";
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) out += ", ";
    out += dtype_name(shapes[i].dtype);
    out += "[";
    for (std::size_t d = 0; d < shapes[i].sizes.size(); ++d) {
      if (d > 0) out += ", ";
      out += std::to_string(shapes[i].sizes[d]);
    }
    out += "]";
  }
  return out + ")";
}

// Note [Operator frames cached per thread]
// Every operator names its pseudo-frame, one frame id per (plan, dtypes,
// sizes), defined once in the library (abi.frame). The ids live in a map
// shared by all threads, keyed by a string of the three; asking it at every
// operator built the key, took op_frame_mutex (which the autograd thread's
// operators contend for too) and hashed the key: 0.9% of the main thread in
// the H200 profile of the MLP loop (docs/pytorch.md, Overhead). A thread
// sees the same few pairs again and again (a training loop runs the same
// operators on the same shapes every iteration), so each thread keeps a
// small cache in front of the map, without a lock or an allocation: two-way
// sets chosen by a hash of the plan's address and the shapes. The hash only
// picks the set; a hit needs the same plan, count, dtypes, ranks and sizes,
// compared in full. A miss asks the shared map as before and keeps its
// answer in the set's first way (the first moves to the second). Only the
// map makes ids, so the same (plan, dtypes, sizes) has the same id on every
// thread, and a cached id is never stale: the map never forgets an entry,
// and plans are never freed (so a plan's address names one plan for the
// process's life). Shapes with more than op_frame_cache::max_dims sizes in
// all bypass the cache (they are rare; the map answers them). The cache is
// 19 KiB of each thread that runs operators (128 ways of 152 bytes).
struct op_frame_cache {
  static constexpr std::size_t sets = 64;
  static constexpr std::size_t max_dims = 16;
  struct way {
    const plan* p = nullptr;  // nullptr: empty
    std::uint32_t id = 0;
    std::uint8_t count = 0;
    std::int8_t dtypes[max_shapes] = {};
    std::uint8_t ranks[max_shapes] = {};
    std::int64_t sizes[max_dims] = {};
  };
  way ways[sets][2];
  std::uint64_t hits = 0, misses = 0;  // for the tests
};
static_assert(sizeof(op_frame_cache::way) == 152,
              "Note [Operator frames cached per thread] gives the cache's size");

// ---- per thread: the operators in progress ----

enum class level_kind : std::uint8_t { passed, op, host };

struct level {
  level_kind kind = level_kind::passed;
  const plan* p = nullptr;
  std::uint32_t op_frame = 0;
  bool outputs_are_blocks = false;  // begun with op_begin's flag 2: end names nothing
};

struct thread_state {
  std::size_t depth = 0;  // may exceed max_depth: those levels pass
  level levels[max_depth];
  bool python_valid = false;  // frames[1..] hold the outermost level's user frames
  // Reused per operator: no heap allocation once they have grown.
  std::vector<std::uint64_t> device_spans, host_spans, out_spans;
  std::vector<std::uint32_t> frames;
  std::vector<std::uint32_t> launch_frames;  // Note [Python frames of launches outside operators]
  std::string shape_key;
  shape_ref shapes[max_shapes];
  std::size_t shape_count = 0;
  op_frame_cache op_frames;
};
thread_local thread_state ts;

// Where add_tensor() puts a device tensor's span and a host tensor's (none:
// host tensors are skipped).
struct span_sink {
  std::vector<std::uint64_t>* device;
  std::vector<std::uint64_t>* host;
  thread_state* shapes;  // non-null: the tensors name the operator (its arguments do)
};

void push_span(std::vector<std::uint64_t>& out, std::uint64_t address, std::uint64_t bytes,
               std::uint64_t mode) {
  out.push_back(address);
  out.push_back(bytes);
  out.push_back(mode);
}

// Note [Strided views are told as runs]
// A non-contiguous view (a column slice m[:, a:b], a strided slice, a
// transpose of one) holds only some of the bytes from its first element to
// its last. Told as that hull, with the exact origin, two streams writing
// the column slices m[:, :64] and m[:, 64:] would overlap and be reported:
// a report is a promise, so the hull must never be told as exact.
// - A view whose elements fill their hull (a permutation of a dense tensor:
//   .t(), .permute(), channels_last; TensorImpl's cached
//   is_non_overlapping_and_dense) is one exact span, the hull, as before.
// - Otherwise its contiguous runs: dims of size 1 and of stride 0 (expand)
//   add no bytes and are dropped, the others sorted by stride, largest
//   first; the innermost dims whose stride is the length of the block
//   inside them make one run; of the outer dims, d and d+1 merge where
//   stride[d] == size[d+1] * stride[d+1]; the outer dims enumerate the runs.
//   At most max_runs runs are told, each an exact span (sorted; adjacent and
//   overlapping runs merged): m[:, 2:4] of an 8-row matrix is 8 spans of 8
//   bytes.
// - Beyond max_runs (a column slice of a tall matrix: one run per row), the
//   hull is told with hull_flag (Note [A span flagged as a hull] in
//   inject/session/torch_entry.cpp): the library makes its accesses
//   inferred, so a conflict through it is a candidate, and the kernels are
//   measured on their next launches; a measured footprint decides
//   (Note [Measured footprints of an operator's launches] in
//   inject/model/cuda_model_ops.cpp). The hull is flagged too for a view
//   with more than max_run_dims dims that add bytes, or with a negative
//   stride (torch makes none).
// max_runs = 16: every span is an access in each launch record of the
// operator, and the library's per-operator work (add_distinct, the spans a
// pointer word is looked up in) grows with the spans, quadratically in
// add_distinct; at 16 a view costs what 16 tensor arguments do, several
// times an ordinary operator's two or three, and no more than a foreach
// operator over a few parameters. It keeps exact the small outer dims that
// slicing an inner dim leaves: a batch of a few, the heads of one sample,
// the kernel rows of a convolution weight. A view with more runs than that
// is typically a column slice of a large matrix, where one span per row
// would cost more than the candidate's measurement. Everything here is on
// the stack; only a non-contiguous tensor comes here.
constexpr std::size_t max_runs = 16;
constexpr std::size_t max_run_dims = 16;

void add_strided(std::vector<std::uint64_t>& out, std::uint64_t address, std::uint64_t element,
                 c10::IntArrayRef sizes, c10::IntArrayRef strides, bool fills_hull,
                 std::uint64_t mode) {
  std::uint64_t extent = 0;  // elements past the first
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] > 1) extent += static_cast<std::uint64_t>(sizes[d] - 1) *
                                static_cast<std::uint64_t>(std::abs(strides[d]));
  }
  const std::uint64_t hull = element * (extent + 1);
  if (fills_hull) return push_span(out, address, hull, mode);
  struct dim {
    std::uint64_t size, stride;
  };
  dim dims[max_run_dims];
  std::size_t rank = 0;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] <= 1 || strides[d] == 0) continue;
    if (strides[d] < 0 || rank == max_run_dims) return push_span(out, address, hull, mode | hull_flag);
    dims[rank++] = {static_cast<std::uint64_t>(sizes[d]), static_cast<std::uint64_t>(strides[d])};
  }
  // Largest stride first (insertion sort: a handful of dims).
  for (std::size_t i = 1; i < rank; ++i) {
    for (std::size_t j = i; j > 0 && dims[j - 1].stride < dims[j].stride; --j) {
      std::swap(dims[j - 1], dims[j]);
    }
  }
  std::uint64_t run = 1;  // elements
  while (rank > 0 && dims[rank - 1].stride == run) run *= dims[--rank].size;
  // The outer dims, merged where one steps over the whole of the next.
  std::size_t outer = 0;
  std::uint64_t runs = 1;
  for (std::size_t d = 0; d < rank; ++d) {
    if (outer > 0 && dims[outer - 1].stride == dims[d].size * dims[d].stride) {
      dims[outer - 1] = {dims[outer - 1].size * dims[d].size, dims[d].stride};
    } else {
      dims[outer++] = dims[d];
    }
    runs *= dims[d].size;
    if (runs > max_runs) return push_span(out, address, hull, mode | hull_flag);
  }
  std::uint64_t starts[max_runs];
  std::uint64_t index[max_run_dims] = {};
  for (std::size_t r = 0; r < runs; ++r) {
    std::uint64_t offset = 0;
    for (std::size_t d = 0; d < outer; ++d) offset += index[d] * dims[d].stride;
    starts[r] = offset;
    for (std::size_t d = outer; d-- > 0;) {  // the next index, innermost first
      if (++index[d] < dims[d].size) break;
      index[d] = 0;
    }
  }
  std::sort(starts, starts + runs);
  std::uint64_t begin = starts[0], end = starts[0] + run;
  for (std::size_t r = 1; r < runs; ++r) {
    if (starts[r] > end) {
      push_span(out, address + begin * element, (end - begin) * element, mode);
      begin = starts[r];
    }
    end = std::max(end, starts[r] + run);
  }
  push_span(out, address + begin * element, (end - begin) * element, mode);
}

void add_tensor(const at::Tensor& t, std::uint8_t mode, const span_sink& sink) {
  if (!t.defined() || t.layout() != c10::kStrided) return;
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  // Symbolic shapes (torch.compile tracing with dynamic shapes): sizes()
  // would throw; these tensors have no memory of their own either.
  if (impl->has_symbolic_sizes_strides()) return;
  const auto type = t.device().type();
  std::vector<std::uint64_t>* out = nullptr;
  if (type == device_type) {
    out = sink.device;
  } else if (static_cast<int>(type) == host_type) {
    out = sink.host;
  } else {
    return;
  }
  if (sink.shapes != nullptr && sink.shapes->shape_count < max_shapes) {
    sink.shapes->shapes[sink.shapes->shape_count++] = {t.scalar_type(), t.sizes()};
  }
  if (out == nullptr) return;
  const std::int64_t n = t.numel();
  if (n == 0 || !t.has_storage()) return;
  // Memory on the tensor's device, or none: a FakeTensor says "cuda" over
  // meta storage; wrapper subclasses and functional tensors have storage
  // without data. Checked before data(), which throws for some of them.
  const c10::Storage& storage = impl->unsafe_storage();
  if (storage.device_type() != type) return;
  const void* base = nullptr;
  try {
    base = storage.data();
  } catch (...) {
    return;
  }
  if (base == nullptr) return;
  const std::uint64_t address = reinterpret_cast<std::uintptr_t>(base) +
                                static_cast<std::uint64_t>(impl->storage_offset()) *
                                    static_cast<std::uint64_t>(t.element_size());
  const std::uint64_t element = t.element_size();
  if (t.is_contiguous()) {
    push_span(*out, address, element * static_cast<std::uint64_t>(n), mode);
  } else {
    add_strided(*out, address, element, t.sizes(), t.strides(),
                impl->is_non_overlapping_and_dense(), mode);
  }
}

void add_value(const c10::IValue& v, std::uint8_t mode, const span_sink& sink) {
  if (mode == metadata_mode) return;
  if (v.isTensor()) {
    add_tensor(v.toTensor(), mode, sink);
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) {
      if (e.isTensor()) add_tensor(e.toTensor(), mode, sink);
    }
  }
}

// The shared map's id for (p, t.shapes): made and told to the library
// the first time any thread asks (Note [Operator frames cached per thread]).
std::uint32_t shared_op_frame_of(thread_state& t, const plan& p) {
  auto& key = t.shape_key;
  const auto p_address = &p;
  key.assign(reinterpret_cast<const char*>(&p_address), sizeof p_address);
  for (std::size_t i = 0; i < t.shape_count; ++i) {
    const auto& s = t.shapes[i];
    key.push_back(static_cast<char>(s.dtype));
    key.push_back(static_cast<char>(s.sizes.size()));
    key.append(reinterpret_cast<const char*>(s.sizes.data()), s.sizes.size() * sizeof(std::int64_t));
  }
  std::lock_guard lock(op_frame_mutex);
  const auto it = op_frames.find(key);
  if (it != op_frames.end()) return it->second;
  const std::uint32_t id = next_frame_id.fetch_add(1);
  abi.frame(id, describe(p, t.shapes, t.shape_count).c_str(), "", 0);
  op_frames.emplace(key, id);
  return id;
}

// Whether `w` holds (p, t.shapes), all compared.
bool same_op_frame(const op_frame_cache::way& w, const plan& p, const thread_state& t) {
  if (w.p != &p || w.count != t.shape_count) return false;
  std::size_t at = 0;
  for (std::size_t i = 0; i < t.shape_count; ++i) {
    const auto& s = t.shapes[i];
    const std::size_t rank = s.sizes.size();
    if (w.dtypes[i] != static_cast<std::int8_t>(s.dtype) || w.ranks[i] != rank) return false;
    for (std::size_t d = 0; d < rank; ++d) {
      if (w.sizes[at + d] != s.sizes[d]) return false;
    }
    at += rank;
  }
  return true;
}

std::uint32_t op_frame_of(thread_state& t, const plan& p) {
  // Note [Operator frames cached per thread]
  std::size_t dims = 0;
  std::uint64_t h = reinterpret_cast<std::uintptr_t>(&p) * 0x9E3779B97F4A7C15ull;
  for (std::size_t i = 0; i < t.shape_count; ++i) {
    const auto& s = t.shapes[i];
    dims += s.sizes.size();
    h = (h ^ (static_cast<std::uint64_t>(static_cast<std::uint8_t>(s.dtype)) << 8 |
              s.sizes.size())) * 0x100000001B3ull;
    for (const std::int64_t size : s.sizes) {
      h = (h ^ static_cast<std::uint64_t>(size)) * 0x100000001B3ull;
    }
  }
  if (dims > op_frame_cache::max_dims) return shared_op_frame_of(t, p);
  auto& cache = t.op_frames;
  auto& set = cache.ways[(h ^ (h >> 29)) % op_frame_cache::sets];
  for (const auto& w : set) {
    if (same_op_frame(w, p, t)) {
      ++cache.hits;
      return w.id;
    }
  }
  ++cache.misses;
  const std::uint32_t id = shared_op_frame_of(t, p);
  set[1] = set[0];
  auto& w = set[0];
  w.p = &p;
  w.id = id;
  w.count = static_cast<std::uint8_t>(t.shape_count);
  std::size_t at = 0;
  for (std::size_t i = 0; i < t.shape_count; ++i) {
    const auto& s = t.shapes[i];
    w.dtypes[i] = static_cast<std::int8_t>(s.dtype);
    w.ranks[i] = static_cast<std::uint8_t>(s.sizes.size());
    std::copy(s.sizes.begin(), s.sizes.end(), w.sizes + at);
    at += s.sizes.size();
  }
  return id;
}

// [op frame, user frames...] of `l`, in t.frames. The user's frames are
// walked once per outermost operator and stay behind the first slot, which
// each level sets to its own pseudo-frame.
void frames_of(thread_state& t, const level& l) {
  if (!t.python_valid) {
    t.frames.resize(1);
    python_stack(t.frames);
    t.python_valid = true;
  }
  t.frames[0] = l.op_frame;
}

// Whether one of the thread's open levels is `pick`ed.
template <class Pick>
bool inside_level(const thread_state& t, Pick pick) {
  const std::size_t n = t.depth < max_depth ? t.depth : max_depth;
  for (std::size_t i = 0; i < n; ++i) {
    if (pick(t.levels[i].kind)) return true;
  }
  return false;
}

bool inside_host_level(const thread_state& t) {
  return inside_level(t, [](level_kind k) { return k == level_kind::host; });
}

// Inside an operator the library was told of (its frames are the thread's).
// Levels that passed (a RecordFunction of no operator we plan, as the one
// around an Inductor graph) told nothing.
bool inside_told_level(const thread_state& t) {
  return inside_level(t, [](level_kind k) { return k != level_kind::passed; });
}

// The innermost enclosing operator's frames again (op_end cleared them).
void restore_enclosing_frames(thread_state& t) {
  const std::size_t n = t.depth < max_depth ? t.depth : max_depth;
  for (std::size_t i = n; i-- > 0;) {
    if (t.levels[i].kind == level_kind::op) {
      frames_of(t, t.levels[i]);
      abi.frames(t.frames.data(), t.frames.size());
      return;
    }
  }
}

// Enters `l` as an operator of plan `p`: its pseudo-frame, and in t.frames
// its frames for the library.
void enter_level(thread_state& t, level& l, const plan* p, level_kind kind) {
  l.p = p;
  l.op_frame = op_frame_of(t, *p);
  l.kind = kind;
  frames_of(t, l);
}

// Note [The hook priced step by step]
// For bench/torch only (overhead.sh's streamsan_step_* configurations):
// STREAMSAN_TORCH_HOOK_STEPS=STEP stops every operator after STEP, so one GPU
// run prices each step against the one before it, as the `probe_track_*`
// configurations price the --precise recording (docs/injection.md). The
// steps, in order: `callback` (registered without arguments:
// RecordFunction's own cost), `boxing` (arguments and results boxed, and
// nothing done with them), `spans` (the plan and the tensors' spans),
// `frames` (the pseudo-frame and the Python walk), `calls` (the library
// told; the caching allocator's tracker not attached), `all` (the hook; the
// default). A step short of `all` loses reports, so it is said once at
// start-up; an unknown step is said and taken as `all`.
enum class hook_step : std::uint8_t { callback, boxing, spans, frames, calls, all };
hook_step last_step = hook_step::all;  // set by init, before the callback runs

// Tells the library about the operator; the level's kind says what end owes.
void begin(thread_state& t, const at::RecordFunction& fn, level& l) {
  const plan* p = plan_of(fn);
  if (p == nullptr || p->view) return;
  t.device_spans.clear();
  t.host_spans.clear();
  t.shape_count = 0;
  const span_sink sink{&t.device_spans, &t.host_spans, &t};
  const auto inputs = fn.inputs();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    add_value(inputs[i], i < p->modes.size() ? p->modes[i] : read_mode, sink);
  }
  if (last_step == hook_step::spans) return;
  if (!session_active.load(std::memory_order_relaxed)) {
    if (abi.active() == 0) return;  // CUDA not initialized: nothing to tell yet
    session_active.store(true, std::memory_order_relaxed);
  }
  if (tracker.load(std::memory_order_relaxed) == tracker_state::waiting &&
      last_step == hook_step::all) {
    attach_tracker();
  }
  const bool factory = t.host_spans.empty() && t.shape_count == 0;
  if (!t.device_spans.empty() || factory) {
    enter_level(t, l, p, level_kind::op);
    if (last_step == hook_step::frames) {
      l.kind = level_kind::passed;  // end owes the library nothing
      return;
    }
    // Note [Outputs named by their blocks]
    l.outputs_are_blocks = outputs_from_blocks.load(std::memory_order_relaxed);
    abi.op_begin(t.device_spans.data(), t.device_spans.size() / 3, t.frames.data(),
                 t.frames.size(), l.outputs_are_blocks ? outputs_are_blocks_flag : p->flags);
    return;
  }
  if (!t.host_spans.empty() && !inside_host_level(t)) {
    // A host operator: the host touches its tensors now.
    enter_level(t, l, p, level_kind::host);
    if (last_step == hook_step::frames) return;
    abi.host_access(t.host_spans.data(), t.host_spans.size() / 3, p->host_label.c_str(),
                    t.frames.data(), t.frames.size());
    restore_enclosing_frames(t);  // host_access cleared them (torch.ones fills on the host)
  }
}

void end(thread_state& t, const at::RecordFunction& fn, const level& l) {
  if (l.outputs_are_blocks) {  // Note [Outputs named by their blocks]
    abi.op_end(nullptr, 0);
    return;
  }
  t.out_spans.clear();
  const span_sink sink{&t.out_spans, nullptr, nullptr};
  const auto& outputs = fn.outputs();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (i >= l.p->fresh_returns.size() || l.p->fresh_returns[i]) {
      add_value(outputs[i], write_mode, sink);
    }
  }
  abi.op_end(t.out_spans.data(), t.out_spans.size() / 3);
}

// Note [One lookup of the thread's state]
// The hook is a shared library built with -fPIC, so every use of the
// thread_local `ts` outside the function that looked it up is a call to
// __tls_get_addr through its TLS wrapper. With the hook registered and
// doing nothing but its depth bookkeeping, our two callbacks cost 32,000
// instructions per training step of the CPU MLP of
// bench/torch/op_hook_instructions.py. Each callback now looks the state up
// once and hands it down: 34,000 instructions a step fewer with the
// library told (`calls`), 14% of the hook's own.
std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  thread_state& t = ts;
  const std::size_t d = t.depth++;
  if (d >= max_depth) return nullptr;
  level& l = t.levels[d];
  l = level{};
  if (d == 0) t.python_valid = false;
  if (broken.load(std::memory_order_relaxed) || last_step <= hook_step::boxing) return nullptr;
  try {
    begin(t, fn, l);
  } catch (const std::exception& e) {
    say_broken(e.what());
  } catch (...) {
    say_broken("unknown exception");
  }
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  thread_state& t = ts;  // Note [One lookup of the thread's state]
  if (t.depth == 0) return;  // began before the callback was enabled
  const std::size_t d = --t.depth;
  if (d >= max_depth) return;
  const level l = t.levels[d];
  try {
    switch (l.kind) {
      case level_kind::passed: return;
      case level_kind::host: return;
      case level_kind::op:
        if (broken.load(std::memory_order_relaxed)) {
          abi.op_end(nullptr, 0);
        } else {
          end(t, fn, l);
        }
        restore_enclosing_frames(t);
        return;
    }
  } catch (const std::exception& e) {
    abi.op_end(nullptr, 0);
    say_broken(e.what());
  } catch (...) {
    abi.op_end(nullptr, 0);
    say_broken("unknown exception");
  }
}

thread_local std::string last_error;

// Registers the callback as the hook wants it now; under setup_mutex.
void register_callback_locked() {
  const bool boxed = last_step != hook_step::callback;
  // Note [Outputs named by their blocks]
  const bool outputs = boxed && !outputs_from_blocks.load();
  callback_handle = at::addGlobalCallback(at::RecordFunctionCallback(on_start, on_end)
                                              .needsInputs(boxed)
                                              .needsOutputs(outputs)
                                              .scopes({at::RecordScope::FUNCTION}));
  callback_enabled = true;
}

// Note [Outputs named by their blocks]
// Once the allocator tracker is attached, the library knows an operator's
// new tensors as the blocks handed out inside it (Note [An operator's
// outputs are its blocks] in inject/model/cuda_model_ops.cpp), so the
// callback stops asking torch to box every operator's results: it is
// registered again without needsOutputs. Called from attach_tracker, inside
// an operator's start callback: torch copies the callbacks into each
// RecordFunction when it begins, so the operators running now still end
// through on_end (their levels say how they began), and those that begin
// from now on box no results.
void outputs_from_blocks_locked() {
  if (outputs_from_blocks.exchange(true)) return;
  if (callback_handle == at::INVALID_CALLBACK_HANDLE) return;
  at::removeCallback(callback_handle);
  callback_handle = at::INVALID_CALLBACK_HANDLE;
  if (callback_enabled) register_callback_locked();  // else enable() registers it
}

// Note [The hook priced step by step]: STREAMSAN_TORCH_HOOK_STEPS.
hook_step step_from_environment() {
  const char* v = std::getenv("STREAMSAN_TORCH_HOOK_STEPS");
  if (v == nullptr || *v == '\0') return hook_step::all;
  static const std::pair<const char*, hook_step> steps[] = {
      {"callback", hook_step::callback}, {"boxing", hook_step::boxing},
      {"spans", hook_step::spans},       {"frames", hook_step::frames},
      {"calls", hook_step::calls},       {"all", hook_step::all}};
  for (const auto& [name, step] : steps) {
    if (std::strcmp(v, name) != 0) continue;
    if (step != hook_step::all) {
      std::fprintf(stderr,
                   "streamsan: STREAMSAN_TORCH_HOOK_STEPS=%s: the operator hook stops after "
                   "that step (for benchmarks: reports are lost)\n",
                   v);
    }
    return step;
  }
  std::fprintf(stderr,
               "streamsan: STREAMSAN_TORCH_HOOK_STEPS=%s is not a step (callback, boxing, "
               "spans, frames, calls, all); taken as all\n",
               v);
  return hook_step::all;
}

// Whether the variable `name` is 1; unset, empty or 0 is off, and any
// other value is said once, naming it, and taken as off.
bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0' || std::strcmp(v, "0") == 0) return false;
  if (std::strcmp(v, "1") == 0) return true;
  std::fprintf(stderr, "streamsan: %s=%s is neither 0 nor 1; taken as 0\n", name, v);
  return false;
}

}  // namespace

// 0 when the hook is ready, else nonzero and streamsan_torch_hook_error()
// says why. Callable again while the callback is disabled (the tests change
// the device types); never while operators may run through it.
STREAMSAN_HOOK_EXPORT int streamsan_torch_hook_init(const injection_abi* functions,
                                                    const hook_config* config) {
  try {
    std::lock_guard lock(setup_mutex);
    if (functions == nullptr || config == nullptr || functions->active == nullptr ||
        functions->frame == nullptr || functions->frames == nullptr ||
        functions->op_begin == nullptr || functions->op_end == nullptr ||
        functions->host_access == nullptr) {
      last_error = "the injection library's entry points are missing";
      return 1;
    }
    if (!py.ok) {
      const std::string missing = resolve_python();
      if (!missing.empty()) {
        last_error = "the running Python lacks " + missing;
        return 2;
      }
    }
    abi = *functions;
    if (tracker.load() != tracker_state::attached) tracker.store(tracker_state::waiting);
    device_type = static_cast<c10::DeviceType>(config->device_type);
    host_type = config->host_type;
    folded_prefixes.clear();
    const std::string all = config->folded_prefixes ? config->folded_prefixes : "";
    std::size_t start = 0;
    while (start < all.size()) {
      const std::size_t nl = all.find('\n', start);
      const std::size_t stop = nl == std::string::npos ? all.size() : nl;
      if (stop > start) folded_prefixes.push_back(all.substr(start, stop - start));
      start = stop + 1;
    }
    check_every_walk = env_flag("STREAMSAN_TORCH_CHECK_FRAMES");
    last_step = step_from_environment();
    // Note [Frames without frame objects]: opt-in; found again when asked.
    if (!env_flag("STREAMSAN_TORCH_FAST_FRAMES")) {
      raw.status = raw_layout::state::off;
    } else if (raw.status == raw_layout::state::off) {
      raw.status = raw_layout::state::untried;
      raw.tries = 0;
    }
    session_active.store(false);
    configured.store(true);
    return 0;
  } catch (const std::exception& e) {
    last_error = e.what();
    return 3;
  }
}

STREAMSAN_HOOK_EXPORT const char* streamsan_torch_hook_error(void) { return last_error.c_str(); }

// Note [Python frames of launches outside operators]
// A kernel launched outside any operator (Triton's and Inductor's
// launchers) had only native frames: the interpreter's C functions, never
// the user's line. Triton calls its launch hooks (knobs.runtime
// launch_enter_hook and launch_exit_hook, which Inductor's launchers call
// too) with the GIL held, just before its launcher releases the GIL to
// launch; _support.py registers the builtins of
// streamsan_torch_hook_launch_hook there (Note [Triton's hooks are
// builtins]), which call this function (enter 1, exit 0). Enter walks the thread's
// Python frames and hands them to the library as the frames of the
// thread's calls until exit clears them. Inside an operator the library
// was told of (a Triton kernel of a custom operator) the operator's frames
// stand, and neither end changes them. Inside a RecordFunction that passed
// (no operator plan matches it; Inductor runs its compiled graphs inside
// one) the launch gets its frames: a check of the depth alone left every
// Inductor kernel with native frames on an H200. The walk is never made
// inside the CUDA callback itself: there the GIL is released, and taking
// it while the driver runs our callback could wait on a thread that waits
// on the driver.
STREAMSAN_HOOK_EXPORT void streamsan_torch_hook_launch_frames(int enter) {
  if (!configured.load(std::memory_order_acquire) || broken.load(std::memory_order_relaxed)) {
    return;
  }
  try {
    thread_state& t = ts;
    if (inside_told_level(t)) return;
    if (!session_active.load(std::memory_order_relaxed)) {
      if (abi.active() == 0) return;  // CUDA not initialized: nothing to tell yet
      session_active.store(true, std::memory_order_relaxed);
    }
    if (enter == 0) {
      abi.frames(nullptr, 0);
      return;
    }
    t.launch_frames.clear();
    python_stack(t.launch_frames);
    abi.frames(t.launch_frames.data(), t.launch_frames.size());
  } catch (...) {
    // Nothing of ours reaches the program; the launch keeps native frames.
  }
}

// Note [Triton's hooks are builtins]
// Triton calls its launch hooks at every launch, so their price is per
// launch, as a launch-bound loop of small Triton kernels pays it. Through
// a guarding Python closure and a ctypes prototype each call cost a
// Python frame and a foreign call (a tiny Triton kernel launched 2,000
// times: 1.18x with the hooks in Triton's chains, H200, 2026-11-30). The
// chains now hold two builtin functions made here: Triton's call goes
// straight to C (vectorcall, METH_FASTCALL | METH_KEYWORDS), whatever its
// arguments (they are ignored). They never raise and always return None:
// an error of ours is caught in streamsan_torch_hook_launch_frames, and a
// broken hook passes through. The Python API is resolved with dlsym, as
// above: PyMethodDef's layout and the flags are the stable ABI's.
namespace {

struct method_def {  // PyMethodDef
  const char* name;
  void* function;
  int flags;
  const char* doc;
};
constexpr int meth_fastcall_keywords = 0x0080 | 0x0002;  // METH_FASTCALL | METH_KEYWORDS

void* none_object = nullptr;  // &_Py_NoneStruct

void* none_reference() {
  py.inc_ref(none_object);
  return none_object;
}

void* launch_entered(void*, void* const*, std::ptrdiff_t, void*) {
  streamsan_torch_hook_launch_frames(1);
  return none_reference();
}

void* launch_exited(void*, void* const*, std::ptrdiff_t, void*) {
  streamsan_torch_hook_launch_frames(0);
  return none_reference();
}

method_def launch_hook_defs[] = {
    {"streamsan_launch_exit", reinterpret_cast<void*>(&launch_exited), meth_fastcall_keywords,
     "streamsan: the launch's Python frames end (Triton's launch_exit_hook)"},
    {"streamsan_launch_enter", reinterpret_cast<void*>(&launch_entered), meth_fastcall_keywords,
     "streamsan: the launch's Python frames (Triton's launch_enter_hook)"},
};

}  // namespace

// A new reference to the builtin for Triton's launch_enter_hook (enter 1)
// or launch_exit_hook (enter 0); null, with last_error set, when this
// Python lacks what it needs. Called with the GIL held.
STREAMSAN_HOOK_EXPORT void* streamsan_torch_hook_launch_hook(int enter) {
  try {
    if (!configured.load(std::memory_order_acquire)) {
      last_error = "streamsan_torch_hook_init() was not called";
      return nullptr;
    }
    void* (*new_function)(void*, void*, void*) = nullptr;  // PyCFunction_NewEx
    if (!resolve(new_function, "PyCFunction_NewEx")) {
      last_error = "this Python has no PyCFunction_NewEx";
      return nullptr;
    }
    none_object = dlsym(RTLD_DEFAULT, "_Py_NoneStruct");
    if (none_object == nullptr) {
      last_error = "this Python has no _Py_NoneStruct";
      return nullptr;
    }
    void* made = new_function(&launch_hook_defs[enter != 0 ? 1 : 0], nullptr, nullptr);
    if (made == nullptr) last_error = "PyCFunction_NewEx failed";
    return made;
  } catch (const std::exception& e) {
    last_error = e.what();
    return nullptr;
  }
}

// Registers the callback (or enables it again): every operator from now on.
STREAMSAN_HOOK_EXPORT int streamsan_torch_hook_enable(void) {
  try {
    std::lock_guard lock(setup_mutex);
    if (!configured.load()) {
      last_error = "streamsan_torch_hook_init() was not called";
      return 1;
    }
    if (callback_handle == at::INVALID_CALLBACK_HANDLE) {
      register_callback_locked();
    } else {
      at::reenableCallback(callback_handle);
      callback_enabled = true;
    }
    return 0;
  } catch (const std::exception& e) {
    last_error = e.what();
    return 2;
  }
}

// Operators pass unseen from now on (at exit, before the interpreter goes).
STREAMSAN_HOOK_EXPORT void streamsan_torch_hook_disable(void) {
  try {
    std::lock_guard lock(setup_mutex);
    if (callback_handle != at::INVALID_CALLBACK_HANDLE) at::disableCallback(callback_handle);
    callback_enabled = false;
  } catch (...) {
  }
}

// Note [The caching allocator's blocks reach the engine]: 1 when this build
// has the allocator tracker, 0 when not (no CUDA headers were found).
STREAMSAN_HOOK_EXPORT int streamsan_torch_hook_has_tracker(void) {
#ifdef STREAMSAN_ALLOCATOR_TRACKER
  return 1;
#else
  return 0;
#endif
}

// Note [Frames without frame objects]: 0 not tried yet, 1 on, 2 off.
STREAMSAN_HOOK_EXPORT int streamsan_torch_hook_fast_frames(void) {
  switch (raw.status) {
    case raw_layout::state::untried: return 0;
    case raw_layout::state::on: return 1;
    case raw_layout::state::off: return 2;
  }
  return 2;
}

// Note [Operator frames cached per thread]: the calling thread's cache hits
// and misses so far; for the tests.
STREAMSAN_HOOK_EXPORT void streamsan_torch_hook_op_frame_counts(std::uint64_t* hits,
                                                                std::uint64_t* misses) {
  *hits = ts.op_frames.hits;
  *misses = ts.op_frames.misses;
}

// For the tests, on a machine without a GPU (no allocator to attach to):
// operators' outputs are named by their blocks from now on, as once the
// tracker is attached (Note [Outputs named by their blocks]).
STREAMSAN_HOOK_EXPORT void streamsan_torch_hook_outputs_from_blocks_for_test(void) {
  try {
    std::lock_guard lock(setup_mutex);
    outputs_from_blocks_locked();
  } catch (...) {
  }
}

// For the tests, on a machine without a GPU (no allocator to attach to):
// hands the tracker a TraceEntry made of these values, as the allocator
// would. Returns 0, or -1 when this build has no tracker.
STREAMSAN_HOOK_EXPORT int streamsan_torch_hook_trace_for_test(int action, std::uint64_t address,
                                                              std::uint64_t size,
                                                              std::int32_t device,
                                                              std::uint64_t stream) {
#ifdef STREAMSAN_ALLOCATOR_TRACKER
  try {
    const TraceEntry e(static_cast<TraceEntry::Action>(action),
                       static_cast<c10::DeviceIndex>(device), address, size,
                       reinterpret_cast<void*>(static_cast<std::uintptr_t>(stream)), {0, 0}, 0);
    on_trace(e);
    return 0;
  } catch (...) {
    return -1;
  }
#else
  (void)action, (void)address, (void)size, (void)device, (void)stream;
  return -1;
#endif
}
