// A mipmapped array (Note [Mipmapped arrays]) read through a texture
// object while one of its levels is uploaded: s1 uploads level 0 (a
// CUarray from cudaGetMipmappedArrayLevel) after spinning, s2 sums level 0
// through a texture object over the whole mipmapped array. The racy version
// lets s2 start without waiting for s1; the fixed version makes s2 wait on
// an event recorded after the upload. Both end by copying level 0 into a
// plain array and back to the host with synchronous array-to-array and
// from-array copies, after a device synchronize: ordered, never reported.
#include "example_common.h"

constexpr int width = 64, height = 64;

__global__ void sum_level0(cudaTextureObject_t image, int w, int h, float* result,
                           long long cycles) {
  spin(cycles);
  float s = 0;
  for (int i = threadIdx.x; i < w * h; i += blockDim.x) {
    s += tex2DLod<float>(image, (i % w) + 0.5f, (i / w) + 0.5f, 0.0f);
  }
  atomicAdd(result, s);
}

int main() {
  const size_t row = width * sizeof(float);
  float* host;
  float* scratch;
  float* result;
  CHECK(cudaMallocHost(&host, row * height));
  CHECK(cudaMalloc(&scratch, 1 << 20));
  CHECK(cudaMalloc(&result, sizeof(float)));
  for (int i = 0; i < width * height; ++i) host[i] = 3.0f;
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaMipmappedArray_t mipmap;
  CHECK(cudaMallocMipmappedArray(&mipmap, &desc, make_cudaExtent(width, height, 0), 2));
  cudaArray_t level0;
  CHECK(cudaGetMipmappedArrayLevel(&level0, mipmap, 0));

  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeMipmappedArray;
  resource.res.mipmap.mipmap = mipmap;
  cudaTextureDesc sampling{};
  sampling.filterMode = cudaFilterModePoint;
  sampling.mipmapFilterMode = cudaFilterModePoint;
  sampling.readMode = cudaReadModeElementType;
  sampling.maxMipmapLevelClamp = 1;
  cudaTextureObject_t image = 0;
  CHECK(cudaCreateTextureObject(&image, &resource, &sampling, nullptr));
  // The values the driver hands out (Note [Texture and surface objects]).
  std::printf("texture object = %#llx\n", image);

  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  // On the summing stream: a cudaMemset would run on the legacy stream,
  // which a non-blocking stream does not wait for (S-DEFAULT-2).
  CHECK(cudaMemsetAsync(result, 0, sizeof(float), s2));
  fill<<<64, 256, 0, s1>>>(scratch, (1 << 20) / sizeof(float), 1.0f, 20000000);
  CHECK(cudaMemcpy2DToArrayAsync(level0, 0, 0, host, row, row, height, cudaMemcpyHostToDevice,
                                 s1));
#if STREAMSAN_FIXED
  cudaEvent_t uploaded;
  CHECK(cudaEventCreateWithFlags(&uploaded, cudaEventDisableTiming));
  CHECK(cudaEventRecord(uploaded, s1));
  CHECK(cudaStreamWaitEvent(s2, uploaded, 0));
#endif
  sum_level0<<<1, 256, 0, s2>>>(image, width, height, result, 1000);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  float sum = 0;
  CHECK(cudaMemcpy(&sum, result, sizeof(float), cudaMemcpyDeviceToHost));
  int status = report_result("sum", sum, 3.0f * width * height);
  cudaArray_t copy;
  CHECK(cudaMallocArray(&copy, &desc, width, height));
  CHECK(cudaMemcpy2DArrayToArray(copy, 0, 0, level0, 0, 0, row, height));
  CHECK(cudaMemcpy2DFromArray(host, row, copy, 0, 0, row, height, cudaMemcpyDeviceToHost));
  status |= report_result("copy[0]", host[0], 3.0f);
#if STREAMSAN_FIXED
  CHECK(cudaEventDestroy(uploaded));
#endif
  CHECK(cudaDestroyTextureObject(image));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFreeArray(copy));
  CHECK(cudaFreeMipmappedArray(mipmap));
  CHECK(cudaFree(result));
  CHECK(cudaFree(scratch));
  CHECK(cudaFreeHost(host));
  return status;
}
