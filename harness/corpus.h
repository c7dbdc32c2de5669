// A set of scenarios read from files and directories, with the checks that
// span files: unique names, and twins that exist, point back at each other
// and pair a buggy scenario (one that expects diagnostics, errors or
// warnings) with a fixed one.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "harness/scenario.h"

namespace streamsan::harness {

// *.yaml files: a file path is taken as is, a directory is searched
// recursively. Sorted, without duplicates. A missing path is a
// scenario_error naming it.
std::vector<std::filesystem::path> find_scenario_files(const std::vector<std::string>& paths);

// The file a scenario's twin lives in: the scenario's name is its path below
// the corpus root, so the twin is the root plus the twin's name.
std::filesystem::path twin_path(const scenario& s);

// Shell-style glob on scenario names: '*' any run, '?' one character,
// '[...]' a set. A pattern without '/' may also match the last component.
bool glob_match(std::string_view pattern, std::string_view name) noexcept;

class corpus {
 public:
  // Parses every file; collects every malformed file's message (each
  // "FILE:LINE:COLUMN: ...") instead of stopping at the first one.
  static corpus load(const std::vector<std::filesystem::path>& files);

  const std::vector<scenario>& scenarios() const noexcept { return scenarios_; }
  const std::vector<std::string>& errors() const noexcept { return errors_; }

  // A scenario by name: one of the loaded ones, or a twin read from disk.
  const scenario* find(std::string_view name) const noexcept;
  // The scenario's twin (loaded, or read from disk when it was not among
  // the files), or nullptr when it has none.
  const scenario* twin_of(const scenario& s) const noexcept;

 private:
  void check_twins();

  std::vector<scenario> scenarios_;
  std::vector<scenario> twins_from_disk_;
  std::vector<std::string> errors_;
};

}  // namespace streamsan::harness
