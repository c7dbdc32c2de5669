// Where something was written in a scenario file. Line and column are
// 1-based, as editors and compilers print them.
#pragma once

#include <string>

namespace streamsan::harness {

struct source_mark {
  std::string file;
  int line = 0;
  int column = 0;
};

// "scenarios/event/x.yaml:12:5" (just the file when line is 0).
std::string to_string(const source_mark& where);

}  // namespace streamsan::harness
