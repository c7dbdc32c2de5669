#include "runtime/runtime.h"

#include <charconv>
#include <cstdlib>
#include <string>

namespace streamsan::rt {
namespace {

std::string_view env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string_view{} : std::string_view(value);
}

[[noreturn]] void bad(const char* name, std::string_view value, std::string_view expected) {
  throw usage_error(std::string(name) + "=" + std::string(value) + ": expected " +
                    std::string(expected));
}

bool flag(const char* name, bool fallback) {
  const auto v = env(name);
  if (v.empty()) return fallback;
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  bad(name, v, "1 or 0");
}

std::uint64_t number(const char* name, std::uint64_t fallback) {
  const auto v = env(name);
  if (v.empty()) return fallback;
  std::uint64_t out = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc{} || end != v.data() + v.size()) bad(name, v, "a non-negative integer");
  return out;
}

}  // namespace

runtime_options options_from_environment() {
  runtime_options o;
  o.sanitize = flag("STREAMSAN", false);
  o.backend = parse_backend_kind(env("STREAMSAN_BACKEND"), "STREAMSAN_BACKEND");
  o.trace_path = std::string(env("STREAMSAN_TRACE"));
  o.capture_stacks = flag("STREAMSAN_STACKS", true);
  const auto exit_code = number("STREAMSAN_EXITCODE", 66);
  if (exit_code > 255) bad("STREAMSAN_EXITCODE", env("STREAMSAN_EXITCODE"), "an exit status 0..255");
  o.exit_code_on_report = static_cast<int>(exit_code);
  o.sim.seed = number("STREAMSAN_SIM_SEED", o.sim.seed);
  o.sim.device_count = static_cast<int>(number("STREAMSAN_SIM_DEVICES", 2));
  if (const auto v = env("STREAMSAN_SIM_POLICY"); !v.empty()) {
    if (v == "eager") o.sim.policy = sim_policy::eager;
    else if (v == "random") o.sim.policy = sim_policy::random;
    else bad("STREAMSAN_SIM_POLICY", v, "eager or random");
  }
  if (const auto v = env("STREAMSAN_DEFAULT_STREAM"); !v.empty()) {
    if (v == "per-thread") o.per_thread_default_stream = true;
    else if (v == "legacy") o.per_thread_default_stream = false;
    else bad("STREAMSAN_DEFAULT_STREAM", v, "legacy or per-thread");
  }
  if (const auto v = env("STREAMSAN_SYNC_DEBUG"); !v.empty()) {
    if (v == "off") o.sync_debug = sync_debug_mode::off;
    else if (v == "warn") o.sync_debug = sync_debug_mode::warn;
    else if (v == "error") o.sync_debug = sync_debug_mode::error;
    else bad("STREAMSAN_SYNC_DEBUG", v, "off, warn or error");
  }
  if (const auto v = env("STREAMSAN_COLOR"); !v.empty()) {
    const auto mode = parse_color_mode(v);
    if (!mode) bad("STREAMSAN_COLOR", v, "auto, always or never");
    o.report_color = *mode;
  }
  const auto depth = number("STREAMSAN_STACK_DEPTH", 0);
  if (depth > 1000) bad("STREAMSAN_STACK_DEPTH", env("STREAMSAN_STACK_DEPTH"), "0..1000");
  o.report_stack_depth = static_cast<std::uint32_t>(depth);
  o.raw_stacks = flag("STREAMSAN_RAW_STACKS", false);
  return o;
}

}  // namespace streamsan::rt
