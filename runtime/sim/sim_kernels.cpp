#include "runtime/sim/sim_kernels.h"

#include <variant>

namespace streamsan::rt::sim {
namespace {

constexpr std::uint64_t launch_overhead_ns = 2000;

struct runner {
  void operator()(const fill_args& a) const {
    for (std::uint64_t i = 0; i < a.count; ++i) a.out[i] = a.value;
  }
  void operator()(const copy_args& a) const {
    for (std::uint64_t i = 0; i < a.count; ++i) a.dst[i] = a.src[i];
  }
  void operator()(const scale_args& a) const {
    for (std::uint64_t i = 0; i < a.count; ++i) a.data[i] *= a.factor;
  }
  void operator()(const axpy_args& a) const {
    for (std::uint64_t i = 0; i < a.count; ++i) a.y[i] = a.a * a.x[i] + a.y[i];
  }
  void operator()(const reduce_sum_args& a) const {
    float sum = 0;
    for (std::uint64_t i = 0; i < a.count; ++i) sum += a.in[i];
    *a.out = sum;
  }
  void operator()(const spin_args&) const {}
};

struct duration {
  std::uint64_t operator()(const fill_args& a) const { return launch_overhead_ns + a.count; }
  std::uint64_t operator()(const copy_args& a) const { return launch_overhead_ns + a.count; }
  std::uint64_t operator()(const scale_args& a) const { return launch_overhead_ns + a.count; }
  std::uint64_t operator()(const axpy_args& a) const { return launch_overhead_ns + a.count; }
  std::uint64_t operator()(const reduce_sum_args& a) const { return launch_overhead_ns + a.count; }
  std::uint64_t operator()(const spin_args& a) const { return a.nanoseconds; }
};

}  // namespace

void run_kernel(const kernel_args& args) { std::visit(runner{}, args); }

std::uint64_t kernel_duration_ns(const kernel_args& args) { return std::visit(duration{}, args); }

}  // namespace streamsan::rt::sim
