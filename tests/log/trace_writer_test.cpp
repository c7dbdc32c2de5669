#include "sanitizer/log/trace_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "sanitizer/log/recorder.h"
#include "sanitizer/log/trace_error.h"
#include "sanitizer/log/trace_reader.h"
#include "tests/log/sample_log.h"

namespace streamsan {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;

TEST(TraceWriter, FileStartsWithMagicVersionAndFlags) {
  const auto dir = testing::scratch_dir("writer_header");
  testing::write_trace(dir / "t.bin", {});
  const auto bytes = testing::read_file_bytes(dir / "t.bin");
  ASSERT_GE(bytes.size(), 16u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("STRMSAN\0", 8));
  EXPECT_EQ(bytes.substr(8, 4), std::string("\x04\x00\x00\x00", 4));
  EXPECT_EQ(bytes.substr(12, 4), std::string(4, '\0'));
  // An empty trace is the header and the end marker (tag 127, length 1, 0 records).
  EXPECT_EQ(bytes.substr(16), std::string("\x7f\x01\x00", 3));
}

TEST(TraceWriter, UncreatableFileNamesThePathAndTheCause) {
  const auto dir = testing::scratch_dir("writer_uncreatable");
  const auto path = dir / "missing" / "t.bin";
  try {
    trace_writer writer(path);
    FAIL() << "no error";
  } catch (const trace_error& e) {
    EXPECT_EQ(std::string(e.what()),
              path.string() + ": cannot create trace file: No such file or directory");
    EXPECT_FALSE(e.offset().has_value());
  }
}

TEST(TraceWriter, WriteErrorsSurfaceFromCloseAndNotFromTheDestructor) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  {
    trace_writer quiet("/dev/full");
    quiet.on_record(record{{1, {}, {}}, device_synchronize{0}});
  }  // the destructor swallows the error
  trace_writer writer("/dev/full");
  writer.on_record(record{{1, {}, {}}, device_synchronize{0}});
  try {
    writer.close();
    FAIL() << "no error";
  } catch (const trace_error& e) {
    EXPECT_EQ(std::string(e.what()), "/dev/full: cannot write trace file: No space left on device");
  }
  EXPECT_FALSE(writer.is_open());
  EXPECT_NO_THROW(writer.close());  // only the first close reports
}

TEST(TraceWriter, BufferSizeDoesNotChangeTheFile) {
  const auto dir = testing::scratch_dir("writer_buffer");
  const auto log = testing::sample_log();
  testing::write_trace(dir / "big.bin", log);
  testing::write_trace(dir / "tiny.bin", log, {.symbolize = false, .buffer_bytes = 1});
  EXPECT_EQ(testing::read_file_bytes(dir / "big.bin"), testing::read_file_bytes(dir / "tiny.bin"));
}

TEST(TraceWriter, RecordsAfterCloseAreNotWritten) {
  const auto dir = testing::scratch_dir("writer_after_close");
  trace_writer writer(dir / "t.bin", {.symbolize = false});
  writer.on_record(record{{1, {}, {}}, device_synchronize{0}});
  writer.close();
  writer.on_record(record{{2, {}, {}}, device_synchronize{0}});
  EXPECT_EQ(writer.records_written(), 1u);
  trace_reader reader(dir / "t.bin");
  ASSERT_NE(reader.next(), nullptr);
  EXPECT_EQ(reader.next(), nullptr);
  EXPECT_TRUE(reader.complete());
}

[[gnu::noinline]] void emit_from_named_function(recorder& rec) {
  rec.emit(device_synchronize{0});
  asm volatile("");  // keeps the call from becoming a tail call
}

TEST(TraceWriter, CloseSymbolizesEachFrameAddressOnce) {
  const auto dir = testing::scratch_dir("writer_symbols");
  {
    recorder rec({.capture_stacks = true, .stack_depth = 8});
    trace_writer writer(dir / "t.bin");
    rec.add_sink(writer);
    for (int i = 0; i < 3; ++i) emit_from_named_function(rec);
    rec.emit(device_synchronize{1});
    rec.remove_sink(writer);
    writer.close();
  }
  trace_reader reader(dir / "t.bin");
  std::set<std::uint64_t> stack_frames;
  std::map<std::uint64_t, int> symbolized;
  std::vector<frame_symbol> symbols;
  std::vector<std::string> functions, files;
  bool symbols_started = false;
  while (const record* r = reader.next()) {
    if (const auto* s = std::get_if<stack_define>(&r->body)) {
      EXPECT_FALSE(symbols_started) << "stacks after the symbols";
      stack_frames.insert(s->frames.begin(), s->frames.end());
    } else if (const auto* f = std::get_if<frame_symbol>(&r->body)) {
      symbols_started = true;
      ++symbolized[f->address];
      functions.emplace_back(f->function);
      files.emplace_back(f->file);
      EXPECT_FALSE(f->module.empty()) << "no module for " << f->address;
    } else {
      EXPECT_FALSE(symbols_started) << "records after the symbols";
    }
  }
  ASSERT_FALSE(stack_frames.empty());
  EXPECT_EQ(symbolized.size(), stack_frames.size());
  for (const auto& [address, times] : symbolized) {
    EXPECT_TRUE(stack_frames.count(address)) << address;
    EXPECT_EQ(times, 1) << address;
  }
  EXPECT_THAT(functions, ::testing::Contains(HasSubstr("emit_from_named_function")));
  EXPECT_THAT(files, ::testing::Contains(EndsWith("trace_writer_test.cpp")));
}

}  // namespace
}  // namespace streamsan
