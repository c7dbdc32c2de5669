#include "runtime/copy.h"

#include <array>
#include <mutex>
#include <string>

#include "runtime/session/buffer_access.h"
#include "runtime/session/session.h"
#include "sanitizer/engine/diagnostic.h"  // to_string(memory_kind)
#include "sanitizer/log/copy_synchronization.h"

namespace streamsan::rt {
namespace {

std::string describe_view(const buffer_view& v) {
  return to_string(v.alloc()) + " (" + std::string(to_string(v.kind())) + ")";
}

// Does the copy make the host wait (S-COPY-1, S-COPY-2)? Every synchronous
// copy but device to device (a pageable upload waits for the stream before
// it stages the source), and the asynchronous host-to-host copy.
bool copy_waits(const buffer_view& dst, const buffer_view& src, bool async) {
  return copy_stages_source(async, src.kind(), dst.kind()) ||
         copy_completes_before_return(async, src.kind(), dst.kind());
}

void copy(const buffer_view& dst, const buffer_view& src, const stream_ref* on) {
  auto& s = enter();
  const bool async = on != nullptr;
  const auto what = [&] {
    std::string text = std::string(async ? "memcpy_async" : "memcpy") + " " + describe_view(src) +
                       " -> " + describe_view(dst);
    if (async) text += " on " + on->name();
    return text;
  };
  if (dst.size() != src.size()) {
    throw usage_error(what() + ": sizes differ (" + std::to_string(src.size()) + " -> " +
                      std::to_string(dst.size()) + " bytes)");
  }
  std::lock_guard lock(s.mutex);
  auto& st = async ? s.stream(*on, what) : s.default_stream(s.thread().device);
  s.check_implicit_capture(st, what);
  if (copy_waits(dst, src, async)) {
    if (!async) s.forbid_during_capture(st, what);
    s.check_sync(what);
  }
  copy_request request{dst.data(), src.data(), dst.size(), dst.kind(), src.kind(),
                       dst.device(), src.device(), async, st.target()};
  // Note [One mutex orders the runtime]: a copy enqueues work and may then
  // wait; it keeps the mutex so that its place in stream order is its place
  // in the log.
  s.device->memcpy(request);
  const std::array<access, 2> accesses{access{src.range(), access_mode::read},
                                       access{dst.range(), access_mode::write}};
  if (!is_none(st.capture)) {
    s.add_capture_node(st, graph_node_kind::memcpy, "memcpy", accesses);
    return;
  }
  if (s.logging()) {
    s.emit(memcpy_record{st.id, src.range(), dst.range(), src.kind(), dst.kind(), async});
  }
}

void set(const buffer_view& dst, int value, const stream_ref* on) {
  auto& s = enter();
  const bool async = on != nullptr;
  const auto what = [&] {
    std::string text = std::string(async ? "memset_async " : "memset ") + describe_view(dst);
    if (async) text += " on " + on->name();
    return text;
  };
  std::lock_guard lock(s.mutex);
  auto& st = async ? s.stream(*on, what) : s.default_stream(s.thread().device);
  s.check_implicit_capture(st, what);
  if (memset_completes_before_return(async, dst.kind())) {  // S-COPY-4
    s.forbid_during_capture(st, what);
    s.check_sync(what);
  }
  s.device->memset(memset_request{dst.data(), value, dst.size(), dst.kind(), async, st.target()});
  const access a{dst.range(), access_mode::write};
  if (!is_none(st.capture)) {
    s.add_capture_node(st, graph_node_kind::memset, "memset", std::span<const access>(&a, 1));
    return;
  }
  if (s.logging()) s.emit(memset_record{st.id, dst.range(), dst.kind(), async});
}

}  // namespace

void memcpy(const buffer_view& dst, const buffer_view& src) { copy(dst, src, nullptr); }

void memcpy_async(const buffer_view& dst, const buffer_view& src, stream_ref s) {
  copy(dst, src, &s);
}

void memset(const buffer_view& dst, int value) { set(dst, value, nullptr); }

void memset_async(const buffer_view& dst, int value, stream_ref s) { set(dst, value, &s); }

}  // namespace streamsan::rt
