// Prints the access log as JSON lines: one object per record, for people and
// scripts that want to look inside a trace (`streamsan dump TRACE`).
//
//   {"seq":7,"thread":1,"stack":2,"kind":"kernel_launch","stream":1,
//    "kernel":"fill","accesses":[{"range":{"alloc":1,"offset":0,"size":64},
//    "mode":"write"}]}
//
// Members follow record_fields.h. Interned strings are resolved to their
// text (null for none); enums are spelled as in record_names.h; addresses are
// hex strings; other ids are numbers.
#pragma once

#include <ostream>

#include "sanitizer/log/log_tables.h"
#include "sanitizer/log/record.h"

namespace streamsan {

class jsonl_dumper final : public record_sink {
 public:
  explicit jsonl_dumper(std::ostream& out) : out_(out) {}
  void on_record(const record& r) override;

 private:
  std::ostream& out_;
  log_tables tables_;
};

}  // namespace streamsan
