// scenario_result <-> JSON: the --json report, and the messages worker
// processes (--jobs) send back to the parent.
#pragma once

#include <ostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/scenario_result.h"

namespace streamsan::harness {

nlohmann::json to_json(const scenario_result& r);
// Throws nlohmann::json::exception for a document that is not one.
scenario_result result_from_json(const nlohmann::json& j);

// {"scenarios": [...], "summary": {"passed": n, "failed": n, "skipped": n}}
void write_json_report(std::ostream& out, const std::vector<scenario_result>& results);

}  // namespace streamsan::harness
