#include "harness/scenario_place.h"

#include <fstream>

#include "harness/scenario_error.h"

namespace streamsan::harness {
namespace fs = std::filesystem;

namespace {

// The marker holds comments only, so that a key added later cannot change
// what an existing marker means.
void check_marker(const fs::path& marker) {
  std::ifstream in(marker);
  if (!in) throw scenario_error({marker.generic_string(), 0, 0}, "cannot read the corpus marker");
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    throw scenario_error({marker.generic_string(), number, static_cast<int>(first) + 1},
                         "unexpected content in a corpus marker; it holds comments only (lines "
                         "starting with '#'): the file's presence marks the corpus root");
  }
}

bool is_within(const fs::path& file, const fs::path& folder) {
  const auto rel = file.lexically_relative(folder);
  return !rel.empty() && *rel.begin() != "..";
}

std::string name_below(const fs::path& file, const fs::path& root) {
  return fs::path(file).replace_extension().lexically_relative(root).generic_string();
}

}  // namespace

std::string_view to_string(scenario_level level) noexcept {
  switch (level) {
    case scenario_level::corpus: return "corpus";
    case scenario_level::standalone: return "standalone";
  }
  return "unknown";
}

fs::path resolved(const fs::path& p) {
  std::error_code ec;
  auto out = fs::weakly_canonical(fs::absolute(p, ec), ec);
  if (ec) out = fs::absolute(p, ec);
  return out.lexically_normal();
}

scenario_place standalone_place(std::string file) {
  scenario_place p;
  p.file = std::move(file);
  return p;
}

scenario_place corpus_place(std::string file, const fs::path& root) {
  scenario_place p;
  p.root = resolved(root);
  p.expected_name = name_below(resolved(file), p.root);
  p.file = std::move(file);
  p.level = scenario_level::corpus;
  return p;
}

fs::path find_marked_root(const fs::path& folder) {
  std::error_code ec;
  for (fs::path dir = resolved(folder);; dir = dir.parent_path()) {
    const fs::path marker = dir / corpus_marker_name;
    if (fs::is_regular_file(marker, ec)) {
      check_marker(marker);
      return dir;
    }
    if (dir == dir.root_path() || dir.parent_path() == dir) return {};
  }
}

scenario_place place_of(const std::string& file, const std::vector<fs::path>& strict_roots) {
  const fs::path path = resolved(file);
  if (const fs::path marked = find_marked_root(path.parent_path()); !marked.empty()) {
    scenario_place p = corpus_place(file, marked);
    p.marked = true;
    return p;
  }
  // The innermost --strict folder that holds the file.
  fs::path best;
  for (const auto& r : strict_roots) {
    const fs::path root = resolved(r);
    if (is_within(path, root) && root.native().size() > best.native().size()) best = root;
  }
  if (!best.empty()) return corpus_place(file, best);
  return standalone_place(file);
}

}  // namespace streamsan::harness
