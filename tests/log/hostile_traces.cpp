#include "tests/log/hostile_traces.h"

#include "sanitizer/log/record.h"
#include "tests/log/trace_bytes.h"

namespace streamsan::testing {
namespace {

std::string hex_flags(std::uint32_t flags) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), digits[flags % 16]);
    flags /= 16;
  } while (flags != 0);
  return out;
}

constexpr std::uint64_t huge = std::uint64_t{1} << 62;

}  // namespace

std::vector<bad_trace> bad_traces() {
  const std::string h = header();
  const std::string version = std::to_string(trace_format::version);
  return {
      {"empty", "",
       "offset 0: truncated header: the file has 0 bytes, a trace header needs 16"},
      {"truncated_header", "STRMSAN",
       "offset 0: truncated header: the file has 7 bytes, a trace header needs 16"},
      {"not_a_trace", "PK\x03\x04 this is a zip file, not a trace" + end_marker(0),
       "offset 0: bad magic: not a streamsan trace file"},
      {"older_version", header(1) + end_marker(0),
       "offset 8: unsupported trace format version 1 (this streamsan reads version " + version +
           ")"},
      {"newer_version", header(0xffffffffu) + end_marker(0),
       "offset 8: unsupported trace format version 4294967295 (this streamsan reads version " +
           version + ")"},
      {"unknown_flags", header(trace_format::version, 0x80000000u) + end_marker(0),
       "offset 12: unknown flags 0x" + hex_flags(0x80000000u)},
      {"unknown_record_kind", h + varint(77) + varint(0) + end_marker(1),
       "offset 16: record kind 77 is unknown"},
      {"huge_record_kind", h + varint(std::uint64_t{1} << 63) + varint(0) + end_marker(1),
       "offset 16: record kind 9223372036854775808 is unknown"},
      // tag (1 byte) + a 9-byte length: the payload would start at 26.
      {"huge_record_length", h + varint(tag<stream_create>()) + varint(huge) + "abc",
       "offset 26: truncated record: expected 4611686018427387904 bytes, 3 remain"},
      {"huge_end_marker", h + varint(127) + varint(std::uint64_t{1} << 40),
       "offset 23: truncated record: expected 1099511627776 bytes, 0 remain"},
      {"huge_frame_count", h + rec<stack_define>(varint(1) + varint(huge) + "\x01") + end_marker(1),
       "offset 22: stack_define record: field 'frames': count 4611686018427387904 exceeds the 1 "
       "bytes left in the record"},
      {"huge_text_length",
       h + rec<string_define>(varint(1) + varint(std::uint64_t{1} << 40) + "ab") + end_marker(1),
       "offset 22: string_define record: field 'text': count 1099511627776 exceeds the 2 bytes "
       "left in the record"},
      {"huge_node_count",
       h + rec<graph_instantiate>(varint(1) + varint(std::uint64_t{1} << 32) + std::string(2, '\0')) +
           end_marker(1),
       "offset 22: graph_instantiate record: field 'nodes': count 4294967296 exceeds the 2 bytes "
       "left in the record"},
      // The deepest nesting the format has: a list (accesses) inside a list
      // element (a graph node); its count is checked like any other.
      {"huge_nested_count",
       h + rec<graph_instantiate>(varint(1) + varint(1) + varint(0) + varint(0) + varint(huge) +
                                  std::string(1, '\0')) +
           end_marker(1),
       "offset 25: graph_instantiate record: field 'accesses': count 4611686018427387904 exceeds "
       "the 1 bytes left in the record"},
      {"huge_id", h + rec<stream_destroy>(varint(huge)) + end_marker(1),
       "offset 21: stream_destroy record: field 'stream': value 4611686018427387904 does not fit "
       "32 bits"},
      {"varint_overflow", h + varint(tag<stream_create>()) + std::string(11, '\xff'),
       "offset 17: varint overflow in the record length"},
      {"truncated_record", h + varint(tag<stream_create>()) + varint(6) + std::string(3, '\0'),
       "offset 18: truncated record: expected 6 bytes, 3 remain"},
      {"truncated_field", h + rec<stream_destroy>("\x80") + end_marker(1),
       "offset 21: stream_destroy record: field 'stream': truncated: the record ends inside a "
       "varint"},
      {"missing_end_marker", h + rec<device_synchronize>(varint(0)),
       "offset 22: truncated trace: no end-of-trace marker after 1 records (did the writing "
       "process exit without closing the trace?)"},
      {"wrong_record_count", h + end_marker(5),
       "offset 16: end-of-trace marker counts 5 records, the trace has 0"},
      {"trailing_bytes", h + end_marker(0) + "junk",
       "offset 19: 4 trailing bytes after the end-of-trace marker"},
      {"enum_out_of_range",
       h + rec<stream_create>(varint(1) + varint(0) + varint(200) + varint(0)) + end_marker(1),
       "offset 23: stream_create record: field 'flavor': enum value 200 is out of range"},
      {"string_before_definition", h + rec<nvtx_push>(varint(9)) + end_marker(1),
       "offset 21: nvtx_push record: field 'message': string#9 is used before its definition"},
  };
}

std::vector<hostile_trace> hostile_valid_traces() {
  const std::string h = header();
  const std::uint64_t all = ~std::uint64_t{0};
  const std::uint32_t top = 0xffffffffu;
  // stream_create: stream, device, flavor, priority.
  const std::string streams = rec<stream_create>(varint(top) + varint(0) + varint(1) + varint(0)) +
                              rec<stream_create>(varint(top - 1) + varint(0) + varint(1) +
                                                 varint(0));
  // alloc_record: alloc, memory kind, device, size, address, stream, parent,
  // parent offset, label.
  const std::string alloc = rec<alloc_record>(varint(top) + varint(0) + varint(0) + varint(all) +
                                              varint(0) + varint(0) + varint(0) + varint(0) +
                                              varint(0));
  // memset_record: stream, dst {alloc, offset, size}, dst kind, async.
  const std::string whole = rec<memset_record>(varint(top) + varint(top) + varint(0) +
                                               varint(all) + varint(0) + "\x01");
  // kernel_launch: stream, kernel, accesses {alloc, offset, size, mode, origin},
  // cooperative.
  std::string accesses = varint(3);
  for (const std::uint64_t offset : {std::uint64_t{0}, huge, all - 1}) {
    accesses += varint(top) + varint(offset) + varint(1) + varint(3) + varint(0);
  }
  const std::string launch = rec<kernel_launch>(varint(top - 1) + varint(0) + accesses +
                                                std::string(1, '\0'));
  const std::string events = rec<event_create>(varint(top) + varint(0)) +
                             rec<event_record>(varint(top) + varint(top)) +
                             rec<event_wait>(varint(top) + varint(top - 1));
  return {
      {"huge_allocation", h + streams + alloc + whole + launch + end_marker(5)},
      {"ordered_huge_allocation", h + streams + alloc + whole + events + launch + end_marker(8)},
      {"far_ids_truncated", h + streams + alloc + whole + events + launch},
  };
}

}  // namespace streamsan::testing
