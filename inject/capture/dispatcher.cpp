#include "inject/capture/dispatcher.h"

#include <cuda.h>
#include <driver_types.h>

#include <algorithm>
#include <new>
#include <string_view>

#include "inject/capture/api_names.h"
#include "sanitizer/log/thread_exit_key.h"
#include "sanitizer/log/thread_state_ref.h"

namespace streamsan::injection {

namespace {

// Note [Calls counted per thread]
// Every thread's outermost calls were counted in one api_calls_ that all
// added to: a locked add a call, on the cache line of active_, which every
// callback of every thread reads. Each thread now counts in a block of its
// own, with a plain load and store (one writer; api_calls() reads the
// blocks from another thread, so relaxed atomics). The blocks form a list
// that only grows and is never freed, so api_calls() walks it without a
// lock (a report made at a signal asks, and the signal may have come in
// the middle of anything). A block counts for one dispatcher (tests make
// many, one after another). When its thread ends, a pthread key marks it
// free, and the next thread to count for that dispatcher takes it over and
// adds on: the count stays whole, and the list stays as long as the most
// threads that counted at once. A thread that moves to another dispatcher
// frees its block the same way. A call counted after the key ran (from a
// later key destructor) takes a block again, freed in the next round of
// key destructors, or kept if none comes: its count is still summed.
struct call_count {
  std::atomic<std::uint64_t> calls{0};
  std::uint64_t dispatcher = 0;     // the generation it counts for
  std::atomic<bool> free{false};    // no thread counts in it
  call_count* next = nullptr;
};
std::atomic<call_count*> call_counts{nullptr};
std::atomic<std::uint64_t> next_generation{1};

}  // namespace

struct dispatch_thread_state {
  std::uint32_t runtime_depth = 0;
  std::uint32_t runtime_cbid = 0;  // the outermost runtime call
  bool runtime_launch = false;     // ... is a kernel launch
  bool launch_modelled = false;    // ... whose nested driver launch was modelled
  call_count* count = nullptr;     // Note [Calls counted per thread]
};

namespace {

// Looked up once per callback and handed down (Note [One look at the
// thread's state] in thread_state_ref.h); constinit keeps it free of an
// initialization wrapper.
constinit thread_local dispatch_thread_state this_thread;

// outcome_of(), inline in the callbacks (Note [A callback's layers inline]).
[[gnu::always_inline]] inline api_outcome call_outcome(const api_call& call) noexcept {
  if (call.site == api_site::entry || call.return_value == nullptr) return api_outcome::succeeded;
  if (call.domain == api_domain::runtime) {
    const auto r = *static_cast<const cudaError_t*>(call.return_value);
    return r == cudaSuccess ? api_outcome::succeeded
           : r == cudaErrorNotReady ? api_outcome::not_ready
                                    : api_outcome::failed;
  }
  const auto r = *static_cast<const CUresult*>(call.return_value);
  return r == CUDA_SUCCESS ? api_outcome::succeeded
         : r == CUDA_ERROR_NOT_READY ? api_outcome::not_ready
                                     : api_outcome::failed;
}

// Note [Calls counted per thread]: the thread ends.
void free_call_count(void* block) {
  static_cast<call_count*>(block)->free.store(true, std::memory_order_release);
  thread_state_ref(this_thread).count = nullptr;
}

// Without a key (keys ran out) a thread's block stays taken at its exit.
const thread_exit_key& call_count_key() {
  static const thread_exit_key key(free_call_count);
  return key;
}

// Note [Calls counted per thread]: a free block of `generation`'s, else a
// new one; null when none can be made (the call goes uncounted).
call_count* take_call_count(std::uint64_t generation) noexcept {
  for (call_count* c = call_counts.load(std::memory_order_acquire); c != nullptr; c = c->next) {
    bool was_free = true;
    if (c->dispatcher == generation &&
        c->free.compare_exchange_strong(was_free, false, std::memory_order_acquire)) {
      return c;
    }
  }
  auto* c = new (std::nothrow) call_count;
  if (c == nullptr) return nullptr;
  c->dispatcher = generation;
  c->next = call_counts.load(std::memory_order_relaxed);
  while (!call_counts.compare_exchange_weak(c->next, c, std::memory_order_release,
                                            std::memory_order_relaxed)) {
  }
  return c;
}

// The thread's first call counted for `generation`'s dispatcher.
[[gnu::noinline]] call_count* count_for(dispatch_thread_state& t,
                                        std::uint64_t generation) noexcept {
  if (t.count != nullptr) t.count->free.store(true, std::memory_order_release);
  t.count = take_call_count(generation);
  call_count_key().set(t.count);
  return t.count;
}

}  // namespace

api_outcome outcome_of(const api_call& call) noexcept { return call_outcome(call); }

api_dispatcher::api_dispatcher(cuda_model& model, call_site_source& call_sites,
                               const api_tables& tables) noexcept
    : model_(model),
      call_sites_(call_sites),
      tables_(tables),
      generation_(next_generation.fetch_add(1, std::memory_order_relaxed)) {}

void api_dispatcher::count_api_call(dispatch_thread_state& t) noexcept {
  call_count* c = t.count;
  if (c == nullptr || c->dispatcher != generation_) [[unlikely]] {
    c = count_for(t, generation_);
    if (c == nullptr) return;
  }
  c->calls.store(c->calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

std::uint64_t api_dispatcher::api_calls() const noexcept {
  std::uint64_t calls = 0;
  for (const call_count* c = call_counts.load(std::memory_order_acquire); c != nullptr;
       c = c->next) {
    if (c->dispatcher == generation_) calls += c->calls.load(std::memory_order_relaxed);
  }
  return calls;
}

bool api_dispatcher::is_inert(api_domain domain, std::uint32_t cbid) const noexcept {
  return tables_[domain][cbid].inert();
}

bool api_dispatcher::switched_off(api_domain domain, std::uint32_t cbid) const noexcept {
  const api_entry& e = tables_[domain][cbid];
  return e.inert() || e.handler.modelled_by_driver_call ||
         (!runtime_launch_callbacks_ && e.handler.driver_call_suffices);
}

bool api_dispatcher::launches_kernel(api_domain domain, std::uint32_t cbid) const noexcept {
  return tables_[domain][cbid].handler.kernel_launch;
}

void api_dispatcher::count_callbacks_per_call() {
  for (const api_domain d : {api_domain::runtime, api_domain::driver}) {
    const std::size_t size = api_names(d).size();
    auto& counts = per_call_[static_cast<int>(d)];
    counts = std::make_unique<std::atomic<std::uint64_t>[]>(size);
    for (std::size_t i = 0; i < size; ++i) counts[i].store(0, std::memory_order_relaxed);
  }
}

std::vector<std::pair<std::string, std::uint64_t>> api_dispatcher::most_frequent_calls(
    std::size_t n) const {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (const api_domain d : {api_domain::runtime, api_domain::driver}) {
    const auto& counts = per_call_[static_cast<int>(d)];
    if (!counts) continue;
    const auto names = api_names(d);
    for (std::size_t i = 1; i < names.size(); ++i) {
      if (const auto c = counts[i].load(std::memory_order_relaxed)) {
        out.emplace_back(std::string(d == api_domain::runtime ? "runtime " : "driver ") +
                             std::string(names[i]),
                         c);
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (out.size() > n) out.resize(n);
  return out;
}

// Note [A callback's layers inline]
// A steady driver launch takes two callbacks, and each went down a call per
// layer (dispatch, on_driver, model_exit, model_outcome, outcome_of), each
// saving and restoring its registers: the entry callback, which models
// nothing, cost some 70 instructions. Those layers are inlined into
// dispatch(); library-instructions.sh went from 1,991 to 1,886 a launch.
// run() stays a call: it has eight callers, and inlined it doubled
// dispatch()'s code to save 9 instructions a launch.
void api_dispatcher::dispatch(const api_call& call) noexcept {
  try {
    if (const auto& counts = per_call_[static_cast<int>(call.domain)];
        counts && call.site == api_site::entry && call.cbid < api_names(call.domain).size()) {
      counts[call.cbid].fetch_add(1, std::memory_order_relaxed);
    }
    auto& t = thread_state_ref(this_thread);
    if (call.domain == api_domain::runtime) {
      on_runtime(call, t);
    } else {
      on_driver(call, t);
    }
  } catch (...) {
    // Nothing may escape into the driver.
  }
}

// Note [Nesting is tracked while stopped]
// A call that enters while callbacks are modelled and returns while they are
// not (stop() at exit, on another thread) must still end its nesting, or its
// thread would take every later call for a nested one and record nothing
// more. The runtime nesting is therefore kept for every callback; only the
// modelling waits for active().
void api_dispatcher::on_runtime(const api_call& call, dispatch_thread_state& t) {
  const api_entry& e = tables_.runtime[call.cbid];
  if (call.site == api_site::entry) {
    if (t.runtime_depth++ > 0) return;
    t.runtime_cbid = call.cbid;
    t.runtime_launch = e.handler.kernel_launch;
    t.launch_modelled = false;
    if (!active()) return;
    count_api_call(t);
    if (e.handler.on_entry) run(e.handler.on_entry, e, call, false, t);
    if (e.handler.around) run(e.handler.around, e, call, false, t);
    return;
  }
  // Note [The call that loads the library]: no entry was seen, its driver
  // calls were modelled at the driver level.
  if (t.runtime_depth == 0) return;
  if (--t.runtime_depth > 0) return;
  t.runtime_launch = false;
  if (active()) model_exit(e, call, t);
}

void api_dispatcher::on_driver(const api_call& call, dispatch_thread_state& t) {
  if (!active()) return;  // driver calls keep no nesting
  const api_entry& e = tables_.driver[call.cbid];
  const bool exit = call.site == api_site::exit;
  if (exit && e.handler.level == api_level::every && e.handler.on_exit) {
    run(e.handler.on_exit, e, call, t.runtime_depth > 0, t);
  }
  if (t.runtime_depth > 0) {
    if (exit && t.runtime_launch && e.handler.level == api_level::in_runtime_launch &&
        e.handler.on_exit && call_outcome(call) == api_outcome::succeeded) {
      run(e.handler.on_exit, e, call, true, t);
    }
    return;
  }
  if (!exit) {
    count_api_call(t);
    if (e.handler.on_entry) run(e.handler.on_entry, e, call, false, t);
    if (e.handler.around) run(e.handler.around, e, call, false, t);
    return;
  }
  if (e.handler.level != api_level::every) model_exit(e, call, t);
}

void api_dispatcher::model_exit(const api_entry& e, const api_call& call,
                                dispatch_thread_state& t) {
  model_outcome(e, call, t);
  if (e.handler.around) run(e.handler.around, e, call, false, t);
}

void api_dispatcher::model_outcome(const api_entry& e, const api_call& call,
                                   dispatch_thread_state& t) {
  if (e.handler.on_entry) return;  // modelled on entry
  const api_outcome outcome = call_outcome(call);
  if (outcome == api_outcome::failed) return;  // failed calls did nothing
  if (outcome == api_outcome::not_ready && !e.handler.answers_not_ready) return;
  if (e.handler.on_exit) {
    run(e.handler.on_exit, e, call, false, t);
  } else if (!e.inert()) {
    count_unmodelled(call, t);
  }
}

std::uint64_t api_dispatcher::key_of(const api_call& call,
                                     const dispatch_thread_state& t) noexcept {
  const bool driver = call.domain == api_domain::driver;
  return path_key(driver ? path_domain::driver : path_domain::runtime, call.cbid,
                  driver && t.runtime_depth > 0 ? t.runtime_cbid : 0,
                  static_cast<std::uint32_t>(call.site));
}

void api_dispatcher::run(api_handler_fn fn, const api_entry& e, const api_call& call,
                         bool nested, dispatch_thread_state& t) {
  const bool per_thread = e.per_thread || (nested && tables_.runtime[t.runtime_cbid].per_thread);
  api_context context(model_, call, call_sites_, key_of(call, t), per_thread, t.launch_modelled);
  fn(context);
  // Work that a capture took in became a node of its graph just now.
  if (model_.any_capture_active() && context.stream_taken() && call.site == api_site::exit &&
      call_outcome(call) == api_outcome::succeeded) {
    model_.captured_call_returned(context.here(), *context.stream_taken());
  }
}

void api_dispatcher::count_unmodelled(const api_call& call, const dispatch_thread_state& t) {
  std::string_view name = tables_[call.domain].name(call.cbid);
  if (call.function_name != nullptr) name = call.function_name;
  if (name.empty()) name = "unknown CUDA call";
  model_.unmodelled(call_sites_.capture(key_of(call, t)), base_api_name(name));
}

}  // namespace streamsan::injection
