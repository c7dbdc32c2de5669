#include "runtime/launch.h"

#include <array>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "runtime/session/buffer_access.h"
#include "runtime/session/session.h"
#include "sanitizer/tsan/active_bridge.h"

namespace streamsan::rt {
namespace {

// A small inline list of log accesses: launches rarely declare more than a
// few, and the hot path must not allocate.
class access_list {
 public:
  explicit access_list(std::span<const declared_access> declared) {
    if (declared.size() > inline_.size()) heap_.reserve(declared.size());
    for (const auto& d : declared) push({d.view.range(), d.mode});
  }
  std::span<const access> span() const noexcept {
    return heap_.empty() ? std::span<const access>(inline_.data(), size_)
                         : std::span<const access>(heap_);
  }

 private:
  void push(const access& a) {
    if (heap_.empty() && size_ < inline_.size()) {
      inline_[size_++] = a;
      return;
    }
    if (heap_.empty()) heap_.assign(inline_.begin(), inline_.begin() + size_);
    heap_.push_back(a);
  }
  std::array<access, 8> inline_{};
  std::size_t size_ = 0;
  std::vector<access> heap_;
};

struct to_args {
  const describe& what;

  float* floats(const buffer_view& v) const {
    if (v.size() % sizeof(float) != 0) {
      throw usage_error(what() + ": " + to_string(v.alloc()) + " view of " +
                        std::to_string(v.size()) + " bytes is not a whole number of floats");
    }
    return v.as<float>();
  }
  void same_size(const buffer_view& a, const buffer_view& b) const {
    if (a.size() != b.size()) {
      throw usage_error(what() + ": sizes differ (" + std::to_string(a.size()) + " and " +
                        std::to_string(b.size()) + " bytes)");
    }
  }

  kernel_args operator()(const kernels::fill& k) const {
    return fill_args{floats(k.out), k.out.count<float>(), k.value};
  }
  kernel_args operator()(const kernels::copy& k) const {
    same_size(k.dst, k.src);
    return copy_args{floats(k.dst), floats(k.src), k.dst.count<float>()};
  }
  kernel_args operator()(const kernels::scale& k) const {
    return scale_args{floats(k.data), k.data.count<float>(), k.factor};
  }
  kernel_args operator()(const kernels::axpy& k) const {
    same_size(k.x, k.y);
    return axpy_args{k.a, floats(k.x), floats(k.y), k.y.count<float>()};
  }
  kernel_args operator()(const kernels::reduce_sum& k) const {
    if (k.out.size() < sizeof(float)) {
      throw usage_error(what() + ": reduce_sum needs room for one float in `out`");
    }
    return reduce_sum_args{floats(k.in), k.in.count<float>(), k.out.as<float>()};
  }
  kernel_args operator()(const kernels::spin& k) const {
    return spin_args{static_cast<std::uint64_t>(k.duration.count())};
  }
};

// The views a kernel really touches must be reachable from the stream's
// device (S-COPY-5).
void check_reachable(session& s, const kernels::kernel& k, int device, const describe& what) {
  std::array<declared_access, 2> storage;
  for (const auto& a : implied_accesses(k, storage)) {
    const auto& v = a.view;
    if (v.kind() == memory_kind::pageable_host) {
      throw usage_error(what() + ": a kernel cannot access pageable host memory (" +
                        to_string(v.alloc()) + ")");
    }
    if (is_device_memory(v.kind()) && v.kind() != memory_kind::managed && v.device() != device &&
        !s.device->can_access_peer(device, v.device())) {
      throw usage_error(what() + ": " + to_string(v.alloc()) + " is on device " +
                        std::to_string(v.device()) + " and device " + std::to_string(device) +
                        " has no peer access to it");
    }
  }
}

}  // namespace

void launch(stream_ref on, const kernels::kernel& k, std::span<const declared_access> accesses,
            std::string_view name) {
  auto& s = enter();
  const auto kernel_name = name.empty() ? kernels::name(k) : name;
  const auto what = [&] { return "launching " + std::string(kernel_name) + " on " + on.name(); };
  const auto args = std::visit(to_args{what}, k);
  std::lock_guard lock(s.mutex);
  auto& st = s.stream(on, what);
  check_reachable(s, k, st.device, what);
  s.check_implicit_capture(st, what);
  s.device->launch_kernel(st.target(), args);
  if (!is_none(st.capture)) {
    const access_list list(accesses);
    s.add_capture_node(st, graph_node_kind::kernel, kernel_name, list.span());
    return;
  }
  if (s.logging()) {
    const access_list list(accesses);
    s.emit(kernel_launch{st.id, s.intern(kernel_name), list.span()});
  }
}

void launch_host_func(stream_ref on, host_function fn, std::span<const declared_access> accesses,
                      std::string_view name) {
  auto& s = enter();
  const auto what = [&] { return "launching host function " + std::string(name) + " on " + on.name(); };
  if (!fn) throw usage_error(what() + ": empty function");
  std::lock_guard lock(s.mutex);
  auto& st = s.stream(on, what);
  s.check_implicit_capture(st, what);
  const access_list list(accesses);
  const bool captured = !is_none(st.capture);
  // Note [A host function is logged before it is enqueued]
  // Unlike other calls, this one is logged before the backend sees it: the
  // sim may run the function inside the backend call itself, and a
  // ThreadSanitizer bridge watching the body run must already know the
  // function's place in its stream (sanitizer/tsan/tsan_bridge.h). The
  // arguments were checked above; the backend call cannot fail on them.
  // What the body reads of ours (the wrapped function) is built before the
  // record, so that it happens before the body in TSan's eyes too.
  host_function task = [fn = std::move(fn), stream = st.id, captured] {
    const host_function_scope scope;  // S-HOSTFN-1: no API calls inside
    // A captured one runs as a graph node, which the log does not place.
    const tsan::host_function_body body(stream, !captured);
    fn();
  };
  if (!captured && s.logging()) s.emit(host_func{st.id, s.intern(name), list.span()});
  s.device->launch_host_func(st.target(), std::move(task));
  if (captured) s.add_capture_node(st, graph_node_kind::host_func, name, list.span());
}

}  // namespace streamsan::rt
