// Reads scenario YAML into a `scenario` and validates it: every reference
// resolves, every label is unique, every expectation names something that
// exists. Throws scenario_error ("FILE:LINE:COLUMN: what was expected").
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "harness/scenario.h"

namespace streamsan::harness {

// `file` is used for messages and for checking the scenario's name against
// its path (the name is the path below the corpus root, without ".yaml").
scenario parse_scenario(std::string_view yaml_text, const std::string& file);

// Reads and parses a file; an unreadable file is a scenario_error too.
scenario load_scenario(const std::filesystem::path& path);

}  // namespace streamsan::harness
