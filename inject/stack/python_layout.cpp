#include "inject/stack/python_layout.h"

#include <cstring>
#include <string_view>
#include <utility>

namespace streamsan::injection {
namespace {

// Note [One table a minor version]
// The offsets below are offsetof() of CPython's own headers (Python.h with
// Py_BUILD_CORE and internal/pycore_frame.h, pycore_code.h) of 3.8.18,
// 3.9.18, 3.10.13, 3.11.7, 3.12.1 and 3.13.0 on x86-64, where sizes and
// alignments are aarch64's too. CPython keeps these structures as they are across a minor
// version's patch releases (profilers that read them from outside, such
// as py-spy, rely on it), and changes them between minor versions: 3.12
// moved f_code first and dropped the strings' wstr, 3.13 dropped the
// _PyCFrame. tests/inject/python_frames_test.py checks each table against
// the interpreter's own traceback under every CPython installed. Up to 3.10
// the frames are objects of their own (PyFrameObject, whose f_lasti 3.10
// counts in code units where 3.8 and 3.9 count bytes), and 3.11 made them
// _PyInterpreterFrames that live in the thread's data stack.

// 3.8 and 3.9: frame objects; the strings' headers still hold wstr.
constexpr python_layout python_3_9() {
  python_layout l;
  l.minor = 9;
  l.frame_objects = true;
  l.instr_kind = python_instr_kind::byte_offset;
  l.current_frame = 24;   // PyThreadState.frame
  l.frame_previous = 24;  // PyFrameObject.f_back
  l.frame_code = 32;
  l.frame_instr = 104;    // f_lasti
  l.code_filename = 104;
  l.code_qualname = 112;  // co_name: no co_qualname before 3.11
  l.code_firstlineno = 40;
  l.code_linetable = 120;  // co_lnotab
  l.ascii_header = 48;
  l.compact_header = 72;
  return l;
}

constexpr python_layout python_3_8() {
  python_layout l = python_3_9();
  l.minor = 8;
  return l;
}

// 3.10 dropped f_stacktop before f_lasti, which counts code units now.
constexpr python_layout python_3_10() {
  python_layout l = python_3_9();
  l.minor = 10;
  l.instr_kind = python_instr_kind::code_unit_index;
  l.frame_instr = 96;
  return l;
}

constexpr python_layout python_3_11() {
  python_layout l;
  l.minor = 11;
  l.via_cframe = true;
  l.tstate_cframe = 56;
  l.current_frame = 8;
  l.frame_code = 32;
  l.frame_previous = 48;
  l.frame_instr = 56;
  l.frame_owner = 69;
  l.code_filename = 112;
  l.code_qualname = 128;
  l.code_firstlineno = 72;
  l.code_linetable = 136;
  l.code_firsttraceable = 168;
  l.code_adaptive = 184;
  l.ascii_header = 48;  // with the wstr pointer
  l.compact_header = 72;
  return l;
}

constexpr python_layout python_3_12() {
  python_layout l;
  l.minor = 12;
  l.via_cframe = true;
  l.tstate_cframe = 56;
  l.current_frame = 0;
  l.frame_code = 0;
  l.frame_previous = 8;
  l.frame_instr = 56;
  l.frame_owner = 70;
  l.first_shim_owner = 3;
  l.code_filename = 112;
  l.code_qualname = 128;
  l.code_firstlineno = 68;
  l.code_linetable = 136;
  l.code_version = 92;
  l.code_localsplusnames = 96;
  l.code_firsttraceable = 176;
  l.code_adaptive = 192;
  l.ascii_header = 40;
  l.compact_header = 56;
  return l;
}

// 3.13 reads the innermost frame from the thread state itself, and its
// code objects grew before the bytecode; the rest is 3.12's.
constexpr python_layout python_3_13() {
  python_layout l = python_3_12();
  l.minor = 13;
  l.via_cframe = false;
  l.tstate_cframe = 0;
  l.current_frame = 72;
  l.code_firsttraceable = 184;
  l.code_adaptive = 200;
  l.debug = {184, 232, 240, 248, 264, 280, 296, 344, 560, 304, 312, 328};
  return l;
}

// Note [Layouts from the published offsets]
// 3.14 and 3.15 are not installed where streamsan is built, so their
// tables are not offsetof() of headers but the offsets the interpreters
// publish in _Py_DebugOffsets, as recorded from CPython 3.14.6 and
// 3.15.0rc1 (x86-64, GIL builds), and the positions of those fields in
// each version's _Py_DebugOffsets (3.14 inserted fields in its interpreter
// state and frame groups, 3.15 in its thread state). Every offset below
// but two is checked at attach against the running interpreter's own.
// The interpreter does not publish those two. _co_firsttraceable is where
// 3.14's PyCodeObject puts it (one pointer-sized field grew before it, as
// co_code_adaptive moved from 200 to 208). co_version is the 32-bit field
// just before the published co_localsplusnames (96 in 3.13 to 3.15). Against 3.13 the frame's
// f_executable is a tagged _PyStackRef, and owners 3 and 4 are the
// interpreter's own frames (FRAME_OWNED_BY_INTERPRETER, then CSTACK in
// 3.14 and the thread's base frame in 3.15). tests/inject/
// python_layout_test.cpp lays each version's _Py_DebugOffsets out from its
// field order and checks that the positions find the offsets.
constexpr python_layout python_3_14() {
  python_layout l = python_3_13();
  l.minor = 14;
  l.executable_tagged = true;
  l.frame_owner = 74;
  l.code_firsttraceable = 192;
  l.code_adaptive = 208;
  l.debug = {208, 256, 264, 272, 288, 320, 336, 384, 640, 344, 352, 368};
  return l;
}

constexpr python_layout python_3_15() {
  python_layout l = python_3_14();
  l.minor = 15;
  l.debug = {208, 320, 328, 336, 352, 384, 400, 448, 736, 408, 416, 432};
  return l;
}

}  // namespace

// Note [Layouts checked against the interpreter's own offsets]
// From 3.13 on, CPython publishes the offsets of its structures for
// debuggers at the start of _PyRuntime (_Py_DebugOffsets, cookie
// "xdebugpy"). Where the table has a layout for such a version, its
// offsets must be the interpreter's, and the interpreter must not be
// free-threaded (whose objects have another header): anything else is a
// build the table does not describe. Where each offset sits in
// _Py_DebugOffsets changes between versions too (python_layout.h's
// `debug`).
std::string python_layout_mismatch(const void* debug_offsets, const python_layout& l) {
  if (l.debug.current_frame == 0) return "";
  const char* r = static_cast<const char*>(debug_offsets);
  if (std::memcmp(r, "xdebugpy", 8) != 0) return "its debug offsets are missing";
  const auto at = [&](std::size_t offset) {
    std::uint64_t v = 0;
    std::memcpy(&v, r + offset, sizeof v);
    return v;
  };
  if (at(16) != 0) return "it is a free-threaded build";
  const auto& d = l.debug;
  const std::pair<std::size_t, std::uint32_t> expected[] = {
      {d.current_frame, l.current_frame}, {d.frame_previous, l.frame_previous},
      {d.frame_code, l.frame_code},       {d.frame_instr, l.frame_instr},
      {d.frame_owner, l.frame_owner},     {d.code_filename, l.code_filename},
      {d.code_qualname, l.code_qualname}, {d.code_adaptive, l.code_adaptive},
      {d.ascii_header, l.ascii_header},   {d.code_linetable, l.code_linetable},
      {d.code_firstlineno, l.code_firstlineno},
      {d.code_localsplusnames, l.code_localsplusnames}};
  for (const auto& [offset, value] : expected) {
    if (offset == 0) continue;  // not published by this version
    if (at(offset) != value) return "its structures are not those of CPython's release";
  }
  return "";
}

std::optional<python_layout> python_layout_for(unsigned major, unsigned minor) noexcept {
  if (major != 3) return std::nullopt;
  switch (minor) {
    case 8: return python_3_8();
    case 9: return python_3_9();
    case 10: return python_3_10();
    case 11: return python_3_11();
    case 12: return python_3_12();
    case 13: return python_3_13();
    case 14: return python_3_14();
    case 15: return python_3_15();
  }
  return std::nullopt;
}

unsigned long python_version_of_text(std::string_view text) noexcept {
  unsigned long major = 0, minor = 0;
  std::size_t i = 0;
  const auto number = [&](unsigned long& out) {
    const std::size_t start = i;
    while (i < text.size() && i - start < 3 && text[i] >= '0' && text[i] <= '9') {
      out = out * 10 + static_cast<unsigned long>(text[i++] - '0');
    }
    return i > start;
  };
  if (!number(major) || i >= text.size() || text[i++] != '.' || !number(minor)) return 0;
  if (i < text.size() && text[i] >= '0' && text[i] <= '9') return 0;  // a fourth digit
  if (major > 255 || minor > 255) return 0;
  return (major << 24) | (minor << 16);
}

std::optional<python_layout> python_layout_for_hex(unsigned long py_version) noexcept {
  return python_layout_for(static_cast<unsigned>((py_version >> 24) & 0xff),
                           static_cast<unsigned>((py_version >> 16) & 0xff));
}

}  // namespace streamsan::injection
