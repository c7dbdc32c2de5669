// Copies: 1D, 2D, 3D, peer, to and from symbols, batches; synchronous and
// asynchronous, runtime and driver. The synchronous variant's parameter
// struct is a prefix of the asynchronous one's (no stream), so one handler
// per pair reads the stream only when `Async`.

#include "inject/capture/api_params.h"
#include "inject/capture/api_table.h"
#include "inject/model/copy_regions.h"

namespace streamsan::injection {
namespace {

constexpr auto dst = copy_side::destination;
constexpr auto src = copy_side::source;

memory_region device(CUdeviceptr p, std::size_t n) { return {p, n, memory_side::device}; }
memory_region host(const void* p, std::size_t n) { return {address_of(p), n, memory_side::host}; }

// A side of a 2D/3D descriptor: its memory, or the whole CUDA array it
// names (Note [CUDA arrays]).
template <class Descriptor>
memory_region described(api_context& c, const Descriptor& d, copy_side side) {
  const std::uintptr_t array = array_of(d, side);
  return array != 0 ? c.model.array_region(array) : region_of(d, side);
}

// A batch (cudaMemcpyBatchAsync, cuMemcpyBatchAsync): one stream-ordered
// copy per entry on the call's stream; an attribute's source access order
// "during the API call" reads the source earlier, never later.
std::uint64_t batch_address(const void* p) { return address_of(p); }
std::uint64_t batch_address(CUdeviceptr p) { return p; }

template <class Dst, class Src>
void copied_batch(api_context& c, const Dst* dsts, const Src* srcs, const std::size_t* sizes,
                  std::size_t count, const void* stream) {
  const call_site site = c.here();
  for (std::size_t i = 0; i < count; ++i) {
    c.model.copied(site, c.stream(stream),
                   {batch_address(dsts[i]), sizes[i], memory_side::unknown},
                   {batch_address(srcs[i]), sizes[i], memory_side::unknown}, true);
  }
}

// ---- runtime ----

template <bool Async>
void runtime_memcpy(api_context& c) {
  const auto& p = c.params<cudaMemcpyAsync_v3020_params>();
  c.model.copied(c.here(), c.stream(Async ? p.stream : nullptr),
                 {address_of(p.dst), p.count, side_of(p.kind, dst)},
                 {address_of(p.src), p.count, side_of(p.kind, src)}, Async);
}

template <bool Async>
void runtime_memcpy_2d(api_context& c) {
  const auto& p = c.params<cudaMemcpy2DAsync_v3020_params>();
  c.model.copied(c.here(), c.stream(Async ? p.stream : nullptr),
                 {address_of(p.dst), pitched_extent(p.width, p.height, p.dpitch),
                  side_of(p.kind, dst)},
                 {address_of(p.src), pitched_extent(p.width, p.height, p.spitch),
                  side_of(p.kind, src)},
                 Async);
}

template <bool Async>
void runtime_memcpy_3d(api_context& c) {
  const auto& p = c.params<cudaMemcpy3DAsync_v3020_params>();
  c.model.copied(c.here(), c.stream(Async ? p.stream : nullptr), described(c, *p.p, dst),
                 described(c, *p.p, src), Async);
}

// Peer copies are asynchronous to the host even when "synchronous".
template <bool Async>
void runtime_memcpy_3d_peer(api_context& c) {
  const auto& p = c.params<cudaMemcpy3DPeerAsync_v4000_params>();
  c.model.copied(c.here(), c.stream(Async ? p.stream : nullptr), described(c, *p.p, dst),
                 described(c, *p.p, src), true);
}

// cudaMemcpyPeer is asynchronous to the host but serialized with the legacy
// stream of both devices: a copy on the legacy stream.
template <bool Async>
void runtime_memcpy_peer(api_context& c) {
  const auto& p = c.params<cudaMemcpyPeerAsync_v4000_params>();
  c.model.copied(c.here(), c.stream(Async ? p.stream : nullptr),
                 {address_of(p.dst), p.count, memory_side::device},
                 {address_of(p.src), p.count, memory_side::device}, true);
}

// A __device__ variable is not an allocation streamsan tracks; the host side
// and the ordering still count.
template <bool Async>
void runtime_memcpy_to_symbol(api_context& c) {
  const auto& p = c.params<cudaMemcpyToSymbolAsync_v3020_params>();
  c.model.copied(c.here(), c.stream(Async ? p.stream : nullptr), {0, p.count, memory_side::device},
                 {address_of(p.src), p.count, side_of(p.kind, src)}, Async);
}

template <bool Async>
void runtime_memcpy_from_symbol(api_context& c) {
  const auto& p = c.params<cudaMemcpyFromSymbolAsync_v3020_params>();
  c.model.copied(c.here(), c.stream(Async ? p.stream : nullptr),
                 {address_of(p.dst), p.count, side_of(p.kind, dst)},
                 {0, p.count, memory_side::device}, Async);
}

void runtime_memcpy_batch(api_context& c) {
  const auto& p = c.params<cudaMemcpyBatchAsync_v13000_params>();
  copied_batch(c, p.dsts, p.srcs, p.sizes, p.count, p.stream);
}

// ---- driver ----

template <bool Async>
void driver_memcpy(api_context& c) {
  const auto& p = c.params<cuMemcpyAsync_params>();
  c.model.copied(c.here(), c.stream(Async ? p.hStream : nullptr),
                 {p.dst, p.ByteCount, memory_side::unknown},
                 {p.src, p.ByteCount, memory_side::unknown}, Async);
}

template <bool Async>
void driver_memcpy_htod(api_context& c) {
  const auto& p = c.params<cuMemcpyHtoDAsync_v2_params>();
  c.model.copied(c.here(), c.stream(Async ? p.hStream : nullptr),
                 device(p.dstDevice, p.ByteCount), host(p.srcHost, p.ByteCount), Async);
}

template <bool Async>
void driver_memcpy_dtoh(api_context& c) {
  const auto& p = c.params<cuMemcpyDtoHAsync_v2_params>();
  c.model.copied(c.here(), c.stream(Async ? p.hStream : nullptr), host(p.dstHost, p.ByteCount),
                 device(p.srcDevice, p.ByteCount), Async);
}

template <bool Async>
void driver_memcpy_dtod(api_context& c) {
  const auto& p = c.params<cuMemcpyDtoDAsync_v2_params>();
  c.model.copied(c.here(), c.stream(Async ? p.hStream : nullptr),
                 device(p.dstDevice, p.ByteCount), device(p.srcDevice, p.ByteCount), Async);
}

// cuMemcpy2D, cuMemcpy2DUnaligned and cuMemcpy3D take one descriptor.
template <class Params, bool Async>
void driver_memcpy_described(api_context& c) {
  const auto& p = c.params<Params>();
  c.model.copied(c.here(), c.stream(Async ? p.hStream : nullptr), described(c, *p.pCopy, dst),
                 described(c, *p.pCopy, src), Async);
}

// cuMemcpyBatchAsync: CUDA 12.8's entry point (with failIdx) and CUDA 13's
// _v2 (without) name the copies the same way.
template <class Params>
void driver_memcpy_batch(api_context& c) {
  const auto& p = c.params<Params>();
  copied_batch(c, p.dsts, p.srcs, p.sizes, p.count, p.hStream);
}

template <bool Async>
void driver_memcpy_peer(api_context& c) {
  const auto& p = c.params<cuMemcpyPeerAsync_params>();
  c.model.copied(c.here(), c.stream(Async ? p.hStream : nullptr),
                 device(p.dstDevice, p.ByteCount), device(p.srcDevice, p.ByteCount), true);
}

template <bool Async>
void driver_memcpy_3d_peer(api_context& c) {
  const auto& p = c.params<cuMemcpy3DPeerAsync_params>();
  c.model.copied(c.here(), c.stream(Async ? p.hStream : nullptr), described(c, *p.pCopy, dst),
                 described(c, *p.pCopy, src), true);
}

// Registers the synchronous variants (plain and per-thread) and the
// asynchronous ones (plain and per-thread) of one copy.
void add_pair(api_table& t, std::initializer_list<std::uint32_t> sync, api_handler_fn sync_fn,
              std::initializer_list<std::uint32_t> async, api_handler_fn async_fn) {
  t.add(sync, {.on_exit = sync_fn});
  t.add(async, {.on_exit = async_fn});
}

void add_runtime_copy_handlers(api_table& t) {
#define STREAMSAN_RUNTIME_PAIR(name, ver, fn)                                              \
  add_pair(t,                                                                              \
           {CUPTI_RUNTIME_TRACE_CBID_##name##_##ver, CUPTI_RUNTIME_TRACE_CBID_##name##_ptds_v7000}, \
           fn<false>,                                                                      \
           {CUPTI_RUNTIME_TRACE_CBID_##name##Async_##ver,                                  \
            CUPTI_RUNTIME_TRACE_CBID_##name##Async_ptsz_v7000},                            \
           fn<true>)
  STREAMSAN_RUNTIME_PAIR(cudaMemcpy, v3020, runtime_memcpy);
  STREAMSAN_RUNTIME_PAIR(cudaMemcpy2D, v3020, runtime_memcpy_2d);
  STREAMSAN_RUNTIME_PAIR(cudaMemcpy3D, v3020, runtime_memcpy_3d);
  STREAMSAN_RUNTIME_PAIR(cudaMemcpy3DPeer, v4000, runtime_memcpy_3d_peer);
  STREAMSAN_RUNTIME_PAIR(cudaMemcpyToSymbol, v3020, runtime_memcpy_to_symbol);
  STREAMSAN_RUNTIME_PAIR(cudaMemcpyFromSymbol, v3020, runtime_memcpy_from_symbol);
#undef STREAMSAN_RUNTIME_PAIR
  add_pair(t, {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000}, runtime_memcpy_peer<false>,
           {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000}, runtime_memcpy_peer<true>);
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000,
         CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_ptsz_v13000},
        {.on_exit = runtime_memcpy_batch});
}

void add_driver_copy_handlers(api_table& t) {
#define STREAMSAN_DRIVER_PAIR(sync, async, fn)                                               \
  add_pair(t, {CUPTI_DRIVER_TRACE_CBID_##sync, CUPTI_DRIVER_TRACE_CBID_##sync##_ptds}, fn<false>, \
           {CUPTI_DRIVER_TRACE_CBID_##async, CUPTI_DRIVER_TRACE_CBID_##async##_ptsz}, fn<true>)
  STREAMSAN_DRIVER_PAIR(cuMemcpy, cuMemcpyAsync, driver_memcpy);
  STREAMSAN_DRIVER_PAIR(cuMemcpyHtoD_v2, cuMemcpyHtoDAsync_v2, driver_memcpy_htod);
  STREAMSAN_DRIVER_PAIR(cuMemcpyDtoH_v2, cuMemcpyDtoHAsync_v2, driver_memcpy_dtoh);
  STREAMSAN_DRIVER_PAIR(cuMemcpyDtoD_v2, cuMemcpyDtoDAsync_v2, driver_memcpy_dtod);
  STREAMSAN_DRIVER_PAIR(cuMemcpyPeer, cuMemcpyPeerAsync, driver_memcpy_peer);
  STREAMSAN_DRIVER_PAIR(cuMemcpy3DPeer, cuMemcpy3DPeerAsync, driver_memcpy_3d_peer);
#undef STREAMSAN_DRIVER_PAIR
  using copy_2d = cuMemcpy2DAsync_v2_params;
  using copy_3d = cuMemcpy3DAsync_v2_params;
  add_pair(t,
           {CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2_ptds,
            CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DUnaligned_v2,
            CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DUnaligned_v2_ptds},
           driver_memcpy_described<copy_2d, false>,
           {CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2,
            CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2_ptsz},
           driver_memcpy_described<copy_2d, true>);
  add_pair(t, {CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2_ptds},
           driver_memcpy_described<copy_3d, false>,
           {CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2,
            CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2_ptsz},
           driver_memcpy_described<copy_3d, true>);
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync, CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_ptsz},
        {.on_exit = driver_memcpy_batch<cuMemcpyBatchAsync_params>});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2,
         CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2_ptsz},
        {.on_exit = driver_memcpy_batch<cuMemcpyBatchAsync_v2_params>});
}

}  // namespace

void add_copy_handlers(api_tables& t) {
  add_runtime_copy_handlers(t.runtime);
  add_driver_copy_handlers(t.driver);
}

}  // namespace streamsan::injection
