#include "bench/engine/synthetic_log.h"

namespace streamsan::bench {
namespace {

constexpr int stream_count = 8;
constexpr int buffer_count = 1000;
constexpr int shared_buffers = 200;  // read by every stream
constexpr int owned_per_stream = (buffer_count - shared_buffers) / stream_count;
constexpr std::uint64_t buffer_size = 1 << 20;
constexpr int launches_per_event = 16;
// One period of the replayed loop; buffer choices repeat after it.
constexpr int period_launches = 16 * stream_count * owned_per_stream;

alloc_id buffer(int index) { return alloc_id{static_cast<std::uint32_t>(index + 1)}; }
stream_id stream(int index) { return stream_id{static_cast<std::uint32_t>(index + 1)}; }

}  // namespace

synthetic_log make_synthetic_log(bool racy) {
  synthetic_log log;
  const thread_id main_thread{1};
  std::uint64_t seq = 0;
  const auto add = [&](std::vector<record>& to, record_body body) {
    to.push_back(record{{++seq, main_thread, stack_id{}}, body});
  };
  add(log.setup, string_define{string_id{1}, "gemm"});
  add(log.setup, thread_start{});
  for (int s = 0; s < stream_count; ++s) {
    add(log.setup, stream_create{stream(s), 0, stream_flavor::non_blocking, 0});
    add(log.setup, event_create{event_id{static_cast<std::uint32_t>(s + 1)}, event_flag_none});
  }
  for (int b = 0; b < buffer_count; ++b) {
    add(log.setup, alloc_record{.alloc = buffer(b), .kind = memory_kind::device,
                                .size = buffer_size, .address = 0x7f0000000000ull + b * buffer_size});
  }

  log.accesses.reserve(static_cast<std::size_t>(period_launches) * 3);
  for (int i = 0; i < period_launches; ++i) {
    const int s = i % stream_count;
    const int k = i / stream_count;  // the launch's index on its stream
    const int owned_base = shared_buffers + s * owned_per_stream;
    const access* first = log.accesses.data() + log.accesses.size();
    log.accesses.push_back({{buffer((i * 7) % shared_buffers), 0, buffer_size}, access_mode::read});
    log.accesses.push_back(
        {{buffer(owned_base + (k * 3) % owned_per_stream), 0, buffer_size}, access_mode::read});
    if (racy) {
      log.accesses.push_back({{buffer(i % shared_buffers), 0, buffer_size}, access_mode::write});
    } else {
      log.accesses.push_back(
          {{buffer(owned_base + (k * 7 + 1) % owned_per_stream), 0, buffer_size},
           access_mode::write});
    }
    add(log.period, kernel_launch{stream(s), string_id{1}, {first, 3}});
    ++log.launches_per_period;
    if (i % launches_per_event == launches_per_event - 1) {
      const event_id e{static_cast<std::uint32_t>(s + 1)};
      add(log.period, event_record{e, stream(s)});
      add(log.period, event_wait{e, stream((s + 1) % stream_count)});
    }
  }
  return log;
}

}  // namespace streamsan::bench
