// Fuzz target: scenario YAML (`streamsan test`), at both levels of Note [Two
// levels]. Any text is either a valid scenario or refused with a
// scenario_error naming the file; no other exception (yaml-cpp's own
// included) may escape the parser.
#include <string>

#include <yaml-cpp/yaml.h>

#include "harness/scenario_error.h"
#include "harness/scenario_parser.h"
#include "tests/fuzz/fuzz_target.h"

namespace {

using streamsan::harness::scenario_level;
using streamsan::harness::scenario_place;

// The name the input declares, so that the corpus-level name check (the
// name must be the file's path below the corpus root) can pass.
std::string declared_name(const std::string& text) {
  try {
    const YAML::Node root = YAML::Load(text);
    // A file's path holds no NUL: a name with one cannot be a corpus file's.
    if (root.IsMap() && root["name"] && root["name"].IsScalar() &&
        root["name"].Scalar().find('\0') == std::string::npos) {
      return root["name"].Scalar();
    }
  } catch (const YAML::Exception&) {
  }
  return "fuzz/input";
}

// Both levels of Note [Two levels], chosen by the input's size so that
// corpus files stay plain YAML.
scenario_place place_for(const std::string& text) {
  scenario_place place;
  if (text.size() % 2 == 0) {
    place.level = scenario_level::standalone;
    place.file = "fuzz.yaml";
    return place;
  }
  place.level = scenario_level::corpus;
  place.root = "/corpus";
  place.expected_name = declared_name(text);
  place.file = "/corpus/" + place.expected_name + ".yaml";
  return place;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace streamsan::harness;
  const std::string text(streamsan::fuzz::as_text(data, size));
  const scenario_place place = place_for(text);
  try {
    const scenario s = parse_scenario(text, place);
    FUZZ_CHECK(s.level == place.level);
  } catch (const scenario_error& e) {
    FUZZ_CHECK(std::string_view(e.what()).starts_with(place.file + ":"));
  }
  return 0;
}
