// A kernel that reads a CUDA array through a texture object (Note [Texture
// and surface objects]): s1 uploads an image into the array with
// cudaMemcpy3DAsync (the array side of a 3D descriptor), s2 sums the array
// through a texture object. The racy version lets s2 start without waiting
// for s1 (and s1 is slowed by a spinning kernel first, so the texture reads
// the array before the upload lands); the fixed version records an event
// after the upload and makes s2 wait on it. Before texture objects were
// modelled the kernel touched nothing streamsan tracked, and the 3D copy's
// array side was untracked too.
#include "example_common.h"

constexpr int width = 64, height = 64;

__global__ void sum_texture(cudaTextureObject_t image, int w, int h, float* result,
                            long long cycles) {
  spin(cycles);
  float s = 0;
  for (int i = threadIdx.x; i < w * h; i += blockDim.x) {
    s += tex2D<float>(image, (i % w) + 0.5f, (i / w) + 0.5f);
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
  for (int i = 0; i < width * height; ++i) host[i] = 7.0f;
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array;
  CHECK(cudaMallocArray(&array, &desc, width, height));

  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaTextureDesc sampling{};
  sampling.filterMode = cudaFilterModePoint;
  sampling.readMode = cudaReadModeElementType;
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
  cudaMemcpy3DParms upload{};
  upload.srcPtr = make_cudaPitchedPtr(host, row, width, height);
  upload.dstArray = array;
  upload.extent = make_cudaExtent(width, height, 1);
  upload.kind = cudaMemcpyHostToDevice;
  CHECK(cudaMemcpy3DAsync(&upload, s1));
#if STREAMSAN_FIXED
  cudaEvent_t uploaded;
  CHECK(cudaEventCreateWithFlags(&uploaded, cudaEventDisableTiming));
  CHECK(cudaEventRecord(uploaded, s1));
  CHECK(cudaStreamWaitEvent(s2, uploaded, 0));
#endif
  sum_texture<<<1, 256, 0, s2>>>(image, width, height, result, 1000);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  float sum = 0;
  CHECK(cudaMemcpy(&sum, result, sizeof(float), cudaMemcpyDeviceToHost));
  const int status = report_result("sum", sum, 7.0f * width * height);
#if STREAMSAN_FIXED
  CHECK(cudaEventDestroy(uploaded));
#endif
  CHECK(cudaDestroyTextureObject(image));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFreeArray(array));
  CHECK(cudaFree(result));
  CHECK(cudaFree(scratch));
  CHECK(cudaFreeHost(host));
  return status;
}
