// The whole runtime API (torch.cuda in C++), for programs and the scenario
// harness. See docs/runtime.md.
#pragma once

#include "runtime/backend/backend.h"
#include "runtime/buffer.h"
#include "runtime/buffer_view.h"
#include "runtime/caching_allocator.h"
#include "runtime/copy.h"
#include "runtime/device.h"
#include "runtime/device_guard.h"
#include "runtime/errors.h"
#include "runtime/event.h"
#include "runtime/graph.h"
#include "runtime/host_access.h"
#include "runtime/kernels.h"
#include "runtime/launch.h"
#include "runtime/memory_stats.h"
#include "runtime/nvtx.h"
#include "runtime/runtime.h"
#include "runtime/sanitizer_mode.h"
#include "runtime/stream.h"
#include "runtime/stream_guard.h"
#include "runtime/sync_debug.h"
