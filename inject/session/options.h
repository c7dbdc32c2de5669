// The options of a sanitized run, as `streamsan run` takes them on its command
// line and as the injection library reads them from STREAMSAN_OPTIONS
// ("key=value:key=value", the way the compiler sanitizers take theirs).
//
// Header-only: `streamsan run` (cli/) validates and forwards the options, the
// injection library (inject/) applies them, and both must agree on
// every key and value.
#pragma once

#include <charconv>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "sanitizer/log/printable_text.h"
#include "sanitizer/report/color.h"
#include "sanitizer/report/report_format.h"

namespace streamsan::injection {

using streamsan::report_format;

// Bad STREAMSAN_OPTIONS text or command-line value; what() names the key.
class option_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::string_view options_variable = "STREAMSAN_OPTIONS";
inline constexpr std::string_view option_keys =
    "log_path, format, suppressions, builtin_suppressions, print_limit, halt_on_error, record, "
    "stack_depth, error_exitcode, precise, capture, color, raw_stacks, cpp_stacks, python_frames";

// Which API the library takes CUDA calls from (Note [Two capture sources] in
// docs/injection.md): the Compute Sanitizer API when it is installed (it can
// measure footprints), else CUPTI; or one of them by name.
enum class capture_source : std::uint8_t { automatic, cupti, sanitizer_api };

inline std::string_view to_string(capture_source c) noexcept {
  switch (c) {
    case capture_source::automatic: return "auto";
    case capture_source::cupti: return "cupti";
    case capture_source::sanitizer_api: return "sanitizer";
  }
  return "auto";
}

struct sanitizer_options {
  // Where the report goes; empty = stderr. "%p" is replaced by the process id,
  // so that several sanitized processes of one run do not overwrite each other.
  std::string log_path;
  report_format format = report_format::text;
  // A suppressions file (race:/sync: lines); empty = none.
  std::string suppressions;
  // The built-in rules for vendor libraries' own calls (Note [Built-in
  // library suppressions]); what they hide is counted in the summary.
  bool builtin_suppressions = true;
  // How many diagnostics are printed in full; 0 = all. The summary still
  // counts every one.
  std::uint32_t print_limit = 0;
  // Print the first diagnostic and end the process with error_exitcode.
  bool halt_on_error = false;
  // Also write the access log to this trace file, for `streamsan analyze`.
  std::string record;
  // Call-stack frames kept per operation; 0 turns stack capture off.
  std::uint32_t stack_depth = 16;
  // The exit status of a run that found diagnostics; 0 keeps the program's.
  int error_exitcode = 66;
  // Measure every kernel launch's footprint (Note [Which launches are
  // measured]); needs the Compute Sanitizer API.
  bool precise = false;
  capture_source capture = capture_source::automatic;
  // Colour in a text report on stderr (never in log_path files).
  color_mode color = color_mode::automatic;
  // Every recorded frame in stacks, nothing folded (Note [Stacks start at
  // the user]).
  bool raw_stacks = false;
  // In a Python program, the native (C++) frames of libtorch and the
  // interpreter in front of the Python frames (Note [Interpreter frames]).
  bool cpp_stacks = false;
  // Reads a Python program's frames from its interpreter at calls outside
  // the PyTorch support's operators (Note [Python frames read in place]).
  bool python_frames = true;

  bool operator==(const sanitizer_options&) const = default;
};

namespace detail {

// A key or value as an error message shows it (NUL and control bytes as
// \xNN).
inline std::string shown(std::string_view text) { return printable_text(text); }

inline std::uint32_t parse_count(std::string_view key, std::string_view value,
                                 std::uint32_t max) {
  std::uint32_t n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (value.empty() || ec != std::errc{} || end != value.data() + value.size() || n > max) {
    throw option_error(detail::shown(key) + "=" + detail::shown(value) +
                       ": expected an integer from 0 to " + std::to_string(max));
  }
  return n;
}

inline bool parse_flag(std::string_view key, std::string_view value) {
  if (value == "1" || value == "true" || value == "yes") return true;
  if (value == "0" || value == "false" || value == "no") return false;
  throw option_error(detail::shown(key) + "=" + detail::shown(value) +
                     ": expected 1/0, true/false or yes/no");
}

// Unquoted, a value runs to the next separator; quoted, to the next of its
// quote character. So a value needs quotes when it holds a separator or
// starts with a quote, and then cannot be spelled at all when it also holds
// both quote characters (set_option refuses such a value, so that what
// `streamsan run` accepts always reaches the library intact).
inline bool needs_quotes(std::string_view value) noexcept {
  return value.find_first_of(": \t\n") != std::string_view::npos ||
         (!value.empty() && (value.front() == '"' || value.front() == '\''));
}

inline bool can_be_spelled(std::string_view value) noexcept {
  return !needs_quotes(value) || value.find('"') == std::string_view::npos ||
         value.find('\'') == std::string_view::npos;
}

}  // namespace detail

// Sets one option; throws option_error naming the key for an unknown key or
// a bad value.
inline void set_option(sanitizer_options& o, std::string_view key, std::string_view value) {
  if (!detail::can_be_spelled(value)) {
    throw option_error(detail::shown(key) + "=" + detail::shown(value) +
                       ": a value holding ':' or whitespace, or starting with a quote, may not "
                       "hold both ' and \"");
  }
  if (key == "log_path") {
    o.log_path = value;
  } else if (key == "format") {
    if (const auto format = parse_report_format(value)) {
      o.format = *format;
    } else {
      throw option_error("format=" + detail::shown(value) + ": expected " +
                         std::string(report_format_names));
    }
  } else if (key == "suppressions") {
    o.suppressions = value;
  } else if (key == "builtin_suppressions") {
    o.builtin_suppressions = detail::parse_flag(key, value);
  } else if (key == "print_limit") {
    o.print_limit = detail::parse_count(key, value, 1u << 30);
  } else if (key == "halt_on_error") {
    o.halt_on_error = detail::parse_flag(key, value);
  } else if (key == "record") {
    o.record = value;
  } else if (key == "stack_depth") {
    o.stack_depth = detail::parse_count(key, value, 64);
  } else if (key == "error_exitcode") {
    o.error_exitcode = static_cast<int>(detail::parse_count(key, value, 255));
  } else if (key == "precise") {
    o.precise = detail::parse_flag(key, value);
  } else if (key == "color") {
    if (const auto mode = parse_color_mode(value)) {
      o.color = *mode;
    } else {
      throw option_error("color=" + detail::shown(value) + ": expected auto, always or never");
    }
  } else if (key == "raw_stacks") {
    o.raw_stacks = detail::parse_flag(key, value);
  } else if (key == "cpp_stacks") {
    o.cpp_stacks = detail::parse_flag(key, value);
  } else if (key == "python_frames") {
    o.python_frames = detail::parse_flag(key, value);
  } else if (key == "capture") {
    if (value == "auto") {
      o.capture = capture_source::automatic;
    } else if (value == "cupti") {
      o.capture = capture_source::cupti;
    } else if (value == "sanitizer") {
      o.capture = capture_source::sanitizer_api;
    } else {
      throw option_error("capture=" + detail::shown(value) + ": expected auto, cupti or sanitizer");
    }
  } else {
    throw option_error("unknown option '" + detail::shown(key) + "' (known: " +
                       std::string(option_keys) + ")");
  }
}

namespace detail {
// A switch: `on` turns it on, "off" off, nothing leaves it as `by_default`,
// anything else is an error naming the variable, so that a misspelt switch
// is not a silent no.
inline bool parse_switch(std::string_view variable, std::string_view value, std::string_view on,
                         bool by_default = true) {
  if (value.empty()) return by_default;
  if (value == on) return true;
  if (value == "off") return false;
  throw option_error(std::string(variable) + "=" + shown(value) + ": expected " +
                     std::string(on) + " or off");
}
}  // namespace detail

// STREAMSAN_GRAPH_NODES (Note [Graph node measurement is on] in
// inject/sanitizer_api/sanitizer_source.h): "off" turns graph kernel node
// measurement off; "measure" or nothing leaves it on.
inline constexpr std::string_view graph_nodes_variable = "STREAMSAN_GRAPH_NODES";
inline bool parse_graph_nodes(std::string_view value) {
  return detail::parse_switch(graph_nodes_variable, value, "measure");
}

// STREAMSAN_RUNTIME_LAUNCH_CALLBACKS (Note [Runtime launch callbacks on
// request] in inject/capture/dispatcher.h): "on" switches the plain runtime
// launch callbacks on; "off" or nothing leaves them off.
inline constexpr std::string_view runtime_launch_callbacks_variable =
    "STREAMSAN_RUNTIME_LAUNCH_CALLBACKS";
inline bool parse_runtime_launch_callbacks(std::string_view value) {
  return detail::parse_switch(runtime_launch_callbacks_variable, value, "on", false);
}

// STREAMSAN_DECODE_THREAD (Note [Decoded on a thread of its own] in
// inject/sanitizer_api/launch_tracker.cpp): "off" finishes every measured
// launch's decode on the program's thread; "on" or nothing leaves it on a
// thread of its own (when the engine has one).
inline constexpr std::string_view decode_thread_variable = "STREAMSAN_DECODE_THREAD";
inline bool parse_decode_thread(std::string_view value) {
  return detail::parse_switch(decode_thread_variable, value, "on");
}

// STREAMSAN_UNPATCH_WAIT_MS (Note [Waiting for a module's streams to drain]
// in inject/sanitizer_api/sanitizer_source.cpp): how long an unpatch may
// wait, once after each patch, for the module's streams to drain; 0: not
// at all; nothing: the default. Anything but an integer from 0 to 1000 is
// an error naming the variable.
inline constexpr std::string_view unpatch_wait_variable = "STREAMSAN_UNPATCH_WAIT_MS";
inline constexpr std::uint32_t default_unpatch_wait_ms = 20;
inline std::uint32_t parse_unpatch_wait(std::string_view value) {
  if (value.empty()) return default_unpatch_wait_ms;
  try {
    return detail::parse_count(unpatch_wait_variable, value, 1000);
  } catch (const option_error&) {
    throw option_error(std::string(unpatch_wait_variable) + "=" + detail::shown(value) +
                       ": expected milliseconds from 0 to 1000");
  }
}

// STREAMSAN_TABLE_HEADROOM (Note [Tables sized from measured launches] in
// inject/sanitizer_api/launch_tracker.cpp): how many times its kernel's
// largest need a measured launch's table may be when the launch's
// inferred footprint is larger; nothing: 16. More room, fewer launches that
// outgrow their table; less, less to read back. Anything but an integer
// from 1 to 64 is an error naming the variable.
inline constexpr std::string_view table_headroom_variable = "STREAMSAN_TABLE_HEADROOM";
// The tracker's own default (launch_tracker::default_estimate_headroom) too.
inline constexpr std::uint32_t default_table_headroom = 16;
inline std::uint32_t parse_table_headroom(std::string_view value) {
  const auto bad = [&] {
    return option_error(std::string(table_headroom_variable) + "=" + detail::shown(value) +
                        ": expected a factor from 1 to 64");
  };
  if (value.empty()) return default_table_headroom;
  std::uint32_t n = 0;
  try {
    n = detail::parse_count(table_headroom_variable, value, 64);
  } catch (const option_error&) {
    throw bad();
  }
  if (n == 0) throw bad();
  return n;
}

// The library's own variables beside STREAMSAN_OPTIONS: read where it
// starts, and checked by `streamsan run` before the program starts.
struct library_settings {
  // Graph kernel nodes measured (Note [Graph node measurement is on]).
  bool measure_graph_nodes = true;
  // Note [Runtime launch callbacks on request] (inject/capture/dispatcher.h).
  bool runtime_launch_callbacks = false;
  // Note [Waiting for a module's streams to drain]; 0 = off.
  std::uint32_t unpatch_wait_ms = default_unpatch_wait_ms;
  // Note [Decoded on a thread of its own].
  bool decode_thread = true;
  // Note [Tables sized from measured launches].
  std::uint32_t table_headroom = default_table_headroom;
};

// Reads them through `lookup` (a variable's name -> its value, null when
// unset); a bad value throws option_error naming the variable.
template <class Lookup>
library_settings read_library_settings(Lookup&& lookup) {
  library_settings s;
  if (const char* v = lookup(graph_nodes_variable)) s.measure_graph_nodes = parse_graph_nodes(v);
  if (const char* v = lookup(runtime_launch_callbacks_variable)) {
    s.runtime_launch_callbacks = parse_runtime_launch_callbacks(v);
  }
  if (const char* v = lookup(unpatch_wait_variable)) s.unpatch_wait_ms = parse_unpatch_wait(v);
  if (const char* v = lookup(decode_thread_variable)) s.decode_thread = parse_decode_thread(v);
  if (const char* v = lookup(table_headroom_variable)) s.table_headroom = parse_table_headroom(v);
  return s;
}

// Parses "key=value:key=value" over `base`. Values may be quoted with ' or "
// to hold ':' (a path); separators are ':' and whitespace.
// Whether the library reads a Python program's frames from its interpreter
// (where it can: python_frames_readable()), the session and the PyTorch
// support's question alike.
inline bool wants_python_frames(const sanitizer_options& o) noexcept {
  return o.stack_depth > 0 && o.python_frames;
}

inline sanitizer_options parse_options(std::string_view text, sanitizer_options base = {}) {
  std::size_t i = 0;
  const auto is_separator = [](char c) { return c == ':' || c == ' ' || c == '\t' || c == '\n'; };
  while (i < text.size()) {
    if (is_separator(text[i])) {
      ++i;
      continue;
    }
    const std::size_t key_begin = i;
    while (i < text.size() && text[i] != '=' && !is_separator(text[i])) ++i;
    const std::string_view key = text.substr(key_begin, i - key_begin);
    if (i >= text.size() || text[i] != '=') {
      throw option_error("'" + detail::shown(key) + "' at offset " + std::to_string(key_begin) +
                         ": expected key=value");
    }
    ++i;  // '='
    std::string value;
    if (i < text.size() && (text[i] == '"' || text[i] == '\'')) {
      const char quote = text[i++];
      const std::size_t close = text.find(quote, i);
      if (close == std::string_view::npos) {
        throw option_error(detail::shown(key) + ": unterminated quote");
      }
      value = text.substr(i, close - i);
      i = close + 1;
    } else {
      const std::size_t value_begin = i;
      while (i < text.size() && !is_separator(text[i])) ++i;
      value = text.substr(value_begin, i - value_begin);
    }
    set_option(base, key, value);
  }
  return base;
}

// The canonical spelling of every option, which parse_options reads back.
inline std::string to_string(const sanitizer_options& o) {
  std::string out;
  const auto add = [&out](std::string_view key, std::string_view value) {
    if (!out.empty()) out += ':';
    out += key;
    out += '=';
    if (detail::needs_quotes(value)) {
      const char quote = value.find('"') == std::string_view::npos ? '"' : '\'';
      out += quote;
      out += value;
      out += quote;
    } else {
      out += value;
    }
  };
  add("log_path", o.log_path);
  add("format", to_string(o.format));
  add("suppressions", o.suppressions);
  add("builtin_suppressions", o.builtin_suppressions ? "1" : "0");
  add("print_limit", std::to_string(o.print_limit));
  add("halt_on_error", o.halt_on_error ? "1" : "0");
  add("record", o.record);
  add("stack_depth", std::to_string(o.stack_depth));
  add("error_exitcode", std::to_string(o.error_exitcode));
  add("precise", o.precise ? "1" : "0");
  add("capture", to_string(o.capture));
  add("color", o.color == color_mode::always ? "always" : o.color == color_mode::never ? "never"
                                                                                   : "auto");
  add("raw_stacks", o.raw_stacks ? "1" : "0");
  add("cpp_stacks", o.cpp_stacks ? "1" : "0");
  add("python_frames", o.python_frames ? "1" : "0");
  return out;
}

}  // namespace streamsan::injection
