// A sampling profiler to preload (LD_PRELOAD=libpc_sampler.so) into a
// program on the GPU machine, where neither perf nor gdb is installed: it
// tells where a sanitized process spends its CPU time (our library, the
// CUDA driver, the capture API's library) without changing the program.
//
// Every PCSAMPLE_US microseconds of process CPU time (default 1000; the
// kernel rounds to its tick) a SIGPROF interrupts whichever thread runs; the
// handler stores the interrupted PC, whether the thread is the main thread,
// and with PCSAMPLE_DEPTH > 0 that many return addresses from backtrace()
// (glibc's unwinder: not async-signal-safe in general, so off by default).
// With PCSAMPLE_ON_SIGNAL=1 sampling starts at the first SIGUSR1 the
// process receives and stops at SIGUSR2, so that a program can have only
// its timed region sampled (bench/torch/mlp_bench.py sends them around its
// timed loop when the variable is set), not its start-up.
// With PCSAMPLE_ON_TERM=1 a SIGTERM first takes a snapshot, one sample of
// every thread of the process wherever it is (a SIGPROF sent to each with
// tgkill: a thread blocked in a lock or a syscall, which a CPU-time sample
// never sees, answers too), then writes the samples and ends the process
// the way SIGTERM would (the handler is not async-signal-safe: for a
// program that hangs, where `timeout` is the only way out, which is when a
// profile and the stacks of the stuck threads are wanted most).
// With PCSAMPLE_ON_FAULT=1 a SIGSEGV or SIGBUS writes the faulting
// thread's stack (the faulting instruction first) as a snapshot and the
// samples, then lets the fault end the process as it would have: how a
// crash inside a sanitized program is read on a machine without gdb (a
// handler installed later, such as streamsan's report on a fatal signal,
// runs first and hands the fault on).
// With PCSAMPLE_CLOCK=wall the timer counts wall-clock time instead and
// interrupts the main thread only, wherever it is: blocked in a lock, a
// wait or a syscall too, which a CPU-time sample never sees (where a
// program thread that mostly waits spends its time). With
// PCSAMPLE_CLOCK=wall-all the main thread's tick also interrupts every
// other thread of the process (a SIGPROF each, sent with tgkill), so each
// thread's samples are its wall-clock time: where a thread the main thread
// waits for (autograd's, say) spends it; those samples are written as
// "tid:N" and the threads' names as "# thread N NAME" lines.
// At exit each address is written as "object+offset" (dladdr) to
// $PCSAMPLE_DIR/pcs.<pid>, one sample a line; bench/profile/fold.py
// symbolizes and sums them where the binaries have their symbols.
#include <dlfcn.h>
#include <fcntl.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string_view>

namespace {

constexpr int max_depth = 40;
constexpr std::size_t max_samples = 400000;

struct sample {
  void* pc;
  int main_thread;
  int tid;
  int snapshot_tid;  // 0: a CPU-time sample; else the thread a snapshot caught
  int depth;
  void* frames[max_depth];
};

sample* samples = nullptr;
std::atomic<std::size_t> taken{0};
int depth = 0;
pid_t main_pid = 0;
timer_t timer{};
std::atomic<bool> snapshot{false};
bool wall_all = false;

// Calls f(tid) for every thread of the process. Async-signal-safe (open,
// getdents64 and close are system calls), so the signal handler uses it too.
template <class F>
void for_each_thread(F&& f) {
  const int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  alignas(8) char buffer[4096];
  for (;;) {
    const long n = syscall(SYS_getdents64, fd, buffer, sizeof buffer);
    if (n <= 0) break;
    for (long at = 0; at < n;) {
      // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
      unsigned short reclen;
      std::memcpy(&reclen, buffer + at + 16, sizeof reclen);
      const char* name = buffer + at + 19;
      int tid = 0;
      for (const char* c = name; *c >= '0' && *c <= '9'; ++c) tid = tid * 10 + (*c - '0');
      if (tid > 0) f(tid);  // "." and ".." give 0
      at += reclen;
    }
  }
  close(fd);
}

void interrupt_other_threads() {
  for_each_thread([](int tid) {
    if (tid != main_pid) syscall(SYS_tgkill, main_pid, tid, SIGPROF);
  });
}

void* interrupted_pc(void* context) {
#if defined(__x86_64__)
  return reinterpret_cast<void*>(static_cast<const ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]);
#else
  (void)context;
  return nullptr;
#endif
}

void on_sigprof(int, siginfo_t*, void* context) {
  const std::size_t i = taken.fetch_add(1, std::memory_order_relaxed);
  if (i >= max_samples) return;
  sample& s = samples[i];
  s.pc = interrupted_pc(context);
  const auto tid = static_cast<pid_t>(syscall(SYS_gettid));
  s.main_thread = tid == main_pid;
  s.tid = tid;
  const bool snap = snapshot.load(std::memory_order_relaxed);
  s.snapshot_tid = snap ? tid : 0;
  s.depth = snap ? backtrace(s.frames, max_depth) : depth > 0 ? backtrace(s.frames, depth) : 0;
  if (wall_all && !snap && s.main_thread) interrupt_other_threads();
}

void write_address(std::FILE* out, void* address) {
  Dl_info info{};
  if (address != nullptr && dladdr(address, &info) != 0 && info.dli_fname != nullptr) {
    std::fprintf(out, " %s+0x%lx", info.dli_fname,
                 static_cast<unsigned long>(reinterpret_cast<std::uintptr_t>(address) -
                                            reinterpret_cast<std::uintptr_t>(info.dli_fbase)));
  } else {
    std::fprintf(out, " ?+0x%lx", static_cast<unsigned long>(reinterpret_cast<std::uintptr_t>(address)));
  }
}

__attribute__((destructor)) void finish() {
  if (samples == nullptr || getpid() != main_pid) return;
  timer_delete(timer);
  const char* dir = std::getenv("PCSAMPLE_DIR");
  char path[512];
  std::snprintf(path, sizeof path, "%s/pcs.%d", dir != nullptr ? dir : ".", static_cast<int>(main_pid));
  std::FILE* out = std::fopen(path, "w");
  if (out == nullptr) return;
  const std::size_t n = std::min(taken.load(), max_samples);
  std::fprintf(out, "# samples %zu taken %zu\n", n, taken.load());
  for_each_thread([out](int tid) {
    char comm_path[64], name[64] = "";
    std::snprintf(comm_path, sizeof comm_path, "/proc/self/task/%d/comm", tid);
    if (std::FILE* comm = std::fopen(comm_path, "r")) {
      if (std::fgets(name, sizeof name, comm) == nullptr) name[0] = 0;
      std::fclose(comm);
      name[std::strcspn(name, "\n")] = 0;
      std::fprintf(out, "# thread %d %s\n", tid, name);
    }
  });
  for (std::size_t i = 0; i < n; ++i) {
    if (samples[i].snapshot_tid != 0) {
      std::fprintf(out, "snap:%d", samples[i].snapshot_tid);
    } else if (samples[i].main_thread) {
      std::fputs("main", out);
    } else if (wall_all) {
      std::fprintf(out, "tid:%d", samples[i].tid);
    } else {
      std::fputs("other", out);
    }
    write_address(out, samples[i].pc);
    // backtrace's first frames are this handler and the signal trampoline.
    for (int f = 2; f < samples[i].depth; ++f) write_address(out, samples[i].frames[f]);
    std::fputc('\n', out);
  }
  std::fclose(out);
}

// One sample of every thread: the CPU-time timer stops, each thread gets a
// SIGPROF of its own, and the handler waits (at most half a second) for
// the answers. A thread that blocks SIGPROF does not answer.
void take_snapshot() {
  if (samples == nullptr) return;
  const itimerspec off{};
  timer_settime(timer, 0, &off, nullptr);
  snapshot.store(true);
  const std::size_t before = taken.load();
  std::size_t sent = 0;
  for_each_thread([&sent](int tid) {
    if (syscall(SYS_tgkill, main_pid, tid, SIGPROF) == 0) ++sent;
  });
  const timespec tick{0, 5 * 1000 * 1000};
  for (int waited = 0; waited < 100 && taken.load() < before + sent; ++waited) nanosleep(&tick, nullptr);
}

void on_fault(int sig, siginfo_t*, void* context) {
  const std::size_t i = taken.fetch_add(1, std::memory_order_relaxed);
  if (samples != nullptr && i < max_samples) {
    sample& s = samples[i];
    s.pc = interrupted_pc(context);
    s.snapshot_tid = static_cast<int>(syscall(SYS_gettid));
    s.main_thread = s.snapshot_tid == main_pid;
    // Frames 0 and 1 (this handler, the trampoline) are skipped when
    // written; the faulting PC stands first.
    s.depth = backtrace(s.frames, max_depth);
  }
  finish();
  signal(sig, SIG_DFL);  // the instruction faults again and ends the process
}

void on_sigterm(int) {
  take_snapshot();
  finish();
  signal(SIGTERM, SIG_DFL);
  raise(SIGTERM);
}

itimerspec interval() {
  const char* us_text = std::getenv("PCSAMPLE_US");
  const long us = us_text != nullptr ? std::atol(us_text) : 1000;
  itimerspec spec{};
  spec.it_interval.tv_sec = us / 1000000;
  spec.it_interval.tv_nsec = (us % 1000000) * 1000;
  spec.it_value = spec.it_interval;
  return spec;
}

itimerspec armed{};

// SIGUSR1 arms the timer, SIGUSR2 disarms it (timer_settime is
// async-signal-safe).
void on_sigusr(int signal) {
  const itimerspec off{};
  timer_settime(timer, 0, signal == SIGUSR1 ? &armed : &off, nullptr);
}

__attribute__((constructor)) void start() {
  main_pid = getpid();
  if (const char* d = std::getenv("PCSAMPLE_DEPTH")) depth = std::min(std::atoi(d) + 2, max_depth);
  if (depth > 0) {
    void* warm[2];
    backtrace(warm, 2);  // loads the unwinder outside the handler
  }
  samples = static_cast<sample*>(std::calloc(max_samples, sizeof(sample)));
  if (samples == nullptr) return;
  struct sigaction sa {};
  sa.sa_sigaction = on_sigprof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, nullptr);
  sigevent ev{};
  ev.sigev_signo = SIGPROF;
  const char* clock_text = std::getenv("PCSAMPLE_CLOCK");
  wall_all = clock_text != nullptr && std::string_view(clock_text) == "wall-all";
  const bool wall = wall_all || (clock_text != nullptr && std::string_view(clock_text) == "wall");
  if (wall) {
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev._sigev_un._tid = main_pid;  // the main thread's id is the process's
  } else {
    ev.sigev_notify = SIGEV_SIGNAL;
  }
  if (timer_create(wall ? CLOCK_MONOTONIC : CLOCK_PROCESS_CPUTIME_ID, &ev, &timer) != 0) return;
  armed = interval();
  const char* on_term = std::getenv("PCSAMPLE_ON_TERM");
  if (on_term != nullptr && *on_term == '1') {
    struct sigaction st {};
    st.sa_handler = on_sigterm;
    sigaction(SIGTERM, &st, nullptr);
  }
  const char* on_fault_text = std::getenv("PCSAMPLE_ON_FAULT");
  if (on_fault_text != nullptr && *on_fault_text == '1') {
    struct sigaction sf {};
    sf.sa_sigaction = on_fault;
    sf.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sf, nullptr);
    sigaction(SIGBUS, &sf, nullptr);
  }
  const char* on_signal = std::getenv("PCSAMPLE_ON_SIGNAL");
  if (on_signal != nullptr && *on_signal == '1') {
    struct sigaction su {};
    su.sa_handler = on_sigusr;
    su.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &su, nullptr);
    sigaction(SIGUSR2, &su, nullptr);
    return;
  }
  timer_settime(timer, 0, &armed, nullptr);
}

}  // namespace
