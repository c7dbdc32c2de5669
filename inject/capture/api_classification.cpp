#include "inject/capture/api_classification.h"

#include <array>

namespace streamsan::injection {
namespace {

bool strip(std::string_view& s, std::string_view suffix) {
  if (s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix) {
    s.remove_suffix(suffix.size());
    return true;
  }
  return false;
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Calls that order work or touch memory in ways the model does not follow.
// Checked first, so that e.g. cuCtxWaitEvent is not taken for context
// management.
constexpr std::array<std::string_view, 30> unmodelled_parts = {
    "Array",          "Ipc",          "External",     "Semaphore",     "Graphics",
    "GL",             "D3D",          "VDPAU",        "EGL",           "NvSci",
    "NVN",            "WaitValue",    "WriteValue",   "BatchMemOp",    "Multicast",
    "MultiDevice",    "GraphExec",    "NodeSetEnabled", "AttachMem",   "StreamSetFlags",
    "UpdateCaptureDependencies",   "DeviceReset",  "Discard",       "RecordEvent",
    "WaitEvent",      "3DBatch",      "Decompress",   "cuMemMap",      "cuMemUnmap",
    "cuMemCreate"};

// Queries, configuration, module loading and graph construction.
constexpr std::array<std::string_view, 48> inert_prefixes = {
    "cuInit", "cuDevice", "cudaDeviceGet", "cudaDeviceSet", "cudaDeviceCanAccessPeer",
    "cudaDeviceEnablePeerAccess", "cudaDeviceDisablePeerAccess", "cudaDeviceRegister",
    "cudaDeviceUnregister", "cudaDeviceFlush", "cudaDeviceGraphMemTrim", "cuCtx",
    "cudaThreadSet", "cudaThreadGet", "cudaThreadExchange", "cudaSetDevice",
    "cudaSetValidDevices", "cudaInitDevice", "cudaChooseDevice", "cuModule", "cuLibrary",
    "cudaLibrary", "cuLink", "cuFunc", "cudaFunc", "cuKernel", "cudaKernel", "__cuda",
    "cuGetProcAddress", "cudaGetDriverEntryPoint", "cuTexRef", "cuSurfRef", "cuTexObject",
    "cuSurfObject", "cuTensorMap", "cuCoredump", "cuLogs", "cudaLogs", "cuCheckpoint",
    "cuParamSet", "cudaConfigureCall", "cudaSetupArgument", "cuGreenCtxCreate",
    "cuGreenCtxDestroy", "cuDevSmResource", "cuDevResource", "cudaCreateChannelDesc",
    "cuFlushGPUDirectRDMAWrites"};

constexpr std::array<std::string_view, 30> inert_parts = {
    "Get",           "Peek",          "Occupancy",       "Profiler",      "Version",
    "Attribute",     "MemAdvise",     "MemPrefetch",     "MemPool",       "MemGetInfo",
    "GraphCreate",   "GraphAdd",      "GraphClone",      "FindInClone",   "RemoveDependencies",
    "GraphDestroyNode", "NodeSetParams", "KernelNodeSet", "MemcpyNodeSet", "MemsetNodeSet",
    "HostNodeSet",   "RecordNodeSet", "WaitNodeSet",     "GraphUpload",   "DebugDotPrint",
    "UserObject",    "ConditionalHandle", "IsCapturing", "TextureObject", "SurfaceObject"};

constexpr std::array<std::string_view, 9> inert_names = {
    "cudaEventElapsedTime", "cuEventElapsedTime", "cudaCtxResetPersistingL2Cache",
    "cuPointerSetAttribute", "cuFuncSetBlockShape", "cuFuncSetSharedSize",
    "cudaStreamCopyAttributes", "cuStreamCopyAttributes", "cudaDeviceSetMemPool"};

// Handled by the model (or needed for its caches) despite an inert pattern.
constexpr std::array<std::string_view, 4> observed_names = {
    "__cudaLaunchKernel", "cuCtxSynchronize", "cuModuleUnload", "cuLibraryUnload"};

}  // namespace

std::string_view base_api_name(std::string_view name) {
  // "_v7000", "_v2", "_v3": version suffixes (digits after "_v").
  for (int round = 0; round < 3; ++round) {
    const auto v = name.rfind("_v");
    if (v != std::string_view::npos && v + 2 < name.size() &&
        name.find_first_not_of("0123456789", v + 2) == std::string_view::npos) {
      name = name.substr(0, v);
      continue;
    }
    if (strip(name, "_ptsz") || strip(name, "_ptds")) continue;
    break;
  }
  return name;
}

api_class classify_api(std::string_view cupti_name) {
  const std::string_view name = base_api_name(cupti_name);
  for (const auto n : observed_names) {
    if (name == n) return api_class::observed;
  }
  for (const auto n : inert_names) {
    if (name == n) return api_class::inert;
  }
  for (const auto part : unmodelled_parts) {
    // "Get" wins over everything: a query of an array or a semaphore
    // changes nothing.
    if (contains(name, part) && !contains(name, "Get")) return api_class::unmodelled;
  }
  for (const auto prefix : inert_prefixes) {
    if (starts_with(name, prefix)) return api_class::inert;
  }
  for (const auto part : inert_parts) {
    if (contains(name, part)) return api_class::inert;
  }
  return api_class::unmodelled;
}

}  // namespace streamsan::injection
