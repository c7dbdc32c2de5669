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

// The files a scenario's twin may live in, when it is not among the loaded
// ones: at the corpus level the root plus the twin's name (names are paths
// below the root); at the standalone level TWIN.yaml, then LAST.yaml (the
// twin name's last component), in the scenario's folder. Paths are relative
// where the scenario's file was named relatively.
std::vector<std::filesystem::path> twin_paths(const scenario& s);

// Shell-style glob on scenario names: '*' any run, '?' one character,
// '[...]' a set. A pattern without '/' may also match the last component.
bool glob_match(std::string_view pattern, std::string_view name) noexcept;

class corpus {
 public:
  // Parses every file; collects every malformed file's message (each
  // "FILE:LINE:COLUMN: ...") instead of stopping at the first one. Each
  // file's level comes from place_of(file, strict_roots) (Note [Two levels]
  // in harness/scenario_place.h).
  static corpus load(const std::vector<std::filesystem::path>& files,
                     const std::vector<std::filesystem::path>& strict_roots = {});

  const std::vector<scenario>& scenarios() const noexcept { return scenarios_; }
  const std::vector<std::string>& errors() const noexcept { return errors_; }

  // A scenario by name: one of the loaded ones, or a twin read from disk.
  const scenario* find(std::string_view name) const noexcept;
  // The scenario's twin (loaded, or read from disk when it was not among
  // the files), or nullptr when it has none.
  const scenario* twin_of(const scenario& s) const noexcept;

 private:
  void check_twins();
  void read_twin_from_disk(const scenario& s);

  std::vector<std::filesystem::path> strict_roots_;
  // Files that failed to load (resolved), so that a twin read from disk
  // does not report them again.
  std::vector<std::filesystem::path> failed_;
  std::vector<scenario> scenarios_;
  std::vector<scenario> twins_from_disk_;
  std::vector<std::string> errors_;
};

}  // namespace streamsan::harness
