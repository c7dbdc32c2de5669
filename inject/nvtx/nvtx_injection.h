// streamsan's own NVTX tool: NVTX_INJECTION64_PATH names the injection
// library, NVTX calls InitializeInjectionNvtx2 at the program's first NVTX
// call, and install_nvtx_injection() puts our handlers into NVTX's function
// tables.
//
// Note [NVTX without CUPTI]
// CUPTI's NVTX domain only reaches a CUPTI subscriber, and CUPTI and the
// Compute Sanitizer API exclude each other in one process. Handling NVTX
// ourselves gives both capture sources (CUPTI, and the Sanitizer API that
// --precise needs) the same ranges. Push/pop ranges nest per thread (S-NVTX-1)
// and become nvtx_push / nvtx_pop records; marks become nvtx_mark.
// Start/end ranges do not nest and are listed as unmodelled; names of
// categories, threads, devices and streams order nothing and are ignored.
// Registered strings and domains get handles we own, so messages given by
// handle still read as text.
#pragma once

#include <string_view>

namespace streamsan::nvtx {

class listener {
 public:
  virtual ~listener() = default;
  virtual void range_pushed(std::string_view message) = 0;
  virtual void range_popped() = 0;
  virtual void marked(std::string_view message) = 0;
  // A call streamsan does not model (start/end ranges), by API name.
  virtual void unmodelled(std::string_view api) = 0;
};

// Installs the handlers; `get_export_table` is the NvtxGetExportTableFunc_t
// NVTX passed to InitializeInjectionNvtx2. Returns 1 on success, 0 when
// NVTX's tables cannot be read (NVTX then stays inert). `to` must outlive
// the process's NVTX calls.
int install_nvtx_injection(const void* get_export_table, listener& to);

}  // namespace streamsan::nvtx
