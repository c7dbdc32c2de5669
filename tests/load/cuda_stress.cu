// Load test of `streamsan run` on a GPU (issue #12, item 4): the CUDA twin of
// runtime_stress.cpp. T host threads, each with S non-blocking streams and
// L launches per stream, pass buffers to each other through events (Note
// [The hand-off ring] in runtime_stress.cpp: fill a slot, record `ready`,
// the neighbour waits for it, copies the slot, records `consumed`, which the
// producer waits for before it fills the slot again).
//
//   cuda_stress [--threads 32] [--streams 64] [--launches 10000]
//               [--handoff-every 100] [--slots 4]
//
// The program counts its own calls and prints them on one line,
//   cuda_stress: launches=N event_records=N event_waits=N wrong_values=N peak_rss_kb=N
// which check_cuda_stress.sh compares with the records of the trace that
// `streamsan run --record` wrote. Exit status 0 unless a CUDA call failed
// (2) or a consumer saw a wrong value (1).
#include "example_common.h"
#include "tests/load/channel.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using streamsan::load::channel;

namespace {

constexpr int floats_per_buffer = 32;

__global__ void touch(float* data, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) data[i] += 1.0f;
}

__global__ void copy_slot(float* dst, const float* src, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}

struct options {
  int threads = 32;
  int streams = 64;
  int launches = 10000;
  int handoff_every = 100;
  int slots = 4;
};

struct message {
  int slot;
  float value;
};

struct ring {
  std::vector<float*> slots;
  std::vector<cudaEvent_t> ready;
  std::vector<cudaEvent_t> consumed;
};

std::atomic<unsigned long long> launches{0}, event_records{0}, event_waits{0}, wrong_values{0};

void worker(const options& o, int t, std::vector<ring>& rings,
            std::vector<channel<message>>& inbox, std::vector<channel<cudaEvent_t>>& returns) {
  const int next = (t + 1) % o.threads;
  const int previous = (t + o.threads - 1) % o.threads;
  std::vector<cudaStream_t> streams(o.streams);
  std::vector<float*> buffers(o.streams);
  for (int s = 0; s < o.streams; ++s) {
    CHECK(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));
    CHECK(cudaMalloc(&buffers[s], floats_per_buffer * sizeof(float)));
    CHECK(cudaMemsetAsync(buffers[s], 0, floats_per_buffer * sizeof(float), streams[s]));
  }
  float* inbox_buffer = nullptr;
  float* check = nullptr;
  CHECK(cudaMalloc(&inbox_buffer, floats_per_buffer * sizeof(float)));
  CHECK(cudaMallocHost(&check, sizeof(float)));
  ring& mine = rings[t];
  const ring& theirs = rings[previous];
  long long sent = 0;

  for (int round = 1; round <= o.launches; ++round) {
    for (int s = 0; s < o.streams; ++s) {
      touch<<<1, 32, 0, streams[s]>>>(buffers[s], floats_per_buffer);
      ++launches;
    }
    if (round % o.handoff_every != 0) continue;
    const int slot = static_cast<int>(sent % o.slots);
    const float value = static_cast<float>(t * 100000 + sent % 100000);
    if (sent >= o.slots) {
      CHECK(cudaStreamWaitEvent(streams[0], returns[t].pop(), 0));
      ++event_waits;
    }
    fill<<<1, 32, 0, streams[0]>>>(mine.slots[slot], floats_per_buffer, value, 0);
    CHECK(cudaEventRecord(mine.ready[slot], streams[0]));
    ++launches;
    ++event_records;
    inbox[next].push({slot, value});
    ++sent;

    const message m = inbox[t].pop();
    cudaStream_t consumer = streams[round % o.streams];
    CHECK(cudaStreamWaitEvent(consumer, theirs.ready[m.slot], 0));
    ++event_waits;
    copy_slot<<<1, 32, 0, consumer>>>(inbox_buffer, theirs.slots[m.slot], floats_per_buffer);
    CHECK(cudaEventRecord(theirs.consumed[m.slot], consumer));
    ++launches;
    ++event_records;
    returns[previous].push(theirs.consumed[m.slot]);
    CHECK(cudaMemcpyAsync(check, inbox_buffer, sizeof(float), cudaMemcpyDeviceToHost, consumer));
    CHECK(cudaStreamSynchronize(consumer));
    if (*check != m.value) ++wrong_values;
  }
  for (long long k = sent >= o.slots ? sent - o.slots : 0; k < sent; ++k) {
    CHECK(cudaStreamWaitEvent(streams[0], returns[t].pop(), 0));
    ++event_waits;
  }
  for (int s = 0; s < o.streams; ++s) {
    CHECK(cudaStreamSynchronize(streams[s]));
    CHECK(cudaStreamDestroy(streams[s]));
    CHECK(cudaFree(buffers[s]));
  }
  CHECK(cudaFree(inbox_buffer));
  CHECK(cudaFreeHost(check));
}

long peak_rss_kb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

int parse_int(const char* option, const char* text) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || value < 1 || value > 1000000) {
    std::fprintf(stderr, "cuda_stress: %s: expected an integer from 1 to 1000000, got '%s'\n",
                 option, text);
    std::exit(2);
  }
  return static_cast<int>(value);
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "cuda_stress: %s: missing value\n", arg.c_str());
      return 2;
    }
    const int value = parse_int(argv[i], argv[i + 1]);
    ++i;
    if (arg == "--threads") o.threads = value;
    else if (arg == "--streams") o.streams = value;
    else if (arg == "--launches") o.launches = value;
    else if (arg == "--handoff-every") o.handoff_every = value;
    else if (arg == "--slots") o.slots = value;
    else {
      std::fprintf(stderr, "cuda_stress: unknown option %s\n", arg.c_str());
      return 2;
    }
  }
  if (o.threads < 2) {
    std::fprintf(stderr, "cuda_stress: --threads must be at least 2\n");
    return 2;
  }
  CHECK(cudaFree(nullptr));  // create the context before the threads race to
  std::vector<ring> rings(o.threads);
  for (auto& r : rings) {
    r.slots.resize(o.slots);
    r.ready.resize(o.slots);
    r.consumed.resize(o.slots);
    for (int s = 0; s < o.slots; ++s) {
      CHECK(cudaMalloc(&r.slots[s], floats_per_buffer * sizeof(float)));
      CHECK(cudaEventCreateWithFlags(&r.ready[s], cudaEventDisableTiming));
      CHECK(cudaEventCreateWithFlags(&r.consumed[s], cudaEventDisableTiming));
    }
  }
  std::vector<channel<message>> inbox(o.threads);
  std::vector<channel<cudaEvent_t>> returns(o.threads);
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t) {
    threads.emplace_back(worker, std::cref(o), t, std::ref(rings), std::ref(inbox),
                         std::ref(returns));
  }
  for (auto& t : threads) t.join();
  CHECK(cudaDeviceSynchronize());
  for (auto& r : rings) {
    for (int s = 0; s < o.slots; ++s) {
      CHECK(cudaFree(r.slots[s]));
      CHECK(cudaEventDestroy(r.ready[s]));
      CHECK(cudaEventDestroy(r.consumed[s]));
    }
  }
  std::printf("cuda_stress: threads=%d streams=%d launches_per_stream=%d handoff_every=%d\n",
              o.threads, o.streams, o.launches, o.handoff_every);
  std::printf("cuda_stress: launches=%llu event_records=%llu event_waits=%llu wrong_values=%llu "
              "peak_rss_kb=%ld\n",
              launches.load(), event_records.load(), event_waits.load(), wrong_values.load(),
              peak_rss_kb());
  return wrong_values.load() == 0 ? 0 : 1;
}
