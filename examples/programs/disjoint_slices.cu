// Four streams each fill their own slice of one buffer, as cuda-samples'
// simpleStreams does (issue #8). The slices are disjoint: no race, which
// only exact footprints can tell (a guess from the pointer runs to the end
// of the allocation). In the racy version each slice but the last reaches
// one element into the next one.
#include "example_common.h"

int main() {
  constexpr int streams = 4;
  const int slice = 1 << 14;
  float* buffer;
  cudaStream_t s[streams];
  for (auto& stream : s) CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&buffer, streams * slice * sizeof(float)));
  for (int i = 0; i < streams; ++i) {
    const int overlap = (!STREAMSAN_FIXED && i + 1 < streams) ? 1 : 0;
    fill<<<16, 256, 0, s[i]>>>(buffer + i * slice, slice + overlap, static_cast<float>(i), 200000);
  }
  CHECK(cudaDeviceSynchronize());
  float last = 0;
  CHECK(cudaMemcpy(&last, buffer + streams * slice - 1, sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("last = %.0f (expected %d)\n", last, streams - 1);
  for (auto& stream : s) CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(buffer));
  return 0;
}
