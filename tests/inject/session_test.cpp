// The session over a fake driver and the fake CUPTI: the report at exit
// against callbacks in flight on other threads, and halt_on_error (issue
// #16, item 3; Note [Reports at exit]).
#include "inject/session/session.h"

#include <fcntl.h>
#include <signal.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "inject/capture/call_sites.h"
#include "inject/session/fatal_signals.h"
#include "inject/session/run_result.h"
#include "inject/session/torch_spans.h"
#include "inject/stack/fast_unwinder.h"
#include "sanitizer/log/jsonl_dump.h"
#include "sanitizer/log/trace_reader.h"
#include "tests/inject/capture_sink.h"
#include "tests/inject/fake_cupti.h"
#include "tests/inject/fake_driver.h"

namespace streamsan::injection {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr std::uintptr_t fill_kernel = 0xf111;
constexpr std::uintptr_t stream_a = 0x51, stream_b = 0x52;
constexpr std::uint64_t buffer = 0x7f0000000000;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A fresh directory per test, removed afterwards.
class scratch_dir {
 public:
  scratch_dir() {
    char pattern[] = "/tmp/streamsan-session-XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~scratch_dir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  fs::path operator/(const char* name) const { return path_ / name; }
  const fs::path& path() const noexcept { return path_; }

 private:
  fs::path path_;
};

// The program's calls, as the dispatcher hands them to the model.
class program {
 public:
  explicit program(cuda_model& model) : model_(model) {}
  void setup() {
    model_.stream_created(at_, stream_a, 0, 0);
    model_.stream_created(at_, stream_b, 0, 0);
    model_.allocated(at_, buffer, 256, memory_kind::device);
  }
  // A kernel that writes the whole buffer, declared exactly (an annotation):
  // a guessed footprint would make its races candidates, not reports.
  void fill(std::uintptr_t stream) {
    std::uint64_t dst = buffer;
    void* params[] = {&dst};
    const annotated_range whole[] = {{buffer, 256, access_mode::write}};
    model_.annotate_next_launch({stream}, whole);
    model_.kernel_launched(at_, {stream}, fill_kernel, kernel_arguments::from_pointers(params));
  }
  // Two streams write the buffer unordered: one stream-race.
  void race() {
    fill(stream_a);
    fill(stream_b);
  }
  // The same with footprints guessed from the arguments: a candidate.
  void guessed_race() {
    for (const auto stream : {stream_a, stream_b}) {
      std::uint64_t dst = buffer;
      void* params[] = {&dst};
      model_.kernel_launched(at_, {stream}, fill_kernel, kernel_arguments::from_pointers(params));
    }
  }

 private:
  cuda_model& model_;
  call_site at_{};
};

// A kernel filling `buffer` inside an operator whose spans are `spans`, with
// these interpreter frames, as the PyTorch support drives the model.
void fill_in_operator(session& s, std::span<const std::uint32_t> frames,
                      std::span<const annotated_range> spans, std::uintptr_t stream) {
  set_interpreter_frames(frames);
  s.model().op_began(spans, op_outputs::none);
  std::uint64_t dst = buffer;
  void* params[] = {&dst};
  s.model().kernel_launched(s.capture_call_site(), {stream}, fill_kernel,
                            kernel_arguments::from_pointers(params));
  s.model().op_ended({});
  set_interpreter_frames({});
}

// Holds the delivery of one armed record (the next kernel launch) until
// released: a callback in flight on another thread.
class holding_sink final : public record_sink {
 public:
  void arm() { armed_ = true; }
  void on_record(const record& r) override {
    if (!armed_ || !std::holds_alternative<kernel_launch>(r.body)) return;
    armed_ = false;
    std::unique_lock lock(mutex_);
    holding_ = true;
    changed_.notify_all();
    changed_.wait(lock, [this] { return released_; });
  }
  void wait_until_holding() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return holding_; });
  }
  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }

 private:
  std::atomic<bool> armed_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
  bool holding_ = false;
  bool released_ = false;
};

// A JSON report, a trace and a result file in `dir`.
session_config config_in(const fs::path& dir) {
  session_config c;
  c.options.log_path = (dir / "report.json").string();
  c.options.format = report_format::json;
  c.options.record = (dir / "trace.bin").string();
  c.options.stack_depth = 0;
  c.result_file = (dir / "result").string();
  // In a ThreadSanitizer build of these tests the bridge would attach to
  // the test program itself and keep the engine on its thread.
  c.tsan_bridge = false;
  return c;
}

class Session : public ::testing::Test {
 protected:
  fake_cupti::state& cupti = fake_cupti::reset();
  fake_driver driver;
  scratch_dir dir;

  void SetUp() override {
    driver.kernels[fill_kernel] = kernel_description{"_Z4fillPf", {{0, 8}}, true};
  }
  session_config config() { return config_in(dir.path()); }
  // A text report in report.txt with stacks, and no trace.
  session_config text_report_config() {
    auto c = config();
    c.options.format = report_format::text;
    c.options.log_path = (dir / "report.txt").string();
    c.options.stack_depth = 16;
    c.options.record.clear();
    return c;
  }
  run_summary result() { return read_run_summary((dir / "result").string()); }
  std::uint64_t trace_records() {
    capture_sink sink;
    return read_trace(dir / "trace.bin", sink);
  }
};

// Note [Reports at exit]: finish() waits for a record being delivered on
// another thread, and the report and the trace have that record.
TEST_F(Session, FinishWaitsForARecordInFlight) {
  session s(config(), driver);
  holding_sink holder;
  s.log().add_sink(holder);
  program p(s.model());
  p.setup();
  p.fill(stream_a);
  holder.arm();
  std::thread in_flight([&] { p.fill(stream_b); });  // the racing launch
  holder.wait_until_holding();

  std::atomic<bool> finished = false;
  std::thread at_exit([&] {
    s.finish();
    finished = true;
  });
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(finished) << "finish() read the engine and closed the trace while a record "
                            "was being delivered";
  holder.release();
  in_flight.join();
  at_exit.join();

  EXPECT_NE(read_file(dir / "report.json").find("stream-race"), std::string::npos);
  const auto r = result();
  EXPECT_EQ(r.processes_finished, 1u);
  EXPECT_EQ(r.diagnostics, 1u);
  EXPECT_NO_THROW(trace_records());  // closed after the last delivery
}

// Records made after finish() (a thread still running at exit) reach no sink.
TEST_F(Session, RecordsAfterFinishAreDropped) {
  session s(config(), driver);
  program p(s.model());
  p.setup();
  s.finish();
  const auto written = trace_records();
  p.race();
  s.finish();  // idempotent
  EXPECT_EQ(trace_records(), written);
  EXPECT_EQ(result().processes_finished, 1u);
  EXPECT_EQ(result().diagnostics, 0u);
}

// Note [Reports of several processes]: a process `streamsan run` did not
// start itself names itself and writes PATH.<pid>, never the started
// program's file.
TEST_F(Session, AnotherProcessOfTheRunWritesItsOwnNamedReport) {
  const std::string not_our_parent = std::to_string(::getppid() + 100000);
  ::setenv("STREAMSAN_RUN_PID", not_our_parent.c_str(), 1);
  {
    session s(text_report_config(), driver);
    s.finish();
  }
  ::unsetenv("STREAMSAN_RUN_PID");
  const auto own = dir.path() / ("report.txt." + std::to_string(::getpid()));
  EXPECT_FALSE(std::filesystem::exists(dir / "report.txt"));
  std::ifstream in(own);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_NE(text.find("streamsan: reported 0 warnings in process " + std::to_string(::getpid())),
            std::string::npos)
      << text;
}

// A session the PyTorch support attached to says so in the result file, so
// that `streamsan run` gives no -fsanitize=thread advice to a Python program.
TEST_F(Session, ThePyTorchSupportAttachedIsInTheResultFile) {
  for (const bool attached : {false, true}) {
    std::filesystem::remove(dir / "result");
    session s(config(), driver);
    if (attached) s.python_support_attached();
    s.finish();
    std::ifstream in(dir / "result");
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    EXPECT_NE(text.find(attached ? "host_accesses=torch" : "host_accesses=annotations"),
              std::string::npos)
        << text;
  }
}

// Finishing from one thread while others keep calling CUDA: the report is
// printed once, with no partial record.
TEST_F(Session, FinishWhileThreadsKeepRecording) {
  session s(config(), driver);
  program p(s.model());
  p.setup();
  std::atomic<bool> stop = false;
  std::atomic<int> races = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      while (!stop) {
        p.race();
        ++races;
      }
    });
  }
  while (races < 8) std::this_thread::sleep_for(1ms);
  s.finish();
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(result().processes_finished, 1u);
  EXPECT_GE(result().diagnostics, 1u);
  EXPECT_NO_THROW(trace_records());
}

// A race that needs a guessed footprint is a possible race: listed in the
// report, not counted for the exit status, and no reason to halt.
TEST_F(Session, CandidatesAreListedNotCountedAndDoNotHalt) {
  auto c = config();
  c.options.halt_on_error = true;
  session s(c, driver);
  program p(s.model());
  p.setup();
  p.guessed_race();
  EXPECT_EQ(result().processes_finished, 0u);  // still running
  s.finish();
  EXPECT_EQ(result().processes_finished, 1u);
  EXPECT_EQ(result().diagnostics, 0u);
  const auto report = read_file(dir / "report.json");
  EXPECT_NE(report.find("\"certainty\": \"candidate\""), std::string::npos) << report;
}

// The PyTorch support's view of a race (Note [Interpreter frames], Note
// [Operators narrow kernel footprints]): the operator's exact spans make it
// a report, and its stacks are the Python frames with the operator first.
TEST_F(Session, OperatorsReportWithTheirPythonFrames) {
  session s(text_report_config(), driver);
  program p(s.model());
  p.setup();
  auto& m = s.model();
  m.symbol_defined(interpreter_frame_address(1), "aten::mul_.Tensor(float32[64], float32[64])",
                   "", 0, "");
  m.symbol_defined(interpreter_frame_address(2), "train_step", "/work/train.py", 7, "");
  m.symbol_defined(interpreter_frame_address(3), "<module>", "/work/train.py", 12, "");
  const std::uint32_t frames[] = {1, 2, 3};
  const annotated_range spans[] = {{buffer, 256, access_mode::read_write}};
  for (const auto stream : {stream_a, stream_b}) fill_in_operator(s, frames, spans, stream);
  s.finish();
  EXPECT_EQ(result().diagnostics, 1u);
  const auto report = read_file(dir / "report.txt");
  EXPECT_NE(report.find("stream-race"), std::string::npos) << report;
  EXPECT_NE(report.find("#0 aten::mul_.Tensor(float32[64], float32[64])\n"), std::string::npos)
      << report;
  EXPECT_NE(report.find("#1 train_step /work/train.py:7\n"), std::string::npos) << report;
  EXPECT_NE(report.find("#2 <module> /work/train.py:12\n"), std::string::npos) << report;
  EXPECT_EQ(report.find("session_test"), std::string::npos) << "native frames shown: " << report;
  // A Python program gets torch's words in the fix.
  EXPECT_NE(report.find("wait_stream"), std::string::npos) << report;
  if (std::getenv("SHOW_REPORT")) std::fputs(report.c_str(), stderr);
}

// Two streams write column slices of `buffer` as a 4-row matrix of 64-byte
// rows, inside operators (Note [Strided views are told as runs] in
// python/streamsan_torch/op_hook.cpp): stream_a columns [0, 32) of each
// row, stream_b [b_first, 64). Told as runs, or as hulls flagged as such
// (Note [A span flagged as a hull] in inject/session/torch_entry.cpp).
void column_slices(session& s, std::uint64_t b_first, bool hulls) {
  const std::uint64_t mode = STREAMSAN_WRITE | (hulls ? span_hull : 0);
  for (const auto& [stream, first] : {std::pair{stream_a, std::uint64_t{0}}, {stream_b, b_first}}) {
    const std::uint64_t end = stream == stream_a ? 32 : 64;  // in a row
    std::vector<annotated_range> spans;
    if (hulls) {
      spans.push_back(torch_span(buffer + first, 3 * 64 + end - first, mode));
    } else {
      for (std::uint64_t row = 0; row < 4; ++row) {
        spans.push_back(torch_span(buffer + 64 * row + first, end - first, mode));
      }
    }
    s.model().op_began(spans, op_outputs::none);
    std::uint64_t dst = buffer + first;
    void* params[] = {&dst};
    s.model().kernel_launched(s.capture_call_site(), {stream}, fill_kernel,
                              kernel_arguments::from_pointers(params));
    s.model().op_ended({});
  }
  s.finish();
}

// Confirmed diagnostics, and whether the report lists a candidate.
std::pair<std::uint64_t, bool> column_slices_verdict(const session_config& config,
                                                     fake_driver& driver, const fs::path& dir,
                                                     std::uint64_t b_first, bool hulls) {
  session s(config, driver);
  program(s.model()).setup();
  column_slices(s, b_first, hulls);
  const auto report = read_file(dir / "report.json");
  return {read_run_summary((dir / "result").string()).diagnostics,
          report.find("\"certainty\": \"candidate\"") != std::string::npos};
}

TEST_F(Session, DisjointColumnSlicesToldAsRunsAreNoRace) {
  EXPECT_EQ(column_slices_verdict(config(), driver, dir.path(), 32, false), std::pair(0ul, false));
}

TEST_F(Session, ColumnSlicesSharingAColumnToldAsRunsAreARace) {
  EXPECT_EQ(column_slices_verdict(config(), driver, dir.path(), 28, false), std::pair(1ul, false));
}

// The hulls of the disjoint slices overlap: a candidate, never a report.
TEST_F(Session, OverlappingFlaggedHullsAreACandidateNotARace) {
  EXPECT_EQ(column_slices_verdict(config(), driver, dir.path(), 32, true), std::pair(0ul, true));
}

// Note [Caching allocator blocks]: a block freed without record_stream while
// another stream reads it and handed out again is reported on the blocks,
// with torch's fix.
TEST_F(Session, ABlockReusedWithoutRecordStreamIsReportedWithRecordStream) {
  session s(text_report_config(), driver);
  program p(s.model());
  p.setup();
  auto& m = s.model();
  m.symbol_defined(interpreter_frame_address(1), "aten::fill_.Scalar(float32[32])", "", 0, "");
  m.symbol_defined(interpreter_frame_address(2), "<module>", "/work/train.py", 9, "");
  const std::uint32_t frames[] = {1, 2};
  const annotated_range spans[] = {{buffer, 128, access_mode::write}};
  m.block_allocated(s.capture_call_site(), buffer, 128, 0, {stream_b});
  fill_in_operator(s, frames, spans, stream_b);
  m.block_freed(s.capture_call_site(), buffer);
  m.block_allocated(s.capture_call_site(), buffer, 128, 0, {stream_a});
  fill_in_operator(s, frames, spans, stream_a);
  s.finish();
  EXPECT_EQ(result().diagnostics, 1u);
  const auto report = read_file(dir / "report.txt");
  EXPECT_NE(report.find("stream-race (write-after-write) on alloc#3 (cached block memory, 128 "
                        "bytes)"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("Fix: tell the allocator alloc#2 is used on stream#2: "
                        "`record_stream(stream#2)` before freeing it"),
            std::string::npos)
      << report;
  if (std::getenv("SHOW_REPORT")) std::fputs(report.c_str(), stderr);
}

// Note [A block's stack is its operator's]: inside an operator a block's
// stack is the operator's interpreter frames, taken without a walk; outside
// every operator it is the native stack.
TEST_F(Session, ABlockInsideAnOperatorTakesItsFramesWithoutAnUnwind) {
  session s(text_report_config(), driver);
  const std::uint32_t frames[] = {1, 2};
  set_interpreter_frames(frames);
  const auto walks = current_thread_unwinder_stats().captures;
  const call_site inside = s.capture_block_call_site();
  EXPECT_EQ(current_thread_unwinder_stats().captures, walks);
  ASSERT_EQ(inside.frames.size(), 2u);
  EXPECT_EQ(inside.frames[0], interpreter_frame_address(1));
  EXPECT_EQ(inside.frames[1], interpreter_frame_address(2));
  set_interpreter_frames({});
  const call_site outside = s.capture_block_call_site();
  EXPECT_EQ(current_thread_unwinder_stats().captures, walks + 1);
  ASSERT_FALSE(outside.frames.empty());
  EXPECT_LT(outside.frames.front(), interpreter_frame_base);
}

// halt_on_error: a suppressed diagnostic changes nothing. It used to print
// a report, append a "finished" line and close the trace mid-run, and to
// make a finish() on another thread meanwhile return without a report.
TEST_F(Session, HaltOnErrorGoesOnPastASuppressedDiagnostic) {
  {
    std::ofstream(dir / "supp.txt") << "race:fill\n";
  }
  auto c = config();
  c.options.halt_on_error = true;
  c.options.suppressions = (dir / "supp.txt").string();
  session s(c, driver);
  program p(s.model());
  p.setup();
  p.race();
  EXPECT_FALSE(fs::exists(dir / "report.json"));
  EXPECT_EQ(result().processes_finished, 0u);
  p.fill(stream_a);  // still recorded
  s.finish();
  const auto r = result();
  EXPECT_EQ(r.processes_finished, 1u);
  EXPECT_EQ(r.diagnostics, 0u);
  capture_sink trace;
  read_trace(dir / "trace.bin", trace);
  EXPECT_EQ(trace.all<kernel_launch>().size(), 3u);
  EXPECT_NE(read_file(dir / "report.json").find("\"suppressed\": 1"), std::string::npos);
}

// halt_on_error with a finish() on another thread while the halting report
// is being printed (the report goes to a FIFO, so printing blocks until it
// is read): finish() waits, the report is printed once and the process
// ends with the error exit code.
void halt_while_finishing(const fs::path& dir) {
  fake_cupti::reset();
  fake_driver driver;
  driver.kernels[fill_kernel] = kernel_description{"_Z4fillPf", {{0, 8}}, true};
  const fs::path fifo = dir / "report.fifo";
  if (::mkfifo(fifo.c_str(), 0600) != 0) std::_Exit(10);
  session_config c;
  c.options.log_path = fifo.string();
  c.options.format = report_format::json;
  c.options.halt_on_error = true;
  c.options.stack_depth = 0;
  c.result_file = (dir / "result").string();
  auto* s = new session(c, driver);  // the process ends inside it
  program p(s->model());
  p.setup();
  std::thread halting([&] { p.race(); });  // blocks printing into the FIFO
  // Wait until it holds the recorder's lock for good: a probe that takes
  // the lock does not come back.
  for (bool held = false; !held;) {
    auto probe_done = std::make_shared<std::atomic<bool>>(false);
    std::thread([s, probe_done] {
      s->log().records_emitted();
      *probe_done = true;
    }).detach();
    std::this_thread::sleep_for(100ms);
    held = !*probe_done;
  }
  std::atomic<bool> finished = false;
  std::thread at_exit([&] {
    s->finish();
    finished = true;
  });
  std::this_thread::sleep_for(200ms);
  if (finished) std::_Exit(11);  // finish() returned without the report
  // Reading lets the halting thread print, write the result and end the
  // process (which may happen before this thread gets to run again).
  const int fd = ::open(fifo.c_str(), O_RDONLY);
  char chunk[4096];
  while (::read(fd, chunk, sizeof chunk) > 0) {
  }
  std::this_thread::sleep_for(5s);
  std::_Exit(12);
}

TEST_F(Session, HaltOnErrorWhileFinishingPrintsOnceAndEnds) {
  // The default ("fast") style forks here, so the child shares this
  // directory; this thread is the only one.
  EXPECT_EXIT(halt_while_finishing(dir.path()), ::testing::ExitedWithCode(66), "");
  // Written after the report, by the halting thread only.
  const auto r = result();
  EXPECT_EQ(r.processes_finished, 1u);
  EXPECT_EQ(r.diagnostics, 1u);
}

// Note [Reports when the program dies]: a race, then the program dies in
// one of the ways a program dies; the report, the result and the trace are
// written first, and the program still dies by its signal.
session* dying_session = nullptr;

bool dying_words() noexcept { return dying_session->finish_at_signal(); }

// Note [A second signal waits for the last words]: while the last words are
// said, another thread gets the same signal (as `timeout` and `streamsan
// run` each send one).
std::atomic<pthread_t> other_thread{};
bool words_interrupted_by_a_second_signal() noexcept {
  ::pthread_kill(other_thread.load(), SIGTERM);
  std::this_thread::sleep_for(300ms);
  return dying_words();
}

enum class death {
  segfault,
  abort,
  uncaught_exception,
  divide,
  terminated,
  interrupted,
  interrupted_at_a_terminal,
  terminated_twice
};

// A session that handles the fatal signals, with a race in its log.
void race_in_a_dying_session(const fs::path& dir, fake_driver& driver,
                             last_words_fn words = dying_words) {
  dying_session = new session(config_in(dir), driver);
  install_fatal_signal_handlers(words);
  program p(dying_session->model());
  p.setup();
  p.race();
}

// A signal sent is delivered, not raised: wait for it.
[[noreturn]] void wait_for_the_signal() {
  std::this_thread::sleep_for(5s);
  std::_Exit(12);
}

[[noreturn]] void race_then_die(const fs::path& dir, death how) {
  // As a program started from a shell has them (a test runner may ignore
  // SIGINT, and ignoring is inherited).
  ::signal(SIGTERM, SIG_DFL);
  ::signal(SIGINT, SIG_DFL);
  fake_driver driver;
  if (how == death::terminated_twice) {
    std::thread([] {
      other_thread = ::pthread_self();
      std::this_thread::sleep_for(10s);
    }).detach();
    while (other_thread.load() == pthread_t{}) std::this_thread::yield();
    race_in_a_dying_session(dir, driver, words_interrupted_by_a_second_signal);
  } else {
    race_in_a_dying_session(dir, driver);
  }
  switch (how) {
    case death::segfault: {
      // A store to a page with no access, a real fault: a store through a
      // null pointer would be UBSan's finding (and its exit) first.
      void* page = ::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      *static_cast<volatile int*>(page) = 1;
      break;
    }
    case death::abort: std::abort();
    case death::uncaught_exception: {
      std::thread([] { throw std::runtime_error("unhandled"); }).join();
      break;
    }
    case death::divide: {
      ::raise(SIGFPE);
      break;
    }
    case death::terminated: {
      ::kill(::getpid(), SIGTERM);  // as `timeout` and `kill` send it
      break;
    }
    case death::terminated_twice: {
      // To this thread, so that the second one is the other thread's.
      ::pthread_kill(::pthread_self(), SIGTERM);
      break;
    }
    case death::interrupted: {
      ::kill(::getpid(), SIGINT);
      break;
    }
    case death::interrupted_at_a_terminal: {
      // As the terminal driver sends ^C: si_code SI_KERNEL, positive, as a
      // fault's is (a process may queue that to itself).
      siginfo_t info{};
      info.si_signo = SIGINT;
      info.si_code = SI_KERNEL;
      ::syscall(SYS_rt_sigqueueinfo, ::getpid(), SIGINT, &info);
      break;
    }
  }
  wait_for_the_signal();
}

TEST_F(Session, ReportsAreWrittenWhenTheProgramDiesBySignal) {
  const std::pair<death, int> deaths[] = {{death::segfault, SIGSEGV},
                                          {death::abort, SIGABRT},
                                          {death::uncaught_exception, SIGABRT},
                                          {death::divide, SIGFPE},
                                          {death::terminated, SIGTERM},
                                          {death::interrupted, SIGINT},
                                          {death::interrupted_at_a_terminal, SIGINT},
                                          {death::terminated_twice, SIGTERM}};
  for (const auto& [how, sig] : deaths) {
    SCOPED_TRACE(sig);
    fs::remove(dir / "result");
    fs::remove(dir / "report.json");
    EXPECT_EXIT(race_then_die(dir.path(), how), ::testing::KilledBySignal(sig),
                "streamsan: the program received SIG");
    const auto r = result();
    EXPECT_EQ(r.processes_finished, 1u);
    EXPECT_EQ(r.diagnostics, 1u);
    EXPECT_NE(read_file(dir / "report.json").find("stream-race"), std::string::npos);
    EXPECT_GT(trace_records(), 0u);
  }
}

// Note [A signal while the report is made]: last words that say the report
// is being made on this thread leave the program running; the signal ends
// it once the report is made.
bool report_under_way_here() noexcept { return false; }

[[noreturn]] void terminated_while_reporting() {
  ::signal(SIGTERM, SIG_DFL);
  std::thread([] {
    other_thread = ::pthread_self();
    std::this_thread::sleep_for(10s);
  }).detach();
  while (other_thread.load() == pthread_t{}) std::this_thread::yield();
  install_fatal_signal_handlers(report_under_way_here);
  ::pthread_kill(::pthread_self(), SIGTERM);
  // More, as `timeout` and `streamsan run` send them, while the report goes
  // on here: on another thread it waits for it, on this one it lets it go on.
  ::pthread_kill(other_thread.load(), SIGTERM);
  ::pthread_kill(::pthread_self(), SIGTERM);
  std::this_thread::sleep_for(300ms);
  std::fputs("the report goes on\n", stderr);
  raise_deferred_signal();
  std::_Exit(12);
}

TEST(FatalSignals, ASignalDuringTheReportIsRaisedAgainOnceItIsMade) {
  EXPECT_EXIT(terminated_while_reporting(), ::testing::KilledBySignal(SIGTERM),
              "the report goes on");
}

// Note [Reports when the program dies]: a program with a SIGTERM handler of
// its own keeps it; its handler runs and streamsan says nothing then.
void own_sigterm_handler(int) { std::_Exit(42); }

[[noreturn]] void race_then_terminate_with_own_handler(const fs::path& dir) {
  ::signal(SIGTERM, own_sigterm_handler);
  fake_driver driver;
  race_in_a_dying_session(dir, driver);
  ::kill(::getpid(), SIGTERM);
  wait_for_the_signal();
}

TEST_F(Session, AProgramsOwnTerminationHandlerIsKept) {
  EXPECT_EXIT(race_then_terminate_with_own_handler(dir.path()), ::testing::ExitedWithCode(42),
              "^$");
}

// Note [Where the engine runs]: a program that makes diagnostics of several
// kinds, and candidates, many times over (more records than a wake-up batch
// of the engine's queue), in one thread so that its log is deterministic.
void varied_program(cuda_model& m, int rounds) {
  // One made-up return address per call, so that each kind of report has
  // its own pair of call sites (Note [Deduplication]).
  static const std::uint64_t addresses[] = {0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000};
  const auto at = [](int call) { return call_site{std::span(&addresses[call], 1)}; };
  program p(m);
  p.setup();
  constexpr std::uintptr_t doomed = 0x53;
  constexpr std::uint64_t pinned = 0x7f1000000000, guessed = 0x7f0000100000;
  m.allocated(at(0), pinned, 64, memory_kind::pinned_host);
  m.allocated(at(0), guessed, 256, memory_kind::device);
  const annotated_range host_read[] = {{pinned, 64, access_mode::read}};
  const annotated_range device_write[] = {{pinned, 64, access_mode::write}};
  for (int i = 0; i < rounds; ++i) {
    m.range_pushed(at(0), "round");
    p.race();
    for (const auto stream : {stream_a, stream_b}) {  // a candidate
      std::uint64_t dst = guessed;
      void* params[] = {&dst};
      m.kernel_launched(at(stream == stream_a ? 1 : 2), {stream}, fill_kernel,
                        kernel_arguments::from_pointers(params));
    }
    m.annotate_next_launch({stream_a}, device_write);
    std::uint64_t dst = pinned;
    void* params[] = {&dst};
    m.kernel_launched(at(3), {stream_a}, fill_kernel, kernel_arguments::from_pointers(params));
    m.host_accessed(at(4), host_read, "host read");  // host-device-race
    m.stream_created(at(0), doomed, 0, 0);
    m.stream_destroyed(at(0), doomed);
    p.fill(doomed);  // destroyed-stream-use
    m.unmodelled(at(5), "cudaSomethingNew");
    m.range_popped(at(0));
    m.device_synchronized(at(0));
  }
}

std::string dumped_trace(const fs::path& path) {
  std::ostringstream out;
  jsonl_dumper dump(out);
  read_trace(path, dump);
  return out.str();
}

TEST(EnginePlacement, OwnThreadUnlessHaltingOrBridgedOrTurnedOff) {
  session_config c;
  EXPECT_TRUE(engine_on_own_thread(c, false));
  EXPECT_FALSE(engine_on_own_thread(c, true)) << "the bridge needs records at the call";
  c.options.halt_on_error = true;
  EXPECT_FALSE(engine_on_own_thread(c, false)) << "halt_on_error stops at the first report";
  c.options.halt_on_error = false;
  c.engine_thread = false;
  EXPECT_FALSE(engine_on_own_thread(c, false));
}

// The engine on its own thread reports what it reports on the program's
// threads, in the same order, and the trace holds the same log.
TEST_F(Session, TheEngineThreadGivesTheSameReportAndTrace) {
  std::string reports[2], traces[2];
  for (const bool own_thread : {false, true}) {
    scratch_dir here;
    auto c = config_in(here.path());
    c.options.stack_depth = 4;
    c.engine_thread = own_thread;
    session s(c, driver);
    EXPECT_EQ(s.engine_on_own_thread(), own_thread);
    varied_program(s.model(), 300);
    s.finish();
    reports[own_thread] = read_file(here / "report.json");
    traces[own_thread] = dumped_trace(here / "trace.bin");
    // A stream-race, a host-device-race and each round's destroyed stream.
    EXPECT_EQ(read_run_summary((here / "result").string()).diagnostics, 302u);
  }
  for (const auto* kind : {"stream-race", "host-device-race", "destroyed-stream-use",
                           "\"certainty\": \"candidate\"", "cudaSomethingNew"}) {
    EXPECT_NE(reports[0].find(kind), std::string::npos) << kind << " missing:\n" << reports[0];
  }
  EXPECT_EQ(reports[1], reports[0]);
  EXPECT_GT(traces[0].size(), 100000u);
  EXPECT_EQ(traces[1], traces[0]);
}

// finish() delivers everything the engine's thread had not taken yet: the
// trace has every record the log made, and the report the race made last.
TEST_F(Session, FinishDrainsTheEngineThread) {
  session s(config(), driver);
  ASSERT_TRUE(s.engine_on_own_thread());
  program p(s.model());
  p.setup();
  for (int i = 0; i < 20000; ++i) {
    p.fill(stream_a);
    s.model().device_synchronized({});
  }
  p.race();
  s.finish();
  EXPECT_EQ(trace_records(), s.log().records_emitted());
  EXPECT_EQ(result().diagnostics, 1u);
  EXPECT_NE(read_file(dir / "report.json").find("stream-race"), std::string::npos);
}

// STREAMSAN_DEBUG's lines about the engine's thread: the time it spent
// delivering, and the exit's two waits.
TEST_F(Session, DebugCountersTellTheEngineThreadsTimeAndTheExitsWaits) {
  auto c = config();
  c.debug = 1;
  session s(c, driver);
  ASSERT_TRUE(s.engine_on_own_thread());
  program p(s.model());
  p.setup();
  p.race();
  testing::internal::CaptureStderr();
  s.finish();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("streamsan: debug: engine thread delivered="), std::string::npos) << err;
  EXPECT_NE(err.find(" busy_ms="), std::string::npos) << err;
  EXPECT_NE(err.find("streamsan: debug: at exit, measured footprints settled in "),
            std::string::npos)
      << err;
  EXPECT_NE(err.find(" ms, the engine's queue drained in "), std::string::npos) << err;
}

// halt_on_error keeps the engine on the program's thread: the first report
// ends the process inside the call that made it, and nothing after it runs.
[[noreturn]] void halt_at_first_report(const fs::path& dir) {
  fake_cupti::reset();
  fake_driver driver;
  driver.kernels[fill_kernel] = kernel_description{"_Z4fillPf", {{0, 8}}, true};
  auto c = config_in(dir);
  c.options.halt_on_error = true;
  auto* s = new session(c, driver);  // the process ends inside it
  if (s->engine_on_own_thread()) std::_Exit(10);
  program p(s->model());
  p.setup();
  p.race();
  std::_Exit(11);  // the program went on past the report
}

TEST_F(Session, HaltOnErrorStopsAtTheFirstReport) {
  EXPECT_EXIT(halt_at_first_report(dir.path()), ::testing::ExitedWithCode(66), "");
  const auto r = result();
  EXPECT_EQ(r.processes_finished, 1u);
  EXPECT_EQ(r.diagnostics, 1u);
}

// Note [The ThreadSanitizer bridge needs records at the call]
TEST(CapturePlan, WithoutTheBridgeTheOptionsDecide) {
  sanitizer_options o;
  for (const auto c : {capture_source::automatic, capture_source::cupti,
                       capture_source::sanitizer_api}) {
    o.capture = c;
    const auto plan = plan_capture(o, false);
    EXPECT_EQ(plan.capture, c);
    EXPECT_FALSE(plan.tsan_bridge);
    EXPECT_EQ(plan.note, "");
  }
}

TEST(CapturePlan, TheBridgeTakesCallsFromCuptiInTheDefaultMode) {
  const auto plan = plan_capture(sanitizer_options{}, true);
  EXPECT_EQ(plan.capture, capture_source::cupti);
  EXPECT_TRUE(plan.tsan_bridge);
  EXPECT_NE(plan.note.find("kernels are not measured"), std::string::npos) << plan.note;
}

TEST(CapturePlan, CuptiAskedForKeepsTheBridgeWithoutANote) {
  sanitizer_options o;
  o.capture = capture_source::cupti;
  const auto plan = plan_capture(o, true);
  EXPECT_EQ(plan.capture, capture_source::cupti);
  EXPECT_TRUE(plan.tsan_bridge);
  EXPECT_EQ(plan.note, "");
}

TEST(CapturePlan, PreciseOrSanitizerAskedForTurnsTheBridgeOff) {
  sanitizer_options precise;
  precise.precise = true;
  auto plan = plan_capture(precise, true);
  EXPECT_EQ(plan.capture, capture_source::automatic);
  EXPECT_FALSE(plan.tsan_bridge);
  EXPECT_EQ(plan.note.rfind("streamsan: --precise delivers kernel launches late", 0), 0u)
      << plan.note;
  sanitizer_options sanitizer;
  sanitizer.capture = capture_source::sanitizer_api;
  plan = plan_capture(sanitizer, true);
  EXPECT_EQ(plan.capture, capture_source::sanitizer_api);
  EXPECT_FALSE(plan.tsan_bridge);
  EXPECT_EQ(plan.note.rfind("streamsan: capture=sanitizer delivers", 0), 0u) << plan.note;
}

// A TSan build whose bridge was off says so in the result file, so that the
// closing note does not ask for a -fsanitize=thread build it already has.
TEST(RunResult, HostAccessesRoundTripThroughTheResultFile) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("streamsan-result-" + std::to_string(::getpid()));
  std::filesystem::remove(path);
  process_result r{};
  r.cuda_calls = 5;
  for (const std::string_view how : {"tsan", "annotations", "annotations-tsan-off", "torch"}) {
    r.host_accesses = how;
    ASSERT_TRUE(append_result_line(path.string(), finished_line(r)));
  }
  // A process that made no CUDA call (torchrun's agent) checked nothing.
  r.cuda_calls = 0;
  r.host_accesses = "annotations";
  ASSERT_TRUE(append_result_line(path.string(), finished_line(r)));
  const run_summary s = read_run_summary(path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(s.processes_finished, 5u);
  EXPECT_EQ(s.cuda_calls, 20u);
  EXPECT_EQ(s.host_accesses_by_tsan, 1u);
  EXPECT_EQ(s.host_accesses_by_annotations, 2u);
  EXPECT_EQ(s.host_accesses_tsan_off, 1u);
  EXPECT_EQ(s.host_accesses_by_torch, 1u);
}

}  // namespace
}  // namespace streamsan::injection
