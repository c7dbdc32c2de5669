// Memsets: 1D, 2D, 3D (runtime) and D8/D16/D32, 2D (driver); synchronous and
// asynchronous.

#include <type_traits>

#include "inject/capture/api_params.h"
#include "inject/capture/api_table.h"
#include "inject/model/copy_regions.h"

namespace streamsan::injection {
namespace {

// ---- runtime (the synchronous struct is a prefix of the asynchronous one) ----

template <bool Async>
void runtime_memset(api_context& c) {
  const auto& p = c.params<cudaMemsetAsync_v3020_params>();
  c.model.memset(c.here(), c.stream(Async ? p.stream : nullptr),
                 {address_of(p.devPtr), p.count, memory_side::unknown}, Async);
}

template <bool Async>
void runtime_memset_2d(api_context& c) {
  const auto& p = c.params<cudaMemset2DAsync_v3020_params>();
  c.model.memset(c.here(), c.stream(Async ? p.stream : nullptr),
                 {address_of(p.devPtr), pitched_extent(p.width, p.height, p.pitch),
                  memory_side::unknown},
                 Async);
}

template <bool Async>
void runtime_memset_3d(api_context& c) {
  const auto& p = c.params<cudaMemset3DAsync_v3020_params>();
  const auto& ptr = p.pitchedDevPtr;
  const std::size_t rows = ptr.ysize != 0 ? ptr.ysize : p.extent.height;
  c.model.memset(c.here(), c.stream(Async ? p.stream : nullptr),
                 {address_of(ptr.ptr),
                  pitched_extent(p.extent.width, p.extent.height, ptr.pitch, p.extent.depth,
                                 ptr.pitch * rows),
                  memory_side::unknown},
                 Async);
}

// ---- driver: N elements of 1, 2 or 4 bytes. The D8, D16 and D32 structs
// differ only in the type of the value, so dstDevice, N (or Width, Height,
// dstPitch) and hStream line up and are read through the D32 one. ----

template <class Params, bool Async>
stream_arg driver_stream(const api_context& c, const Params& p) {
  if constexpr (Async) {
    return c.stream(p.hStream);
  } else {
    return c.stream(nullptr);
  }
}

template <std::size_t Element, bool Async>
void driver_memset(api_context& c) {
  using params = std::conditional_t<Async, cuMemsetD32Async_params, cuMemsetD32_v2_params>;
  const auto& p = c.params<params>();
  c.model.memset(c.here(), driver_stream<params, Async>(c, p),
                 {p.dstDevice, p.N * Element, memory_side::unknown}, Async);
}

template <std::size_t Element, bool Async>
void driver_memset_2d(api_context& c) {
  using params = std::conditional_t<Async, cuMemsetD2D32Async_params, cuMemsetD2D32_v2_params>;
  const auto& p = c.params<params>();
  c.model.memset(c.here(), driver_stream<params, Async>(c, p),
                 {p.dstDevice, pitched_extent(p.Width * Element, p.Height, p.dstPitch),
                  memory_side::unknown},
                 Async);
}

void add_runtime_memset_handlers(api_table& t) {
#define STREAMSAN_RUNTIME_MEMSET(name, fn)                                                    \
  t.add({CUPTI_RUNTIME_TRACE_CBID_##name##_v3020, CUPTI_RUNTIME_TRACE_CBID_##name##_ptds_v7000}, \
        {.on_exit = fn<false>});                                                              \
  t.add({CUPTI_RUNTIME_TRACE_CBID_##name##Async_v3020,                                        \
         CUPTI_RUNTIME_TRACE_CBID_##name##Async_ptsz_v7000},                                  \
        {.on_exit = fn<true>})
  STREAMSAN_RUNTIME_MEMSET(cudaMemset, runtime_memset);
  STREAMSAN_RUNTIME_MEMSET(cudaMemset2D, runtime_memset_2d);
  STREAMSAN_RUNTIME_MEMSET(cudaMemset3D, runtime_memset_3d);
#undef STREAMSAN_RUNTIME_MEMSET
}

void add_driver_memset_handlers(api_table& t) {
#define STREAMSAN_DRIVER_MEMSET(shape, bits, fn)                                                  \
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemset##shape##bits##_v2,                                       \
         CUPTI_DRIVER_TRACE_CBID_cuMemset##shape##bits##_v2_ptds},                                 \
        {.on_exit = fn<bits / 8, false>});                                                         \
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemset##shape##bits##Async,                                     \
         CUPTI_DRIVER_TRACE_CBID_cuMemset##shape##bits##Async_ptsz},                               \
        {.on_exit = fn<bits / 8, true>})
  STREAMSAN_DRIVER_MEMSET(D, 8, driver_memset);
  STREAMSAN_DRIVER_MEMSET(D, 16, driver_memset);
  STREAMSAN_DRIVER_MEMSET(D, 32, driver_memset);
  STREAMSAN_DRIVER_MEMSET(D2D, 8, driver_memset_2d);
  STREAMSAN_DRIVER_MEMSET(D2D, 16, driver_memset_2d);
  STREAMSAN_DRIVER_MEMSET(D2D, 32, driver_memset_2d);
#undef STREAMSAN_DRIVER_MEMSET
}

}  // namespace

void add_memset_handlers(api_tables& t) {
  add_runtime_memset_handlers(t.runtime);
  add_driver_memset_handlers(t.driver);
}

}  // namespace streamsan::injection
