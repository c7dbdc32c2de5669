// Fuzz target: `streamsan dump`. Whatever records a trace yields before it
// is refused, each becomes exactly one line holding one JSON object with its
// seq and kind, even when its strings are not UTF-8.
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sanitizer/log/jsonl_dump.h"
#include "sanitizer/log/trace_error.h"
#include "sanitizer/log/trace_reader.h"
#include "tests/fuzz/fuzz_target.h"

namespace {

struct counting_dumper final : streamsan::record_sink {
  explicit counting_dumper(std::ostream& out) : dumper(out) {}
  void on_record(const streamsan::record& r) override {
    dumper.on_record(r);
    ++records;
  }
  streamsan::jsonl_dumper dumper;
  std::size_t records = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace streamsan;
  std::ostringstream out;
  counting_dumper sink(out);
  try {
    auto reader = trace_reader::from_bytes("fuzz.trace", std::string(fuzz::as_text(data, size)),
                                           {.allow_missing_end = true});
    reader.read_all(sink);
  } catch (const trace_error&) {
    // Refusals are the trace_reader target's subject; the lines written
    // before one must still be valid.
  }
  std::istringstream lines(out.str());
  std::string line;
  std::size_t n = 0;
  while (std::getline(lines, line)) {
    // Strict parsing: the dump must be valid JSON (UTF-8 included).
    const auto object = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    FUZZ_CHECK(object.is_object());
    FUZZ_CHECK(object.contains("seq") && object["seq"].is_number_unsigned());
    FUZZ_CHECK(object.contains("kind") && object["kind"].is_string());
    ++n;
  }
  FUZZ_CHECK(n == sink.records);
  return 0;
}
