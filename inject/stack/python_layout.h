// Where a CPython interpreter keeps what a Python stack is read from: the
// thread's innermost frame, each frame's code, caller and instruction, each
// code object's file and name, a string's characters. One table a minor
// version (Note [Python frames read in place] in python_frames.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace streamsan::injection {

// Where a frame's instruction is: a pointer into the bytecode (3.11 on), or
// PyFrameObject.f_lasti, an int counting bytes (3.8, 3.9) or two-byte code
// units (3.10); -1 before the frame's first instruction.
enum class python_instr_kind : std::uint8_t { pointer, byte_offset, code_unit_index };

struct python_layout {
  unsigned major = 3;
  unsigned minor = 0;
  // Up to 3.10 the thread's frames are PyFrameObjects (type PyFrame_Type),
  // linked from the innermost at tstate->frame (`current_frame`) by
  // f_back (`frame_previous`), with no owner and no shim frames; f_lasti
  // (`frame_instr`) is their instruction, and code objects have no
  // qualified name (`code_qualname` is co_name's offset).
  bool frame_objects = false;
  python_instr_kind instr_kind = python_instr_kind::pointer;
  // The thread state's innermost _PyInterpreterFrame: at
  // tstate->cframe->current_frame (3.11, 3.12; `via_cframe`), or at
  // tstate->current_frame (3.13 on).
  bool via_cframe = false;
  std::uint32_t tstate_cframe = 0;
  std::uint32_t current_frame = 0;
  // _PyInterpreterFrame: its code object (f_code, f_executable), its
  // caller, its instruction (prev_instr until 3.12, instr_ptr from 3.13 on:
  // the line is the same function of either) and who owns it.
  std::uint32_t frame_code = 0;
  std::uint32_t frame_previous = 0;
  std::uint32_t frame_instr = 0;
  std::uint32_t frame_owner = 0;
  // FRAME_OWNED_BY_GENERATOR, and the first owner of the interpreter's
  // own frames, which hold no code of the program's: the entry shim
  // (FRAME_OWNED_BY_CSTACK, 3.12 on) and from 3.14 also
  // FRAME_OWNED_BY_INTERPRETER and the thread's base frame (0xff: none).
  std::uint8_t owner_generator = 1;
  std::uint8_t first_shim_owner = 0xff;
  // From 3.14 f_executable is a _PyStackRef, whose low bits are tags.
  bool executable_tagged = false;
  // PyCodeObject.
  std::uint32_t code_filename = 0;
  std::uint32_t code_qualname = 0;
  // co_firstlineno (an int) and co_linetable (co_lnotab in 3.8, 3.9): with
  // the names, what tells a code object from a new one at its address
  // (Note [A new code object at a freed one's address]).
  std::uint32_t code_firstlineno = 0;
  std::uint32_t code_linetable = 0;
  // co_version (3.12 on; 0: none): each new code object takes the next
  // number of the interpreter's counter (0 for all once it runs out), so a
  // new code object at a freed one's address differs in it even where its
  // names, first line and line table's address are the same. It is the
  // 32-bit field just before co_localsplusnames, which 3.13 on publish
  // (`code_localsplusnames`: for that check only).
  std::uint32_t code_version = 0;
  std::uint32_t code_localsplusnames = 0;
  std::uint32_t code_firsttraceable = 0;  // an int
  std::uint32_t code_adaptive = 0;        // co_code_adaptive: the bytecode
  // PyASCIIObject and PyCompactUnicodeObject: the compact strings'
  // characters follow these headers.
  std::uint32_t unicode_length = 16;
  std::uint32_t unicode_state = 32;
  std::uint32_t ascii_header = 0;
  std::uint32_t compact_header = 0;
  // From 3.13 on, where in _PyRuntime's _Py_DebugOffsets the interpreter
  // publishes the offsets above (Note [Layouts checked against the
  // interpreter's own offsets] in python_layout.cpp); 0: not published.
  struct debug_positions {
    std::uint16_t current_frame = 0;
    std::uint16_t frame_previous = 0, frame_code = 0, frame_instr = 0, frame_owner = 0;
    std::uint16_t code_filename = 0, code_qualname = 0, code_adaptive = 0;
    std::uint16_t ascii_header = 0;
    std::uint16_t code_linetable = 0, code_firstlineno = 0;
    std::uint16_t code_localsplusnames = 0;
  } debug;
};

// The layout of CPython `major`.`minor` (the release's own, the same for
// every patch release of it), or none for a version this streamsan does
// not know: 3.8 to 3.15 are known.
std::optional<python_layout> python_layout_for(unsigned major, unsigned minor) noexcept;

// Why the interpreter whose _Py_DebugOffsets (the start of its _PyRuntime)
// is at `debug_offsets` is not described by `l` (a free-threaded build, an
// offset that differs), or "" when it is or `l` publishes none (before
// 3.13).
std::string python_layout_mismatch(const void* debug_offsets, const python_layout& l);

// Py_Version's value, major and minor only (0xMMmm0000), of Py_GetVersion's
// text ("3.10.13 (main, ...)"), for interpreters before 3.11, which have no
// Py_Version; 0 when the text does not start with a version.
unsigned long python_version_of_text(std::string_view text) noexcept;

// The same from Py_Version's value (0xMMmmppRS).
std::optional<python_layout> python_layout_for_hex(unsigned long py_version) noexcept;

}  // namespace streamsan::injection
