#include "inject/stack/python_layout.h"

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
  l.owner_cstack = 3;
  l.code_filename = 112;
  l.code_qualname = 128;
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
  return l;
}

}  // namespace

std::optional<python_layout> python_layout_for(unsigned major, unsigned minor) noexcept {
  if (major != 3) return std::nullopt;
  switch (minor) {
    case 8: return python_3_8();
    case 9: return python_3_9();
    case 10: return python_3_10();
    case 11: return python_3_11();
    case 12: return python_3_12();
    case 13: return python_3_13();
  }
  return std::nullopt;
}

std::optional<python_layout> python_layout_for_hex(unsigned long py_version) noexcept {
  return python_layout_for(static_cast<unsigned>((py_version >> 24) & 0xff),
                           static_cast<unsigned>((py_version >> 16) & 0xff));
}

}  // namespace streamsan::injection
