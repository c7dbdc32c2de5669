// Included before each cuCollections example (build-cccl-samples.sh): the
// stored cuCollections names thrust::identity, which CCCL 3.0 (CUDA 13.0's)
// removed. This is the same function object: the argument, unchanged.
#pragma once
#include <thrust/version.h>

namespace thrust {
template <class T = void>
struct identity {
  __host__ __device__ constexpr const T& operator()(const T& x) const noexcept { return x; }
};
template <>
struct identity<void> {
  template <class U>
  __host__ __device__ constexpr U&& operator()(U&& x) const noexcept {
    return static_cast<U&&>(x);
  }
};
}  // namespace thrust
