// Virtual memory management (Note [Virtual memory management]): one
// physical allocation (cuMemCreate) mapped at two addresses. One stream
// fills it through the first view; another copies it through the second.
// The two views are the same bytes, so the copy must wait for the fill: the
// racy version does not, the fixed version waits for an event recorded after
// the fill. Both unmap after a device synchronize and release everything.
// The driver API is reached through cudaGetDriverEntryPointByVersion, so the
// program links the runtime only.
#include "driver_entry.h"

namespace {

struct vmm_api {
  decltype(&cuMemGetAllocationGranularity) granularity =
      driver_entry<decltype(&cuMemGetAllocationGranularity)>("cuMemGetAllocationGranularity");
  decltype(&cuMemCreate) create = driver_entry<decltype(&cuMemCreate)>("cuMemCreate");
  decltype(&cuMemAddressReserve) reserve =
      driver_entry<decltype(&cuMemAddressReserve)>("cuMemAddressReserve");
  decltype(&cuMemMap) map = driver_entry<decltype(&cuMemMap)>("cuMemMap");
  decltype(&cuMemSetAccess) set_access = driver_entry<decltype(&cuMemSetAccess)>("cuMemSetAccess");
  decltype(&cuMemUnmap) unmap = driver_entry<decltype(&cuMemUnmap)>("cuMemUnmap");
  decltype(&cuMemRelease) release = driver_entry<decltype(&cuMemRelease)>("cuMemRelease");
  decltype(&cuMemAddressFree) address_free =
      driver_entry<decltype(&cuMemAddressFree)>("cuMemAddressFree");
};

// A reserved range of `size` bytes with `memory` mapped into it, readable
// and writable by `device`.
CUdeviceptr map_view(const vmm_api& vmm, CUmemGenericAllocationHandle memory, std::size_t size,
                     int device) {
  CUdeviceptr view = 0;
  check(vmm.reserve(&view, size, 0, 0, 0), "cuMemAddressReserve");
  check(vmm.map(view, size, 0, memory, 0), "cuMemMap");
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  check(vmm.set_access(view, size, &access, 1), "cuMemSetAccess");
  return view;
}

}  // namespace

int main() {
  const int n = 1 << 20;
  int device = 0;
  CHECK(cudaGetDevice(&device));
  float* copy;
  CHECK(cudaMalloc(&copy, n * sizeof(float)));  // initializes the primary context
  const vmm_api vmm;

  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  std::size_t granularity = 0;
  check(vmm.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
  const std::size_t bytes = n * sizeof(float);
  const std::size_t size = (bytes + granularity - 1) / granularity * granularity;
  CUmemGenericAllocationHandle memory = 0;
  check(vmm.create(&memory, size, &prop, 0), "cuMemCreate");
  const CUdeviceptr first = map_view(vmm, memory, size, device);
  const CUdeviceptr second = map_view(vmm, memory, size, device);
  // The mappings keep the memory alive (Note [Virtual memory management]).
  check(vmm.release(memory), "cuMemRelease");
  float* writer_view = reinterpret_cast<float*>(first);
  float* reader_view = reinterpret_cast<float*>(second);
  CHECK(cudaMemset(writer_view, 0, bytes));
  CHECK(cudaDeviceSynchronize());

  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t filled;
  CHECK(cudaEventCreateWithFlags(&filled, cudaEventDisableTiming));
  fill<<<64, 256, 0, s1>>>(writer_view, n, 1.0f, 1000000);
  CHECK(cudaGetLastError());
  // An exact write of the first view's bytes (S-COPY-4: the Async form is
  // async), whatever the fill's footprint is taken to be.
  CHECK(cudaMemsetAsync(writer_view, 0, sizeof(float), s1));
#if STREAMSAN_FIXED
  CHECK(cudaEventRecord(filled, s1));
  CHECK(cudaStreamWaitEvent(s2, filled, 0));
#endif
  CHECK(cudaMemcpyAsync(copy, reader_view, bytes, cudaMemcpyDeviceToDevice, s2));
  CHECK(cudaDeviceSynchronize());

  float last = 0;
  CHECK(cudaMemcpy(&last, copy + n - 1, sizeof(float), cudaMemcpyDeviceToHost));
  const int status = report_result("copy[n-1]", last, 1.0f);
  check(vmm.unmap(first, size), "cuMemUnmap");
  check(vmm.unmap(second, size), "cuMemUnmap");
  check(vmm.address_free(first, size), "cuMemAddressFree");
  check(vmm.address_free(second, size), "cuMemAddressFree");
  CHECK(cudaEventDestroy(filled));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFree(copy));
  return status;
}
