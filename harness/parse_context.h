// Shared state of one scenario parse: the scenario built so far and the
// name lookups that validation needs. Internal to the parser's files.
#pragma once

#include <string>

#include "harness/scenario.h"
#include "harness/yaml_reader.h"

namespace streamsan::harness::detail {

struct parse_context {
  std::string file;
  scenario result;

  // Each throws at `where` when the name is not declared, listing the
  // declared ones.
  void check_stream(const yaml_value& where, const std::string& name) const;
  void check_event(const yaml_value& where, const std::string& name) const;
  const buffer_decl& check_buffer(const yaml_value& where, const std::string& name) const;
  void check_device(const yaml_value& where, std::int64_t device) const;

  // `A` or `A[2:4]`, checked against the buffer's size.
  buffer_slice slice(const yaml_value& value) const;
};

void parse_operations(parse_context& ctx, const yaml_value& list);
void parse_expectation(parse_context& ctx, const yaml_value& value);

}  // namespace streamsan::harness::detail
