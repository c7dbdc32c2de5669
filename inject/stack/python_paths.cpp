#include "inject/stack/python_paths.h"

#include <array>

namespace streamsan::injection {
namespace {

// Note [Folded Python frames]
// The frames above a CUDA call of a Python program are mostly a
// framework's (CuPy's array methods, JAX's dispatch, torch's modules) and
// the standard library's (runpy, threading, concurrent.futures). The PyTorch
// support folds torch's and the standard library's by their folders, which
// it asks the interpreter for (_support.py, _folded_prefixes); the library
// reads frames without the interpreter's help (Note [Python frames read in
// place]), so it folds by the path's shape:
// - the standard library: a file under lib/pythonX.Y/ that is not under
//   its site-packages (CPython's own layout, which venvs, conda and
//   distributions keep);
// - installed GPU and test frameworks: a file under site-packages/ or
//   dist-packages/ whose top package is one of `framework_packages`. The
//   user's own libraries live there too, and stay shown;
// - streamsan's own package, Inductor's generated modules (in its default
//   cache folder), and the interpreter's frozen modules.
// A stack whose every frame is folded is shown unfolded (python_frames.cpp):
// a CUDA call made by library code alone still gets its Python lines.
constexpr std::array<std::string_view, 30> framework_packages = {
    "torch",    "functorch",    "torchgen",    "triton",   "cupy",        "cupyx",
    "cupy_backends", "fastrlock", "jax",      "jaxlib",      "jax_plugins", "flax",
    "optax",    "numba",        "numba_cuda",  "llvmlite", "numpy",       "cuda",
    "pycuda",   "nvidia",       "tensorflow",  "keras",    "tf_keras",    "pytest",
    "_pytest",  "pluggy",       "streamsan_torch", "apex", "transformer_engine", "xformers"};

// The first path component after `from` (up to the next '/').
std::string_view component_at(std::string_view file, std::size_t from) {
  const auto end = file.find('/', from);
  return end == std::string_view::npos ? std::string_view{} : file.substr(from, end - from);
}

bool is_framework(std::string_view package) {
  for (const auto name : framework_packages) {
    if (package == name) return true;
  }
  return false;
}

// After ".../site-packages/" or ".../dist-packages/": the package's name.
bool under_installed_framework(std::string_view file) {
  for (const std::string_view dir : {"/site-packages/", "/dist-packages/"}) {
    const auto at = file.rfind(dir);
    if (at != std::string_view::npos) return is_framework(component_at(file, at + dir.size()));
  }
  return false;
}

bool is_site_dir(std::string_view name) {
  return name == "site-packages" || name == "dist-packages";
}

// A file of lib/pythonX.Y/ (or lib64/) outside its site-packages.
bool under_standard_library(std::string_view file) {
  for (const std::string_view dir : {"/lib/python3.", "/lib64/python3."}) {
    const auto at = file.find(dir);
    if (at == std::string_view::npos) continue;
    const auto version_end = file.find('/', at + dir.size());
    if (version_end == std::string_view::npos) return false;
    return !is_site_dir(component_at(file, version_end + 1));
  }
  return false;
}

bool in_streamsan_package(std::string_view file) {
  return file.find("/streamsan_torch/") != std::string_view::npos;
}

// Inductor's generated modules, in its default cache folder
// (/tmp/torchinductor_$USER): torch's code, written for this run.
bool in_inductor_cache(std::string_view file) {
  return file.find("/torchinductor_") != std::string_view::npos;
}

}  // namespace

python_file_kind classify_python_file(std::string_view file) noexcept {
  if (file.starts_with("<frozen") || file.starts_with("<built-in")) {
    return python_file_kind::folded;
  }
  if (file.starts_with("<")) return python_file_kind::generated;
  if (under_standard_library(file) || under_installed_framework(file) ||
      in_streamsan_package(file) || in_inductor_cache(file)) {
    return python_file_kind::folded;
  }
  return python_file_kind::user;
}

}  // namespace streamsan::injection
