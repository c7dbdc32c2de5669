// Reads scenario YAML into a `scenario` and validates it: every reference
// resolves, every label is unique, every expectation names something that
// exists. Throws scenario_error ("FILE:LINE:COLUMN: what was expected").
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "harness/scenario.h"
#include "harness/scenario_place.h"

namespace streamsan::harness {

// `place` names the file in messages and sets the level the scenario is
// held to (Note [Two levels] in harness/scenario_place.h); at the corpus
// level the name must be place.expected_name.
scenario parse_scenario(std::string_view yaml_text, const scenario_place& place);

// Reads and parses place.file; an unreadable file is a scenario_error too.
scenario load_scenario(const scenario_place& place);

}  // namespace streamsan::harness
