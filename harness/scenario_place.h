// Where a scenario file lives, and so which rules it is held to.
//
// Note [Two levels]
// The project's corpus (scenarios/) is a reference: every scenario cites a
// rule of semantics.md in its own words, every buggy scenario has a fixed
// twin, and a scenario's name is its path below the corpus root, so that a
// failure message leads to the file. A user's scenario for their own code
// has no rule in our reference, and may be a single file in any folder.
// So there are two levels:
//
// - corpus: a file below a corpus root. The root is the nearest folder at or
//   above the file that holds the marker file `.streamsan-corpus`
//   (scenarios/ has one), or else a folder given with `streamsan test
//   --strict`. Names must match paths, rules are required and quoted word
//   for word, buggy scenarios need a twin, and "no diagnostics" is spelled
//   `none`.
// - standalone: any other file. `rules` and `twin` are optional, the name is
//   free, and `diagnostics: []` means none.
//
// Every other check (keys, references, values, twins that are given) is the
// same at both levels. The expected name is computed from absolute paths, so
// it is the same wherever the command runs from.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace streamsan::harness {

// The marker file of a corpus root. It holds comments only (lines starting
// with '#', or blank); other content is reserved and refused.
inline constexpr std::string_view corpus_marker_name = ".streamsan-corpus";

enum class scenario_level : std::uint8_t { corpus, standalone };

std::string_view to_string(scenario_level level) noexcept;

struct scenario_place {
  std::string file;  // as it was named (messages and reports use this form)
  scenario_level level = scenario_level::standalone;
  // corpus level only:
  std::filesystem::path root;  // absolute, symlinks resolved
  std::string expected_name;   // the file's path below `root`, without .yaml
  bool marked = false;         // the root holds the marker (else: --strict)
};

// A file at the standalone level (tests, and files whose place is known).
scenario_place standalone_place(std::string file);
// A file at the corpus level below `root`.
scenario_place corpus_place(std::string file, const std::filesystem::path& root);

// The place of `file`: below the nearest marked folder at or above it; else
// below the nearest of `strict_roots` (folders given with --strict) that
// contains it; else standalone. A malformed marker is a scenario_error
// naming its line.
scenario_place place_of(const std::string& file,
                        const std::vector<std::filesystem::path>& strict_roots = {});

// The marked corpus root at or above `folder`, or an empty path.
std::filesystem::path find_marked_root(const std::filesystem::path& folder);

// Absolute, normal, symlinks resolved where the path exists.
std::filesystem::path resolved(const std::filesystem::path& p);

}  // namespace streamsan::harness
