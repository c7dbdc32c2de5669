#include "inject/stack/python_paths.h"

#include <gtest/gtest.h>

namespace streamsan::injection {
namespace {

TEST(PythonPaths, UserFilesAreShown) {
  EXPECT_EQ(classify_python_file("/home/ana/train.py"), python_file_kind::user);
  EXPECT_EQ(classify_python_file("train.py"), python_file_kind::user);
  // A library of the user's installed beside the frameworks stays shown.
  EXPECT_EQ(classify_python_file("/venv/lib/python3.12/site-packages/mylib/ops.py"),
            python_file_kind::user);
}

TEST(PythonPaths, StandardLibraryIsFolded) {
  EXPECT_EQ(classify_python_file("/usr/lib/python3.12/threading.py"), python_file_kind::folded);
  EXPECT_EQ(classify_python_file("/root/.pyenv/versions/3.11.7/lib/python3.11/runpy.py"),
            python_file_kind::folded);
  EXPECT_EQ(classify_python_file("/opt/conda/lib64/python3.13/concurrent/futures/thread.py"),
            python_file_kind::folded);
  EXPECT_EQ(classify_python_file("<frozen runpy>"), python_file_kind::folded);
}

TEST(PythonPaths, FrameworksInSitePackagesAreFolded) {
  EXPECT_EQ(classify_python_file("/venv/lib/python3.12/site-packages/cupy/_core/core.py"),
            python_file_kind::folded);
  EXPECT_EQ(classify_python_file("/usr/lib/python3/dist-packages/numpy/core/numeric.py"),
            python_file_kind::folded);
  EXPECT_EQ(classify_python_file("/usr/local/lib/python3.12/dist-packages/jax/_src/api.py"),
            python_file_kind::folded);
  EXPECT_EQ(classify_python_file("/work/build/python/streamsan_torch/_support.py"),
            python_file_kind::folded);
  EXPECT_EQ(classify_python_file("/tmp/torchinductor_ana/xy/cxyz.py"), python_file_kind::folded);
}

TEST(PythonPaths, CodeFromStringsIsGenerated) {
  EXPECT_EQ(classify_python_file("<string>"), python_file_kind::generated);
  EXPECT_EQ(classify_python_file("<stdin>"), python_file_kind::generated);
}

TEST(PythonPaths, AVersionFolderWithoutLibIsNotTheStandardLibrary) {
  // Only CPython's lib/pythonX.Y/ marks the standard library.
  EXPECT_EQ(classify_python_file("/home/ana/python3.12/experiments/run.py"),
            python_file_kind::user);
  EXPECT_EQ(classify_python_file("/home/ana/lib/python3.12"), python_file_kind::user);
}

}  // namespace
}  // namespace streamsan::injection
