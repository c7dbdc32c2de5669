// harness/scenario.schema.json against the parser's own tables: the
// operations, their keys, the kernels and their parameters, diagnostic kinds
// and allocator statistics. tests/harness/schema_test.py checks the schema
// against the files; this checks that it describes what the parser accepts,
// so that a new operation or key cannot be added to one and not the other.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/kernel_catalog.h"
#include "harness/operation_catalog.h"
#include "harness/stat_catalog.h"
#include "sanitizer/engine/diagnostic.h"

namespace streamsan::harness {
namespace {

using names = std::set<std::string>;

const nlohmann::json& schema() {
  static const nlohmann::json s = [] {
    const char* root = std::getenv("STREAMSAN_SOURCE_ROOT");
    std::ifstream in(std::string(root == nullptr ? "." : root) + "/harness/scenario.schema.json");
    return nlohmann::json::parse(in);
  }();
  return s;
}

const nlohmann::json& definition(const std::string& name) {
  return schema().at("definitions").at(name);
}

names keys_of(const nlohmann::json& object) {
  names out;
  for (const auto& [key, value] : object.items()) out.insert(key);
  return out;
}

names strings_of(const nlohmann::json& array) {
  names out;
  for (const auto& v : array) out.insert(v.get<std::string>());
  return out;
}

TEST(SchemaConsistency, OperationsAreTheParsers) {
  names parser;
  for (const auto& op : operation_catalog()) parser.insert(std::string(op.name));
  EXPECT_EQ(strings_of(definition("operation").at("properties").at("op").at("enum")), parser);
}

TEST(SchemaConsistency, EveryOperationTakesTheParsersKeys) {
  for (const auto& op : operation_catalog()) {
    if (op.name == "launch") continue;  // its keys depend on the kernel: below
    names parser{"op", "label"};
    for (const auto k : op.keys) parser.insert(std::string(k));
    const auto& def = definition("op_" + std::string(op.name));
    EXPECT_EQ(keys_of(def.at("properties")), parser) << op.name;
    EXPECT_EQ(def.at("additionalProperties"), false) << op.name;
  }
}

TEST(SchemaConsistency, EveryKernelTakesItsParameters) {
  const auto& launch = definition("op_launch");
  names kernels;
  for (const auto& k : kernel_catalog()) kernels.insert(std::string(k.name));
  EXPECT_EQ(strings_of(launch.at("properties").at("kernel").at("enum")), kernels);
  const auto& branches = launch.at("allOf");
  ASSERT_EQ(branches.size(), kernel_catalog().size());
  for (const auto& k : kernel_catalog()) {
    names parser{"op", "label", "kernel", "stream"};
    names required;
    for (const auto& p : k.params) {
      parser.insert(std::string(p.name));
      if (!p.optional) required.insert(std::string(p.name));
    }
    bool found = false;
    for (const auto& b : branches) {
      if (b.at("if").at("properties").at("kernel").at("const") != k.name) continue;
      found = true;
      EXPECT_EQ(keys_of(b.at("then").at("properties")), parser) << k.name;
      EXPECT_EQ(strings_of(b.at("then").at("required")), required) << k.name;
    }
    EXPECT_TRUE(found) << k.name << " has no branch in op_launch";
  }
}

TEST(SchemaConsistency, DiagnosticKindsAreTheEngines) {
  names engine;
  for (int i = 0; i < diagnostic_kind_count; ++i) {
    engine.insert(std::string(to_string(static_cast<diagnostic_kind>(i))));
  }
  EXPECT_EQ(strings_of(definition("diagnostic").at("properties").at("kind").at("enum")), engine);
}

TEST(SchemaConsistency, MemoryStatisticsAreTheCatalogs) {
  names catalog;
  for (const auto s : known_stat_names()) catalog.insert(std::string(s));
  const auto& result_kinds =
      definition("expect").at("properties").at("results").at("additionalProperties").at("oneOf");
  names schema_stats;
  for (const auto& k : result_kinds) {
    if (k.value("type", "") == "object") schema_stats = keys_of(k.at("properties"));
  }
  EXPECT_EQ(schema_stats, catalog);
}

}  // namespace
}  // namespace streamsan::harness
