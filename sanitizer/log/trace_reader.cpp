#include "sanitizer/log/trace_reader.h"

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <system_error>
#include <utility>

#include "sanitizer/log/record_fields.h"
#include "sanitizer/log/record_names.h"
#include "sanitizer/log/trace_error.h"
#include "sanitizer/log/trace_format.h"
#include "sanitizer/log/varint.h"

namespace streamsan {

// The decoding archive of Note [One field list drives every encoding]: reads
// one record payload and checks each field (Note [A trace is hostile input]).
class trace_decoder {
 public:
  trace_decoder(trace_reader& reader, std::uint64_t base_offset, std::string_view kind)
      : reader_(reader),
        in_(reader.payload_),
        base_offset_(base_offset),
        kind_(kind) {}

  template <class Id>
  void id(std::string_view field, Id& value) {
    value = Id{varint32(field)};
  }
  void id(std::string_view field, string_id& value) {
    value = string_id{definition(field, reader_.strings_defined_, "string#")};
  }
  void id(std::string_view field, stack_id& value) {
    value = stack_id{definition(field, reader_.stacks_defined_, "stack#")};
  }
  void string_ref(std::string_view field, string_id& value) {
    value = string_id{use(field, reader_.strings_defined_, "string#")};
  }
  void stack_ref(std::string_view field, stack_id& value) {
    value = stack_id{use(field, reader_.stacks_defined_, "stack#")};
  }
  void u32(std::string_view field, std::uint32_t& value) { value = varint32(field); }
  void u64(std::string_view field, std::uint64_t& value) { value = varint(field); }
  void address(std::string_view field, std::uint64_t& value) { value = varint(field); }
  void i32(std::string_view field, std::int32_t& value) {
    const auto start = pos_;
    const std::int64_t wide = zigzag_decode(varint(field));
    if (wide < std::numeric_limits<std::int32_t>::min() ||
        wide > std::numeric_limits<std::int32_t>::max()) {
      fail(start, field, "value " + std::to_string(wide) + " does not fit 32 bits");
    }
    value = static_cast<std::int32_t>(wide);
  }
  void flag(std::string_view field, bool& value) {
    if (pos_ >= in_.size()) fail(pos_, field, "truncated: the record ends here");
    const std::uint8_t byte = in_[pos_];
    if (byte > 1) fail(pos_, field, "boolean value " + std::to_string(byte) + " is not 0 or 1");
    ++pos_;
    value = byte == 1;
  }
  template <class Enum>
  void enumeration(std::string_view field, Enum& value) {
    const auto start = pos_;
    const std::uint64_t wide = varint(field);
    const auto candidate = static_cast<Enum>(static_cast<std::underlying_type_t<Enum>>(wide));
    if (wide > std::numeric_limits<std::underlying_type_t<Enum>>::max() ||
        enumerator_name(candidate).empty()) {
      fail(start, field, "enum value " + std::to_string(wide) + " is out of range");
    }
    value = candidate;
  }
  void text(std::string_view field, std::string_view& value) {
    const auto length = count(field, 1);
    // A view into the payload buffer, which lives until the next record.
    value = std::string_view(reinterpret_cast<const char*>(in_.data() + pos_), length);
    pos_ += length;
  }
  void addresses(std::string_view field, std::span<const std::uint64_t>& values) {
    const auto n = count(field, 1);
    auto& list = acquire<std::uint64_t>();
    for (std::size_t i = 0; i < n; ++i) list.push_back(varint(field));
    values = list;
  }
  template <class T>
  void object(std::string_view field, T& value) {
    const auto start = pos_;
    visit_fields(*this, value);
    if constexpr (std::is_same_v<T, byte_range>) {
      if (value.size > std::numeric_limits<std::uint64_t>::max() - value.offset) {
        fail(start, field, "byte range offset " + std::to_string(value.offset) + " + size " +
                               std::to_string(value.size) + " overflows");
      }
    }
  }
  template <class T>
  void list(std::string_view field, std::span<const T>& values) {
    const auto n = count(field, 1);  // every element takes at least a byte
    const std::size_t slot = acquire_slot<T>();
    for (std::size_t i = 0; i < n; ++i) {
      T element{};
      visit_fields(*this, element);
      // Index again: nested lists may have grown other pools, never this one's
      // inner buffers (moving a vector keeps its buffer).
      std::get<trace_reader::list_pool<T>>(reader_.pools_).lists[slot].push_back(element);
    }
    values = std::get<trace_reader::list_pool<T>>(reader_.pools_).lists[slot];
  }

  std::size_t position() const noexcept { return pos_; }
  std::size_t size() const noexcept { return in_.size(); }

  [[noreturn]] void fail(std::size_t at, std::string_view field, std::string_view reason) const {
    std::string message(kind_);
    message += " record";
    if (!field.empty()) {
      message += ": field '";
      message += field;
      message += '\'';
    }
    message += ": ";
    message += reason;
    reader_.fail(base_offset_ + at, message);
  }

 private:
  std::uint64_t varint(std::string_view field) {
    std::uint64_t value = 0;
    switch (get_varint(in_, pos_, value)) {
      case varint_status::ok: return value;
      case varint_status::truncated: fail(pos_, field, "truncated: the record ends inside a varint");
      case varint_status::overflow: fail(pos_, field, "varint overflow (more than 64 bits)");
    }
    fail(pos_, field, "unreachable varint status");
  }

  std::uint32_t varint32(std::string_view field) {
    const auto start = pos_;
    const std::uint64_t value = varint(field);
    if (value > std::numeric_limits<std::uint32_t>::max()) {
      fail(start, field, "value " + std::to_string(value) + " does not fit 32 bits");
    }
    return static_cast<std::uint32_t>(value);
  }

  // Reads a count and checks that the record still has room for `count`
  // items of at least `min_bytes` each (no allocation from a bogus count).
  std::size_t count(std::string_view field, std::size_t min_bytes) {
    const auto start = pos_;
    const std::uint64_t n = varint(field);
    const std::uint64_t left = in_.size() - pos_;
    if (n > left / min_bytes) {
      fail(start, field, "count " + std::to_string(n) + " exceeds the " + std::to_string(left) +
                             " bytes left in the record");
    }
    return static_cast<std::size_t>(n);
  }

  // The id of an interned string or stack being defined: new ids come in
  // order, so the defined ids are always [1, defined] (and a bogus id cannot
  // make a consumer's table grow beyond the records that fill it).
  std::uint32_t definition(std::string_view field, std::uint32_t& defined,
                           std::string_view prefix) {
    const auto at = pos_;
    const auto value = varint32(field);
    if (value == 0) fail(at, field, std::string(prefix) + "0 cannot be defined (0 means none)");
    if (value > defined + 1) {
      fail(at, field, std::string(prefix) + std::to_string(value) +
                          " is defined out of order (the next new id is " +
                          std::string(prefix) + std::to_string(defined + 1) + ")");
    }
    if (value == defined + 1) ++defined;
    return value;
  }

  // The id of an interned string or stack being used: defined before.
  std::uint32_t use(std::string_view field, std::uint32_t defined, std::string_view prefix) {
    const auto at = pos_;
    const auto value = varint32(field);
    if (value > defined) {
      fail(at, field, std::string(prefix) + std::to_string(value) +
                          " is used before its definition");
    }
    return value;
  }

  template <class T>
  std::size_t acquire_slot() {
    auto& pool = std::get<trace_reader::list_pool<T>>(reader_.pools_);
    if (pool.used == pool.lists.size()) pool.lists.emplace_back();
    pool.lists[pool.used].clear();
    return pool.used++;
  }
  template <class T>
  std::vector<T>& acquire() {
    const auto slot = acquire_slot<T>();
    return std::get<trace_reader::list_pool<T>>(reader_.pools_).lists[slot];
  }

  trace_reader& reader_;
  std::span<const std::uint8_t> in_;
  std::size_t pos_ = 0;
  std::uint64_t base_offset_;
  std::string_view kind_;
};

namespace {

template <std::size_t I>
record_body decode_alternative(trace_decoder& decoder) {
  std::variant_alternative_t<I, record_body> body{};
  visit_fields(decoder, body);
  return body;
}

using decode_function = record_body (*)(trace_decoder&);

template <std::size_t... I>
constexpr std::array<decode_function, sizeof...(I)> make_decoders(std::index_sequence<I...>) {
  return {&decode_alternative<I>...};
}

constexpr auto decoders = make_decoders(std::make_index_sequence<record_kind_count>());

}  // namespace

trace_reader::trace_reader(const std::filesystem::path& path, trace_reader_options options)
    : name_(path.string()), options_(options) {
  auto file = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!file->is_open()) {
    throw trace_error(name_, std::string("cannot open trace file: ") + std::strerror(errno));
  }
  std::error_code ec;
  size_ = std::filesystem::file_size(path, ec);
  if (ec) throw trace_error(name_, "cannot open trace file: " + ec.message());
  in_ = std::move(file);
  read_header();
}

trace_reader::trace_reader(std::string name, std::unique_ptr<std::istream> in,
                           std::uint64_t size, trace_reader_options options)
    : name_(std::move(name)), in_(std::move(in)), size_(size), options_(options) {
  read_header();
}

trace_reader trace_reader::from_bytes(std::string name, std::string bytes,
                                      trace_reader_options options) {
  const auto size = bytes.size();
  return trace_reader(std::move(name), std::make_unique<std::istringstream>(std::move(bytes)),
                      size, options);
}

trace_reader::trace_reader(trace_reader&&) noexcept = default;
trace_reader& trace_reader::operator=(trace_reader&&) noexcept = default;
trace_reader::~trace_reader() = default;

void trace_reader::fail(std::uint64_t offset, std::string_view reason) const {
  throw trace_error(name_, offset, reason);
}

void trace_reader::read_header() {
  std::array<std::uint8_t, trace_format::header_size> header{};
  if (size_ < header.size()) {
    fail(0, "truncated header: the file has " + std::to_string(size_) +
                " bytes, a trace header needs " + std::to_string(header.size()));
  }
  if (!in_->read(reinterpret_cast<char*>(header.data()), header.size())) {
    throw trace_error(name_, "cannot read trace file");
  }
  if (!std::equal(trace_format::magic.begin(), trace_format::magic.end(), header.begin(),
                  [](char m, std::uint8_t b) { return static_cast<std::uint8_t>(m) == b; })) {
    fail(0, "bad magic: not a streamsan trace file");
  }
  const auto u32le = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v |= std::uint32_t{header[at + i]} << (8 * i);
    return v;
  };
  version_ = u32le(8);
  if (version_ != trace_format::version) {
    fail(8, "unsupported trace format version " + std::to_string(version_) +
                " (this streamsan reads version " + std::to_string(trace_format::version) + ")");
  }
  if (const auto flags = u32le(12); (flags & ~trace_format::known_flags) != 0) {
    std::ostringstream hex;
    hex << std::hex << flags;
    fail(12, "unknown flags 0x" + hex.str());
  }
  offset_ = header.size();
}

std::uint64_t trace_reader::read_varint(std::string_view what) {
  const auto start = offset_;
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < max_varint_bytes; ++i) {
    const auto c = in_->get();
    if (c == std::char_traits<char>::eof()) {
      fail(start, "truncated record header: the file ends inside the " + std::string(what));
    }
    ++offset_;
    const auto byte = static_cast<std::uint8_t>(c);
    const std::uint64_t group = byte & 0x7f;
    if (i == max_varint_bytes - 1 && group > 1) break;
    value |= group << (7 * i);
    if ((byte & 0x80) == 0) return value;
  }
  fail(start, "varint overflow in the " + std::string(what));
}

const record* trace_reader::next() {
  if (complete_) return nullptr;
  const auto record_offset = offset_;
  if (offset_ == size_) {
    if (options_.allow_missing_end) return nullptr;
    fail(offset_, "truncated trace: no end-of-trace marker after " + std::to_string(records_) +
                      " records (did the writing process exit without closing the trace?)");
  }
  const std::uint64_t tag = read_varint("record kind");
  const std::uint64_t length = read_varint("record length");
  const std::uint64_t remaining = size_ - offset_;
  if (length > remaining) {
    fail(offset_, "truncated record: expected " + std::to_string(length) + " bytes, " +
                      std::to_string(remaining) + " remain");
  }
  if (tag == trace_format::end_tag) {
    read_end(record_offset, length);
    return nullptr;
  }
  if (!trace_format::is_record_tag(tag)) {
    fail(record_offset, "record kind " + std::to_string(tag) + " is unknown");
  }

  const auto payload_offset = offset_;
  payload_.resize(static_cast<std::size_t>(length));  // bounded by the file size
  if (!in_->read(reinterpret_cast<char*>(payload_.data()), static_cast<std::streamsize>(length))) {
    throw trace_error(name_, payload_offset, "cannot read trace file");
  }
  offset_ += length;
  std::apply([](auto&... pool) { ((pool.used = 0), ...); }, pools_);

  const auto index = trace_format::alternative_of(tag);
  trace_decoder decoder(*this, payload_offset, record_kind_name(index));
  std::uint64_t seq_delta = 0;
  decoder.u64("seq", seq_delta);
  record_.header.seq = last_seq_ + static_cast<std::uint64_t>(zigzag_decode(seq_delta));
  decoder.id("thread", record_.header.thread);
  decoder.stack_ref("stack", record_.header.stack);
  record_.body = decoders[index](decoder);
  if (decoder.position() != decoder.size()) {
    decoder.fail(decoder.position(), {},
                 std::to_string(decoder.size() - decoder.position()) +
                     " unused bytes at the end of the record (its length is " +
                     std::to_string(length) + ")");
  }
  if (const auto* graph = std::get_if<graph_instantiate>(&record_.body)) {
    for (const auto& edge : graph->edges) {
      if (edge.from >= graph->nodes.size() || edge.to >= graph->nodes.size()) {
        const auto n = graph->nodes.size();
        decoder.fail(0, "edges",
                     "edge " + std::to_string(edge.from) + " -> " + std::to_string(edge.to) +
                         " names a missing node " +
                         (n == 0 ? std::string("(the graph has no nodes)")
                                 : "(nodes are 0 to " + std::to_string(n - 1) + ")"));
      }
    }
  }
  last_seq_ = record_.header.seq;
  ++records_;
  return &record_;
}

void trace_reader::read_end(std::uint64_t record_offset, std::uint64_t length) {
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(length));
  if (!in_->read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(length))) {
    throw trace_error(name_, offset_, "cannot read trace file");
  }
  std::size_t pos = 0;
  std::uint64_t count = 0;
  if (get_varint(bytes, pos, count) != varint_status::ok || pos != bytes.size()) {
    fail(offset_, "malformed end-of-trace marker");
  }
  if (count != records_) {
    fail(record_offset, "end-of-trace marker counts " + std::to_string(count) +
                            " records, the trace has " + std::to_string(records_));
  }
  offset_ += length;
  if (offset_ != size_) {
    fail(offset_, std::to_string(size_ - offset_) + " trailing bytes after the end-of-trace marker");
  }
  complete_ = true;
}

std::uint64_t trace_reader::read_all(record_sink& sink) {
  std::uint64_t n = 0;
  while (const record* r = next()) {
    sink.on_record(*r);
    ++n;
  }
  return n;
}

std::uint64_t read_trace(const std::filesystem::path& path, record_sink& sink,
                         trace_reader_options options) {
  trace_reader reader(path, options);
  return reader.read_all(sink);
}

}  // namespace streamsan
