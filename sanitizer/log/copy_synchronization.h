// When a copy or a memset makes the calling host thread wait: CUDA's "API
// synchronization behavior" (S-COPY-1, S-COPY-2, S-COPY-4), as one table that
// the engine, the runtime and both backends apply, so that what the sanitizer
// assumes is what the sim executes and what the CUDA backend is checked
// against on a GPU.
//
// Note [What a synchronous call waits for]
// Every copy and memset is an operation of a stream: the `Async` forms of the
// stream they name, the synchronous forms of the calling thread's default
// stream (the legacy default stream, or the per-thread one), so the
// default-stream rules (S-DEFAULT-1) order them too. What differs is what the
// host has waited for when the call returns:
//   completes_before_return   the operation itself, and so everything it
//                             was ordered after (on the legacy stream: the
//                             prior work of every blocking stream);
//   stages_source             only the stream's prior work (the "stream
//                             sync" of a pageable upload); the source has
//                             been read, the transfer may still be running;
//   neither                   nothing.
// A call the documentation says *might* synchronize (an async copy between
// device and pageable memory) is in neither set: code relying on it is a
// latent bug (semantics.md).
#pragma once

#include "sanitizer/log/record.h"

namespace streamsan {

// Synchronous pageable host -> device copy (S-COPY-1): the default stream is
// synchronized, the source staged, and the call returns before the transfer.
constexpr bool copy_stages_source(bool async, memory_kind src, memory_kind dst) noexcept {
  return !async && src == memory_kind::pageable_host && is_device_memory(dst);
}

// The copy has completed when the call returns. Synchronous (S-COPY-1): pinned
// host -> device, device -> any host memory, host -> host; not device ->
// device, not a staged pageable upload. Async (S-COPY-2): host -> host only.
constexpr bool copy_completes_before_return(bool async, memory_kind src,
                                            memory_kind dst) noexcept {
  const bool device_src = is_device_memory(src);
  const bool device_dst = is_device_memory(dst);
  if (async) return !device_src && !device_dst;
  if (copy_stages_source(async, src, dst)) return false;
  return !(device_src && device_dst);
}

// The synchronous cudaMemset into pinned host memory or a Unified Memory
// (managed) region is fully synchronous; every other memset, and every
// cudaMemsetAsync, is asynchronous (S-COPY-4).
constexpr bool memset_completes_before_return(bool async, memory_kind dst) noexcept {
  return !async && (dst == memory_kind::pinned_host || dst == memory_kind::managed);
}

}  // namespace streamsan
