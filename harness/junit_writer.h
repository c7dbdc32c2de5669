// JUnit XML (the schema Jenkins, GitLab and GitHub test reporters read): one
// testcase per scenario and backend, classname "scenarios.AREA", the
// failure messages as the failure's text and its rules as properties.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "harness/scenario_result.h"

namespace streamsan::harness {

void write_junit(std::ostream& out, const std::vector<scenario_result>& results);

// XML-escapes text for an attribute or element body; drops characters XML
// 1.0 cannot carry.
std::string xml_escape(std::string_view text);

}  // namespace streamsan::harness
