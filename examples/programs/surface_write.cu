// A kernel that writes a CUDA array through a surface object (Note
// [Texture and surface objects]) while another stream copies the array
// out: s1 fills the array with surf2Dwrite (after spinning, so that the
// copy really runs first natively), s2 copies the array into pinned host
// memory. The racy version lets s2 start without waiting for s1; the fixed
// version makes s2 wait on an event recorded after the kernel.
#include "example_common.h"

constexpr int width = 64, height = 64;

__global__ void fill_surface(cudaSurfaceObject_t surface, int w, int h, float value,
                             long long cycles) {
  spin(cycles);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < w * h; i += gridDim.x * blockDim.x) {
    surf2Dwrite(value, surface, (i % w) * static_cast<int>(sizeof(float)), i / w);
  }
}

int main() {
  const size_t row = width * sizeof(float);
  float* host;
  CHECK(cudaMallocHost(&host, row * height));
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array;
  CHECK(cudaMallocArray(&array, &desc, width, height, cudaArraySurfaceLoadStore));

  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaSurfaceObject_t surface = 0;
  CHECK(cudaCreateSurfaceObject(&surface, &resource));
  // The values the driver hands out (Note [Texture and surface objects]).
  std::printf("surface object = %#llx\n", surface);

  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  fill_surface<<<16, 256, 0, s1>>>(surface, width, height, 5.0f, 20000000);
  CHECK(cudaGetLastError());
#if STREAMSAN_FIXED
  cudaEvent_t written;
  CHECK(cudaEventCreateWithFlags(&written, cudaEventDisableTiming));
  CHECK(cudaEventRecord(written, s1));
  CHECK(cudaStreamWaitEvent(s2, written, 0));
#endif
  CHECK(cudaMemcpy2DFromArrayAsync(host, row, array, 0, 0, row, height, cudaMemcpyDeviceToHost,
                                   s2));
  CHECK(cudaDeviceSynchronize());

  const int status = report_result("host[0]", host[0], 5.0f);
#if STREAMSAN_FIXED
  CHECK(cudaEventDestroy(written));
#endif
  CHECK(cudaDestroySurfaceObject(surface));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFreeArray(array));
  CHECK(cudaFreeHost(host));
  return status;
}
