#include "tests/report/golden_file.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>

namespace streamsan::testing {

std::string normalized_report(const std::string& text) {
  static const std::regex address("0x[0-9a-f]+");
  const std::string out = std::regex_replace(text, address, "0x…");
  // Ids keep their order (creation order), not their values.
  static const std::regex id("\\b(stream|event|alloc|graph|thread)#([0-9]+)");
  std::map<std::string, std::map<unsigned long, int>> numbers;  // kind -> old -> new
  for (auto it = std::sregex_iterator(out.begin(), out.end(), id); it != std::sregex_iterator();
       ++it) {
    numbers[(*it)[1].str()].emplace(std::stoul((*it)[2].str()), 0);
  }
  for (auto& [kind, ids] : numbers) {
    int next = 0;
    for (auto& [old, fresh] : ids) fresh = ++next;
  }
  std::string renumbered;
  std::size_t last = 0;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), id); it != std::sregex_iterator();
       ++it) {
    const std::smatch& m = *it;
    renumbered.append(out, last, static_cast<std::size_t>(m.position(0)) - last);
    renumbered += m[1].str() + "#" +
                  std::to_string(numbers[m[1].str()][std::stoul(m[2].str())]);
    last = static_cast<std::size_t>(m.position(0) + m.length(0));
  }
  renumbered.append(out, last, std::string::npos);
  return renumbered;
}

void expect_golden(const std::string& name, const std::string& actual) {
  const std::filesystem::path path = std::filesystem::path(STREAMSAN_REPORT_GOLDEN_DIR) / name;
  if (std::getenv("STREAMSAN_UPDATE_GOLDEN") != nullptr) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << actual;
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing golden file " << path
                  << " (STREAMSAN_UPDATE_GOLDEN=1 writes it)";
  const std::string expected{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_EQ(actual, expected) << "golden file: " << path;
}

}  // namespace streamsan::testing
