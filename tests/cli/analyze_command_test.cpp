// `streamsan analyze` end to end: traces recorded here with the real
// recorder and trace writer, analyzed by the built binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>

#include "sanitizer/log/recorder.h"
#include "sanitizer/log/trace_error.h"
#include "sanitizer/log/trace_reader.h"
#include "sanitizer/log/trace_writer.h"
#include "tests/cli/run_streamsan.h"
#include "tests/log/sample_log.h"

namespace streamsan {
namespace {

using ::testing::ContainsRegex;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using testing::run_streamsan;

struct program {
  recorder& rec;
  stream_id s1, s2;
  alloc_id buffer;
};

[[gnu::noinline]] void cli_test_fill(program& p, access_origin origin = access_origin::exact) {
  const streamsan::access writes[] = {{{p.buffer, 0, 256}, access_mode::write, origin}};
  p.rec.emit(kernel_launch{p.s1, p.rec.intern("fill"), writes});
}

[[gnu::noinline]] void cli_test_sum(program& p, access_origin origin = access_origin::exact) {
  const streamsan::access reads[] = {{{p.buffer, 0, 256}, access_mode::read, origin}};
  p.rec.emit(kernel_launch{p.s2, p.rec.intern("sum"), reads});
}

// Two non-blocking streams and a 256-byte buffer 'buf'.
program start_program(recorder& rec) {
  program p{rec, rec.new_stream_id(), rec.new_stream_id(), rec.new_alloc_id()};
  rec.emit(stream_create{p.s1, 0, stream_flavor::non_blocking, 0});
  rec.emit(stream_create{p.s2, 0, stream_flavor::non_blocking, 0});
  rec.emit(alloc_record{p.buffer, memory_kind::device, 0, 256, 0x7000, {}, {}, 0,
                        rec.intern("buf")});
  return p;
}

enum class ordering { none, event };

// What the runtime would log for: fill on s1, sum on s2, with or without an
// event between them, then `unmodelled` calls to an API it does not model.
void record_program(const std::filesystem::path& path, ordering order, int unmodelled = 0) {
  recorder rec({.capture_stacks = true, .stack_depth = 6});
  trace_writer writer(path);
  rec.add_sink(writer);
  program p = start_program(rec);
  cli_test_fill(p);
  if (order == ordering::event) {
    const auto e = rec.new_event_id();
    rec.emit(event_create{e, event_flag_none});
    rec.emit(event_record{e, p.s1});
    rec.emit(event_wait{e, p.s2});
  }
  cli_test_sum(p);
  for (int i = 0; i < unmodelled; ++i) rec.emit(unmodelled_call{rec.intern("cudaMemAdvise")});
  rec.emit(device_synchronize{0});
  rec.remove_sink(writer);
  writer.close();
}

// The racy program, one round per entry: fill and sum with footprints of
// that origin (inferred: a guess, a candidate; measured: a confirmation),
// from the same call sites each round.
void record_rounds(const std::filesystem::path& path, std::initializer_list<access_origin> rounds) {
  recorder rec({.capture_stacks = true, .stack_depth = 6});
  trace_writer writer(path);
  rec.add_sink(writer);
  program p = start_program(rec);
  for (const access_origin origin : rounds) {
    cli_test_fill(p, origin);
    cli_test_sum(p, origin);
    rec.emit(device_synchronize{0});
  }
  rec.remove_sink(writer);
  writer.close();
}

// What the injection library would log for a library that synchronizes with
// an event it never recorded: the call site is in `module`.
void record_library_sync(const std::filesystem::path& path, std::string_view module) {
  trace_writer writer(path, {.symbolize = false});
  std::uint64_t seq = 0;
  const auto emit = [&](record_body body, stack_id stack = {}) {
    writer.on_record(record{{++seq, thread_id{1}, stack}, std::move(body)});
  };
  const std::uint64_t frames[] = {0x5000, 0x6000};
  emit(stack_define{stack_id{1}, frames});
  emit(frame_symbol{0x5000, "cublasSgemm_v2", "", 0, module, 0x5000});
  emit(frame_symbol{0x6000, "main", "app.cpp", 12, "/home/me/app", 0x6000});
  emit(event_create{event_id{1}, event_flag_none});
  emit(event_synchronize{event_id{1}}, stack_id{1});
  writer.close();
}

std::string trace_error_of(const std::filesystem::path& path) {
  try {
    trace_reader reader(path);
    while (reader.next() != nullptr) {
    }
  } catch (const trace_error& e) {
    return e.what();
  }
  return {};
}

class AnalyzeCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::scratch_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  std::filesystem::path dir_;
};

TEST_F(AnalyzeCommand, HelpExitsZero) {
  const auto r = run_streamsan({"analyze", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, StartsWith("usage: streamsan analyze TRACE [options]\n"));
  EXPECT_THAT(r.out, HasSubstr("--error-exitcode"));
}

TEST_F(AnalyzeCommand, UnknownOptionIsAUsageError) {
  const auto r = run_streamsan({"analyze", "t.bin", "--bogus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, StartsWith("streamsan analyze: unrecognised option '--bogus'\n"));
}

// Note [Placeholders in command-line tokens]: Boost.Program_options would
// expand this token in its error message forever.
TEST_F(AnalyzeCommand, PlaceholderTokensAreRefusedNotExpandedForever) {
  const auto r = run_streamsan({"analyze", "t.bin", "--%original_token%format"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, StartsWith("streamsan analyze: argument '--%original_token%format' holds "
                                "'%original_token%', which the option parser cannot read\n"));
  EXPECT_EQ(run_streamsan({"test", "--%value%"}).exit_code, 2);
  EXPECT_EQ(run_streamsan({"run", "--%option%", "--", "true"}).exit_code, 2);
}

TEST_F(AnalyzeCommand, BadOptionValuesAreUsageErrors) {
  EXPECT_EQ(run_streamsan({"analyze", "t.bin", "--format", "xml"}).err,
            "streamsan analyze: --format must be text, json, sarif, html or chrome-trace, not 'xml'\n"
            "usage: streamsan analyze TRACE [options]\n"
            "Run 'streamsan analyze --help' for the options.\n");
  const auto negative = run_streamsan({"analyze", "t.bin", "--print-limit", "-1"});
  EXPECT_EQ(negative.exit_code, 2);
  EXPECT_THAT(negative.err, HasSubstr("--print-limit must be between 0 and 1000000000, not -1"));
  const auto code = run_streamsan({"analyze", "t.bin", "--error-exitcode", "300"});
  EXPECT_EQ(code.exit_code, 2);
  EXPECT_THAT(code.err, HasSubstr("--error-exitcode must be between 0 and 255, not 300"));
  EXPECT_EQ(run_streamsan({"analyze", "t.bin", "--error-exitcode", "x"}).exit_code, 2);
  EXPECT_EQ(run_streamsan({"analyze", "--format"}).exit_code, 2);
  EXPECT_THAT(run_streamsan({"analyze", "t.bin", "--color", "blue"}).err,
              StartsWith("streamsan analyze: --color must be auto, always or never, not 'blue'\n"));
  EXPECT_THAT(run_streamsan({"analyze", "t.bin", "--fix-style", "torch"}).err,
              StartsWith("streamsan analyze: --fix-style must be auto, cuda or runtime, not 'torch'\n"));
  EXPECT_THAT(run_streamsan({"analyze", "t.bin", "--stack-depth", "-2"}).err,
              HasSubstr("--stack-depth must be between 0 and 1000, not -2"));
}

TEST_F(AnalyzeCommand, NeedsExactlyOneTrace) {
  const auto none = run_streamsan({"analyze"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, StartsWith("streamsan analyze: no trace file given\n"));
  const auto two = run_streamsan({"analyze", "a.bin", "b.bin"});
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_THAT(two.err, StartsWith("streamsan analyze: one trace file at a time (got 2)\n"));
}

TEST_F(AnalyzeCommand, MissingTraceIsBadInput) {
  const auto path = (dir_ / "none.bin").string();
  const auto r = run_streamsan({"analyze", path});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "streamsan analyze: " + path +
                       ": cannot open trace file: No such file or directory\n");
}

TEST_F(AnalyzeCommand, CorruptTraceIsBadInputNamingFileOffsetAndCause) {
  record_program(dir_ / "t.bin", ordering::none);
  auto bytes = testing::read_file_bytes(dir_ / "t.bin");
  bytes[16] = static_cast<char>(0x7e);  // the first record's kind becomes unknown
  testing::write_file_bytes(dir_ / "t.bin", bytes);
  const auto expected = (dir_ / "t.bin").string() + ": offset 16: record kind 126 is unknown";
  ASSERT_EQ(trace_error_of(dir_ / "t.bin"), expected);
  const auto r = run_streamsan({"analyze", (dir_ / "t.bin").string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "streamsan analyze: " + expected + "\n");
  EXPECT_EQ(r.out, "");
}

TEST_F(AnalyzeCommand, TruncatedTraceIsBadInputUnlessAllowed) {
  record_program(dir_ / "t.bin", ordering::event);
  auto bytes = testing::read_file_bytes(dir_ / "t.bin");
  bytes.resize(bytes.size() - 3);  // the end-of-trace marker
  testing::write_file_bytes(dir_ / "t.bin", bytes);
  const auto r = run_streamsan({"analyze", (dir_ / "t.bin").string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "streamsan analyze: " + trace_error_of(dir_ / "t.bin") +
                       "\nstreamsan analyze: --allow-truncated analyzes the records before the "
                       "end\n");
  const auto allowed = run_streamsan({"analyze", (dir_ / "t.bin").string(), "--allow-truncated"});
  EXPECT_EQ(allowed.exit_code, 0);
  EXPECT_EQ(allowed.out, "streamsan: reported 0 warnings\n");
}

TEST_F(AnalyzeCommand, OrderedProgramReportsNothingAndExitsZero) {
  record_program(dir_ / "t.bin", ordering::event);
  const auto r = run_streamsan({"analyze", (dir_ / "t.bin").string()});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "streamsan: reported 0 warnings\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(AnalyzeCommand, UnmodelledCallsAreListed) {
  record_program(dir_ / "t.bin", ordering::event, 2);
  const auto r = run_streamsan({"analyze", (dir_ / "t.bin").string()});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out,
            "streamsan: unmodelled CUDA API calls: cudaMemAdvise (2)\n"
            "streamsan: reported 0 warnings\n");
}

TEST_F(AnalyzeCommand, JsonAndSarifFormats) {
  record_program(dir_ / "t.bin", ordering::event, 1);
  const auto json = run_streamsan({"analyze", (dir_ / "t.bin").string(), "--format", "json"});
  EXPECT_EQ(json.exit_code, 0);
  const auto report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report.at("summary").at("warnings"), 0);
  EXPECT_EQ(report.at("summary").at("unmodelled_calls").at("cudaMemAdvise"), 1);
  EXPECT_GT(report.at("summary").at("records_processed").get<int>(), 10);

  const auto sarif = run_streamsan({"analyze", (dir_ / "t.bin").string(), "--format", "sarif"});
  EXPECT_EQ(sarif.exit_code, 0);
  const auto log = nlohmann::json::parse(sarif.out);
  EXPECT_EQ(log.at("version"), "2.1.0");
  EXPECT_TRUE(log.at("runs")[0].at("results").empty());
  EXPECT_EQ(log.at("runs")[0].at("tool").at("driver").at("rules").size(), 11u);
}

TEST_F(AnalyzeCommand, OutputGoesToTheNamedFile) {
  record_program(dir_ / "t.bin", ordering::event);
  const auto report = dir_ / "report.txt";
  const auto r = run_streamsan({"analyze", (dir_ / "t.bin").string(), "-o", report.string()});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(testing::read_file_bytes(report), "streamsan: reported 0 warnings\n");
  const auto unwritable =
      run_streamsan({"analyze", (dir_ / "t.bin").string(), "-o", (dir_ / "no/such/file").string()});
  EXPECT_EQ(unwritable.exit_code, 1);
  EXPECT_EQ(unwritable.err, "streamsan analyze: cannot write " + (dir_ / "no/such/file").string() + "\n");
}

TEST_F(AnalyzeCommand, MalformedSuppressionsAreBadInput) {
  record_program(dir_ / "t.bin", ordering::event);
  testing::write_file_bytes(dir_ / "supp.txt", "race:fill\nbogus line\n");
  const auto r = run_streamsan({"analyze", (dir_ / "t.bin").string(), "--suppressions",
                               (dir_ / "supp.txt").string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "streamsan analyze: " + (dir_ / "supp.txt").string() +
                       ":2: expected TYPE:PATTERN (e.g. race:my_kernel), got 'bogus line'\n");
  const auto missing = run_streamsan({"analyze", (dir_ / "t.bin").string(), "--suppressions",
                                      (dir_ / "none.txt").string()});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_THAT(missing.err, HasSubstr("cannot read suppressions file: No such file or directory"));
}

TEST_F(AnalyzeCommand, RaceExits66WithASymbolizedReport) {
  record_program(dir_ / "t.bin", ordering::none);
  const auto r = run_streamsan({"analyze", (dir_ / "t.bin").string()});
  EXPECT_EQ(r.exit_code, 66);
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, StartsWith("==================\n"
                                "WARNING: streamsan: stream-race (read-after-write) on alloc#1 "
                                "'buf' (device memory, 256 bytes)\n"
                                "  Read of 256 bytes at offset 0 by kernel 'sum' on stream#2 "
                                "(thread#1):\n"
                                "    #0 streamsan::(anonymous namespace)::cli_test_sum("));
  // Symbols come from the trace (written by this process), not from the
  // analyzing process, which never had this code loaded.
  EXPECT_THAT(r.out, HasSubstr("tests/cli/analyze_command_test.cpp:"));
  EXPECT_THAT(r.out, HasSubstr("  Previous write of 256 bytes at offset 0 by kernel 'fill' on "
                               "stream#1 (thread#1):\n"
                               "    #0 streamsan::(anonymous namespace)::cli_test_fill("));
  EXPECT_THAT(r.out, HasSubstr("  Conflicting bytes: [0, 256) of alloc#1\n"));
  EXPECT_THAT(r.out, HasSubstr("\nSUMMARY: streamsan: stream-race (read-after-write) "));
  EXPECT_THAT(r.out, EndsWith("==================\nstreamsan: reported 1 warning\n"));
}

TEST_F(AnalyzeCommand, ErrorExitcodeChoosesTheStatusForReports) {
  record_program(dir_ / "t.bin", ordering::none);
  const auto zero = run_streamsan({"analyze", (dir_ / "t.bin").string(), "--error-exitcode", "0"});
  EXPECT_EQ(zero.exit_code, 0);
  EXPECT_THAT(zero.out, EndsWith("streamsan: reported 1 warning\n"));
  EXPECT_EQ(run_streamsan({"analyze", (dir_ / "t.bin").string(), "--error-exitcode", "7"}).exit_code,
            7);
}

TEST_F(AnalyzeCommand, SuppressedRaceIsCountedAndExitsZero) {
  record_program(dir_ / "t.bin", ordering::none);
  testing::write_file_bytes(dir_ / "supp.txt", "# the demo race\nrace:^fill$\n");
  testing::write_file_bytes(dir_ / "sync.txt", "sync:fill\n");
  const auto suppressed = run_streamsan({"analyze", (dir_ / "t.bin").string(), "--suppressions",
                                         (dir_ / "supp.txt").string()});
  EXPECT_EQ(suppressed.exit_code, 0);
  EXPECT_EQ(suppressed.out, "streamsan: reported 0 warnings, 1 suppressed\n");
  // A sync: line does not apply to races.
  const auto kept = run_streamsan({"analyze", (dir_ / "t.bin").string(), "--suppressions",
                                   (dir_ / "sync.txt").string()});
  EXPECT_EQ(kept.exit_code, 66);
}

TEST_F(AnalyzeCommand, PrintLimitStillReportsTheCount) {
  record_program(dir_ / "t.bin", ordering::none);
  const auto r = run_streamsan({"analyze", (dir_ / "t.bin").string(), "--print-limit", "0"});
  EXPECT_EQ(r.exit_code, 66);
  EXPECT_EQ(r.out, "streamsan: … and 1 more not printed\nstreamsan: reported 1 warning\n");
}

TEST_F(AnalyzeCommand, RaceInJsonAndSarif) {
  record_program(dir_ / "t.bin", ordering::none);
  const auto json = run_streamsan({"analyze", (dir_ / "t.bin").string(), "--format", "json"});
  EXPECT_EQ(json.exit_code, 66);
  const auto report = nlohmann::json::parse(json.out);
  ASSERT_EQ(report.at("diagnostics").size(), 1u);
  const auto& d = report.at("diagnostics")[0];
  EXPECT_EQ(d.at("kind"), "stream-race");
  EXPECT_EQ(d.at("current").at("name"), "sum");
  EXPECT_THAT(d.at("current").at("stack")[0].at("function").get<std::string>(),
              HasSubstr("cli_test_sum("));
  EXPECT_EQ(d.at("previous").at("name"), "fill");

  const auto sarif = run_streamsan({"analyze", (dir_ / "t.bin").string(), "--format", "sarif"});
  EXPECT_EQ(sarif.exit_code, 66);
  const auto log = nlohmann::json::parse(sarif.out);
  const auto& result = log.at("runs")[0].at("results").at(0);
  EXPECT_EQ(result.at("ruleId"), "stream-race");
  const auto& location = result.at("locations")[0].at("physicalLocation");
  EXPECT_THAT(location.at("artifactLocation").at("uri").get<std::string>(),
              EndsWith("tests/cli/analyze_command_test.cpp"));
  EXPECT_GT(location.at("region").at("startLine").get<int>(), 0);
  EXPECT_EQ(result.at("relatedLocations").size(), 2u);
}

TEST_F(AnalyzeCommand, KernelNamesThatAreNotUtf8StillGiveValidJson) {
  {
    recorder rec({.capture_stacks = false});
    trace_writer writer(dir_ / "t.bin");
    rec.add_sink(writer);
    program p{rec, rec.new_stream_id(), rec.new_stream_id(), rec.new_alloc_id()};
    rec.emit(alloc_record{p.buffer, memory_kind::device, 0, 16, 0, {}, {}, 0, {}});
    const streamsan::access writes[] = {{{p.buffer, 0, 16}, access_mode::write}};
    rec.emit(kernel_launch{p.s1, rec.intern("f\xff"), writes});
    rec.emit(kernel_launch{p.s2, rec.intern("g\xfe"), writes});
    rec.remove_sink(writer);
    writer.close();
  }
  for (const char* format : {"json", "sarif"}) {
    const auto r = run_streamsan({"analyze", (dir_ / "t.bin").string(), "--format", format});
    EXPECT_EQ(r.exit_code, 66) << format << ": " << r.err;
    const auto parsed = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(parsed.is_discarded()) << format << ": " << r.out;
  }
}

TEST_F(AnalyzeCommand, AnUnconfirmedCandidateIsListedAndExitsZero) {
  record_rounds(dir_ / "t.bin", {access_origin::inferred, access_origin::inferred});
  const auto r = run_streamsan({"analyze", (dir_ / "t.bin").string()});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, Not(HasSubstr("WARNING")));
  EXPECT_THAT(r.out, StartsWith("streamsan: possible races (guessed footprints, not confirmed by "
                                "a measurement): 1\n"
                                "  stream-race (read-after-write), 256 bytes of alloc#1 'buf' at "
                                "[0, 256), seen 2 times:\n"
                                "    kernel 'sum' on stream#2 (thread#1) at "));
  EXPECT_THAT(r.out, HasSubstr("(read, inferred footprint) after kernel 'fill' on stream#1 "
                               "(thread#1) at "));
  EXPECT_THAT(r.out, EndsWith("(write, inferred footprint)\n"
                              "streamsan: rerun with --precise to measure every launch\n"
                              "streamsan: reported 0 warnings; 1 possible race not confirmed\n"));
  const auto json = run_streamsan({"analyze", (dir_ / "t.bin").string(), "--format", "json"});
  EXPECT_EQ(json.exit_code, 0);
  const auto report = nlohmann::json::parse(json.out);
  EXPECT_TRUE(report.at("diagnostics").empty());
  ASSERT_EQ(report.at("possible_races").size(), 1u);
  EXPECT_EQ(report.at("possible_races")[0].at("certainty"), "candidate");
  EXPECT_EQ(report.at("summary").at("possible_races"), 1);
  const auto sarif = run_streamsan({"analyze", (dir_ / "t.bin").string(), "--format", "sarif"});
  EXPECT_EQ(sarif.exit_code, 0);
  const auto log = nlohmann::json::parse(sarif.out);
  EXPECT_EQ(log.at("runs")[0].at("results").at(0).at("level"), "note");
}

TEST_F(AnalyzeCommand, AMeasurementConfirmsTheCandidateAndExits66) {
  record_rounds(dir_ / "t.bin", {access_origin::inferred, access_origin::measured});
  const auto r = run_streamsan({"analyze", (dir_ / "t.bin").string()});
  EXPECT_EQ(r.exit_code, 66);
  EXPECT_THAT(r.out, HasSubstr("  Read of 256 bytes at offset 0 (measured footprint) by kernel "
                               "'sum' on stream#2 (thread#1):\n"));
  EXPECT_THAT(r.out, HasSubstr("  This report was seen 2 times.\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("possible race")));
  EXPECT_THAT(r.out, EndsWith("==================\nstreamsan: reported 1 warning\n"));
}

TEST_F(AnalyzeCommand, SuppressionsApplyToCandidates) {
  record_rounds(dir_ / "t.bin", {access_origin::inferred});
  testing::write_file_bytes(dir_ / "supp.txt", "race:^fill$\n");
  const auto r = run_streamsan({"analyze", (dir_ / "t.bin").string(), "--suppressions",
                               (dir_ / "supp.txt").string()});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "streamsan: reported 0 warnings, 1 suppressed\n");
}

TEST_F(AnalyzeCommand, StackOptionsFixStyleAndColour) {
  record_program(dir_ / "t.bin", ordering::none);
  const auto trace = (dir_ / "t.bin").string();
  const auto plain = run_streamsan({"analyze", trace});
  EXPECT_EQ(plain.out.find('\033'), std::string::npos) << "a pipe gets no colour";
  EXPECT_THAT(plain.out, HasSubstr("  Fix: make stream#2 wait for fill: `cudaEventRecord(e, stream#1)`"));
  const auto colored = run_streamsan({"analyze", trace, "--color", "always"});
  EXPECT_THAT(colored.out, HasSubstr("\033[1m\033[31mWARNING: streamsan: stream-race"));
  const auto runtime = run_streamsan({"analyze", trace, "--fix-style", "runtime"});
  EXPECT_THAT(runtime.out, HasSubstr("`stream#2.wait_stream(stream#1)`"));
  // One user frame each; raw shows every recorded frame.
  const auto shallow = run_streamsan({"analyze", trace, "--stack-depth", "1"});
  EXPECT_THAT(shallow.out, ContainsRegex("    #0 [^\n]*cli_test_sum[^\n]*\n  Previous"));
  EXPECT_THAT(shallow.out, Not(HasSubstr("    #1 ")));
  const auto raw = run_streamsan({"analyze", trace, "--raw-stacks"});
  EXPECT_THAT(raw.out, HasSubstr("    #5 "));
  // A native program's stacks have no Python frames to put native ones before.
  EXPECT_EQ(run_streamsan({"analyze", trace, "--cpp-stacks"}).out, plain.out);
}

TEST_F(AnalyzeCommand, HtmlAndChromeTraceDrawTheRace) {
  record_program(dir_ / "t.bin", ordering::none);
  const auto trace = (dir_ / "t.bin").string();
  const auto html_path = (dir_ / "r.html").string();
  const auto html = run_streamsan({"analyze", trace, "--format", "html", "-o", html_path});
  EXPECT_EQ(html.exit_code, 66) << html.err;
  const auto page = testing::read_file_bytes(html_path);
  EXPECT_THAT(page, StartsWith("<!DOCTYPE html>"));
  EXPECT_THAT(page, HasSubstr("<path class=\"edge missing\""));
  EXPECT_THAT(page, Not(HasSubstr("No timeline was kept")));
  const auto chrome = run_streamsan({"analyze", trace, "--format", "chrome-trace"});
  EXPECT_EQ(chrome.exit_code, 66);
  const auto parsed = nlohmann::json::parse(chrome.out, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << chrome.out;
  EXPECT_FALSE(parsed.at("traceEvents").empty());
}

TEST_F(AnalyzeCommand, DemoTraceShowsOneRace) {
  // The program tools/main-job runs; built next to streamsan.
  const auto demo = std::filesystem::path(std::getenv("STREAMSAN_BIN")).parent_path() /
                    "streamsan-demo-trace";
  const auto trace = dir_ / "demo.bin";
  ASSERT_EQ(std::system((demo.string() + " " + trace.string() + " >/dev/null").c_str()), 0);
  const auto r = run_streamsan({"analyze", trace.string()});
  EXPECT_EQ(r.exit_code, 66);
  // Paths are relative to the repository root when the build folder is a
  // child of it (tools/setup's build/); elsewhere they keep a prefix.
  EXPECT_THAT(r.out, ContainsRegex("    #0 launch_sum\\(demo&\\) ([^ \n]*/)?cli/demo_trace\\.cpp:[0-9]+\n"));
  EXPECT_THAT(r.out, ContainsRegex("    #1 buggy_step\\(demo&\\) ([^ \n]*/)?cli/demo_trace\\.cpp:[0-9]+\n"));
  EXPECT_THAT(r.out, EndsWith("streamsan: reported 1 warning\n"));
}


TEST_F(AnalyzeCommand, BuiltinSuppressionsHideWhatALibraryDidAndCountIt) {
  record_library_sync(dir_ / "t.bin", "/opt/nvidia/cu13/lib/libcublas.so.13");
  const auto hidden = run_streamsan({"analyze", (dir_ / "t.bin").string()});
  EXPECT_EQ(hidden.exit_code, 0);
  EXPECT_EQ(hidden.out,
            "streamsan: reported 0 warnings, 1 suppressed (1 by built-in library suppressions)\n");
  const auto shown = run_streamsan(
      {"analyze", (dir_ / "t.bin").string(), "--no-builtin-suppressions"});
  EXPECT_EQ(shown.exit_code, 66);
  EXPECT_THAT(shown.out, HasSubstr("WARNING: streamsan: unrecorded-event on event#1\n"));
  // The library's frame folds into the program's call (Note [Stacks start
  // at the user]).
  EXPECT_THAT(shown.out, HasSubstr("#0 cublasSgemm_v2 from main at app.cpp:12\n"));
  const auto json = run_streamsan({"analyze", (dir_ / "t.bin").string(), "--format", "json"});
  const auto summary = nlohmann::json::parse(json.out).at("summary");
  EXPECT_EQ(summary.at("suppressed"), 1);
  EXPECT_EQ(summary.at("suppressed_builtin"), 1);
}

TEST_F(AnalyzeCommand, BuiltinSuppressionsLeaveTheProgramsOwnCallsAlone) {
  record_library_sync(dir_ / "t.bin", "/home/me/libmine.so");
  const auto r = run_streamsan({"analyze", (dir_ / "t.bin").string()});
  EXPECT_EQ(r.exit_code, 66);
  EXPECT_THAT(r.out, EndsWith("streamsan: reported 1 warning\n"));
}

TEST_F(AnalyzeCommand, PrintSuppressionsListsEveryRuleWithItsHits) {
  record_library_sync(dir_ / "t.bin", "/opt/nvidia/cu13/lib/libcublas.so.13");
  testing::write_file_bytes(dir_ / "supp.txt", "race:never\n");
  const auto r = run_streamsan({"analyze", (dir_ / "t.bin").string(), "--suppressions",
                                (dir_ / "supp.txt").string(), "--print-suppressions"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("streamsan: suppressions (hits, rule, origin):\n"
                               "       0  race:never  " + (dir_ / "supp.txt").string() + ":1\n"
                               "       1  called_from_lib:^libcublas.so  built-in (cuBLAS)\n"
                               "       0  called_from_lib:^libcublasLt.so  built-in (cuBLASLt)\n"));
  // JSON stays parseable: the list goes to standard error.
  const auto json = run_streamsan(
      {"analyze", (dir_ / "t.bin").string(), "--format", "json", "--print-suppressions"});
  EXPECT_NO_THROW({
    const auto parsed = nlohmann::json::parse(json.out);
    EXPECT_TRUE(parsed.is_object() || parsed.is_array());
  });
  EXPECT_THAT(json.err, HasSubstr("1  called_from_lib:^libcublas.so  built-in (cuBLAS)\n"));
}

}  // namespace
}  // namespace streamsan
