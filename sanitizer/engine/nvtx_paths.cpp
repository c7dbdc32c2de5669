#include "sanitizer/engine/nvtx_paths.h"

#include <string>

namespace streamsan {

string_id nvtx_paths::child(string_id parent, string_id message, log_tables& tables) {
  const std::uint64_t key = (std::uint64_t{raw(parent)} << 32) | raw(message);
  if (const auto it = paths_.find(key); it != paths_.end()) return it->second;
  std::string text;
  if (!is_none(parent)) {
    text.append(tables.string(parent));
    text.push_back('/');
  }
  text.append(tables.string(message));
  const string_id id{next_id_++};
  tables.define_string(id, text);
  paths_.emplace(key, id);
  return id;
}

}  // namespace streamsan
