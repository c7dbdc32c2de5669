// A library a Python test loads with ctypes (tests/inject/python_frames_test.py):
// it reads the calling thread's Python frames as the injection library does
// at a CUDA call, and writes them as "file:line:function" lines.
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "sanitizer/log/interpreter_frame.h"
#include "inject/stack/python_frames.h"

namespace {

using streamsan::injection::python_frames;

std::mutex names_mutex;
std::map<std::uint64_t, std::string> names;  // address -> file:line:function
python_frames* reader = nullptr;
std::string not_read;

void attach_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto attached = streamsan::injection::attach_python_frames(
        [](std::uint64_t address, std::string_view function, std::string_view file,
           std::uint32_t line) {
          std::lock_guard lock(names_mutex);
          names[address] = std::string(file) + ":" + std::to_string(line) + ":" +
                           std::string(function);
        });
    reader = attached.frames.release();
    not_read = attached.not_read;
  });
}

int copy_out(const std::string& text, char* out, std::size_t size) {
  if (size == 0) return -1;
  std::snprintf(out, size, "%s", text.c_str());
  return text.size() < size ? static_cast<int>(text.size()) : -1;
}

}  // namespace

// The calling thread's user frames, innermost first, one a line; or
// "not read: <why>" / "stopped: <why>". Returns the length, -1 when cut.
extern "C" __attribute__((visibility("default"))) int probe_python_frames(char* out,
                                                                           std::size_t size) {
  attach_once();
  if (reader == nullptr) return copy_out("not read: " + not_read, out, size);
  std::uint64_t frames[64];
  const std::size_t n = reader->current(frames);
  if (const auto stopped = reader->stopped(); !stopped.empty()) {
    return copy_out("stopped: " + stopped, out, size);
  }
  std::string text;
  std::lock_guard lock(names_mutex);
  for (std::size_t i = 0; i < n; ++i) {
    const auto it = names.find(frames[i]);
    text += it == names.end() ? std::string("?") : it->second;
    text += '\n';
  }
  return copy_out(text, out, size);
}

// Closes the reader (Note [No walk once the interpreter finalizes]): later
// probes find no frames.
extern "C" __attribute__((visibility("default"))) void probe_python_frames_close() {
  attach_once();
  if (reader != nullptr) reader->close();
}
