#include "inject/stack/python_layout.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace streamsan::injection {
namespace {

TEST(PythonLayout, KnowsTheMinorVersionsItWasCheckedOn) {
  for (unsigned minor : {8u, 9u, 10u, 11u, 12u, 13u, 14u, 15u}) {
    const auto l = python_layout_for(3, minor);
    ASSERT_TRUE(l.has_value()) << "3." << minor;
    EXPECT_EQ(l->minor, minor);
  }
}

TEST(PythonLayout, RefusesVersionsItDoesNotKnow) {
  EXPECT_FALSE(python_layout_for(3, 7).has_value());
  EXPECT_FALSE(python_layout_for(3, 16).has_value());
  EXPECT_FALSE(python_layout_for(2, 7).has_value());
}

TEST(PythonLayout, ReadsPyVersion) {
  // 3.12.1 final: 0x030C01F0.
  const auto l = python_layout_for_hex(0x030C01F0ul);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->minor, 12u);
  EXPECT_FALSE(l->via_cframe == false);  // 3.12 keeps the _PyCFrame
  EXPECT_FALSE(python_layout_for_hex(0x031000F0ul).has_value());  // 3.16
}

TEST(PythonLayout, ReadsTheVersionOfOlderInterpretersFromItsText) {
  EXPECT_EQ(python_version_of_text("3.10.13 (main, Nov 20 2026, 10:00:00) [GCC 12.2.0]"),
            0x030A0000ul);
  EXPECT_EQ(python_version_of_text("3.8.18"), 0x03080000ul);
  EXPECT_EQ(python_version_of_text("2.7.18 (default)"), 0x02070000ul);
  EXPECT_EQ(python_layout_for_hex(python_version_of_text("3.9.18"))->minor, 9u);
}

TEST(PythonLayout, TextThatIsNoVersionGivesNone) {
  for (const char* text : {"", "3", "3.", ".10", "x3.10", "3.x", "1000.1", "3.1000"}) {
    EXPECT_EQ(python_version_of_text(text), 0ul) << text;
  }
}

TEST(PythonLayout, ThirteenDropsTheCFrame) {
  EXPECT_TRUE(python_layout_for(3, 11)->via_cframe);
  EXPECT_FALSE(python_layout_for(3, 13)->via_cframe);
  // The interpreter's entry shim exists from 3.12 on.
  EXPECT_EQ(python_layout_for(3, 11)->first_shim_owner, 0xff);
  EXPECT_EQ(python_layout_for(3, 12)->first_shim_owner, 3);
}

TEST(PythonLayout, FramesAreObjectsUpToTen) {
  for (unsigned minor : {8u, 9u, 10u}) EXPECT_TRUE(python_layout_for(3, minor)->frame_objects);
  EXPECT_FALSE(python_layout_for(3, 11)->frame_objects);
  // f_lasti counts bytes in 3.8 and 3.9, code units in 3.10.
  EXPECT_EQ(python_layout_for(3, 9)->instr_kind, python_instr_kind::byte_offset);
  EXPECT_EQ(python_layout_for(3, 10)->instr_kind, python_instr_kind::code_unit_index);
  EXPECT_EQ(python_layout_for(3, 11)->instr_kind, python_instr_kind::pointer);
}

// _Py_DebugOffsets laid out from its field order (cookie, version,
// free_threaded, then each group's uint64 fields in the order of CPython's
// Include/internal/pycore_debug_offsets.h of that version). The fields the
// reader checks hold the offsets the interpreter publishes (recorded from
// CPython 3.14.6 and 3.15.0rc1, x86-64); every other field holds a value of
// its own, so a position off by one field finds the wrong value.
struct debug_offsets_blob {
  std::vector<std::uint64_t> words;
  void set(std::size_t word, std::uint64_t value) { words.at(word) = value; }
};

using field_groups = std::vector<std::vector<std::string_view>>;

// The groups between the type object and the strings, the same in both.
const field_groups objects = {{"tuple_object", "size", "ob_item", "ob_size"},
                              {"list_object", "size", "ob_item", "ob_size"},
                              {"set_object", "size", "used", "table", "mask"},
                              {"dict_object", "size", "ma_keys", "ma_values"},
                              {"float_object", "size", "ob_fval"},
                              {"long_object", "size", "lv_tag", "ob_digit"},
                              {"bytes_object", "size", "ob_size", "ob_sval"}};

debug_offsets_blob lay_out(field_groups groups, const field_groups& tail,
                           const std::map<std::string_view, std::uint64_t>& published) {
  groups.insert(groups.end(), objects.begin(), objects.end());
  groups.insert(groups.end(), tail.begin(), tail.end());
  debug_offsets_blob b;
  b.words = {0, 0x030E0000, 0};
  std::memcpy(b.words.data(), "xdebugpy", 8);
  for (const auto& group : groups) {
    const std::string_view name = group.front();
    for (std::size_t f = 1; f < group.size(); ++f) {
      const std::string key = std::string(name) + "." + std::string(group[f]);
      const auto it = published.find(key);
      b.words.push_back(it != published.end() ? it->second : 1000 + b.words.size());
    }
  }
  return b;
}

const std::map<std::string_view, std::uint64_t> published_314_315 = {
    {"thread_state.current_frame", 72},   {"interpreter_frame.previous", 8},
    {"interpreter_frame.executable", 0},  {"interpreter_frame.instr_ptr", 56},
    {"interpreter_frame.owner", 74},      {"code_object.filename", 112},
    {"code_object.qualname", 128},        {"code_object.co_code_adaptive", 208},
    {"unicode_object.asciiobject_size", 40}, {"code_object.linetable", 136},
    {"code_object.firstlineno", 68},      {"code_object.localsplusnames", 96}};

const std::vector<std::string_view> runtime_state = {"runtime_state", "size", "finalizing",
                                                     "interpreters_head"};
const std::vector<std::string_view> interpreter_state = {
    "interpreter_state", "size", "id", "next", "threads_head", "threads_main", "gc",
    "imports_modules", "sysdict", "builtins", "ceval_gil", "gil_runtime_state",
    "gil_runtime_state_enabled", "gil_runtime_state_locked", "gil_runtime_state_holder",
    "code_object_generation", "tlbc_generation"};
const std::vector<std::string_view> interpreter_frame = {
    "interpreter_frame", "size", "previous", "executable", "instr_ptr", "localsplus", "owner",
    "stackpointer", "tlbc_index"};
const std::vector<std::string_view> code_object = {
    "code_object", "size", "filename", "name", "qualname", "linetable", "firstlineno",
    "argcount", "localsplusnames", "localspluskinds", "co_code_adaptive", "co_tlbc"};

debug_offsets_blob python_314_offsets() {
  return lay_out({runtime_state, interpreter_state,
                  {"thread_state", "size", "prev", "next", "interp", "current_frame",
                   "thread_id", "native_thread_id", "datastack_chunk", "status"},
                  interpreter_frame, code_object,
                  {"pyobject", "size", "ob_type"},
                  {"type_object", "size", "tp_name", "tp_repr", "tp_flags"}},
                 {{"unicode_object", "size", "state", "length", "asciiobject_size"}},
                 published_314_315);
}

// 3.15 added the thread's base and profiled frames after current_frame, four
// thread fields at the end, the exception stack item, two type fields and
// the heap type.
debug_offsets_blob python_315_offsets() {
  return lay_out({runtime_state, interpreter_state,
                  {"thread_state", "size", "prev", "next", "interp", "current_frame",
                   "base_frame", "last_profiled_frame", "last_profiled_frame_seq", "thread_id",
                   "native_thread_id", "datastack_chunk", "status", "holds_gil",
                   "gil_requested", "current_exception", "exc_state"},
                  {"err_stackitem", "exc_value"},
                  interpreter_frame, code_object,
                  {"pyobject", "size", "ob_type"},
                  {"type_object", "size", "tp_name", "tp_repr", "tp_flags", "tp_basicsize",
                   "tp_dictoffset"},
                  {"heap_type_object", "size", "ht_cached_keys"}},
                 {{"unicode_object", "size", "state", "length", "asciiobject_size",
                   "compactunicodeobject_size"}},
                 published_314_315);
}

TEST(PythonLayout, FindsTheOffsetsThatFourteenAndFifteenPublish) {
  const auto b14 = python_314_offsets();
  const auto b15 = python_315_offsets();
  EXPECT_EQ(python_layout_mismatch(b14.words.data(), *python_layout_for(3, 14)), "");
  EXPECT_EQ(python_layout_mismatch(b15.words.data(), *python_layout_for(3, 15)), "");
}

TEST(PythonLayout, RefusesAnotherVersionsDebugOffsets) {
  const auto b15 = python_315_offsets();
  EXPECT_EQ(python_layout_mismatch(b15.words.data(), *python_layout_for(3, 14)),
            "its structures are not those of CPython's release");
}

TEST(PythonLayout, RefusesAFreeThreadedBuild) {
  auto b = python_314_offsets();
  b.set(2, 1);  // free_threaded
  EXPECT_EQ(python_layout_mismatch(b.words.data(), *python_layout_for(3, 14)),
            "it is a free-threaded build");
}

TEST(PythonLayout, RefusesMissingDebugOffsets) {
  auto b = python_314_offsets();
  b.set(0, 0);  // no cookie
  EXPECT_EQ(python_layout_mismatch(b.words.data(), *python_layout_for(3, 14)),
            "its debug offsets are missing");
  // Before 3.13 nothing is published, and nothing is checked.
  EXPECT_EQ(python_layout_mismatch(b.words.data(), *python_layout_for(3, 12)), "");
}

TEST(PythonLayout, FourteenTagsItsExecutableAndOwnsMoreShims) {
  EXPECT_FALSE(python_layout_for(3, 13)->executable_tagged);
  EXPECT_TRUE(python_layout_for(3, 14)->executable_tagged);
  EXPECT_EQ(python_layout_for(3, 14)->first_shim_owner, 3);
  EXPECT_EQ(python_layout_for(3, 14)->frame_owner, 74u);
}

}  // namespace
}  // namespace streamsan::injection
