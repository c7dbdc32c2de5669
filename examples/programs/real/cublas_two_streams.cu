// A correct program as people write it with cuBLAS and cuRAND: two cuBLAS
// handles bound to two streams, each with a workspace of its own, a GEMM
// on each reading one shared weight matrix that cuRAND generated on a third
// stream (both wait for it through an event), an AXPY joining the results
// after an event, and the answer read back with cublasGetVector. Must run
// clean under `streamsan run`: cuBLAS's and cuRAND's own kernels, events and
// workspaces included.
#include <cublas_v2.h>
#include <curand.h>

#include <cstdio>
#include <cstdlib>

#include "../example_common.h"

#define CHECK_LIB(call, ok)                                                   \
  do {                                                                        \
    if ((call) != (ok)) {                                                     \
      std::fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #call);  \
      std::exit(2);                                                           \
    }                                                                         \
  } while (0)

int main() {
  constexpr int n = 512;
  constexpr size_t matrix = size_t{n} * n * sizeof(float);
  cudaStream_t gen, s1, s2;
  CHECK(cudaStreamCreateWithFlags(&gen, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  float *weight, *x1, *x2, *y1, *y2;
  for (float** p : {&weight, &x1, &x2, &y1, &y2}) CHECK(cudaMalloc(p, matrix));
  void *work1, *work2;
  constexpr size_t work_bytes = 4 << 20;
  CHECK(cudaMalloc(&work1, work_bytes));
  CHECK(cudaMalloc(&work2, work_bytes));

  curandGenerator_t rng;
  CHECK_LIB(curandCreateGenerator(&rng, CURAND_RNG_PSEUDO_DEFAULT), CURAND_STATUS_SUCCESS);
  CHECK_LIB(curandSetStream(rng, gen), CURAND_STATUS_SUCCESS);
  CHECK_LIB(curandGenerateUniform(rng, weight, size_t{n} * n), CURAND_STATUS_SUCCESS);
  CHECK_LIB(curandGenerateUniform(rng, x1, size_t{n} * n), CURAND_STATUS_SUCCESS);
  CHECK_LIB(curandGenerateUniform(rng, x2, size_t{n} * n), CURAND_STATUS_SUCCESS);
  cudaEvent_t generated, done2;
  CHECK(cudaEventCreateWithFlags(&generated, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&done2, cudaEventDisableTiming));
  CHECK(cudaEventRecord(generated, gen));
  CHECK(cudaStreamWaitEvent(s1, generated));
  CHECK(cudaStreamWaitEvent(s2, generated));

  cublasHandle_t h1, h2;
  CHECK_LIB(cublasCreate(&h1), CUBLAS_STATUS_SUCCESS);
  CHECK_LIB(cublasCreate(&h2), CUBLAS_STATUS_SUCCESS);
  CHECK_LIB(cublasSetStream(h1, s1), CUBLAS_STATUS_SUCCESS);
  CHECK_LIB(cublasSetStream(h2, s2), CUBLAS_STATUS_SUCCESS);
  CHECK_LIB(cublasSetWorkspace(h1, work1, work_bytes), CUBLAS_STATUS_SUCCESS);
  CHECK_LIB(cublasSetWorkspace(h2, work2, work_bytes), CUBLAS_STATUS_SUCCESS);
  const float one = 1.0f, zero = 0.0f, half = 0.5f;
  for (int i = 0; i < 4; ++i) {
    CHECK_LIB(cublasSgemm(h1, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, weight, n, x1, n, &zero, y1, n),
              CUBLAS_STATUS_SUCCESS);
    CHECK_LIB(cublasSgemm(h2, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, weight, n, x2, n, &zero, y2, n),
              CUBLAS_STATUS_SUCCESS);
  }
  CHECK(cudaEventRecord(done2, s2));
  CHECK(cudaStreamWaitEvent(s1, done2));
  CHECK_LIB(cublasSaxpy(h1, n * n, &half, y2, 1, y1, 1), CUBLAS_STATUS_SUCCESS);
  float corner[4];
  CHECK_LIB(cublasGetVectorAsync(4, sizeof(float), y1, 1, corner, 1, s1), CUBLAS_STATUS_SUCCESS);
  CHECK(cudaStreamSynchronize(s1));
  std::printf("y[0..3] = %.2f %.2f %.2f %.2f\n", corner[0], corner[1], corner[2], corner[3]);

  cublasDestroy(h1);
  cublasDestroy(h2);
  curandDestroyGenerator(rng);
  for (float* p : {weight, x1, x2, y1, y2}) CHECK(cudaFree(p));
  CHECK(cudaFree(work1));
  CHECK(cudaFree(work2));
  cudaEventDestroy(generated);
  cudaEventDestroy(done2);
  return 0;
}
