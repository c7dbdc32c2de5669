#include "inject/stack/python_frames.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

namespace streamsan::injection {
namespace {

// A fake interpreter's memory, laid out at a python_layout's offsets: one
// thread state, one frame of the user's code, its code object and two
// compact ASCII strings. What the reader reads is plain memory, so the
// test can put a new code object at the old one's address by rewriting it.
const char fake_code_type = 0;     // the types are compared by address only
const char fake_unicode_type = 0;

struct fake_object {
  alignas(16) std::array<unsigned char, 512> bytes{};
  template <class T>
  void put(std::uint32_t offset, T value) {
    std::memcpy(bytes.data() + offset, &value, sizeof value);
  }
  const void* address() const { return bytes.data(); }
};

constexpr std::uint32_t fake_line_at = 480;  // where the fake addr2line reads the line

struct fake_interpreter {
  python_layout layout;
  fake_object thread_state, cframe, frame, code, filename, qualname;
  int line_lookups = 0;

  explicit fake_interpreter(const python_layout& l) : layout(l) {
    ascii(filename, "/home/user/train.py");
    ascii(qualname, "Model.step");
    code.put(8, static_cast<const void*>(&fake_code_type));
    code.put(l.code_filename, filename.address());
    code.put(l.code_qualname, qualname.address());
    code.put(l.code_firsttraceable, std::int32_t{0});
    frame.put(l.frame_code, code.address());
    frame.put(l.frame_previous, static_cast<const void*>(nullptr));
    frame.put(l.frame_instr, static_cast<const void*>(code.bytes.data() + l.code_adaptive + 4));
    frame.put(l.frame_owner, std::uint8_t{0});
    if (l.via_cframe) {
      thread_state.put(l.tstate_cframe, cframe.address());
      cframe.put(l.current_frame, frame.address());
    } else {
      thread_state.put(l.current_frame, frame.address());
    }
  }
  void ascii(fake_object& s, const std::string& text) {
    s.put(8, static_cast<const void*>(&fake_unicode_type));
    s.put(layout.unicode_length, static_cast<std::int64_t>(text.size()));
    s.put(layout.unicode_state, std::uint32_t{(1u << 2) | 0x20 | 0x40});  // 1-byte, compact, ascii
    std::memcpy(s.bytes.data() + layout.ascii_header, text.data(), text.size());
  }
  // What the code object at the frame's address is now: its first line,
  // its line table object, its version, and the line of its instruction.
  void code_is(std::int32_t first_line, const void* linetable, std::uint32_t version,
               std::int32_t line) {
    code.put(layout.code_firstlineno, first_line);
    code.put(layout.code_linetable, linetable);
    if (layout.code_version != 0) code.put(layout.code_version, version);
    code.put(fake_line_at, line);
  }
};

fake_interpreter* the_fake = nullptr;

python_entry_points fake_entry_points() {
  python_entry_points api;
  api.is_initialized = [] { return 1; };
  api.this_thread_state = []() -> void* { return the_fake->thread_state.bytes.data(); };
  api.addr2line = [](void* code, int) {
    ++the_fake->line_lookups;
    std::int32_t line = 0;
    std::memcpy(&line, static_cast<const char*>(code) + fake_line_at, sizeof line);
    return static_cast<int>(line);
  };
  api.code_type = &fake_code_type;
  api.unicode_type = &fake_unicode_type;
  return api;
}

// The lines the reader defined frames with, in order.
struct defined_lines {
  std::vector<std::uint32_t> lines;
  python_frame_definer definer() {
    return [this](std::uint64_t, std::string_view, std::string_view, std::uint32_t line) {
      lines.push_back(line);
    };
  }
};

std::size_t walk(python_frames& reader) {
  std::array<std::uint64_t, 8> out{};
  return reader.current(out);
}

// Note [A new code object at a freed one's address]: from 3.12 on, a
// successor with the same names, first line and line table block (a body
// moved by a blank line) differs in co_version, and its line is read again.
TEST(PythonFrames, ASameShapedCodeObjectAtAFreedOnesAddressIsReadAgain) {
  for (unsigned minor : {12u, 13u, 14u, 15u}) {
    fake_interpreter fake(*python_layout_for(3, minor));
    the_fake = &fake;
    defined_lines defined;
    python_frames reader(fake_entry_points(), fake.layout, defined.definer());
    const char table = 0;  // the line table object's block, the same for both
    fake.code_is(1, &table, 7, 2);
    ASSERT_EQ(walk(reader), 1u) << "3." << minor;
    fake.code_is(1, &table, 8, 3);  // the successor: one line further down
    ASSERT_EQ(walk(reader), 1u) << "3." << minor;
    EXPECT_EQ(defined.lines, (std::vector<std::uint32_t>{2, 3})) << "3." << minor;
    the_fake = nullptr;
  }
}

TEST(PythonFrames, TheSameCodeObjectIsReadOnce) {
  fake_interpreter fake(*python_layout_for(3, 12));
  the_fake = &fake;
  defined_lines defined;
  python_frames reader(fake_entry_points(), fake.layout, defined.definer());
  const char table = 0;
  fake.code_is(1, &table, 7, 2);
  for (int i = 0; i < 12; ++i) ASSERT_EQ(walk(reader), 1u);  // past the first, checked walks
  EXPECT_EQ(fake.line_lookups, 1);
  EXPECT_EQ(defined.lines, (std::vector<std::uint32_t>{2}));
  the_fake = nullptr;
}

TEST(PythonFrames, VersionsAreReadFromTwelveOn) {
  EXPECT_EQ(python_layout_for(3, 11)->code_version, 0u);
  for (unsigned minor : {12u, 13u, 14u, 15u}) {
    const auto l = *python_layout_for(3, minor);
    EXPECT_EQ(l.code_version, 92u);
    // The 32-bit field just before co_localsplusnames (published from 3.13).
    EXPECT_EQ(l.code_version + 4, l.code_localsplusnames);
  }
}

TEST(PythonFrames, AProcessWithoutCPythonHasNoReaderAndNothingToSay) {
  // This test runs no interpreter: nothing to read, and no reason to give.
  const auto attached = attach_python_frames([](auto, auto, auto, auto) {});
  EXPECT_EQ(attached.frames, nullptr);
  EXPECT_EQ(attached.not_read, "");
  EXPECT_FALSE(python_frames_readable());
  EXPECT_EQ(python_frames_unread_line("", ""), "");
}

TEST(PythonFrames, TheReportSaysWhyFramesWereNotRead) {
  EXPECT_EQ(python_frames_unread_line("Python 3.7's frames are not read (3.8 to 3.15 are)", ""),
            "streamsan: Python 3.7's frames are not read (3.8 to 3.15 are); the stacks above "
            "show native frames\n");
}

TEST(PythonFrames, TheReportSaysWhyFramesStoppedBeingRead) {
  EXPECT_EQ(python_frames_unread_line("", "a frame's code is not a code object"),
            "streamsan: Python frames stopped being read: a frame's code is not a code object; "
            "the stacks above show native frames\n");
}

}  // namespace
}  // namespace streamsan::injection
