// Load test of the runtime in sanitizer mode (issue #12, item 4): many host
// threads, each with many streams and many launches, passing events and
// buffers to each other. Run it under STREAMSAN=1 (the live engine); it
// counts every record of the access log with a sink of its own and checks
//   - no deadlock (it ends; meson's timeout catches a hang),
//   - no lost or duplicated record: each kind's count equals the number of
//     calls the program made, and sequence numbers are 1, 2, 3, ... without
//     a gap or a repeat,
//   - no false report: the hand-offs are correctly ordered, so the engine
//     must report nothing (with --omit-wait it must report the races),
//   - the values: every consumer sees what its producer wrote,
//   - memory: the peak resident set stays under --max-rss-mb.
//
//   STREAMSAN=1 STREAMSAN_BACKEND=sim runtime_stress --threads 32 --streams 64 --launches 10000
//
// Note [The hand-off ring]
// Thread t sends message k to thread t+1 through slot k % slots of its ring
// of device buffers: it fills the slot on its first stream, records the
// slot's `ready` event there and queues (slot, value). Thread t+1 makes one
// of its streams wait for `ready`, copies the slot into a buffer of its
// own, records the slot's `consumed` event and queues it back. Before
// thread t fills the slot again it waits (on the device) for `consumed`,
// so neither the copy nor the next fill races. Every thread sends message
// k before it receives message k, and waits for `consumed` of message
// k - slots only, which its neighbour returned before, so the ring cannot
// deadlock. Each event is recorded again only after the other thread has
// waited for its previous record (the queues order that).
#include <sys/resource.h>

#include <array>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "runtime/api.h"
#include "sanitizer/log/record.h"
#include "sanitizer/log/record_names.h"
#include "tests/load/channel.h"

namespace rt = streamsan::rt;
using streamsan::load::channel;
using streamsan::record;

namespace {

struct stress_options {
  unsigned threads = 8;
  unsigned streams = 8;
  unsigned launches = 200;       // per stream
  unsigned handoff_every = 10;   // rounds between two messages
  unsigned sync_every = 50;      // rounds between two synchronizations
  unsigned slots = 4;            // ring slots per thread
  unsigned max_rss_mb = 0;       // 0: no bound
  bool omit_wait = false;        // the consumer forgets to wait: races
};

struct message {
  unsigned slot = 0;
  float value = 0;
};

// What the program did, counted by the program.
struct call_counts {
  std::atomic<std::uint64_t> launches{0};
  std::atomic<std::uint64_t> event_records{0};
  std::atomic<std::uint64_t> event_waits{0};
  std::atomic<std::uint64_t> stream_synchronizes{0};
  std::atomic<std::uint64_t> wrong_values{0};
};

// What the access log got, counted by a sink (the recorder serializes
// on_record calls: Note [One lock orders the log]).
class counting_sink final : public streamsan::record_sink {
 public:
  void on_record(const record& r) override {
    ++by_kind_[r.body.index()];
    if (r.header.seq != last_seq_ + 1) ++sequence_breaks_;
    last_seq_ = r.header.seq;
  }
  std::uint64_t count(std::size_t kind) const { return by_kind_[kind]; }
  std::uint64_t sequence_breaks() const { return sequence_breaks_; }

 private:
  std::array<std::uint64_t, streamsan::record_kind_count> by_kind_{};
  std::uint64_t last_seq_ = 0;
  std::uint64_t sequence_breaks_ = 0;
};

template <class Record>
constexpr std::size_t kind_index() {
  return streamsan::record_body(Record{}).index();
}

constexpr std::uint64_t floats_per_buffer = 16;
constexpr std::uint64_t buffer_bytes = floats_per_buffer * sizeof(float);

struct ring {
  std::vector<rt::buffer> slots;
  std::vector<rt::event> ready;
  std::vector<rt::event> consumed;
};

class stress_run {
 public:
  explicit stress_run(const stress_options& o) : o_(o), rings_(o.threads), inbox_(o.threads),
                                                 returns_(o.threads) {
    for (auto& r : rings_) {
      for (unsigned s = 0; s < o_.slots; ++s) {
        r.slots.push_back(rt::allocate_device(buffer_bytes, -1, "slot"));
        r.ready.emplace_back();
        r.consumed.emplace_back();
      }
    }
  }

  void run() {
    std::vector<std::thread> workers;
    for (unsigned t = 0; t < o_.threads; ++t) workers.emplace_back([this, t] { worker(t); });
    for (auto& w : workers) w.join();
  }

  const call_counts& counts() const { return counts_; }
  std::uint64_t messages_per_thread() const { return o_.launches / o_.handoff_every; }

 private:
  void worker(unsigned t) {
    const unsigned next = (t + 1) % o_.threads;
    const unsigned previous = (t + o_.threads - 1) % o_.threads;
    std::vector<rt::stream> streams;
    std::vector<rt::buffer> buffers;
    for (unsigned s = 0; s < o_.streams; ++s) {
      streams.emplace_back();
      buffers.push_back(rt::allocate_device(buffer_bytes, -1, "work"));
    }
    auto inbox = rt::allocate_device(buffer_bytes, -1, "inbox");
    auto check = rt::allocate_pinned_host(buffer_bytes, "check");
    ring& mine = rings_[t];
    const ring& theirs = rings_[previous];
    std::uint64_t sent = 0;

    for (unsigned round = 1; round <= o_.launches; ++round) {
      for (unsigned s = 0; s < o_.streams; ++s) {
        rt::launch(streams[s], rt::kernels::scale{buffers[s], 1.0f});
        ++counts_.launches;
      }
      if (round % o_.handoff_every == 0) {
        // Send (Note [The hand-off ring]).
        const unsigned slot = static_cast<unsigned>(sent % o_.slots);
        const float value = static_cast<float>(t * 1000000 + sent);
        if (sent >= o_.slots) {
          const rt::event_ref consumed = returns_[t].pop();
          consumed.wait(streams[0]);
          ++counts_.event_waits;
        }
        rt::launch(streams[0], rt::kernels::fill{mine.slots[slot], value});
        mine.ready[slot].record(streams[0]);
        counts_.launches += 1;
        counts_.event_records += 1;
        inbox_[next].push({slot, value});
        ++sent;
        // Receive on the stream this round's work went to last.
        const message m = inbox_[t].pop();
        rt::stream& consumer = streams[round % o_.streams];
        if (!o_.omit_wait) {
          theirs.ready[m.slot].wait(consumer);
          ++counts_.event_waits;
        }
        rt::launch(consumer, rt::kernels::copy{inbox, theirs.slots[m.slot]});
        theirs.consumed[m.slot].record(consumer);
        counts_.launches += 1;
        counts_.event_records += 1;
        returns_[previous].push(theirs.consumed[m.slot].ref());
        if (!o_.omit_wait) verify(consumer, inbox, check, m.value);
      }
      if (round % o_.sync_every == 0) {
        for (auto& s : streams) {
          s.synchronize();
          ++counts_.stream_synchronizes;
        }
      }
    }
    // Drain what the neighbour returned, so that every event is waited once.
    for (std::uint64_t k = sent >= o_.slots ? sent - o_.slots : 0; k < sent; ++k) {
      returns_[t].pop().wait(streams[0]);
      ++counts_.event_waits;
    }
    for (auto& s : streams) {
      s.synchronize();
      ++counts_.stream_synchronizes;
    }
  }

  // The copy read what the producer wrote: the hand-off really ordered them.
  void verify(rt::stream& consumer, rt::buffer& inbox, rt::buffer& check, float expected) {
    rt::memcpy_async(check, inbox, consumer);
    consumer.synchronize();
    ++counts_.stream_synchronizes;
    if (rt::host_read_at<float>(check, 0) != expected) ++counts_.wrong_values;
  }

  const stress_options o_;
  std::vector<ring> rings_;
  std::vector<channel<message>> inbox_;
  std::vector<channel<rt::event_ref>> returns_;
  call_counts counts_;
};

unsigned parse_unsigned(std::string_view option, std::string_view text) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) {
    throw std::invalid_argument(std::string(option) + ": expected a non-negative integer, got '" +
                                std::string(text) + "'");
  }
  return value;
}

stress_options parse_arguments(int argc, char** argv) {
  stress_options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--omit-wait") {
      o.omit_wait = true;
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument(std::string(arg) + ": missing value");
    const unsigned value = parse_unsigned(arg, argv[++i]);
    if (arg == "--threads") o.threads = value;
    else if (arg == "--streams") o.streams = value;
    else if (arg == "--launches") o.launches = value;
    else if (arg == "--handoff-every") o.handoff_every = value;
    else if (arg == "--sync-every") o.sync_every = value;
    else if (arg == "--slots") o.slots = value;
    else if (arg == "--max-rss-mb") o.max_rss_mb = value;
    else throw std::invalid_argument("unknown option " + std::string(arg));
  }
  if (o.threads < 2 || o.streams < 1 || o.slots < 1 || o.handoff_every < 1 || o.sync_every < 1) {
    throw std::invalid_argument("need --threads >= 2 and --streams, --slots, --handoff-every, "
                                "--sync-every >= 1");
  }
  return o;
}

std::uint64_t peak_rss_mb() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::uint64_t>(usage.ru_maxrss) / 1024;  // KiB on Linux
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool sanitizer_build = true;  // shadow memory: RSS says nothing about us
#else
constexpr bool sanitizer_build = false;
#endif

int run(const stress_options& o) {
  if (!rt::current_options().sanitize) {  // starts the runtime from the environment
    std::cerr << "runtime_stress: run it with STREAMSAN=1 (sanitizer mode)\n";
    return 2;
  }
  counting_sink sink;
  rt::add_log_sink(sink);
  call_counts counts_copy;
  std::uint64_t diagnostics = 0;
  std::uint64_t messages = 0;
  {
    stress_run stress(o);
    stress.run();
    messages = stress.messages_per_thread() * o.threads;
    diagnostics = rt::sanitizer_diagnostics().size();
    const auto& c = stress.counts();
    counts_copy.launches = c.launches.load();
    counts_copy.event_records = c.event_records.load();
    counts_copy.event_waits = c.event_waits.load();
    counts_copy.stream_synchronizes = c.stream_synchronizes.load();
    counts_copy.wrong_values = c.wrong_values.load();
  }
  rt::remove_log_sink(sink);

  bool ok = true;
  const auto compare = [&](std::string_view what, std::uint64_t logged, std::uint64_t made) {
    std::cout << "  " << what << ": " << logged << " logged, " << made << " made\n";
    if (logged != made) ok = false;
  };
  std::cout << "runtime_stress: " << o.threads << " threads x " << o.streams << " streams x "
            << o.launches << " launches, " << messages << " hand-offs"
            << (o.omit_wait ? " (consumers do not wait)" : "") << "\n";
  compare("kernel_launch", sink.count(kind_index<streamsan::kernel_launch>()),
          counts_copy.launches);
  compare("event_record", sink.count(kind_index<streamsan::event_record>()),
          counts_copy.event_records);
  compare("event_wait", sink.count(kind_index<streamsan::event_wait>()), counts_copy.event_waits);
  compare("stream_synchronize", sink.count(kind_index<streamsan::stream_synchronize>()),
          counts_copy.stream_synchronizes);
  std::cout << "  sequence numbers: " << sink.sequence_breaks() << " gaps or repeats\n";
  if (sink.sequence_breaks() != 0) ok = false;
  std::cout << "  wrong values seen by consumers: " << counts_copy.wrong_values << "\n";
  if (counts_copy.wrong_values != 0) ok = false;
  std::cout << "  diagnostics: " << diagnostics << "\n";
  if (o.omit_wait ? diagnostics == 0 : diagnostics != 0) ok = false;
  const auto rss = peak_rss_mb();
  std::cout << "  peak RSS: " << rss << " MB";
  if (o.max_rss_mb != 0 && !sanitizer_build) {
    std::cout << " (bound " << o.max_rss_mb << " MB)";
    if (rss > o.max_rss_mb) ok = false;
  }
  std::cout << "\nruntime_stress: " << (ok ? "PASS" : "FAIL") << std::endl;
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse_arguments(argc, argv));
  } catch (const std::exception& e) {
    std::cerr << "runtime_stress: " << e.what() << '\n';
    return 2;
  }
}
