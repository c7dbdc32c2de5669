// Fuzz target: a trace file through everything `streamsan analyze` does with
// it: the reader (Note [A trace is hostile input]), the engine, and the
// report in one of the three formats. Any input is either read or refused
// with a trace_error that names the byte offset; whatever was read must
// analyze and print without a crash, a leak or a hang.
#include <sstream>
#include <string>

#include "sanitizer/engine/engine.h"
#include "sanitizer/log/trace_error.h"
#include "sanitizer/log/trace_reader.h"
#include "sanitizer/report/report_format.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace streamsan;
  // The input is a whole trace file; the options come from its size so that
  // corpus files stay real traces (`streamsan analyze` reads them as they are).
  const bool allow_truncated = (size / 3) % 2 == 1;
  const auto format = static_cast<report_format>(size % 3);

  engine eng;
  try {
    auto reader = trace_reader::from_bytes("fuzz.trace", std::string(fuzz::as_text(data, size)),
                                           {.allow_missing_end = allow_truncated});
    reader.read_all(eng);
  } catch (const trace_error& e) {
    // Every refusal names the file and, past the header checks that cannot
    // fail on an in-memory trace, the offset of the bad byte.
    FUZZ_CHECK(std::string_view(e.what()).starts_with("fuzz.trace: offset "));
  }
  symbolizer symbols(eng.tables(), symbol_source::log_only);
  const report_input input{.diagnostics = eng.diagnostics(),
                           .tables = eng.tables(),
                           .unmodelled_calls = &eng.unmodelled_calls(),
                           .records_processed = eng.records_processed()};
  std::ostringstream out;
  print_report(out, format, input, symbols, {});
  return 0;
}
