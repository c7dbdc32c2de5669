#include "sanitizer/tsan/tsan_bridge.h"

#include <algorithm>
#include <utility>


namespace streamsan::tsan {

// active_bridge.cpp
void set_active_bridge(tsan_bridge* bridge) noexcept;
void clear_active_bridge(tsan_bridge* bridge) noexcept;

// A word TSan keeps a clock for. `ready` is false for a snapshot whose
// deferred release has not been replayed yet.
struct tsan_bridge::cell {
  alignas(8) volatile long long word = 0;
  bool ready = true;

  void* address() noexcept { return const_cast<long long*>(&word); }
};

// Something a stream's fiber does, now or once what is deferred before it
// has been replayed (Note [Host functions are real host code]).
struct tsan_bridge::deferred_op {
  enum class kind : std::uint8_t { acquire, snapshot, access, host_function };
  kind what = kind::acquire;
  cell_ptr target;  // acquire: from it; snapshot: into it
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  bool write = false;
  operation_kind op = operation_kind::kernel;
  access_origin origin = access_origin::exact;
  stack_id stack{};
  std::shared_ptr<host_function_run> host_function;
};

struct tsan_bridge::stream_fiber {
  std::uint32_t id = 0;
  void* fiber = nullptr;  // nullptr once destroyed and idle
  std::string name;
  cell_ptr clock = std::make_shared<cell>();
  bool published = true;  // `clock` holds the fiber's current clock
  std::deque<deferred_op> deferred;
  std::shared_ptr<host_function_run> running;  // reached, not ended
  bool destroyed = false;
};

class host_function_run {
 public:
  enum class state : std::uint8_t {
    waiting,    // its stream's earlier work is still deferred
    reached,    // its place in the stream was reached: it may begin
    running,
    given_up_running,  // running when given up: its stream no longer waits
    ended,
    unchecked,  // given up, or unknown: the body runs ignored
  };

  std::uint32_t stream = 0;
  string_id name{};
  stack_id stack{};
  std::uint64_t seq = 0;
  state now = state::waiting;
  std::shared_ptr<void> start;  // the stream's clock at its place (a cell)
  std::shared_ptr<void> end;    // the body's clock when it returned (a cell)
  void* fiber = nullptr;
  void* previous = nullptr;  // the fiber of the thread that runs it
  std::size_t pushed = 0;    // frames pushed on `fiber`'s shadow stack
};

namespace {

// Note [Host function bodies share their thread's stack]
// A stream's fiber never runs code, but a host function's fiber runs the
// body on the stack of the thread that runs it (the driver's, or on the
// sim the host thread's own), in slots that thread's other fibers used
// before and will use again. TSan cannot tell a stack slot reused by the
// same thread from shared memory, so the body's fiber is ordered after
// what ran on the thread before it, and the thread after the body, through
// this word. The cost: a body cannot race with what the same OS thread did
// before it (another host function on the same driver thread; on the sim,
// the host thread's own accesses before the progress point that runs it).
thread_local long long os_thread_order = 0;

std::string_view flavor_name(stream_flavor f) {
  switch (f) {
    case stream_flavor::blocking: return "blocking";
    case stream_flavor::non_blocking: return "non-blocking";
    case stream_flavor::legacy_default: return "legacy default stream";
    case stream_flavor::per_thread_default: return "per-thread default stream";
  }
  return "stream";
}

}  // namespace

// Note [The innermost frame names the operation]
// A device access's stack in TSan's report is the launch's host stack with
// one of these on top, so the report says what touched the memory:
//   #0 streamsan::tsan::device::kernel()
//   #1 main app.cu:42
// (the kernel itself is in the launch stack, as its __device_stub__ frame,
// and the fiber's name says which stream). A kernel footprint inferred
// from its parameters (each pointer to the end of its allocation) may be
// larger than what the kernel touches; the engine reports a conflict that
// rests on one as a possible race, TSan cannot, so its frame says so:
// kernel_inferred_footprint(), which a TSan suppression can also name.
// They do nothing; each body differs so that identical code folding cannot
// merge them.
namespace device {
namespace {
volatile int folding_guard = 0;
}  // namespace
[[gnu::noinline]] void kernel() { folding_guard = 1; }
[[gnu::noinline]] void memcpy() { folding_guard = 2; }
[[gnu::noinline]] void memset() { folding_guard = 3; }
[[gnu::noinline]] void host_function() { folding_guard = 4; }
[[gnu::noinline]] void graph_node() { folding_guard = 5; }
[[gnu::noinline]] void host_access() { folding_guard = 6; }
[[gnu::noinline]] void operation() { folding_guard = 7; }
[[gnu::noinline]] void kernel_inferred_footprint() { folding_guard = 8; }
[[gnu::noinline]] void graph_node_inferred_footprint() { folding_guard = 9; }
[[gnu::noinline]] void host_function_inferred_footprint() { folding_guard = 10; }
}  // namespace device

namespace {

// A pc inside the marker function (TSan takes every frame for a return
// address and looks one byte back).
void* marker_pc(operation_kind op, access_origin origin) noexcept {
  const bool inferred = origin == access_origin::inferred;
  void (*f)() = &device::operation;
  switch (op) {
    case operation_kind::kernel:
      f = inferred ? &device::kernel_inferred_footprint : &device::kernel;
      break;
    case operation_kind::memcpy:
    case operation_kind::staged_upload:  // the DMA of a synchronous pageable upload
      f = &device::memcpy;
      break;
    case operation_kind::memset: f = &device::memset; break;
    case operation_kind::host_func:
      f = inferred ? &device::host_function_inferred_footprint : &device::host_function;
      break;
    case operation_kind::graph_node:
      f = inferred ? &device::graph_node_inferred_footprint : &device::graph_node;
      break;
    case operation_kind::host_access: f = &device::host_access; break;
    case operation_kind::alloc:
    case operation_kind::free:
    case operation_kind::event_record:
    case operation_kind::event_wait:
    case operation_kind::event_synchronize:
    case operation_kind::event_query:
    case operation_kind::stream_synchronize:
    case operation_kind::stream_query:
    case operation_kind::stream_wait_stream:
    case operation_kind::device_synchronize:
    case operation_kind::stream_destroy:
    case operation_kind::event_destroy:
    case operation_kind::graph_launch:
      break;
  }
  return reinterpret_cast<char*>(reinterpret_cast<std::uintptr_t>(f)) + 1;
}

}  // namespace

tsan_bridge::tsan_bridge(const tsan_api& api, const log_tables& tables)
    : api_(api), tables_(tables) {
  set_active_bridge(this);
}

tsan_bridge::~tsan_bridge() {
  clear_active_bridge(this);
  std::lock_guard lock(mutex_);
  own_fiber_ = nullptr;
  current_fiber_ = nullptr;
  calling_thread_ = 0;
  give_up_host_functions();
  switch_to(nullptr);
  for (auto& [id, s] : streams_) destroy_stream_fiber(*s);
  for (auto& [id, queue] : to_begin_) {
    for (auto& hf : queue) {
      if (hf->fiber != nullptr) api_.destroy_fiber(hf->fiber);
      hf->fiber = nullptr;
    }
  }
}

// ---- the record being handled ----

void tsan_bridge::record_begins(const record_header& h) {
  mutex_.lock();
  calling_thread_ = raw(h.thread);
  own_fiber_ = nullptr;
  current_fiber_ = nullptr;
}

void tsan_bridge::record_ends() {
  switch_to(nullptr);
  calling_thread_ = 0;
  mutex_.unlock();
}

void* tsan_bridge::own_fiber() {
  if (own_fiber_ == nullptr) own_fiber_ = api_.get_current_fiber();
  return own_fiber_;
}

void tsan_bridge::switch_to(void* fiber) {
  if (fiber == current_fiber_) return;
  void* target = fiber == nullptr ? own_fiber() : fiber;
  if (fiber != nullptr) own_fiber();  // remember where to come back to
  api_.switch_to_fiber(target, switch_no_sync);
  current_fiber_ = fiber;
}

void tsan_bridge::switch_to(stream_fiber& s) {
  if (s.fiber == nullptr) {
    // A destroyed stream used again (the engine reports it): a new fiber
    // continues its clock.
    s.fiber = new_stream_fiber(s.name);
    switch_to(s.fiber);
    api_.acquire(s.clock->address());
    return;
  }
  switch_to(s.fiber);
}

void tsan_bridge::destroy_stream_fiber(stream_fiber& s) {
  if (s.fiber == nullptr) return;
  // TSan refuses a fiber that ends inside an ignore.
  switch_to(s.fiber);
  api_.ignore_thread_end();
  switch_to(nullptr);
  api_.destroy_fiber(s.fiber);
  s.fiber = nullptr;
}

void* tsan_bridge::new_stream_fiber(const std::string& name) {
  switch_to(nullptr);
  void* fiber = api_.create_fiber(0);
  ++stats_.fibers_created;
  if (api_.set_fiber_name != nullptr) api_.set_fiber_name(fiber, name.c_str());
  // Note [The bridge is invisible to TSan]
  switch_to(fiber);
  api_.ignore_thread_begin();
  switch_to(nullptr);
  return fiber;
}

// ---- contexts ----

tsan_bridge::stream_fiber* tsan_bridge::stream_of(context_ref c) {
  const auto it = streams_.find(c.id);
  return it == streams_.end() ? nullptr : it->second.get();
}

tsan_bridge::stream_fiber& tsan_bridge::stream_or_implicit(context_ref c) {
  if (stream_fiber* s = stream_of(c)) return *s;
  // The engine announces every stream it creates; one it did not is
  // started from nothing (ordered after nothing).
  auto& s = streams_[c.id];
  s = std::make_unique<stream_fiber>();
  s->id = c.id;
  s->name = "streamsan " + to_string(stream_id{c.id});
  s->fiber = new_stream_fiber(s->name);
  return *s;
}

tsan_bridge::cell_ptr& tsan_bridge::thread_cell(std::uint32_t thread) {
  cell_ptr& c = threads_[thread];
  if (!c) c = std::make_shared<cell>();
  return c;
}

void tsan_bridge::stream_created(context_ref stream, std::int32_t device, stream_flavor flavor,
                                 context_ref creator) {
  const back_home home(*this);
  if (stream_of(stream) != nullptr) return;
  auto& s = streams_[stream.id];
  s = std::make_unique<stream_fiber>();
  s->id = stream.id;
  s->name = "streamsan " + to_string(stream_id{stream.id}) + " (" +
            std::string(flavor_name(flavor)) + ", device " + std::to_string(device) + ")";
  // Created from the calling thread's own fiber: TSan's report then shows
  // where the program created the stream.
  s->fiber = new_stream_fiber(s->name);
  // Note [Streams start from their creator's clock]
  joined(stream, creator);
}

void tsan_bridge::stream_destroyed(context_ref stream) {
  const back_home home(*this);
  stream_fiber* s = stream_of(stream);
  if (s == nullptr) return;
  s->destroyed = true;
  if (defers(*s)) return;  // replay_deferred() destroys it
  // Its clock stays in its cell: device synchronize and the legacy stream
  // still join it (S-STREAM-9).
  clock_of(*s, false);
  destroy_stream_fiber(*s);
}

// ---- edges (Note [Edges are the engine's]) ----

void tsan_bridge::release_store(cell& c) {
  api_.atomic64_store(&c.word, 0, memory_order_release);
  c.ready = true;
}

tsan_bridge::cell_ptr tsan_bridge::clock_of(stream_fiber& s, bool snapshot) {
  if (defers(s)) {
    auto c = std::make_shared<cell>();
    c->ready = false;
    deferred_op op;
    op.what = deferred_op::kind::snapshot;
    op.target = c;
    run_or_defer(s, std::move(op));
    return c;
  }
  if (snapshot) {
    auto c = std::make_shared<cell>();
    switch_to(s);
    release_store(*c);
    return c;
  }
  if (!s.published) {
    switch_to(s);
    api_.release(s.clock->address());
    s.published = true;
  }
  return s.clock;
}

tsan_bridge::cell_ptr tsan_bridge::host_clock(context_ref thread, bool snapshot) {
  if (!is_calling_thread(thread)) {
    // Only the thread that made the call can publish its clock; the engine
    // joins from no other (counted, never seen so far).
    ++stats_.foreign_thread_joins;
    return thread_cell(thread.id);
  }
  switch_to(nullptr);
  if (snapshot) {
    auto c = std::make_shared<cell>();
    release_store(*c);
    return c;
  }
  cell_ptr& c = thread_cell(thread.id);
  api_.release(c->address());
  return c;
}

void tsan_bridge::acquire_on_host(const cell_ptr& c) {
  if (!c->ready) give_up_host_functions();
  switch_to(nullptr);
  api_.acquire(c->address());
  ++stats_.edges_mirrored;
}

void tsan_bridge::acquire_on(stream_fiber& dst, cell_ptr c) {
  deferred_op op;
  op.what = deferred_op::kind::acquire;
  op.target = std::move(c);
  run_or_defer(dst, std::move(op));
}

void tsan_bridge::joined(context_ref dst, context_ref src) {
  const back_home home(*this);
  if (dst.kind == context_kind::host_thread) {
    if (!is_calling_thread(dst)) {
      ++stats_.foreign_thread_joins;
      return;
    }
    if (src.kind == context_kind::host_thread) return;  // the engine never does this
    stream_fiber& s = stream_or_implicit(src);
    // Note [Host functions are real host code]: a host thread never waits
    // for deferred work.
    if (defers(s)) give_up_host_functions();
    acquire_on_host(clock_of(s, false));
    return;
  }
  stream_fiber& d = stream_or_implicit(dst);
  // A fiber that defers acquires later: it needs the source's clock as of
  // now, not as of then.
  const bool snapshot = defers(d);
  cell_ptr c = src.kind == context_kind::host_thread ? host_clock(src, snapshot)
                                                     : clock_of(stream_or_implicit(src), snapshot);
  acquire_on(d, std::move(c));
}

void tsan_bridge::event_recorded(event_id event, context_ref src) {
  const back_home home(*this);
  stream_fiber& s = stream_or_implicit(src);
  cell_ptr& c = events_[raw(event)];
  if (defers(s)) {
    c = clock_of(s, true);
    return;
  }
  // A cell that a deferred acquire still holds keeps its value; others are
  // overwritten in place (a release store replaces the clock: S-EVENT-1).
  if (!c || c.use_count() > 1 || !c->ready) c = std::make_shared<cell>();
  switch_to(s);
  release_store(*c);
}

void tsan_bridge::event_joined(context_ref dst, event_id event) {
  const back_home home(*this);
  const auto it = events_.find(raw(event));
  if (it == events_.end()) return;  // the engine joins only recorded events
  const cell_ptr c = it->second;
  if (dst.kind == context_kind::host_thread) {
    if (!is_calling_thread(dst)) {
      ++stats_.foreign_thread_joins;
      return;
    }
    acquire_on_host(c);
    return;
  }
  acquire_on(stream_or_implicit(dst), c);
}

void tsan_bridge::event_destroyed(event_id event) { events_.erase(raw(event)); }

// ---- accesses ----

void tsan_bridge::accessed(const observed_access& a) {
  const back_home home(*this);
  if (!host_accessible(a.memory) || a.address == 0 || a.size == 0) {
    ++stats_.accesses_skipped;
    return;
  }
  deferred_op op;
  op.what = deferred_op::kind::access;
  op.address = a.address;
  op.size = a.size;
  op.write = writes(a.mode) || is_atomic(a.mode);
  op.op = a.op;
  op.origin = a.origin;
  op.stack = a.stack;
  if (a.context.kind == context_kind::stream) {
    run_or_defer(stream_or_implicit(a.context), std::move(op));
    return;
  }
  if (!is_calling_thread(a.context)) {
    ++stats_.foreign_thread_joins;
    return;
  }
  // A host access the engine saw: an annotation, or the host side of a copy
  // (the driver reading pageable memory, which TSan does not see itself).
  const frame_list frames = frames_of(op.stack);
  switch_to(nullptr);
  range_access(op, frames.size > 0 ? reinterpret_cast<void*>(frames.frames[0]) : nullptr);
}

void tsan_bridge::range_access(const deferred_op& op, void* pc) {
  auto* address = reinterpret_cast<void*>(op.address);
  const auto size = static_cast<unsigned long>(op.size);
  if (op.write) {
    api_.write_range_pc != nullptr ? api_.write_range_pc(address, size, pc)
                                   : api_.write_range(address, size);
  } else {
    api_.read_range_pc != nullptr ? api_.read_range_pc(address, size, pc)
                                  : api_.read_range(address, size);
  }
  ++stats_.accesses_mirrored;
}

tsan_bridge::frame_list tsan_bridge::frames_of(stack_id stack) const {
  frame_list out;
  const auto frames = tables_.stack(stack);
  out.size = std::min(frames.size(), max_frames);
  std::copy_n(frames.begin(), out.size, out.frames.begin());
  return out;
}

void tsan_bridge::push_frames(const frame_list& frames, std::size_t from) const {
  for (std::size_t i = frames.size; i > from; --i) {
    api_.func_entry(reinterpret_cast<void*>(frames.frames[i - 1]));
  }
}

void tsan_bridge::access_on_fiber(stream_fiber& s, const deferred_op& op) {
  const frame_list frames = frames_of(op.stack);
  switch_to(s);
  // Note [The innermost frame names the operation]
  push_frames(frames, 0);
  api_.ignore_thread_end();  // Note [The bridge is invisible to TSan]
  range_access(op, marker_pc(op.op, op.origin));
  api_.ignore_thread_begin();
  for (std::size_t i = 0; i < frames.size; ++i) api_.func_exit();
  s.published = false;
}

// ---- deferral (Note [Host functions are real host code]) ----

bool tsan_bridge::defers(const stream_fiber& s) const noexcept {
  return s.running != nullptr || !s.deferred.empty();
}

void tsan_bridge::run_or_defer(stream_fiber& s, deferred_op op) {
  if (!defers(s) && run(s, op)) return;
  s.deferred.push_back(std::move(op));
  ++stats_.operations_deferred;
  if (std::find(deferring_.begin(), deferring_.end(), &s) == deferring_.end()) {
    deferring_.push_back(&s);
  }
}

bool tsan_bridge::run(stream_fiber& s, deferred_op& op) {
  switch (op.what) {
    case deferred_op::kind::acquire:
      if (!op.target->ready) return false;
      switch_to(s);
      api_.acquire(op.target->address());
      s.published = false;
      ++stats_.edges_mirrored;
      return true;
    case deferred_op::kind::snapshot:
      switch_to(s);
      release_store(*op.target);
      return true;
    case deferred_op::kind::access:
      access_on_fiber(s, op);
      return true;
    case deferred_op::kind::host_function: {
      host_function_run& hf = *op.host_function;
      auto start = std::static_pointer_cast<cell>(hf.start);
      if (hf.now != host_function_run::state::waiting) return true;  // given up
      const std::string name = "streamsan host function '" +
                               std::string(tables_.string(hf.name)) + "' on " +
                               to_string(stream_id{s.id});
      switch_to(s);
      release_store(*start);
      // Made from the stream's fiber at the function's place, so TSan starts
      // it from exactly that clock (the start cell says so again, for any
      // runtime that does not).
      hf.fiber = api_.create_fiber(0);
      ++stats_.fibers_created;
      if (api_.set_fiber_name != nullptr) api_.set_fiber_name(hf.fiber, name.c_str());
      hf.now = host_function_run::state::reached;
      s.running = op.host_function;
      return true;
    }
  }
  return true;
}

void tsan_bridge::replay_deferred() {
  for (bool progress = true; progress;) {
    progress = false;
    for (stream_fiber* s : deferring_) {
      while (!s->deferred.empty() && s->running == nullptr) {
        if (!run(*s, s->deferred.front())) break;
        s->deferred.pop_front();
        progress = true;
      }
    }
  }
  std::erase_if(deferring_, [&](stream_fiber* s) {
    if (defers(*s)) return false;
    if (s->destroyed && s->fiber != nullptr) {
      clock_of(*s, false);
      destroy_stream_fiber(*s);
    }
    return true;
  });
}

void tsan_bridge::give_up_host_functions() {
  std::lock_guard lock(mutex_);
  const back_home home(*this);
  for (auto& [stream, queue] : to_begin_) {
    for (auto& hf : queue) hf->now = host_function_run::state::unchecked;
  }
  for (auto& [id, s] : streams_) {
    if (s->running == nullptr) continue;
    if (s->running->now != host_function_run::state::running) {
      s->running->now = host_function_run::state::unchecked;
    } else {
      s->running->now = host_function_run::state::given_up_running;
    }
    // A body still running keeps its fiber; the stream no longer waits.
    s->running = nullptr;
    ++stats_.host_functions_unchecked;
  }
  replay_deferred();
}

// ---- host functions ----

void tsan_bridge::host_function_enqueued(context_ref stream, string_id name, stack_id stack,
                                         std::uint64_t seq) {
  const back_home home(*this);
  stream_fiber& s = stream_or_implicit(stream);
  auto hf = std::make_shared<host_function_run>();
  hf->stream = stream.id;
  hf->name = name;
  hf->stack = stack;
  hf->seq = seq;
  hf->start = std::make_shared<cell>();
  hf->end = std::make_shared<cell>();
  to_begin_[stream.id].push_back(hf);
  deferred_op op;
  op.what = deferred_op::kind::host_function;
  op.host_function = std::move(hf);
  run_or_defer(s, std::move(op));
}

host_function_ticket tsan_bridge::begin_host_function(stream_id stream) {
  std::unique_lock lock(mutex_);
  std::shared_ptr<host_function_run> hf;
  if (auto it = to_begin_.find(raw(stream)); it != to_begin_.end() && !it->second.empty()) {
    hf = std::move(it->second.front());
    it->second.pop_front();
  }
  if (!hf || hf->now != host_function_run::state::reached) {
    // Not announced (a host node of a graph), given up, or (against the
    // stream's order) not reached yet: run the body unchecked.
    if (hf && hf->now == host_function_run::state::waiting) {
      if (auto* s = stream_of({context_kind::stream, raw(stream)}); s && s->running == hf) {
        s->running = nullptr;
      }
    }
    if (!hf) hf = std::make_shared<host_function_run>();
    if (hf->fiber != nullptr) api_.destroy_fiber(hf->fiber);
    hf->fiber = nullptr;
    hf->now = host_function_run::state::unchecked;
    ++stats_.host_functions_unchecked;
    api_.ignore_thread_begin();
    return host_function_ticket(std::move(hf));
  }
  const frame_list frames = frames_of(hf->stack);
  void* start = std::static_pointer_cast<cell>(hf->start)->address();
  hf->previous = api_.get_current_fiber();
  hf->pushed = frames.size;
  hf->now = host_function_run::state::running;
  ++stats_.host_functions;
  host_function_ticket ticket(std::move(hf));
  lock.unlock();
  // Note [The bridge is invisible to TSan]: from here on the thread is the
  // body's fiber; nothing allocates, frees or locks. The body's own frames
  // go on top of the launch's stack.
  host_function_run& run = *ticket.run_;
  // Note [Host function bodies share their thread's stack]
  api_.release(&os_thread_order);
  api_.switch_to_fiber(run.fiber, switch_no_sync);
  api_.acquire(&os_thread_order);
  api_.acquire(start);
  push_frames(frames, 0);
  return ticket;
}

void tsan_bridge::end_host_function(host_function_ticket ticket) {
  if (!ticket) return;
  host_function_run& hf = *ticket.run_;
  if (hf.fiber == nullptr || hf.now == host_function_run::state::unchecked ||
      hf.now == host_function_run::state::ended) {
    api_.ignore_thread_end();
    return;
  }
  // Still the body's fiber: leave it before anything else.
  for (; hf.pushed > 0; --hf.pushed) api_.func_exit();
  auto* end = static_cast<cell*>(hf.end.get());
  release_store(*end);
  api_.release(&os_thread_order);
  api_.switch_to_fiber(hf.previous, switch_no_sync);
  api_.acquire(&os_thread_order);

  std::lock_guard lock(mutex_);
  api_.destroy_fiber(hf.fiber);
  hf.fiber = nullptr;
  const bool given_up = hf.now != host_function_run::state::running;
  hf.now = host_function_run::state::ended;
  stream_fiber* s = stream_of({context_kind::stream, hf.stream});
  if (given_up || s == nullptr || s->running != ticket.run_) return;
  // Work after the function on its stream is ordered after its body.
  own_fiber_ = hf.previous;
  current_fiber_ = nullptr;
  s->running = nullptr;
  deferred_op op;
  op.what = deferred_op::kind::acquire;
  op.target = std::static_pointer_cast<cell>(hf.end);
  s->deferred.push_front(std::move(op));
  if (std::find(deferring_.begin(), deferring_.end(), s) == deferring_.end()) {
    deferring_.push_back(s);
  }
  replay_deferred();
  switch_to(nullptr);
  own_fiber_ = nullptr;
}

host_function_ticket tsan_bridge::begin_unannounced_host_function() {
  std::lock_guard lock(mutex_);
  auto hf = std::make_shared<host_function_run>();
  hf->now = host_function_run::state::unchecked;
  ++stats_.host_functions_unchecked;
  api_.ignore_thread_begin();
  return host_function_ticket(std::move(hf));
}

bridge_statistics tsan_bridge::statistics() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace streamsan::tsan
