// The name of every runtime and driver callback id, generated at build time
// from CUPTI's callback id headers (api_names.py).
#pragma once

#include <span>
#include <string_view>

#include "inject/capture/api_call.h"

namespace streamsan::injection {

// Indexed by callback id; "" for id 0. Its size is the domain's
// CUPTI_*_TRACE_CBID_SIZE.
std::span<const std::string_view> api_names(api_domain domain) noexcept;

}  // namespace streamsan::injection
