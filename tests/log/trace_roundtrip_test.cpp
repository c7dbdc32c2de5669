// Every record alternative survives trace_writer -> trace_reader with every
// field intact. The comparisons are written out per type, independently of
// record_fields.h, so a field missing from the field list fails here.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "sanitizer/log/record_names.h"
#include "sanitizer/log/trace_reader.h"
#include "tests/log/sample_log.h"

namespace streamsan {
namespace {

void same(const byte_range& a, const byte_range& b) {
  EXPECT_EQ(a.alloc, b.alloc);
  EXPECT_EQ(a.offset, b.offset);
  EXPECT_EQ(a.size, b.size);
}
void same(std::span<const access> a, std::span<const access> b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    same(a[i].range, b[i].range);
    EXPECT_EQ(a[i].mode, b[i].mode);
    EXPECT_EQ(a[i].origin, b[i].origin);
  }
}
void same(const string_define& a, const string_define& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.text, b.text);
}
void same(const stack_define& a, const stack_define& b) {
  EXPECT_EQ(a.id, b.id);
  ASSERT_EQ(a.frames.size(), b.frames.size());
  for (std::size_t i = 0; i < a.frames.size(); ++i) EXPECT_EQ(a.frames[i], b.frames[i]);
}
void same(const frame_symbol& a, const frame_symbol& b) {
  EXPECT_EQ(a.address, b.address);
  EXPECT_EQ(a.function, b.function);
  EXPECT_EQ(a.file, b.file);
  EXPECT_EQ(a.line, b.line);
  EXPECT_EQ(a.module, b.module);
  EXPECT_EQ(a.module_offset, b.module_offset);
}
void same(const thread_start& a, const thread_start& b) { EXPECT_EQ(a.name, b.name); }
void same(const thread_exit&, const thread_exit&) {}
void same(const stream_create& a, const stream_create& b) {
  EXPECT_EQ(a.stream, b.stream);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.flavor, b.flavor);
  EXPECT_EQ(a.priority, b.priority);
}
void same(const stream_destroy& a, const stream_destroy& b) { EXPECT_EQ(a.stream, b.stream); }
void same(const stream_synchronize& a, const stream_synchronize& b) {
  EXPECT_EQ(a.stream, b.stream);
}
void same(const stream_query& a, const stream_query& b) {
  EXPECT_EQ(a.stream, b.stream);
  EXPECT_EQ(a.complete, b.complete);
}
void same(const stream_wait_stream& a, const stream_wait_stream& b) {
  EXPECT_EQ(a.waiter, b.waiter);
  EXPECT_EQ(a.waited, b.waited);
}
void same(const device_synchronize& a, const device_synchronize& b) {
  EXPECT_EQ(a.device, b.device);
}
void same(const event_create& a, const event_create& b) {
  EXPECT_EQ(a.event, b.event);
  EXPECT_EQ(a.flags, b.flags);
}
void same(const event_destroy& a, const event_destroy& b) { EXPECT_EQ(a.event, b.event); }
void same(const event_record& a, const event_record& b) {
  EXPECT_EQ(a.event, b.event);
  EXPECT_EQ(a.stream, b.stream);
}
void same(const event_wait& a, const event_wait& b) {
  EXPECT_EQ(a.event, b.event);
  EXPECT_EQ(a.stream, b.stream);
}
void same(const event_synchronize& a, const event_synchronize& b) {
  EXPECT_EQ(a.event, b.event);
}
void same(const event_query& a, const event_query& b) {
  EXPECT_EQ(a.event, b.event);
  EXPECT_EQ(a.complete, b.complete);
}
void same(const alloc_record& a, const alloc_record& b) {
  EXPECT_EQ(a.alloc, b.alloc);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.size, b.size);
  EXPECT_EQ(a.address, b.address);
  EXPECT_EQ(a.stream, b.stream);
  EXPECT_EQ(a.parent, b.parent);
  EXPECT_EQ(a.parent_offset, b.parent_offset);
  EXPECT_EQ(a.label, b.label);
}
void same(const free_record& a, const free_record& b) {
  EXPECT_EQ(a.alloc, b.alloc);
  EXPECT_EQ(a.mode, b.mode);
  EXPECT_EQ(a.stream, b.stream);
}
void same(const memcpy_record& a, const memcpy_record& b) {
  EXPECT_EQ(a.stream, b.stream);
  same(a.src, b.src);
  same(a.dst, b.dst);
  EXPECT_EQ(a.src_kind, b.src_kind);
  EXPECT_EQ(a.dst_kind, b.dst_kind);
  EXPECT_EQ(a.async, b.async);
}
void same(const memset_record& a, const memset_record& b) {
  EXPECT_EQ(a.stream, b.stream);
  same(a.dst, b.dst);
  EXPECT_EQ(a.dst_kind, b.dst_kind);
  EXPECT_EQ(a.async, b.async);
}
void same(const kernel_launch& a, const kernel_launch& b) {
  EXPECT_EQ(a.stream, b.stream);
  EXPECT_EQ(a.kernel, b.kernel);
  same(a.accesses, b.accesses);
}
void same(const host_func& a, const host_func& b) {
  EXPECT_EQ(a.stream, b.stream);
  EXPECT_EQ(a.name, b.name);
  same(a.accesses, b.accesses);
}
void same(const host_access& a, const host_access& b) {
  same(a.accesses, b.accesses);
  EXPECT_EQ(a.what, b.what);
}
void same(const graph_capture_begin& a, const graph_capture_begin& b) {
  EXPECT_EQ(a.stream, b.stream);
  EXPECT_EQ(a.graph, b.graph);
}
void same(const graph_capture_end& a, const graph_capture_end& b) {
  EXPECT_EQ(a.stream, b.stream);
  EXPECT_EQ(a.graph, b.graph);
}
void same(const graph_instantiate& a, const graph_instantiate& b) {
  EXPECT_EQ(a.graph, b.graph);
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    EXPECT_EQ(a.nodes[i].kind, b.nodes[i].kind);
    EXPECT_EQ(a.nodes[i].name, b.nodes[i].name);
    same(a.nodes[i].accesses, b.nodes[i].accesses);
    EXPECT_EQ(a.nodes[i].stack, b.nodes[i].stack);
  }
  ASSERT_EQ(a.edges.size(), b.edges.size());
  for (std::size_t i = 0; i < a.edges.size(); ++i) {
    EXPECT_EQ(a.edges[i].from, b.edges[i].from);
    EXPECT_EQ(a.edges[i].to, b.edges[i].to);
  }
}
void same(const graph_launch& a, const graph_launch& b) {
  EXPECT_EQ(a.graph, b.graph);
  EXPECT_EQ(a.stream, b.stream);
}
void same(const nvtx_push& a, const nvtx_push& b) { EXPECT_EQ(a.message, b.message); }
void same(const nvtx_pop&, const nvtx_pop&) {}
void same(const nvtx_mark& a, const nvtx_mark& b) { EXPECT_EQ(a.message, b.message); }
void same(const unmodelled_call& a, const unmodelled_call& b) { EXPECT_EQ(a.api, b.api); }

void same_record(const record& expected, const record& actual) {
  EXPECT_EQ(expected.header.seq, actual.header.seq);
  EXPECT_EQ(expected.header.thread, actual.header.thread);
  EXPECT_EQ(expected.header.stack, actual.header.stack);
  ASSERT_EQ(expected.body.index(), actual.body.index())
      << record_kind_name(expected.body) << " came back as " << record_kind_name(actual.body);
  std::visit(
      [&](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        SCOPED_TRACE(std::string(record_kind_name(expected.body)));
        same(e, std::get<T>(actual.body));
      },
      expected.body);
}

TEST(TraceRoundTrip, SampleLogUsesEveryRecordKind) {
  std::set<std::size_t> kinds;
  for (const auto& r : testing::sample_log()) kinds.insert(r.body.index());
  EXPECT_EQ(kinds.size(), record_kind_count);
}

TEST(TraceRoundTrip, EveryRecordKindReadsBackFieldByField) {
  const auto dir = testing::scratch_dir("roundtrip");
  const auto log = testing::sample_log();
  testing::write_trace(dir / "t.bin", log);

  trace_reader reader(dir / "t.bin");
  EXPECT_EQ(reader.version(), access_log_version);
  for (const auto& expected : log) {
    const record* actual = reader.next();
    ASSERT_NE(actual, nullptr) << "trace ended before " << record_kind_name(expected.body);
    same_record(expected, *actual);
  }
  EXPECT_EQ(reader.next(), nullptr);
  EXPECT_TRUE(reader.complete());
  EXPECT_EQ(reader.records_read(), log.size());
}

TEST(TraceRoundTrip, ExtremeValuesSurvive) {
  const auto dir = testing::scratch_dir("extremes");
  const std::uint64_t max64 = ~std::uint64_t{0};
  const std::vector<record> log = {
      {{max64, thread_id{0xffffffffu}, stack_id{}},
       stream_create{stream_id{0xffffffffu}, INT32_MIN, stream_flavor::legacy_default, INT32_MAX}},
      // The sequence may go backwards (the delta is signed and wraps).
      {{0, thread_id{}, stack_id{}}, device_synchronize{-1}},
      {{5, thread_id{}, stack_id{}},
       alloc_record{alloc_id{1}, memory_kind::stream_ordered, 0, max64, max64, stream_id{},
                    alloc_id{}, max64, string_id{}}},
      {{6, thread_id{}, stack_id{}}, string_define{string_id{1}, std::string_view("a\0b", 3)}},
  };
  testing::write_trace(dir / "t.bin", log);
  trace_reader reader(dir / "t.bin");
  for (const auto& expected : log) {
    const record* actual = reader.next();
    ASSERT_NE(actual, nullptr);
    same_record(expected, *actual);
  }
  EXPECT_EQ(reader.next(), nullptr);
}

TEST(TraceRoundTrip, ReadTraceFeedsEveryRecordToASink) {
  const auto dir = testing::scratch_dir("read_trace");
  const auto log = testing::sample_log();
  testing::write_trace(dir / "t.bin", log);
  struct counting_sink : record_sink {
    std::vector<std::size_t> kinds;
    void on_record(const record& r) override { kinds.push_back(r.body.index()); }
  } sink;
  EXPECT_EQ(read_trace(dir / "t.bin", sink), log.size());
  ASSERT_EQ(sink.kinds.size(), log.size());
  for (std::size_t i = 0; i < log.size(); ++i) EXPECT_EQ(sink.kinds[i], log[i].body.index());
}

TEST(TraceRoundTrip, ReadingFromMemoryMatchesReadingTheFile) {
  const auto dir = testing::scratch_dir("from_bytes");
  const auto log = testing::sample_log();
  testing::write_trace(dir / "t.bin", log);
  auto reader = trace_reader::from_bytes("memory", testing::read_file_bytes(dir / "t.bin"));
  std::size_t n = 0;
  while (const record* r = reader.next()) same_record(log[n++], *r);
  EXPECT_EQ(n, log.size());
}

}  // namespace
}  // namespace streamsan
