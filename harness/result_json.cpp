#include "harness/result_json.h"

namespace streamsan::harness {
namespace {

result_status status_from(const std::string& s) {
  if (s == "pass") return result_status::passed;
  if (s == "skip") return result_status::skipped;
  if (s == "FAIL") return result_status::failed;
  throw std::invalid_argument("unknown result status '" + s + "'");
}

}  // namespace

nlohmann::json to_json(const scenario_result& r) {
  nlohmann::json j{
      {"name", r.name},
      {"file", r.file},
      {"backend", r.backend},
      {"rules", r.rules},
      {"expected_verdict", r.expected_verdict},
      {"seen_verdict", r.seen_verdict},
      {"seen_diagnostics", r.seen_diagnostics},
      {"result", std::string(to_string(r.status))},
      {"failures", r.failures},
      {"seconds", r.seconds},
  };
  if (!r.skip_reason.empty()) j["skip_reason"] = r.skip_reason;
  if (r.schedules) {
    nlohmann::json s{{"seeds", r.schedules->seeds}, {"wrong_seeds", r.schedules->wrong_seeds}};
    if (const auto& w = r.schedules->first) {
      s["witness"] = {{"seed", w->seed},         {"where", w->where},
                      {"index", w->index},       {"expected", w->expected},
                      {"seen", w->seen},         {"reference", w->reference},
                      {"text", describe(*w)}};
    } else {
      s["witness"] = nullptr;
    }
    j["schedules"] = std::move(s);
  }
  return j;
}

scenario_result result_from_json(const nlohmann::json& j) {
  scenario_result r;
  r.name = j.at("name").get<std::string>();
  r.file = j.at("file").get<std::string>();
  r.backend = j.at("backend").get<std::string>();
  r.rules = j.at("rules").get<std::vector<std::string>>();
  r.expected_verdict = j.at("expected_verdict").get<std::string>();
  r.seen_verdict = j.at("seen_verdict").get<std::string>();
  r.seen_diagnostics = j.at("seen_diagnostics").get<std::vector<std::string>>();
  r.status = status_from(j.at("result").get<std::string>());
  r.failures = j.at("failures").get<std::vector<std::string>>();
  r.seconds = j.at("seconds").get<double>();
  if (j.contains("skip_reason")) r.skip_reason = j["skip_reason"].get<std::string>();
  if (j.contains("schedules")) {
    const auto& s = j["schedules"];
    schedule_report rep;
    rep.seeds = s.at("seeds").get<std::uint64_t>();
    rep.wrong_seeds = s.at("wrong_seeds").get<std::uint64_t>();
    if (const auto& w = s.at("witness"); !w.is_null()) {
      rep.first = witness{w.at("seed").get<std::uint64_t>(),  w.at("where").get<std::string>(),
                          w.at("index").get<std::uint64_t>(), w.at("expected").get<float>(),
                          w.at("seen").get<float>(),          w.at("reference").get<std::string>()};
    }
    r.schedules = rep;
  }
  return r;
}

void write_json_report(std::ostream& out, const std::vector<scenario_result>& results) {
  nlohmann::json list = nlohmann::json::array();
  std::uint64_t counts[3] = {0, 0, 0};
  for (const auto& r : results) {
    list.push_back(to_json(r));
    ++counts[static_cast<int>(r.status)];
  }
  const nlohmann::json doc{
      {"scenarios", std::move(list)},
      {"summary", {{"passed", counts[0]}, {"failed", counts[1]}, {"skipped", counts[2]}}}};
  out << doc.dump(2) << '\n';
}

}  // namespace streamsan::harness
