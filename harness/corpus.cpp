#include "harness/corpus.h"

#include <algorithm>
#include <fnmatch.h>
#include <set>

#include "harness/scenario_error.h"
#include "harness/scenario_parser.h"
#include "harness/scenario_place.h"

namespace streamsan::harness {

std::vector<std::filesystem::path> find_scenario_files(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::set<fs::path> files;
  for (const auto& p : paths) {
    std::error_code ec;
    const fs::path path(p);
    if (fs::is_regular_file(path, ec)) {
      files.insert(path.lexically_normal());
    } else if (fs::is_directory(path, ec)) {
      for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::end(it);
           it.increment(ec)) {
        if (it->is_regular_file(ec) && it->path().extension() == ".yaml") {
          files.insert(it->path().lexically_normal());
        }
      }
      if (ec) throw scenario_error({p, 0, 0}, "cannot list directory: " + ec.message());
    } else {
      throw scenario_error({p, 0, 0}, "no such file or directory");
    }
  }
  return {files.begin(), files.end()};
}

std::vector<std::filesystem::path> twin_paths(const scenario& s) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(s.file).parent_path();
  if (s.level == scenario_level::corpus) {
    // Relative to the scenario's folder, so that the path reads the way the
    // scenario's file was named.
    const fs::path target = s.corpus_root / (s.twin + ".yaml");
    const fs::path rel = target.lexically_relative(resolved(dir.empty() ? fs::path(".") : dir));
    if (rel.empty() || fs::path(s.file).is_absolute()) return {target};
    return {(dir / rel).lexically_normal()};
  }
  std::vector<fs::path> out{(dir / (s.twin + ".yaml")).lexically_normal()};
  const fs::path last = dir / (fs::path(s.twin).filename().string() + ".yaml");
  if (last.lexically_normal() != out.front()) out.push_back(last.lexically_normal());
  return out;
}

bool glob_match(std::string_view pattern, std::string_view name) noexcept {
  const std::string p(pattern);
  const std::string n(name);
  if (fnmatch(p.c_str(), n.c_str(), 0) == 0) return true;
  if (p.find('/') != std::string::npos) return false;
  const auto slash = n.rfind('/');
  return slash != std::string::npos && fnmatch(p.c_str(), n.c_str() + slash + 1, 0) == 0;
}

corpus corpus::load(const std::vector<std::filesystem::path>& files,
                   const std::vector<std::filesystem::path>& strict_roots) {
  corpus c;
  c.strict_roots_ = strict_roots;
  for (const auto& f : files) {
    try {
      c.scenarios_.push_back(load_scenario(place_of(f.generic_string(), strict_roots)));
    } catch (const scenario_error& e) {
      // A malformed corpus marker fails every file below it: say it once.
      if (std::find(c.errors_.begin(), c.errors_.end(), e.what()) == c.errors_.end()) {
        c.errors_.push_back(e.what());
      }
      c.failed_.push_back(resolved(f));
    }
  }
  std::vector<const scenario*> by_name;
  for (const auto& s : c.scenarios_) by_name.push_back(&s);
  std::sort(by_name.begin(), by_name.end(),
            [](const scenario* a, const scenario* b) { return a->name < b->name; });
  for (std::size_t i = 1; i < by_name.size(); ++i) {
    if (by_name[i]->name == by_name[i - 1]->name) {
      c.errors_.push_back(by_name[i]->file + ": scenario name '" + by_name[i]->name +
                          "' is also used by " + by_name[i - 1]->file);
    }
  }
  c.check_twins();
  return c;
}

const scenario* corpus::find(std::string_view name) const noexcept {
  for (const auto* list : {&scenarios_, &twins_from_disk_}) {
    for (const auto& s : *list) {
      if (s.name == name) return &s;
    }
  }
  return nullptr;
}

const scenario* corpus::twin_of(const scenario& s) const noexcept {
  return s.twin.empty() ? nullptr : find(s.twin);
}

void corpus::read_twin_from_disk(const scenario& s) {
  const auto paths = twin_paths(s);
  for (const auto& path : paths) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) continue;
    if (std::find(failed_.begin(), failed_.end(), resolved(path)) != failed_.end()) return;
    try {
      scenario t = load_scenario(place_of(path.generic_string(), strict_roots_));
      if (t.name != s.twin) {
        errors_.push_back(to_string(s.twin_where) + ": twin '" + s.twin + "' not found: " +
                          t.file + " is named '" + t.name + "'");
        return;
      }
      twins_from_disk_.push_back(std::move(t));
    } catch (const scenario_error& e) {
      errors_.push_back(e.what());
    }
    return;
  }
  std::string tried;
  for (const auto& p : paths) tried += (tried.empty() ? "" : " or ") + p.generic_string();
  errors_.push_back(to_string(s.twin_where) + ": twin '" + s.twin + "' not found (no file " +
                    tried + ")");
}

void corpus::check_twins() {
  // Twins outside the given files are read so that a filtered run can still
  // compare a racy scenario with its fixed twin.
  for (const auto& s : scenarios_) {
    if (s.twin.empty() || find(s.twin) != nullptr) continue;
    read_twin_from_disk(s);
  }
  for (const auto& s : scenarios_) {
    const scenario* t = twin_of(s);
    if (t == nullptr) continue;
    if (t->twin != s.name) {
      errors_.push_back(to_string(s.twin_where) + ": twin '" + t->name + "' does not name '" +
                        s.name + "' as its twin (" + t->file + " says '" + t->twin + "')");
    } else if (t->buggy() == s.buggy()) {
      errors_.push_back(to_string(s.twin_where) + ": '" + s.name + "' and its twin '" + t->name +
                        "' are both " + (s.buggy() ? "buggy" : "correct") +
                        "; a pair is one buggy scenario (diagnostics, errors or warnings "
                        "expected) and one fixed one");
    }
  }
}

}  // namespace streamsan::harness
