// Which Python frames a report shows: the user's code, not the standard
// library's or a GPU framework's (Note [Folded Python frames]).
#pragma once

#include <string_view>

namespace streamsan::injection {

enum class python_file_kind {
  user,       // shown
  folded,     // the standard library, a framework, the interpreter's own
  generated,  // code compiled from a string (<string>, <stdin>): shown
              // only when no frame of a real file of the user's is
};

// By the code object's co_filename alone.
python_file_kind classify_python_file(std::string_view file) noexcept;

}  // namespace streamsan::injection
