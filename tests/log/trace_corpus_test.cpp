// The fuzz corpora of trace inputs (tests/fuzz/corpus/trace_reader and
// jsonl_dump) are in the current trace format. Written in version 2, they
// were refused at the header once the format reached 4, and their replay
// tested the header check only, unnoticed (docs/reliability.md): a format
// change now fails here until the corpora are fuzzed anew
// (tests/fuzz/fuzz.sh TARGET).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "sanitizer/log/trace_format.h"

namespace streamsan {
namespace {

namespace fs = std::filesystem;

struct corpus_counts {
  int inputs = 0;   // the merged inputs (named seed-* inputs are left out)
  int current = 0;  // of them, with the magic and the current version
};

corpus_counts count(const fs::path& folder) {
  corpus_counts c;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (entry.path().filename().string().starts_with("seed-")) continue;
    ++c.inputs;
    std::array<char, trace_format::header_size> header{};
    std::ifstream in(entry.path(), std::ios::binary);
    if (!in.read(header.data(), header.size())) continue;
    std::uint32_t version = 0;  // little-endian on every host we build for
    std::memcpy(&version, header.data() + trace_format::magic.size(), sizeof version);
    if (std::memcmp(header.data(), trace_format::magic.data(), trace_format::magic.size()) == 0 &&
        version == trace_format::version) {
      ++c.current;
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
