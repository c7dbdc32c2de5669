#include "inject/session/options.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace streamsan::injection {
namespace {

// What `parse` says of `value`: its option_error's message, or "no error".
template <class Parse>
std::string error_of(Parse&& parse, std::string_view value) {
  try {
    parse(value);
  } catch (const option_error& e) {
    return std::string(e.what());
  }
  return std::string("no error");
}

std::string message(std::string_view text) {
  return error_of([](std::string_view t) { return parse_options(t); }, text);
}

TEST(SanitizerOptions, ParsesColonSeparatedPairs) {
  const auto o = parse_options(
      "log_path=/tmp/r.txt:format=json:print_limit=5:halt_on_error=1:stack_depth=4:"
      "error_exitcode=3:record=t.streamsan-trace:suppressions=s.txt");
  EXPECT_EQ(o.log_path, "/tmp/r.txt");
  EXPECT_EQ(o.format, report_format::json);
  EXPECT_EQ(o.print_limit, 5u);
  EXPECT_TRUE(o.halt_on_error);
  EXPECT_EQ(o.stack_depth, 4u);
  EXPECT_EQ(o.error_exitcode, 3);
  EXPECT_EQ(o.record, "t.streamsan-trace");
  EXPECT_EQ(o.suppressions, "s.txt");
}

TEST(SanitizerOptions, DefaultsWhenEmpty) {
  EXPECT_EQ(parse_options(""), sanitizer_options{});
  EXPECT_EQ(parse_options("::  :"), sanitizer_options{});
  EXPECT_EQ(sanitizer_options{}.error_exitcode, 66);
  EXPECT_EQ(sanitizer_options{}.stack_depth, 16u);
}

TEST(SanitizerOptions, UnknownKeyNamesTheKeyAndTheKnownOnes) {
  try {
    parse_options("format=text:verbosity=2");
    FAIL() << "no error";
  } catch (const option_error& e) {
    EXPECT_STREQ(e.what(),
                 "unknown option 'verbosity' (known: log_path, format, suppressions, "
                 "builtin_suppressions, print_limit, halt_on_error, record, stack_depth, "
                 "error_exitcode, precise, capture, color, raw_stacks, cpp_stacks, python_frames)");
  }
}

TEST(SanitizerOptions, BadValuesAreNamed) {
  EXPECT_EQ(message("format=xml"), "format=xml: expected text, json, sarif, html or chrome-trace");
  EXPECT_EQ(message("color=rainbow"), "color=rainbow: expected auto, always or never");
  EXPECT_EQ(message("print_limit=-1"), "print_limit=-1: expected an integer from 0 to 1073741824");
  EXPECT_EQ(message("stack_depth=65"), "stack_depth=65: expected an integer from 0 to 64");
  EXPECT_EQ(message("halt_on_error=maybe"),
            "halt_on_error=maybe: expected 1/0, true/false or yes/no");
  EXPECT_EQ(message("log_path"), "'log_path' at offset 0: expected key=value");
  EXPECT_EQ(message("log_path='/tmp/x"), "log_path: unterminated quote");
  EXPECT_EQ(message("capture=nvbit"), "capture=nvbit: expected auto, cupti or sanitizer");
  EXPECT_EQ(message("precise=sometimes"), "precise=sometimes: expected 1/0, true/false or yes/no");
}

// Found by tests/fuzz/run_options_fuzz.cpp: a key starting with a NUL made
// an empty message.
TEST(SanitizerOptions, MessagesShowUnprintableBytesEscaped) {
  EXPECT_EQ(message(std::string("\0\0key='x", 8)), "\\x00\\x00key: unterminated quote");
  EXPECT_EQ(message("stack_depth=\x01\xff"),
            "stack_depth=\\x01\\xff: expected an integer from 0 to 64");
}

// Found by tests/fuzz/run_options_fuzz.cpp: values that hold quotes or a
// newline must reach the library as they were given, or be refused.
TEST(SanitizerOptions, ValuesWithQuotesAndNewlinesRoundTrip) {
  for (const std::string_view value : {"a'b\"c", "a:'b", "a \"b", "'a", "\"a", "a\nb", ""}) {
    sanitizer_options o;
    set_option(o, "record", value);
    EXPECT_EQ(parse_options(to_string(o)).record, value) << to_string(o);
  }
}

TEST(SanitizerOptions, ValuesThatCannotBeSpelledAreRefused) {
  sanitizer_options o;
  try {
    set_option(o, "log_path", "a:'b\"c");
    FAIL() << "accepted";
  } catch (const option_error& e) {
    EXPECT_STREQ(e.what(),
                 "log_path=a:'b\"c: a value holding ':' or whitespace, or starting with a quote, "
                 "may not hold both ' and \"");
  }
}

TEST(SanitizerOptions, PreciseAndCaptureSource) {
  const auto o = parse_options("precise=1:capture=sanitizer");
  EXPECT_TRUE(o.precise);
  EXPECT_EQ(o.capture, capture_source::sanitizer_api);
  EXPECT_EQ(parse_options("capture=cupti").capture, capture_source::cupti);
  EXPECT_EQ(sanitizer_options{}.capture, capture_source::automatic);
  EXPECT_FALSE(sanitizer_options{}.precise);
  EXPECT_EQ(parse_options(to_string(o)), o);
  const auto shown = parse_options("color=never:raw_stacks=1:format=html");
  EXPECT_EQ(shown.color, color_mode::never);
  EXPECT_TRUE(shown.raw_stacks);
  EXPECT_EQ(parse_options(to_string(shown)), shown);
}

TEST(SanitizerOptions, QuotedValuesMayHoldColons) {
  const auto o = parse_options("log_path='/tmp/a:b.txt' format=sarif");
  EXPECT_EQ(o.log_path, "/tmp/a:b.txt");
  EXPECT_EQ(o.format, report_format::sarif);
}

TEST(SanitizerOptions, CanonicalSpellingRoundTrips) {
  sanitizer_options o;
  o.log_path = "/tmp/with:colon %p.log";
  o.format = report_format::json;
  o.print_limit = 9;
  o.halt_on_error = true;
  o.record = "trace";
  o.stack_depth = 0;
  o.error_exitcode = 0;
  o.builtin_suppressions = false;
  EXPECT_EQ(parse_options(to_string(o)), o);
}

TEST(SanitizerOptions, BuiltinSuppressionsAreOnUnlessTurnedOff) {
  EXPECT_TRUE(sanitizer_options{}.builtin_suppressions);
  EXPECT_FALSE(parse_options("builtin_suppressions=0").builtin_suppressions);
}

TEST(SanitizerOptions, PythonFramesAreReadUnlessTurnedOff) {
  EXPECT_TRUE(sanitizer_options{}.python_frames);
  const auto off = parse_options("python_frames=0");
  EXPECT_FALSE(off.python_frames);
  EXPECT_EQ(parse_options(to_string(off)), off);
  EXPECT_TRUE(wants_python_frames(sanitizer_options{}));
  EXPECT_FALSE(wants_python_frames(off));
  EXPECT_FALSE(wants_python_frames(parse_options("stack_depth=0")));  // no stacks, no frames
}

TEST(SanitizerOptions, LaterSettingsOverrideEarlierOnes) {
  const auto base = parse_options("format=json:print_limit=2");
  const auto o = parse_options("print_limit=7", base);
  EXPECT_EQ(o.format, report_format::json);
  EXPECT_EQ(o.print_limit, 7u);
}

TEST(SanitizerOptions, GraphNodesVariableTakesMeasureOrOffAndNamesABadValue) {
  EXPECT_TRUE(parse_graph_nodes("measure"));
  EXPECT_FALSE(parse_graph_nodes("off"));
  EXPECT_TRUE(parse_graph_nodes(""));
  EXPECT_EQ(error_of(parse_graph_nodes, "on"), "STREAMSAN_GRAPH_NODES=on: expected measure or off");
}

TEST(SanitizerOptions, RuntimeLaunchCallbacksVariableTakesOnOrOffDefaultsToOffAndNamesABadValue) {
  EXPECT_FALSE(parse_runtime_launch_callbacks(""));
  EXPECT_TRUE(parse_runtime_launch_callbacks("on"));
  EXPECT_FALSE(parse_runtime_launch_callbacks("off"));
  EXPECT_EQ(error_of(parse_runtime_launch_callbacks, "0"),
            "STREAMSAN_RUNTIME_LAUNCH_CALLBACKS=0: expected on or off");
}

TEST(SanitizerOptions, DecodeThreadVariableTakesOnOrOffAndNamesABadValue) {
  EXPECT_TRUE(parse_decode_thread(""));
  EXPECT_TRUE(parse_decode_thread("on"));
  EXPECT_FALSE(parse_decode_thread("off"));
  EXPECT_EQ(error_of(parse_decode_thread, "no"), "STREAMSAN_DECODE_THREAD=no: expected on or off");
  const auto settings = read_library_settings([](std::string_view name) -> const char* {
    return name == "STREAMSAN_DECODE_THREAD" ? "off" : nullptr;
  });
  EXPECT_FALSE(settings.decode_thread);
}

TEST(SanitizerOptions, UnpatchWaitVariableTakesMillisecondsAndNamesABadValue) {
  EXPECT_EQ(parse_unpatch_wait("50"), 50u);
  EXPECT_EQ(parse_unpatch_wait("0"), 0u);
  EXPECT_EQ(parse_unpatch_wait(""), default_unpatch_wait_ms);
  EXPECT_EQ(default_unpatch_wait_ms, 20u);
  EXPECT_EQ(library_settings{}.unpatch_wait_ms, default_unpatch_wait_ms);
  for (const char* bad : {"5ms", "1001", "-1"}) {
    EXPECT_EQ(error_of(parse_unpatch_wait, bad),
              std::string("STREAMSAN_UNPATCH_WAIT_MS=") + bad + ": expected milliseconds from 0 to 1000");
  }
}

TEST(SanitizerOptions, TableHeadroomVariableTakesAFactorAndNamesABadValue) {
  EXPECT_EQ(parse_table_headroom("4"), 4u);
  EXPECT_EQ(parse_table_headroom("64"), 64u);
  EXPECT_EQ(parse_table_headroom(""), default_table_headroom);
  for (const char* bad : {"0", "65", "4x", "-2"}) {
    EXPECT_EQ(error_of(parse_table_headroom, bad),
              std::string("STREAMSAN_TABLE_HEADROOM=") + bad + ": expected a factor from 1 to 64");
  }
}

}  // namespace
}  // namespace streamsan::injection
