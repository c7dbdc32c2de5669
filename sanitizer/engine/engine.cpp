#include "sanitizer/engine/engine.h"

#include <utility>
#include <variant>

#include "sanitizer/engine/engine_impl.h"

namespace streamsan {

// ---- public API ----

engine::engine(engine_options options)
    : impl_(std::make_unique<engine_impl>(options)) {}
engine::~engine() = default;
engine::engine(engine&& other) noexcept : impl_(std::exchange(other.impl_, nullptr)) {}
engine& engine::operator=(engine&& other) noexcept {
  impl_ = std::exchange(other.impl_, nullptr);
  return *this;
}

void engine::on_record(const record& r) { impl_->on_record(r); }

void engine::set_diagnostic_callback(std::function<void(const diagnostic&)> callback) {
  impl_->diagnostics_.set_callback(std::move(callback));
}

void engine::set_order_observer(order_observer* observer) noexcept {
  impl_->set_observer(observer);
}

const std::vector<diagnostic>& engine::diagnostics() const noexcept {
  return impl_->diagnostics_.all();
}

const log_tables& engine::tables() const noexcept { return impl_->tables_; }

const std::map<std::string, std::uint64_t, std::less<>>& engine::unmodelled_calls()
    const noexcept {
  return impl_->unmodelled_;
}

std::uint64_t engine::records_processed() const noexcept { return impl_->stats_.records; }

engine_statistics engine::statistics() const { return impl_->statistics(); }

// ---- dispatch ----

engine_impl::engine_impl(engine_options options)
    : diagnostics_(options.deduplicate),
      options_(options),
      contexts_(options.context_sweep_batch),
      allocations_(options.remembered_dead_objects) {
  if (options.timeline_window > 0) {
    window_ = std::make_unique<operation_window>(options.timeline_window, options.timeline_ops);
  }
}

// Note [Launches dispatched first]
// Most records are kernel launches. std::visit reaches a handler through a
// table of thunks (an indirect call, then a jump); a launch is tested for
// first and its handler called directly: engine_replay under callgrind,
// 586.2 -> 578.2 instructions per launch (release, 2026-12-02).
void engine_impl::on_record(const record& r) {
  ++stats_.records;
  if (observer_ == nullptr) [[likely]] {
    if (const auto* launch = std::get_if<kernel_launch>(&r.body)) [[likely]] {
      // Note [A launch reports its own pending diagnostics]
      on(r.header, *launch);
      return;
    }
  }
  on_other_record(r);
}

void engine_impl::on_other_record(const record& r) {
  if (observer_ == nullptr) [[likely]] {
    std::visit([&](const auto& body) { on(r.header, body); }, r.body);
  } else {
    observer_->record_begins(r.header);
    struct ends {  // also when a rule throws (a corrupt log)
      order_observer* observer;
      ~ends() { observer->record_ends(); }
    } guard{observer_};
    std::visit([&](const auto& body) { on(r.header, body); }, r.body);
  }
  if (!pending_.empty()) [[unlikely]] report_pending();
}

void engine_impl::set_observer(order_observer* observer) noexcept {
  observer_ = observer;
  contexts_.set_observer(observer);
}

engine_statistics engine_impl::statistics() const {
  engine_statistics s = stats_;
  const context_counts contexts = contexts_.counts();
  s.contexts = contexts.live;
  s.dead_contexts = contexts.dead;
  s.context_slots = contexts.slots;
  s.retired_contexts = contexts.retired;
  s.context_sweeps = contexts.sweeps;
  s.live_allocations = allocations_.live();
  s.remembered_allocations = allocations_.remembered_dead();
  s.clock_bytes = contexts_.bytes_held();
  allocations_.for_each([&](const allocation& a) {
    if (a.root != &a) return;
    s.history_segments += a.history.segment_count();
    s.history_reads += a.history.read_count();
    s.history_atomics += a.history.atomic_count();
    s.history_bytes += a.history.bytes_held();
  });
  events_.for_each([&](event_id, const event_state& e) { s.clock_bytes += e.snapshot.bytes_held(); });
  s.report_bytes = near_.bytes_held() + (window_ ? window_->bytes_held() : 0);
  for (const diagnostic& d : diagnostics_.all()) {
    if (d.timeline) {
      s.report_bytes += d.timeline->ops.capacity() * sizeof(timeline_op) +
                        d.timeline->edges.capacity() * sizeof(timeline_edge);
    }
  }
  return s;
}

thread_state& engine_impl::new_thread_of(const record_header& h) {
  last_thread_ = &contexts_.thread(h.thread);
  last_thread_id_ = h.thread;
  return *last_thread_;
}

// ---- definitions ----

void engine_impl::on(const record_header&, const string_define& r) {
  tables_.define_string(r.id, r.text);
}

void engine_impl::on(const record_header&, const stack_define& r) {
  tables_.define_stack(r.id, r.frames);
}

// log_tables owns the conversion, so new frame_symbol fields reach it.
void engine_impl::on(const record_header&, const frame_symbol& r) { tables_.absorb(r); }

void engine_impl::on(const record_header& h, const thread_start&) { thread_of(h); }

// ---- NVTX (Note [NVTX paths]) ----

void engine_impl::on(const record_header& h, const nvtx_push& r) {
  thread_state& t = thread_of(h);
  const string_id parent = t.nvtx.empty() ? string_id{} : t.nvtx.back();
  t.nvtx.push_back(nvtx_.child(parent, r.message, tables_));
}

void engine_impl::on(const record_header& h, const nvtx_pop&) {
  thread_state& t = thread_of(h);
  if (t.nvtx.empty()) {
    ++stats_.unmatched_nvtx_pops;
    return;
  }
  t.nvtx.pop_back();
}

// A mark is a point, not a range: nothing to attach to later operations.
void engine_impl::on(const record_header&, const nvtx_mark&) {}

// ---- unmodelled calls: never silently dropped ----

void engine_impl::on(const record_header&, const unmodelled_call& r) {
  std::string_view name = tables_.string(r.api);
  std::string fallback;
  if (name.empty()) {
    fallback = "<unnamed api string#" + std::to_string(raw(r.api)) + ">";
    name = fallback;
  }
  auto it = unmodelled_.find(name);
  if (it == unmodelled_.end()) it = unmodelled_.emplace(std::string(name), 0).first;
  ++it->second;
}

}  // namespace streamsan
