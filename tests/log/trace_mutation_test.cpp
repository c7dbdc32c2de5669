// Hostile input: every prefix of a valid trace and thousands of random
// mutations of it must either read cleanly or fail with a trace_error, never
// crash, hang or throw anything else (Note [A trace is hostile input]).
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "sanitizer/log/jsonl_dump.h"
#include "sanitizer/log/log_tables.h"
#include "sanitizer/log/trace_error.h"
#include "sanitizer/log/trace_reader.h"
#include "tests/log/sample_log.h"

namespace streamsan {
namespace {

// What a consumer does with the records: absorb definitions and print.
struct consuming_sink : record_sink {
  log_tables tables;
  std::ostringstream out;
  jsonl_dumper dumper{out};
  void on_record(const record& r) override {
    tables.absorb(r.body);
    dumper.on_record(r);
  }
};

enum class outcome { accepted, rejected };

outcome consume(const std::string& bytes) {
  consuming_sink sink;
  try {
    auto reader = trace_reader::from_bytes("m.bin", bytes);
    reader.read_all(sink);
    return outcome::accepted;
  } catch (const trace_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("m.bin: ", 0), 0u) << e.what();
    return outcome::rejected;
  }
}

std::string valid_trace() {
  const auto dir = testing::scratch_dir("mutation");
  testing::write_trace(dir / "t.bin", testing::sample_log());
  return testing::read_file_bytes(dir / "t.bin");
}

TEST(TraceMutation, EveryProperPrefixIsRejected) {
  const auto bytes = valid_trace();
  ASSERT_EQ(consume(bytes), outcome::accepted);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(consume(bytes.substr(0, n)), outcome::rejected) << "prefix of " << n << " bytes";
  }
}

TEST(TraceMutation, RandomMutationsNeverCrash) {
  const auto bytes = valid_trace();
  std::mt19937_64 random(20240611);
  std::size_t rejected = 0;
  constexpr int iterations = 4000;
  for (int i = 0; i < iterations; ++i) {
    std::string m = bytes;
    const auto at = [&](std::size_t size) {
      return std::uniform_int_distribution<std::size_t>(0, size - 1)(random);
    };
    const auto byte = [&] { return static_cast<char>(random() & 0xff); };
    const int edits = 1 + static_cast<int>(random() % 4);
    for (int e = 0; e < edits && !m.empty(); ++e) {
      switch (random() % 6) {
        case 0: m[at(m.size())] = byte(); break;                                    // overwrite
        case 1: m[at(m.size())] ^= static_cast<char>(1u << (random() % 8)); break;  // bit flip
        case 2: m.insert(at(m.size()), 1, byte()); break;                           // insert
        case 3: m.erase(at(m.size()), 1 + random() % 8); break;                     // delete
        case 4: m[at(m.size())] = static_cast<char>(0xff); break;  // huge varint groups
        case 5: {                                                  // duplicate a chunk
          const auto from = at(m.size());
          const auto chunk = m.substr(from, 1 + random() % 24);
          m.insert(at(m.size()), chunk);
          break;
        }
      }
    }
    if (consume(m) == outcome::rejected) ++rejected;
  }
  // Most mutations must be caught; a few (a changed seq delta, a different
  // but valid id) legitimately still form a valid trace.
  EXPECT_GT(rejected, iterations * 3 / 4) << rejected << " of " << iterations << " rejected";
}

}  // namespace
}  // namespace streamsan
