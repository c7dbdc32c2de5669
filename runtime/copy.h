// Copies and memsets (S-COPY-1..5), with CUDA's host-synchronization
// behaviour on every backend (the table is sanitizer/log/copy_synchronization.h,
// shared with the engine):
//
//   memcpy (cudaMemcpy), issued to the default stream of the current
//   device:
//     pageable host -> device  waits for the default stream's prior work,
//                              stages the source and returns; the write may
//                              still run
//     pinned host -> device    returns when the copy completed
//     device -> host           returns when the copy completed
//     device -> device         does not synchronize the host
//     host -> host             returns when the copy completed; on the legacy
//                              default stream that is after the prior work of
//                              every blocking stream (S-DEFAULT-1)
//   memcpy_async (cudaMemcpyAsync) on a stream:
//     host -> host             returns when the copy, ordered after the
//                              stream's prior work, completed
//     anything else            asynchronous: the host must synchronize before
//                              touching the buffers. (With pageable memory
//                              CUDA *might* synchronize; nothing relies on it,
//                              and on sim it never does.)
//   memset: asynchronous except into pinned host memory or managed memory,
//   where it returns when done; memset_async: always asynchronous.
//
// Sizes must match (usage_error otherwise). Copies between devices are
// allowed (S-COPY-5).
#pragma once

#include "runtime/buffer_view.h"
#include "runtime/stream.h"

namespace streamsan::rt {

void memcpy(const buffer_view& dst, const buffer_view& src);
void memcpy_async(const buffer_view& dst, const buffer_view& src, stream_ref s);
void memset(const buffer_view& dst, int value);
void memset_async(const buffer_view& dst, int value, stream_ref s);

}  // namespace streamsan::rt
