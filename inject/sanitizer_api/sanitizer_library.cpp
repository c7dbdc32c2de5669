#include "inject/sanitizer_api/sanitizer_library.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>

namespace streamsan::sanitizer_api {
namespace {

std::string own_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&own_directory), &info) == 0 || !info.dli_fname) {
    return {};
  }
  return std::filesystem::path(info.dli_fname).parent_path().string();
}

void add_toolkit_paths(std::vector<std::string>& out, const std::filesystem::path& root) {
  out.push_back((root / "compute-sanitizer" / "libsanitizer-public.so").string());
  out.push_back((root / "extras" / "Sanitizer" / "libsanitizer-public.so").string());
}

// The compute-sanitizer on PATH: its folder holds the library.
void add_path_tool(std::vector<std::string>& out) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return;
  std::stringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::filesystem::path tool = std::filesystem::path(dir) / "compute-sanitizer";
    std::error_code ec;
    if (!std::filesystem::exists(tool, ec)) continue;
    const auto real = std::filesystem::canonical(tool, ec);
    if (ec) continue;
    out.push_back((real.parent_path() / "libsanitizer-public.so").string());
    // PyPI's layout: nvidia/cu13/bin/compute-sanitizer, nvidia/cu13/lib/...
    out.push_back((real.parent_path().parent_path() / "lib" / "libsanitizer-public.so").string());
  }
}

template <class F>
bool resolve(void* handle, const char* name, F& slot, std::string& missing) {
  slot = reinterpret_cast<F>(dlsym(handle, name));
  if (slot == nullptr) {
    if (!missing.empty()) missing += ", ";
    missing += name;
  }
  return slot != nullptr;
}

// Every entry point, or the names of those missing.
std::string resolve_all(void* h, sanitizer_library& l) {
  std::string missing;
  resolve(h, "sanitizerSubscribe", l.subscribe, missing);
  resolve(h, "sanitizerUnsubscribe", l.unsubscribe, missing);
  resolve(h, "sanitizerEnableDomain", l.enable_domain, missing);
  resolve(h, "sanitizerEnableCallback", l.enable_callback, missing);
  resolve(h, "sanitizerGetResultString", l.result_string, missing);
  resolve(h, "sanitizerAddPatches", l.add_patches, missing);
  resolve(h, "sanitizerPatchInstructions", l.patch_instructions, missing);
  resolve(h, "sanitizerPatchModule", l.patch_module, missing);
  resolve(h, "sanitizerUnpatchModule", l.unpatch_module, missing);
  resolve(h, "sanitizerSetLaunchCallbackData", l.set_launch_callback_data, missing);
  resolve(h, "sanitizerSetCallbackData", l.set_callback_data, missing);
  resolve(h, "sanitizerAlloc", l.alloc, missing);
  resolve(h, "sanitizerFree", l.free, missing);
  resolve(h, "sanitizerMemset", l.memset, missing);
  resolve(h, "sanitizerMemcpyHostToDeviceAsync", l.memcpy_to_device, missing);
  resolve(h, "sanitizerMemcpyDeviceToHost", l.memcpy_to_host, missing);
  resolve(h, "sanitizerStreamSynchronize", l.stream_synchronize, missing);
  resolve(h, "sanitizerGetStreamHandle", l.stream_handle, missing);
  return missing;
}

}  // namespace

std::string sanitizer_library::describe(SanitizerResult r) const {
  const char* text = nullptr;
  if (result_string != nullptr) result_string(r, &text);
  return text != nullptr ? text : "Sanitizer API error " + std::to_string(static_cast<int>(r));
}

std::vector<std::string> candidate_paths() {
  std::vector<std::string> out;
  if (const char* explicit_path = std::getenv("STREAMSAN_SANITIZER_LIB")) {
    out.emplace_back(explicit_path);
    return out;
  }
  if (const auto here = own_directory(); !here.empty()) {
    out.push_back(here + "/libsanitizer-public.so");
  }
  if (const char* cuda = std::getenv("CUDA_HOME")) add_toolkit_paths(out, cuda);
  add_toolkit_paths(out, "/usr/local/cuda");
  add_path_tool(out);
  out.emplace_back("libsanitizer-public.so");  // the loader's own search
  return out;
}

load_result load_sanitizer_library() {
  static std::once_flag once;
  static load_result result;
  std::call_once(once, [] {
    static sanitizer_library library;
    std::string tried;
    for (const auto& path : candidate_paths()) {
      void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h == nullptr) {
        const char* why = dlerror();
        tried += "\n  " + path + ": " + (why ? why : "cannot be loaded");
        continue;
      }
      const std::string missing = resolve_all(h, library);
      if (!missing.empty()) {
        tried += "\n  " + path + ": lacks " + missing;
        dlclose(h);
        continue;
      }
      library.path = path;
      result.library = &library;
      return;
    }
    result.error = "the Compute Sanitizer API library (libsanitizer-public.so) was not found; "
                   "set STREAMSAN_SANITIZER_LIB to its path. Tried:" + tried;
  });
  return result;
}

}  // namespace streamsan::sanitizer_api
