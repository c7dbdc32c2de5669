#include "inject/capture/api_classification.h"

#include <algorithm>

namespace streamsan::injection {
namespace {

bool strip(std::string_view& s, std::string_view suffix) {
  if (s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix) {
    s.remove_suffix(suffix.size());
    return true;
  }
  return false;
}

}  // namespace

std::string_view base_api_name(std::string_view name) {
  // "_v7000", "_v2", "_v3": version suffixes (digits after "_v").
  for (int round = 0; round < 3; ++round) {
    const auto v = name.rfind("_v");
    if (v != std::string_view::npos && v + 2 < name.size() &&
        name.find_first_not_of("0123456789", v + 2) == std::string_view::npos) {
      name = name.substr(0, v);
      continue;
    }
    if (strip(name, "_ptsz") || strip(name, "_ptds")) continue;
    break;
  }
  return name;
}

std::optional<api_class> listed_class(std::string_view cupti_name) {
  const std::string_view name = base_api_name(cupti_name);
  for (const api_class c : {api_class::modelled, api_class::inert, api_class::unmodelled}) {
    if (std::ranges::binary_search(listed_apis(c), name)) return c;
  }
  return std::nullopt;
}

api_class classify_api(std::string_view cupti_name) {
  return listed_class(cupti_name).value_or(api_class::unmodelled);
}

}  // namespace streamsan::injection
