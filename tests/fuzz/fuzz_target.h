// The libFuzzer entry point every target in tests/fuzz/ defines. Built with
// clang -fsanitize=fuzzer (meson -Dfuzz=true) it is driven by libFuzzer;
// otherwise replay_main.cpp drives it over the committed corpus, so CI
// replays every input with the regular compiler (docs/reliability.md).
//
// A target returns 0 for every input, and aborts (fuzz_check) when a
// property it checks does not hold: an abort is a finding, like a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace streamsan::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) noexcept {
  return {reinterpret_cast<const char*>(data), size};
}

[[noreturn]] inline void property_failed(const char* what, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: fuzz property failed: %s\n", file, line, what);
  std::abort();
}

}  // namespace streamsan::fuzz

#define FUZZ_CHECK(condition) \
  ((condition) ? void(0) : ::streamsan::fuzz::property_failed(#condition, __FILE__, __LINE__))
