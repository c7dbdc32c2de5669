#include "harness/corpus.h"

#include <algorithm>
#include <fnmatch.h>
#include <set>

#include "harness/scenario_error.h"
#include "harness/scenario_parser.h"

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

std::filesystem::path twin_path(const scenario& s) {
  // file = ROOT/NAME.yaml, checked by the parser.
  std::string root = std::filesystem::path(s.file).replace_extension().generic_string();
  root.resize(root.size() - s.name.size());
  return std::filesystem::path(root + s.twin + ".yaml");
}

bool glob_match(std::string_view pattern, std::string_view name) noexcept {
  const std::string p(pattern);
  const std::string n(name);
  if (fnmatch(p.c_str(), n.c_str(), 0) == 0) return true;
  if (p.find('/') != std::string::npos) return false;
  const auto slash = n.rfind('/');
  return slash != std::string::npos && fnmatch(p.c_str(), n.c_str() + slash + 1, 0) == 0;
}

corpus corpus::load(const std::vector<std::filesystem::path>& files) {
  corpus c;
  for (const auto& f : files) {
    try {
      c.scenarios_.push_back(load_scenario(f));
    } catch (const scenario_error& e) {
      c.errors_.push_back(e.what());
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

void corpus::check_twins() {
  // Twins outside the given files are read so that a filtered run can still
  // compare a racy scenario with its fixed twin.
  for (const auto& s : scenarios_) {
    if (s.twin.empty() || find(s.twin) != nullptr) continue;
    const auto path = twin_path(s);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      errors_.push_back(to_string(s.twin_where) + ": twin '" + s.twin + "' not found (no file " +
                        path.generic_string() + ")");
      continue;
    }
    try {
      twins_from_disk_.push_back(load_scenario(path));
    } catch (const scenario_error& e) {
      errors_.push_back(e.what());
    }
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
