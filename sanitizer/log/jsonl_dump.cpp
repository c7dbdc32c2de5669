#include "sanitizer/log/jsonl_dump.h"

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "sanitizer/log/record_fields.h"
#include "sanitizer/log/record_names.h"

namespace streamsan {
namespace {

using json = nlohmann::ordered_json;

std::string hex(std::uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

// The JSON archive of Note [One field list drives every encoding].
class json_fields {
 public:
  json_fields(json& object, const log_tables& tables) : object_(object), tables_(tables) {}

  template <class Id>
  void id(std::string_view field, Id& value) { set(field, raw(value)); }
  void string_ref(std::string_view field, string_id& value) {
    if (is_none(value)) {
      set(field, nullptr);
    } else if (tables_.has_string(value)) {
      set(field, tables_.string(value));
    } else {
      set(field, raw(value));  // unresolved: keep the id
    }
  }
  void stack_ref(std::string_view field, stack_id& value) {
    if (is_none(value)) {
      set(field, nullptr);
    } else {
      set(field, raw(value));
    }
  }
  void u32(std::string_view field, std::uint32_t& value) { set(field, value); }
  void u64(std::string_view field, std::uint64_t& value) { set(field, value); }
  void address(std::string_view field, std::uint64_t& value) { set(field, hex(value)); }
  void i32(std::string_view field, std::int32_t& value) { set(field, value); }
  void flag(std::string_view field, bool& value) { set(field, value); }
  template <class Enum>
  void enumeration(std::string_view field, Enum& value) {
    set(field, enumerator_name(value));
  }
  void text(std::string_view field, std::string_view& value) { set(field, value); }
  void addresses(std::string_view field, std::span<const std::uint64_t>& values) {
    json list = json::array();
    for (const auto v : values) list.push_back(hex(v));
    set(field, std::move(list));
  }
  template <class T>
  void object(std::string_view field, T& value) {
    set(field, to_json(value));
  }
  template <class T>
  void list(std::string_view field, std::span<const T>& values) {
    json list = json::array();
    for (T element : values) list.push_back(to_json(element));
    set(field, std::move(list));
  }

 private:
  template <class T>
  json to_json(T& value) {
    json nested = json::object();
    json_fields inner(nested, tables_);
    visit_fields(inner, value);
    return nested;
  }
  template <class V>
  void set(std::string_view field, V&& value) {
    object_[std::string(field)] = std::forward<V>(value);
  }

  json& object_;
  const log_tables& tables_;
};

}  // namespace

void jsonl_dumper::on_record(const record& r) {
  tables_.absorb(r.body);
  json line = json::object();
  line["seq"] = r.header.seq;
  line["thread"] = raw(r.header.thread);
  line["stack"] = raw(r.header.stack);
  line["kind"] = record_kind_name(r.body);
  json_fields fields(line, tables_);
  std::visit(
      [&](const auto& alternative) {
        auto copy = alternative;
        visit_fields(fields, copy);
      },
      r.body);
  // Invalid UTF-8 in a string (a corrupt kernel name) is replaced, not fatal.
  out_ << line.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
}

}  // namespace streamsan
