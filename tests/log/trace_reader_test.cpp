// Malformed traces are rejected with a message that names the file, the byte
// offset and the cause. The files are built byte by byte as
// docs/trace-format.md describes them.
#include "sanitizer/log/trace_reader.h"

#include <gtest/gtest.h>

#include "sanitizer/log/record_names.h"
#include "sanitizer/log/trace_error.h"
#include "sanitizer/log/trace_format.h"
#include "tests/log/sample_log.h"
#include "tests/log/trace_bytes.h"

namespace streamsan {
namespace {

using testing::end_marker;
using testing::header;
using testing::rec;
using testing::tag;
using testing::varint;

// Reads everything; returns the error message, or "" when the trace is valid.
std::string read_error(const std::string& bytes, trace_reader_options options = {}) {
  try {
    auto reader = trace_reader::from_bytes("x.bin", bytes, options);
    while (reader.next() != nullptr) {
    }
    return {};
  } catch (const trace_error& e) {
    return e.what();
  }
}

TEST(TraceReader, TagsAreTheDocumentedOnes) {
  // docs/trace-format.md lists these; a change breaks every stored trace.
  EXPECT_EQ(tag<string_define>(), 1u);
  EXPECT_EQ(tag<kernel_launch>(), 21u);
  EXPECT_EQ(tag<unmodelled_call>(), 31u);
  EXPECT_EQ(tag<thread_exit>(), 32u);
}

TEST(TraceReader, AcceptsAMinimalTrace) {
  EXPECT_EQ(read_error(header() + end_marker(0)), "");
  EXPECT_EQ(read_error(header() + rec<device_synchronize>(varint(0)) + end_marker(1)), "");
}

TEST(TraceReader, RejectsBadMagic) {
  EXPECT_EQ(read_error("NOT A TRACE FILE" + end_marker(0)),
            "x.bin: offset 0: bad magic: not a streamsan trace file");
}

TEST(TraceReader, RejectsAShortHeader) {
  EXPECT_EQ(read_error("STRMS"),
            "x.bin: offset 0: truncated header: the file has 5 bytes, a trace header needs 16");
  EXPECT_EQ(read_error(""),
            "x.bin: offset 0: truncated header: the file has 0 bytes, a trace header needs 16");
}

TEST(TraceReader, RejectsAnotherVersion) {
  EXPECT_EQ(read_error(header(9) + end_marker(0)),
            "x.bin: offset 8: unsupported trace format version 9 (this streamsan reads version 4)");
}

TEST(TraceReader, RejectsUnknownFlags) {
  EXPECT_EQ(read_error(header(trace_format::version, 4) + end_marker(0)),
            "x.bin: offset 12: unknown flags 0x4");
}

TEST(TraceReader, RejectsAnUnknownRecordKind) {
  EXPECT_EQ(read_error(header() + varint(77) + varint(0) + end_marker(1)),
            "x.bin: offset 16: record kind 77 is unknown");
  EXPECT_EQ(read_error(header() + varint(0) + varint(0) + end_marker(1)),
            "x.bin: offset 16: record kind 0 is unknown");
}

TEST(TraceReader, RejectsARecordLongerThanTheFile) {
  EXPECT_EQ(read_error(header() + varint(tag<stream_create>()) + varint(40) + std::string(12, 'z')),
            "x.bin: offset 18: truncated record: expected 40 bytes, 12 remain");
}

TEST(TraceReader, RejectsAFileEndingInsideARecordHeader) {
  EXPECT_EQ(read_error(header() + varint(tag<stream_create>())),
            "x.bin: offset 17: truncated record header: the file ends inside the record length");
  EXPECT_EQ(read_error(header() + "\x85"),
            "x.bin: offset 16: truncated record header: the file ends inside the record kind");
}

TEST(TraceReader, RejectsAVarintOverflowInTheRecordLength) {
  EXPECT_EQ(read_error(header() + varint(tag<stream_create>()) + std::string(11, '\xff')),
            "x.bin: offset 17: varint overflow in the record length");
}

TEST(TraceReader, RejectsATraceWithoutEndMarkerUnlessAllowed) {
  const std::string bytes = header() + rec<device_synchronize>(varint(0));
  EXPECT_EQ(read_error(bytes),
            "x.bin: offset 22: truncated trace: no end-of-trace marker after 1 records (did the "
            "writing process exit without closing the trace?)");
  auto reader = trace_reader::from_bytes("x.bin", bytes, {.allow_missing_end = true});
  EXPECT_NE(reader.next(), nullptr);
  EXPECT_EQ(reader.next(), nullptr);
  EXPECT_FALSE(reader.complete());
}

TEST(TraceReader, RejectsACountLargerThanTheRecord) {
  // stack_define: id 1, then 1000 frames in a record with 2 bytes left.
  EXPECT_EQ(read_error(header() + rec<stack_define>(varint(1) + varint(1000) + "\x01\x02") +
                       end_marker(1)),
            "x.bin: offset 22: stack_define record: field 'frames': count 1000 exceeds the 2 "
            "bytes left in the record");
}

TEST(TraceReader, RejectsATextLongerThanTheRecord) {
  EXPECT_EQ(read_error(header() + rec<string_define>(varint(1) + varint(9) + "abc") +
                       end_marker(1)),
            "x.bin: offset 22: string_define record: field 'text': count 9 exceeds the 3 bytes "
            "left in the record");
}

TEST(TraceReader, RejectsAnEnumValueOutOfRange) {
  // stream_create: stream 1, device 0, flavor 9, priority 0.
  EXPECT_EQ(read_error(header() + rec<stream_create>(varint(1) + varint(0) + varint(9) + varint(0)) +
                       end_marker(1)),
            "x.bin: offset 23: stream_create record: field 'flavor': enum value 9 is out of range");
  // An access whose mode is 0 (access_mode starts at read = 1).
  EXPECT_EQ(read_error(header() +
                       rec<kernel_launch>(varint(1) + varint(0) + varint(1) + varint(1) +
                                          varint(0) + varint(4) + varint(0)) +
                       end_marker(1)),
            "x.bin: offset 27: kernel_launch record: field 'mode': enum value 0 is out of range");
}

TEST(TraceReader, RejectsABooleanOtherThanZeroOrOne) {
  EXPECT_EQ(read_error(header() + rec<stream_query>(varint(1) + "\x07") + end_marker(1)),
            "x.bin: offset 22: stream_query record: field 'complete': boolean value 7 is not 0 "
            "or 1");
}

TEST(TraceReader, RejectsAnIdWiderThan32Bits) {
  EXPECT_EQ(read_error(header() + rec<stream_destroy>(varint(1ull << 32)) + end_marker(1)),
            "x.bin: offset 21: stream_destroy record: field 'stream': value 4294967296 does not "
            "fit 32 bits");
  EXPECT_EQ(read_error(header() + rec<device_synchronize>(varint(1ull << 40)) + end_marker(1)),
            "x.bin: offset 21: device_synchronize record: field 'device': value 549755813888 "
            "does not fit 32 bits");
}

TEST(TraceReader, RejectsAVarintOverflowInAField) {
  EXPECT_EQ(read_error(header() + rec<stream_destroy>(std::string(10, '\xff') + "\x01") +
                       end_marker(1)),
            "x.bin: offset 21: stream_destroy record: field 'stream': varint overflow (more than "
            "64 bits)");
}

TEST(TraceReader, RejectsARecordEndingInsideAField) {
  EXPECT_EQ(read_error(header() + rec<stream_destroy>("\x80") + end_marker(1)),
            "x.bin: offset 21: stream_destroy record: field 'stream': truncated: the record ends "
            "inside a varint");
}

TEST(TraceReader, RejectsAStringUsedBeforeItsDefinition) {
  EXPECT_EQ(read_error(header() + rec<kernel_launch>(varint(1) + varint(5) + varint(0)) +
                       end_marker(1)),
            "x.bin: offset 22: kernel_launch record: field 'kernel': string#5 is used before its "
            "definition");
}

TEST(TraceReader, RejectsAStackUsedBeforeItsDefinition) {
  const std::string payload = std::string("\x00\x00\x03", 3) + varint(0);
  EXPECT_EQ(read_error(header() + varint(tag<device_synchronize>()) + varint(payload.size()) +
                       payload + end_marker(1)),
            "x.bin: offset 20: device_synchronize record: field 'stack': stack#3 is used before "
            "its definition");
}

TEST(TraceReader, RejectsDefinitionsOutOfOrder) {
  EXPECT_EQ(read_error(header() + rec<string_define>(varint(2) + varint(1) + "a") + end_marker(1)),
            "x.bin: offset 21: string_define record: field 'id': string#2 is defined out of order "
            "(the next new id is string#1)");
  EXPECT_EQ(read_error(header() + rec<stack_define>(varint(0) + varint(0)) + end_marker(1)),
            "x.bin: offset 21: stack_define record: field 'id': stack#0 cannot be defined (0 "
            "means none)");
  // Redefining an id (a recorder replays definitions to a late sink) is fine.
  EXPECT_EQ(read_error(header() + rec<string_define>(varint(1) + varint(1) + "a") +
                       rec<string_define>(varint(1) + varint(1) + "a") + end_marker(2)),
            "");
}

TEST(TraceReader, RejectsUnusedBytesInARecord) {
  EXPECT_EQ(read_error(header() + rec<stream_destroy>(varint(1) + std::string(2, '\0')) +
                       end_marker(1)),
            "x.bin: offset 22: stream_destroy record: 2 unused bytes at the end of the record "
            "(its length is 6)");
}

TEST(TraceReader, RejectsAByteRangeThatWraps) {
  // memset_record: stream 1, dst {alloc 1, offset 2^64-1, size 2}, ...
  EXPECT_EQ(read_error(header() +
                       rec<memset_record>(varint(1) + varint(1) + varint(~0ull) + varint(2) +
                                          varint(0) + "\x01") +
                       end_marker(1)),
            "x.bin: offset 22: memset_record record: field 'dst': byte range offset "
            "18446744073709551615 + size 2 overflows");
}

TEST(TraceReader, RejectsAGraphEdgeToAMissingNode) {
  // graph 1, one node {kernel, no name, no accesses, no stack, no memory},
  // one edge 0 -> 5.
  EXPECT_EQ(read_error(header() +
                       rec<graph_instantiate>(varint(1) + varint(1) + varint(0) + varint(0) +
                                              varint(0) + varint(0) + varint(0) + varint(1) +
                                              varint(0) + varint(5)) +
                       end_marker(1)),
            "x.bin: offset 18: graph_instantiate record: field 'edges': edge 0 -> 5 names a "
            "missing node (nodes are 0 to 0)");
}

TEST(TraceReader, RejectsAWrongEndMarker) {
  EXPECT_EQ(read_error(header() + end_marker(3)),
            "x.bin: offset 16: end-of-trace marker counts 3 records, the trace has 0");
  EXPECT_EQ(read_error(header() + varint(127) + varint(2) + std::string(2, '\0')),
            "x.bin: offset 18: malformed end-of-trace marker");
}

TEST(TraceReader, RejectsBytesAfterTheEndMarker) {
  EXPECT_EQ(read_error(header() + end_marker(0) + "xy"),
            "x.bin: offset 19: 2 trailing bytes after the end-of-trace marker");
}

TEST(TraceReader, StaysFailedAfterAnError) {
  auto reader = trace_reader::from_bytes(
      "x.bin", header() + rec<device_synchronize>(varint(0)) + varint(77) + varint(0) +
                   rec<device_synchronize>(varint(0)) + end_marker(2));
  ASSERT_NE(reader.next(), nullptr);
  for (int i = 0; i < 2; ++i) {
    try {
      reader.next();
      FAIL() << "no error";
    } catch (const trace_error& e) {
      EXPECT_EQ(std::string(e.what()), "x.bin: offset 22: record kind 77 is unknown");
    }
  }
}

TEST(TraceReader, MissingFileNamesThePathAndTheCause) {
  const auto dir = testing::scratch_dir("reader_missing");
  try {
    trace_reader reader(dir / "none.bin");
    FAIL() << "no error";
  } catch (const trace_error& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir / "none.bin").string() + ": cannot open trace file: No such file or directory");
  }
}

TEST(TraceReader, ATruncatedRealTraceDeliversTheRecordsBeforeTheCut) {
  const auto dir = testing::scratch_dir("reader_cut");
  const auto log = testing::sample_log();
  testing::write_trace(dir / "t.bin", log);
  const auto bytes = testing::read_file_bytes(dir / "t.bin");
  // Cut inside the kernel_launch record's payload.
  auto full = trace_reader::from_bytes("t.bin", bytes);
  std::uint64_t cut = 0;
  std::size_t before = 0;
  while (const record* r = full.next()) {
    if (std::holds_alternative<kernel_launch>(r->body)) break;
    cut = full.offset();
    ++before;
  }
  cut += 4;  // tag, length and two payload bytes of the kernel_launch
  auto reader = trace_reader::from_bytes("t.bin", bytes.substr(0, cut));
  std::size_t delivered = 0;
  try {
    while (reader.next() != nullptr) ++delivered;
    FAIL() << "no error";
  } catch (const trace_error& e) {
    EXPECT_EQ(e.offset(), cut - 2);
    EXPECT_TRUE(e.reason().starts_with("truncated record: expected ")) << e.what();
  }
  EXPECT_EQ(delivered, before);
}

}  // namespace
}  // namespace streamsan
