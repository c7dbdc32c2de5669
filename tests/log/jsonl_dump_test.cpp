#include "sanitizer/log/jsonl_dump.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "sanitizer/log/record_names.h"
#include "tests/log/sample_log.h"

namespace streamsan {
namespace {

using json = nlohmann::json;

std::vector<json> dump(const std::vector<record>& log) {
  std::ostringstream out;
  jsonl_dumper dumper(out);
  for (const auto& r : log) dumper.on_record(r);
  std::vector<json> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  return lines;
}

std::uint64_t seq_of_kind(const std::vector<record>& log, std::string_view kind) {
  for (const auto& r : log) {
    if (record_kind_name(r.body) == kind) return r.header.seq;
  }
  throw std::runtime_error("no " + std::string(kind) + " record");
}

const json& line_of_kind(const std::vector<json>& lines, std::string_view kind) {
  for (const auto& line : lines) {
    if (line.at("kind") == kind) return line;
  }
  throw std::runtime_error("no " + std::string(kind) + " line");
}

TEST(JsonlDump, OneObjectPerRecordInOrder) {
  const auto log = testing::sample_log();
  const auto lines = dump(log);
  ASSERT_EQ(lines.size(), log.size());
  for (std::size_t i = 0; i < log.size(); ++i) {
    EXPECT_EQ(lines[i].at("seq"), log[i].header.seq);
    EXPECT_EQ(lines[i].at("thread"), raw(log[i].header.thread));
    EXPECT_EQ(lines[i].at("stack"), raw(log[i].header.stack));
    EXPECT_EQ(lines[i].at("kind"), record_kind_name(log[i].body));
  }
}

TEST(JsonlDump, KernelLaunchResolvesItsNameAndListsAccesses) {
  const auto log = testing::sample_log();
  const auto lines = dump(log);
  auto expected = json::parse(R"({"seq":0,"thread":1,"stack":1,"kind":"kernel_launch","stream":1,
              "kernel":"fill","accesses":[
                {"range":{"alloc":1,"offset":0,"size":4096},"mode":"write","origin":"exact"},
                {"range":{"alloc":2,"offset":16,"size":32},"mode":"read","origin":"measured"},
                {"range":{"alloc":3,"offset":8,"size":4},"mode":"read_atomic",
                 "origin":"inferred"}],"cooperative":true})");
  expected["seq"] = seq_of_kind(log, "kernel_launch");
  EXPECT_EQ(line_of_kind(lines, "kernel_launch"), expected);
}

TEST(JsonlDump, EnumsAddressesAndNestedGraphs) {
  const auto log = testing::sample_log();
  const auto lines = dump(log);
  const auto& alloc = line_of_kind(lines, "alloc_record");
  EXPECT_EQ(alloc.at("memory"), "managed");
  EXPECT_EQ(alloc.at("address"), "0x7f0000001000");
  EXPECT_EQ(alloc.at("label"), "A");
  EXPECT_EQ(line_of_kind(lines, "stream_create").at("flavor"), "blocking");
  EXPECT_EQ(line_of_kind(lines, "stream_create").at("priority"), -1);
  EXPECT_EQ(line_of_kind(lines, "stack_define").at("frames"),
            json::parse(R"(["0x401000","0x402abc","0xffffffffffffffff"])"));
  const auto& graph = line_of_kind(lines, "graph_instantiate");
  ASSERT_EQ(graph.at("nodes").size(), 4u);
  EXPECT_EQ(graph.at("nodes")[0].at("node_kind"), "kernel");
  EXPECT_EQ(graph.at("nodes")[0].at("name"), "node0");
  EXPECT_EQ(graph.at("nodes")[1].at("name"), nullptr);
  EXPECT_EQ(graph.at("nodes")[2].at("accesses").size(), 2u);
  EXPECT_EQ(graph.at("nodes")[3].at("node_kind"), "mem_free");
  EXPECT_EQ(graph.at("nodes")[3].at("memory"), 2);
  EXPECT_EQ(graph.at("edges"),
            json::parse(R"([{"from":0,"to":1},{"from":1,"to":2},{"from":2,"to":3}])"));
  auto pop = json::parse(R"({"seq":0,"thread":1,"stack":1,"kind":"nvtx_pop"})");
  pop["seq"] = seq_of_kind(log, "nvtx_pop");
  EXPECT_EQ(line_of_kind(lines, "nvtx_pop"), pop);
}

TEST(JsonlDump, UnknownStringIdsStayNumbers) {
  const auto lines = dump({record{{1, {}, {}}, nvtx_mark{string_id{9}}}});
  EXPECT_EQ(lines.at(0).at("message"), 9);
}

TEST(JsonlDump, InvalidUtf8IsReplacedNotFatal) {
  const auto lines = dump({record{{1, {}, {}}, string_define{string_id{1}, "bad\xff"}}});
  EXPECT_EQ(lines.at(0).at("text"), "bad\xEF\xBF\xBD");
}

}  // namespace
}  // namespace streamsan
