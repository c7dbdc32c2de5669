// Bad and hostile traces (tests/log/hostile_traces.h) go through what
// `streamsan analyze` does with them: the reader, the engine and a report.
// Each bad one is refused naming its byte offset; each hostile one is read
// and analyzed; and no allocation ever comes near what a trace claims
// (lengths and counts up to 2^62, an allocation of 2^64 - 1 bytes): this
// program replaces the global allocation functions to see every request.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <sstream>

#include "sanitizer/engine/engine.h"
#include "sanitizer/log/trace_error.h"
#include "sanitizer/log/trace_reader.h"
#include "sanitizer/report/report_format.h"
#include "tests/log/hostile_traces.h"
#include "tests/log/sample_log.h"

namespace {

std::atomic<bool> watching{false};
std::atomic<std::size_t> largest_request{0};

void* counted_allocation(std::size_t n) {
  if (watching.load(std::memory_order_relaxed)) {
    std::size_t seen = largest_request.load(std::memory_order_relaxed);
    while (n > seen && !largest_request.compare_exchange_weak(seen, n)) {
    }
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}

}  // namespace

void* operator new(std::size_t n) { return counted_allocation(n); }
void* operator new[](std::size_t n) { return counted_allocation(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace streamsan {
namespace {

// No single allocation while reading and analyzing a trace of a few hundred
// bytes may exceed this, whatever the trace claims. (The reader's fixed
// buffers and the engine's tables stay far below it.)
constexpr std::size_t allocation_bound = 64 * 1024;

struct analysis {
  std::string error;  // the trace_error, "" if none
  std::size_t largest = 0;
  std::size_t diagnostics = 0;
};

analysis analyze(const std::filesystem::path& path, bool allow_truncated) {
  analysis result;
  largest_request = 0;
  watching = true;
  {
    engine eng;
    try {
      trace_reader reader(path, {.allow_missing_end = allow_truncated});
      reader.read_all(eng);
    } catch (const trace_error& e) {
      result.error = e.what();
    }
    symbolizer symbols(eng.tables(), symbol_source::log_only);
    const report_input input{.diagnostics = eng.diagnostics(), .tables = eng.tables()};
    std::ostringstream out;
    print_report(out, report_format::sarif, input, symbols, {});
    result.diagnostics = eng.diagnostics().size();
  }
  watching = false;
  result.largest = largest_request;
  return result;
}

TEST(HostileTrace, EachBadTraceIsRefusedAtItsOffsetWithoutAllocatingWhatItClaims) {
  const auto dir = testing::scratch_dir("hostile_bad");
  for (const auto& bad : testing::bad_traces()) {
    const auto path = dir / (bad.name + ".trace");
    testing::write_file_bytes(path, bad.bytes);
    const auto result = analyze(path, false);
    EXPECT_EQ(result.error, path.string() + ": " + bad.message) << bad.name;
    EXPECT_LT(result.largest, allocation_bound) << bad.name;
  }
}

TEST(HostileTrace, HostileValuesAreAnalyzedWithoutAllocatingWhatTheyClaim) {
  const auto dir = testing::scratch_dir("hostile_valid");
  for (const auto& hostile : testing::hostile_valid_traces()) {
    const auto path = dir / (hostile.name + ".trace");
    testing::write_file_bytes(path, hostile.bytes);
    const auto result = analyze(path, true);
    EXPECT_EQ(result.error, "") << hostile.name;
    EXPECT_LT(result.largest, allocation_bound) << hostile.name;
  }
}

TEST(HostileTrace, TheWholeAllocationRaceIsFoundAndTheOrderedOneIsNot) {
  // The hostile values do not disturb the analysis: the unordered memset of
  // all 2^64 - 1 bytes and the launch that touches three of them race.
  const auto dir = testing::scratch_dir("hostile_verdicts");
  std::size_t checked = 0;
  for (const auto& hostile : testing::hostile_valid_traces()) {
    const auto path = dir / (hostile.name + ".trace");
    testing::write_file_bytes(path, hostile.bytes);
    const auto result = analyze(path, true);
    const bool ordered = hostile.name != "huge_allocation";
    EXPECT_EQ(result.diagnostics, ordered ? 0u : 1u) << hostile.name;
    ++checked;
  }
  EXPECT_EQ(checked, 3u);
}

TEST(HostileTrace, TheAllocationWatchSeesLargeRequests) {
  // The watch itself works (a direct call: a new-expression may be elided).
  largest_request = 0;
  watching = true;
  void* large = ::operator new(allocation_bound * 2);
  watching = false;
  ::operator delete(large);
  EXPECT_EQ(largest_request.load(), allocation_bound * 2);
}

}  // namespace
}  // namespace streamsan
