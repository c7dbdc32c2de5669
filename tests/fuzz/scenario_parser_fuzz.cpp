// Fuzz target: scenario YAML (`streamsan test`). Any text is either a valid
// scenario or refused with a scenario_error naming the place; no other
// exception (yaml-cpp's own included) may escape the parser.
#include <string>

#include <yaml-cpp/yaml.h>

#include "harness/scenario_error.h"
#include "harness/scenario_parser.h"
#include "tests/fuzz/fuzz_target.h"

namespace {

// The parser checks the scenario's name against its file's path; naming the
// file after the name the input declares lets the fuzzer get past that check.
std::string file_for(const std::string& text) {
  try {
    const YAML::Node root = YAML::Load(text);
    if (root.IsMap() && root["name"] && root["name"].IsScalar()) {
      const auto name = root["name"].Scalar();
      if (!name.empty() && name.size() < 200 && name.find('\0') == std::string::npos) {
        return "scenarios/" + name + ".yaml";
      }
    }
  } catch (const YAML::Exception&) {
  }
  return "scenarios/fuzz/input.yaml";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace streamsan::harness;
  const std::string text(streamsan::fuzz::as_text(data, size));
  const std::string file = file_for(text);
  try {
    const scenario s = parse_scenario(text, file);
    FUZZ_CHECK(!s.name.empty());
  } catch (const scenario_error& e) {
    FUZZ_CHECK(std::string_view(e.what()).starts_with(file + ":"));
  }
  return 0;
}
