#include "runtime/cuda/kernel_library.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <variant>

namespace streamsan::rt::cuda {

namespace {

constexpr unsigned block_size = 256;
// Grid-stride loops: enough blocks to fill an H100 (132 SMs x 2048 threads)
// several times over; larger arrays loop.
constexpr std::uint64_t max_blocks = 4096;

dim3 grid_for(std::uint64_t count) {
  const std::uint64_t blocks = (count + block_size - 1) / block_size;
  return dim3(static_cast<unsigned>(std::clamp<std::uint64_t>(blocks, 1, max_blocks)));
}

__device__ std::uint64_t first_index() {
  return static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ std::uint64_t grid_stride() {
  return static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
}

__global__ void fill_kernel(float* out, std::uint64_t count, float value) {
  for (std::uint64_t i = first_index(); i < count; i += grid_stride()) out[i] = value;
}

__global__ void copy_kernel(float* dst, const float* src, std::uint64_t count) {
  for (std::uint64_t i = first_index(); i < count; i += grid_stride()) dst[i] = src[i];
}

__global__ void scale_kernel(float* data, std::uint64_t count, float factor) {
  for (std::uint64_t i = first_index(); i < count; i += grid_stride()) data[i] *= factor;
}

__global__ void axpy_kernel(float a, const float* x, float* y, std::uint64_t count) {
  for (std::uint64_t i = first_index(); i < count; i += grid_stride()) y[i] = a * x[i] + y[i];
}

// One block reduces everything and one thread writes the result: a single
// launch with a single writer of `out` (the contract of reduce_sum), with no
// atomics and no scratch memory, so that the kernel is one operation on the
// stream, exactly as on sim. Tests and scenarios reduce small arrays; the
// bandwidth of one SM is ample for them.
constexpr unsigned reduce_block_size = 1024;

__global__ void reduce_sum_kernel(const float* in, std::uint64_t count, float* out) {
  __shared__ float partial[reduce_block_size];
  float sum = 0;
  for (std::uint64_t i = threadIdx.x; i < count; i += blockDim.x) sum += in[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = partial[0];
}

__device__ std::uint64_t global_nanoseconds() {
  std::uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

// Note [Spin is bounded twice]
// The spin kernel waits on %globaltimer (nanoseconds). Should that timer not
// advance (it is driver-maintained, and some virtualized setups update it
// coarsely), the SM clock bounds the wait: no SM of a supported GPU runs
// above 4 GHz, so 4 cycles per requested nanosecond is at least the requested
// time and never an endless loop.
__global__ void spin_kernel(std::uint64_t nanoseconds) {
  const std::uint64_t start = global_nanoseconds();
  const long long start_cycles = clock64();
  const long long cycle_bound = static_cast<long long>(nanoseconds) * 4;
  while (global_nanoseconds() - start < nanoseconds && clock64() - start_cycles < cycle_bound) {
  }
}

template <class... Params>
cudaError_t launch(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream,
                   std::type_identity_t<Params>... params) noexcept {
  void* argv[] = {&params...};
  return cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, argv, 0, stream);
}

}  // namespace

cudaError_t launch_library_kernel(cudaStream_t stream, const kernel_args& args) noexcept {
  switch (kind_of(args)) {
    case kernel_kind::fill: {
      const auto& a = *std::get_if<fill_args>(&args);
      return launch(fill_kernel, grid_for(a.count), dim3(block_size), stream, a.out, a.count,
                    a.value);
    }
    case kernel_kind::copy: {
      const auto& a = *std::get_if<copy_args>(&args);
      return launch(copy_kernel, grid_for(a.count), dim3(block_size), stream, a.dst, a.src,
                    a.count);
    }
    case kernel_kind::scale: {
      const auto& a = *std::get_if<scale_args>(&args);
      return launch(scale_kernel, grid_for(a.count), dim3(block_size), stream, a.data, a.count,
                    a.factor);
    }
    case kernel_kind::axpy: {
      const auto& a = *std::get_if<axpy_args>(&args);
      return launch(axpy_kernel, grid_for(a.count), dim3(block_size), stream, a.a, a.x, a.y,
                    a.count);
    }
    case kernel_kind::reduce_sum: {
      const auto& a = *std::get_if<reduce_sum_args>(&args);
      return launch(reduce_sum_kernel, dim3(1), dim3(reduce_block_size), stream, a.in, a.count,
                    a.out);
    }
    case kernel_kind::spin: {
      const auto& a = *std::get_if<spin_args>(&args);
      return launch(spin_kernel, dim3(1), dim3(1), stream, a.nanoseconds);
    }
  }
  return cudaErrorInvalidValue;
}

}  // namespace streamsan::rt::cuda
