#include "inject/stack/python_layout.h"

#include <gtest/gtest.h>

namespace streamsan::injection {
namespace {

TEST(PythonLayout, KnowsTheMinorVersionsItWasCheckedOn) {
  for (unsigned minor : {8u, 9u, 10u, 11u, 12u, 13u}) {
    const auto l = python_layout_for(3, minor);
    ASSERT_TRUE(l.has_value()) << "3." << minor;
    EXPECT_EQ(l->minor, minor);
  }
}

TEST(PythonLayout, RefusesVersionsItDoesNotKnow) {
  EXPECT_FALSE(python_layout_for(3, 7).has_value());
  EXPECT_FALSE(python_layout_for(3, 14).has_value());
  EXPECT_FALSE(python_layout_for(2, 7).has_value());
}

TEST(PythonLayout, ReadsPyVersion) {
  // 3.12.1 final: 0x030C01F0.
  const auto l = python_layout_for_hex(0x030C01F0ul);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->minor, 12u);
  EXPECT_FALSE(l->via_cframe == false);  // 3.12 keeps the _PyCFrame
  EXPECT_FALSE(python_layout_for_hex(0x030E00F0ul).has_value());  // 3.14
}

TEST(PythonLayout, ThirteenDropsTheCFrame) {
  EXPECT_TRUE(python_layout_for(3, 11)->via_cframe);
  EXPECT_FALSE(python_layout_for(3, 13)->via_cframe);
  // The interpreter's entry shim exists from 3.12 on.
  EXPECT_EQ(python_layout_for(3, 11)->owner_cstack, 0xff);
  EXPECT_EQ(python_layout_for(3, 12)->owner_cstack, 3);
}

TEST(PythonLayout, FramesAreObjectsUpToTen) {
  for (unsigned minor : {8u, 9u, 10u}) EXPECT_TRUE(python_layout_for(3, minor)->frame_objects);
  EXPECT_FALSE(python_layout_for(3, 11)->frame_objects);
  // f_lasti counts bytes in 3.8 and 3.9, code units in 3.10.
  EXPECT_EQ(python_layout_for(3, 9)->instr_kind, python_instr_kind::byte_offset);
  EXPECT_EQ(python_layout_for(3, 10)->instr_kind, python_instr_kind::code_unit_index);
  EXPECT_EQ(python_layout_for(3, 11)->instr_kind, python_instr_kind::pointer);
}

}  // namespace
}  // namespace streamsan::injection
