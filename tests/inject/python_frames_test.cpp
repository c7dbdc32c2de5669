#include "inject/stack/python_frames.h"

#include <gtest/gtest.h>

namespace streamsan::injection {
namespace {

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
