// The corpus under scenarios/ against the rules of semantics.md: every
// file parses, every rule is cited, every quote is the rule's own words.
//
// semantics.md lives in ../shared/reference/ next to the repository (in CI
// too). Where it is absent the tests that need it are skipped and the
// corpus is checked against harness/rule_catalog.cpp's copy of the rules
// (Note [A copy of the rules]).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "harness/corpus.h"
#include "harness/rule_catalog.h"

namespace streamsan::harness {
namespace {

std::string env_path(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

const corpus& the_corpus() {
  static const corpus c = corpus::load(find_scenario_files({env_path("STREAMSAN_SCENARIOS")}));
  return c;
}

// id -> statement (normalized), from "- **S-X-1** statement ..." items.
std::map<std::string, std::string> read_rules(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::map<std::string, std::string> rules;
  const std::regex item(R"(- \*\*(S-[A-Z]+-[0-9]+)\*\*([^]*?)(?=\n- \*\*S-|\n## |$))");
  const std::string doc = text.str();
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), item); it != std::sregex_iterator();
       ++it) {
    rules[(*it)[1]] = normalize_rule_text((*it)[2].str());
  }
  return rules;
}

const std::map<std::string, std::string>* semantics() {
  static const std::string path = env_path("STREAMSAN_SEMANTICS");
  static const auto rules = std::filesystem::is_regular_file(path)
                                ? read_rules(path)
                                : std::map<std::string, std::string>{};
  return rules.empty() ? nullptr : &rules;
}

TEST(Corpus, EveryScenarioParsesAndPairsWithItsTwin) {
  const corpus& c = the_corpus();
  for (const auto& e : c.errors()) ADD_FAILURE() << e;
  EXPECT_GE(c.scenarios().size(), 60u);
}

TEST(Corpus, EveryRuleIsCitedBySomeScenario) {
  std::set<std::string> cited;
  for (const auto& s : the_corpus().scenarios()) {
    for (const auto& r : s.rules) cited.insert(r.id);
  }
  for (const auto& rule : rule_catalog()) {
    EXPECT_TRUE(cited.contains(std::string(rule.id))) << rule.id << " is cited by no scenario";
  }
}

TEST(Corpus, EveryBuggyScenarioHasAFixedTwin) {
  const corpus& c = the_corpus();
  for (const auto& s : c.scenarios()) {
    if (!s.buggy()) continue;
    const scenario* t = c.twin_of(s);
    ASSERT_NE(t, nullptr) << s.name << " has no twin";
    EXPECT_FALSE(t->buggy()) << s.name << "'s twin " << t->name << " is buggy too";
  }
}

TEST(Corpus, RuleCatalogIsACopyOfSemantics) {
  const auto* rules = semantics();
  if (rules == nullptr) GTEST_SKIP() << "semantics.md not found at " << env_path("STREAMSAN_SEMANTICS");
  std::map<std::string, std::string> catalog;
  for (const auto& r : rule_catalog()) catalog[std::string(r.id)] = std::string(r.statement);
  EXPECT_EQ(rules->size(), 42u);
  for (const auto& [id, text] : *rules) {
    const auto it = catalog.find(id);
    if (it == catalog.end()) {
      ADD_FAILURE() << id << " is in semantics.md but not in harness/rule_catalog.cpp";
      continue;
    }
    EXPECT_EQ(it->second, text) << id << " differs from semantics.md; copy its statement into "
                                    "harness/rule_catalog.cpp (Note [A copy of the rules])";
  }
  for (const auto& [id, text] : catalog) {
    EXPECT_TRUE(rules->contains(id)) << id << " is in harness/rule_catalog.cpp but not in semantics.md";
  }
}

// The corpus level checks quotes against the copy (corpus::load above);
// this checks them against the document itself.
TEST(Corpus, QuotedRuleTextIsTheRulesOwnWords) {
  const auto* rules = semantics();
  if (rules == nullptr) GTEST_SKIP() << "semantics.md not found at " << env_path("STREAMSAN_SEMANTICS");
  for (const auto& s : the_corpus().scenarios()) {
    for (const auto& r : s.rules) {
      const auto it = rules->find(r.id);
      ASSERT_NE(it, rules->end()) << to_string(r.where) << ": " << r.id;
      EXPECT_NE(it->second.find(normalize_rule_text(r.text)), std::string::npos)
          << to_string(r.where) << ": the text quoted for " << r.id
          << " is not in semantics.md:\n  quoted: " << normalize_rule_text(r.text)
          << "\n  rule:   " << it->second;
    }
  }
}

TEST(Corpus, TheProjectsCorpusIsMarked) {
  for (const auto& s : the_corpus().scenarios()) {
    EXPECT_EQ(s.level, scenario_level::corpus) << s.file;
  }
}

}  // namespace
}  // namespace streamsan::harness
