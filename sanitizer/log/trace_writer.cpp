#include "sanitizer/log/trace_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "sanitizer/log/in_process_symbols.h"
#include "sanitizer/log/record_fields.h"
#include "sanitizer/log/trace_error.h"
#include "sanitizer/log/trace_format.h"
#include "sanitizer/log/varint.h"

namespace streamsan {
namespace {

// The encoding archive of Note [One field list drives every encoding].
class encoder {
 public:
  explicit encoder(std::vector<std::uint8_t>& out) : out_(out) {}

  template <class Id>
  void id(std::string_view, Id& value) { put_varint(out_, raw(value)); }
  void string_ref(std::string_view, string_id& value) { put_varint(out_, raw(value)); }
  void stack_ref(std::string_view, stack_id& value) { put_varint(out_, raw(value)); }
  void u32(std::string_view, std::uint32_t& value) { put_varint(out_, value); }
  void u64(std::string_view, std::uint64_t& value) { put_varint(out_, value); }
  void address(std::string_view, std::uint64_t& value) { put_varint(out_, value); }
  void i32(std::string_view, std::int32_t& value) { put_varint(out_, zigzag_encode(value)); }
  void flag(std::string_view, bool& value) { out_.push_back(value ? 1 : 0); }
  template <class Enum>
  void enumeration(std::string_view, Enum& value) {
    put_varint(out_, static_cast<std::uint64_t>(value));
  }
  void text(std::string_view, std::string_view& value) {
    put_varint(out_, value.size());
    out_.insert(out_.end(), value.begin(), value.end());
  }
  void addresses(std::string_view, std::span<const std::uint64_t>& values) {
    put_varint(out_, values.size());
    for (const auto v : values) put_varint(out_, v);
  }
  template <class T>
  void object(std::string_view, T& value) { visit_fields(*this, value); }
  template <class T>
  void list(std::string_view, std::span<const T>& values) {
    put_varint(out_, values.size());
    for (T element : values) visit_fields(*this, element);  // a cheap copy of views
  }

 private:
  std::vector<std::uint8_t>& out_;
};

void put_u32le(std::vector<std::uint8_t>& out, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

}  // namespace

trace_writer::trace_writer(std::filesystem::path path, trace_writer_options options)
    : path_(std::move(path)), name_(path_.string()), options_(options) {
  file_ = std::fopen(path_.c_str(), "wb");
  if (file_ == nullptr) {
    throw trace_error(name_, std::string("cannot create trace file: ") + std::strerror(errno));
  }
  // buffer_ is the only buffer: chunks go straight to write(2).
  std::setvbuf(file_, nullptr, _IONBF, 0);
  buffer_.reserve(std::max<std::size_t>(options_.buffer_bytes, 64) + 64);
  buffer_.insert(buffer_.end(), trace_format::magic.begin(), trace_format::magic.end());
  put_u32le(buffer_, trace_format::version);
  put_u32le(buffer_, 0);  // flags
}

trace_writer::~trace_writer() {
  try {
    close();
  } catch (...) {  // NOLINT(bugprone-empty-catch): see the header
  }
}

void trace_writer::on_record(const record& r) {
  if (file_ == nullptr || !error_.empty()) return;
  if (const auto* stack = std::get_if<stack_define>(&r.body); stack && options_.symbolize) {
    frames_.insert(stack->frames.begin(), stack->frames.end());
  }
  write_record(r);
}

void trace_writer::write_record(const record& r) {
  payload_.clear();
  // Sequence numbers grow by small steps, so the delta is short. It is
  // signed and wraps: any sequence round-trips, even one that goes back.
  put_varint(payload_, zigzag_encode(static_cast<std::int64_t>(r.header.seq - last_seq_)));
  put_varint(payload_, raw(r.header.thread));
  put_varint(payload_, raw(r.header.stack));
  encoder enc(payload_);
  std::visit(
      [&](const auto& alternative) {
        auto copy = alternative;  // views only: cheap
        visit_fields(enc, copy);
      },
      r.body);
  last_seq_ = r.header.seq;
  put_varint(buffer_, trace_format::tag_of(r.body.index()));
  put_varint(buffer_, payload_.size());
  buffer_.insert(buffer_.end(), payload_.begin(), payload_.end());
  ++records_;
  if (buffer_.size() >= options_.buffer_bytes) flush_buffer();
}

void trace_writer::append_symbols() {
  std::vector<std::uint64_t> addresses(frames_.begin(), frames_.end());
  std::sort(addresses.begin(), addresses.end());  // a deterministic file
  for (const auto address : addresses) {
    if (!error_.empty()) return;
    const symbol_info info = symbolize_in_process(address);
    write_record(record{{last_seq_, thread_id{}, stack_id{}},
                        frame_symbol{address, info.function, info.file, info.line,
                                     info.module, info.module_offset}});
  }
}

void trace_writer::close() {
  if (file_ == nullptr) return;
  if (error_.empty()) {
    append_symbols();
    put_varint(buffer_, trace_format::end_tag);
    std::vector<std::uint8_t> count;
    put_varint(count, records_);
    put_varint(buffer_, count.size());
    buffer_.insert(buffer_.end(), count.begin(), count.end());
    flush_buffer();
  }
  if (std::fclose(std::exchange(file_, nullptr)) != 0 && error_.empty()) {
    fail(std::string("cannot write trace file: ") + std::strerror(errno));
  }
  frames_.clear();
  if (!error_.empty()) throw trace_error(name_, error_);
}

void trace_writer::flush_buffer() {
  if (buffer_.empty() || !error_.empty()) return;
  if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
    fail(std::string("cannot write trace file: ") + std::strerror(errno));
  }
  buffer_.clear();
}

void trace_writer::fail(std::string reason) {
  if (error_.empty()) error_ = std::move(reason);
  buffer_.clear();
}

}  // namespace streamsan
