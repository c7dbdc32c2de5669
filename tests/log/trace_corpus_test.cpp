// The fuzz corpora of trace inputs (tests/fuzz/corpus/trace_reader and
// jsonl_dump) are in the current trace format. Written in version 2, they
// were refused at the header once the format reached 4, and their replay
// tested the header check only, unnoticed (docs/reliability.md): a format
// change now fails here until the corpora are fuzzed anew
// (tests/fuzz/fuzz.sh TARGET).
#include <gtest/gtest.h>

#include <filesystem>

#include "sanitizer/log/trace_error.h"
#include "sanitizer/log/trace_format.h"
#include "sanitizer/log/trace_reader.h"

namespace streamsan {
namespace {

namespace fs = std::filesystem;

struct corpus_counts {
  int inputs = 0;   // the merged inputs (named seed-* inputs are left out)
  int current = 0;  // of them, those whose header this reader accepts
};

corpus_counts count(const fs::path& folder) {
  corpus_counts c;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (entry.path().filename().string().starts_with("seed-")) continue;
    ++c.inputs;
    try {
      trace_reader reader(entry.path());  // checks magic, version and flags
      ++c.current;
    } catch (const trace_error&) {
    }
  }
  return c;
}

class TraceCorpus : public ::testing::TestWithParam<const char*> {};

TEST_P(TraceCorpus, MostInputsAreInTheCurrentFormat) {
  const fs::path folder = fs::path(STREAMSAN_FUZZ_CORPUS) / GetParam();
  ASSERT_TRUE(fs::is_directory(folder)) << folder;
  const corpus_counts c = count(folder);
  ASSERT_GT(c.inputs, 0) << folder;
  EXPECT_GE(2 * c.current, c.inputs)
      << c.current << " of " << c.inputs << " inputs in " << folder
      << " are trace format version " << trace_format::version
      << ": fuzz the corpus anew (tests/fuzz/fuzz.sh " << GetParam() << ")";
}

INSTANTIATE_TEST_SUITE_P(FuzzCorpora, TraceCorpus, ::testing::Values("trace_reader", "jsonl_dump"));

}  // namespace
}  // namespace streamsan
