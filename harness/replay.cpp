#include "harness/replay.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "harness/operation_tracker.h"
#include "harness/stat_catalog.h"
#include "runtime/api.h"
#include "sanitizer/engine/engine.h"
#include "sanitizer/tsan/tsan_bridge.h"

namespace streamsan::harness {
namespace {

// Note [Guards and owners outlive their scenario operation]
// A scenario's buffers, streams and events are owned here, and refs to them
// are kept apart from the owners: destroying a stream or freeing a buffer
// drops the owner but keeps the ref, so that a later operation on it reaches
// the runtime, which is what reports the misuse (S-STREAM-9, S-MEM-5).
struct live_buffer {
  const buffer_decl* decl = nullptr;
  std::optional<rt::buffer> raw_owner;
  std::optional<rt::cached_buffer> cached_owner;
  rt::buffer_view view;
  bool freed = false;
};

using guard = std::variant<std::unique_ptr<rt::device_guard>, std::unique_ptr<rt::stream_guard>>;

rt::runtime_options options_for(const scenario& s, const replay_options& o) {
  rt::runtime_options opts;
  opts.backend = o.backend == "cuda" ? rt::backend_kind::cuda : rt::backend_kind::sim;
  opts.sim.device_count = std::max(2, s.requires_.devices);
  opts.sim.policy = o.eager || s.settings.launch_blocking ? rt::sim_policy::eager
                                                          : rt::sim_policy::random;
  opts.sim.seed = o.seed;
  // The harness attaches its own engine (see replay()).
  opts.sanitize = false;
  opts.print_diagnostics = false;
  opts.capture_stacks = false;
  return opts;
}

stat_values stats_of(const rt::memory_stats& m) {
  stat_values out;
  const std::pair<std::string_view, const rt::memory_stat*> groups[] = {
      {"allocation", &m.allocation},         {"segment", &m.segment},
      {"active", &m.active},                 {"allocated_bytes", &m.allocated_bytes},
      {"reserved_bytes", &m.reserved_bytes}, {"active_bytes", &m.active_bytes},
  };
  for (const auto& [name, stat] : groups) {
    const std::string prefix(name);
    out[prefix + ".current"] = stat->current;
    out[prefix + ".peak"] = stat->peak;
    out[prefix + ".allocated"] = stat->allocated;
    out[prefix + ".freed"] = stat->freed;
  }
  out["num_alloc_retries"] = static_cast<std::int64_t>(m.num_alloc_retries);
  out["num_ooms"] = static_cast<std::int64_t>(m.num_ooms);
  return out;
}

class replayer {
 public:
  replayer(const scenario& s, outcome& out, operation_tracker& tracker)
      : s_(s), out_(out), tracker_(tracker) {}

  void setup();
  void run();
  void finish();
  // The operation being replayed, or a phase.
  std::size_t current() const noexcept { return current_; }

  // Names for the diagnostic translation.
  std::string stream_name(stream_id id) const;
  std::string event_name(event_id id) const;

 private:
  void run_one(std::size_t index);
  void operator()(const launch_op& op);
  void operator()(const memcpy_op& op);
  void operator()(const memset_op& op);
  void operator()(const record_op& op) { event(op.event).record(stream(op.stream)); }
  void operator()(const wait_op& op) { event(op.event).wait(stream(op.stream)); }
  void operator()(const wait_stream_op& op) { stream(op.stream).wait_stream(stream(op.other)); }
  void operator()(const synchronize_op& op);
  void operator()(const query_op& op);
  void operator()(const elapsed_time_op& op) {
    result(static_cast<double>(event(op.start).elapsed_time(event(op.end))));
  }
  void operator()(const destroy_op& op);
  void operator()(const alloc_op& op) { allocate(*s_.find_buffer(op.buffer)); }
  void operator()(const free_op& op);
  void operator()(const record_stream_op& op) {
    rt::record_stream(buffers_.at(op.buffer).view, stream(op.stream));
  }
  void operator()(const empty_cache_op&) { rt::empty_cache(); }
  void operator()(const memory_fraction_op& op) {
    rt::set_per_process_memory_fraction(op.fraction, op.device);
  }
  void operator()(const reset_peak_stats_op&) { rt::reset_peak_memory_stats(); }
  void operator()(const memory_stats_op&) { result(stats_of(rt::get_memory_stats())); }
  void operator()(const host_write_op& op);
  void operator()(const host_read_op& op) { result(rt::host_read<float>(view(op.src))); }
  void operator()(const host_func_op& op);
  void operator()(const capture_begin_op& op);
  void operator()(const capture_end_op& op);
  void operator()(const graph_launch_op& op);
  void operator()(const device_guard_enter_op& op) {
    guards_.emplace_back(std::make_unique<rt::device_guard>(op.device));
  }
  void operator()(const device_guard_exit_op&) { pop_guard(); }
  void operator()(const stream_guard_enter_op& op) {
    guards_.emplace_back(std::make_unique<rt::stream_guard>(stream(op.stream)));
  }
  void operator()(const stream_guard_exit_op&) { pop_guard(); }
  void operator()(const set_device_op& op) { rt::set_device(op.device); }
  void operator()(const nvtx_push_op& op) { rt::nvtx::range_push(op.message); }
  void operator()(const nvtx_pop_op&) { rt::nvtx::range_pop(); }
  void operator()(const nvtx_mark_op& op) { rt::nvtx::mark(op.message); }
  void operator()(const sync_debug_mode_op& op);

  rt::stream_ref stream(const std::string& name) const;
  rt::event_ref event(const std::string& name) const { return event_refs_.at(name); }
  rt::buffer_view view(const buffer_slice& slice) const {
    return buffers_.at(slice.buffer).view.elements<float>(slice.begin, slice.end - slice.begin);
  }
  void allocate(const buffer_decl& decl);
  void result(seen_value v) { out_.results[current_] = std::move(v); }
  void pop_guard() {
    if (!guards_.empty()) guards_.pop_back();
  }
  void synchronize_all();

  const scenario& s_;
  outcome& out_;
  operation_tracker& tracker_;
  std::size_t current_ = setup_phase;
  std::map<std::string, rt::stream, std::less<>> stream_owners_;
  std::map<std::string, rt::stream_ref, std::less<>> stream_refs_;
  std::map<std::string, rt::event, std::less<>> event_owners_;
  std::map<std::string, rt::event_ref, std::less<>> event_refs_;
  std::map<std::string, live_buffer, std::less<>> buffers_;
  std::map<std::string, rt::graph, std::less<>> graphs_;
  std::map<std::string, std::string, std::less<>> capturing_;  // stream -> graph
  std::vector<guard> guards_;
};

rt::stream_ref replayer::stream(const std::string& name) const {
  if (name.empty()) return rt::current_stream();
  if (name == legacy_stream_name) return rt::legacy_default_stream();
  if (name == per_thread_stream_name) return rt::per_thread_default_stream();
  return stream_refs_.at(name);
}

std::string replayer::stream_name(stream_id id) const {
  for (const auto& [name, ref] : stream_refs_) {
    if (ref.id() == id) return name;
  }
  const int devices = std::max(2, s_.requires_.devices);
  for (int d = 0; d < devices; ++d) {
    try {
      if (rt::legacy_default_stream(d).id() == id) return std::string(legacy_stream_name);
      if (rt::per_thread_default_stream(d).id() == id) return std::string(per_thread_stream_name);
    } catch (const rt::runtime_error&) {
      break;  // fewer devices on this backend
    }
  }
  return to_string(id);
}

std::string replayer::event_name(event_id id) const {
  for (const auto& [name, ref] : event_refs_) {
    if (ref.id() == id) return name;
  }
  return to_string(id);
}

void replayer::allocate(const buffer_decl& decl) {
  tracker_.begin_buffer(decl.name);
  live_buffer b;
  b.decl = &decl;
  const std::uint64_t bytes = decl.size * element_bytes;
  switch (decl.kind) {
    case buffer_kind::device:
      b.raw_owner = rt::allocate_device(bytes, decl.device, decl.name);
      break;
    case buffer_kind::pinned:
      b.raw_owner = rt::allocate_pinned_host(bytes, decl.name);
      break;
    case buffer_kind::pageable:
      b.raw_owner = rt::allocate_pageable_host(bytes, decl.name);
      break;
    case buffer_kind::managed:
      b.raw_owner = rt::allocate_managed(bytes, decl.device, decl.name);
      break;
    case buffer_kind::stream_ordered:
      b.raw_owner = rt::allocate_async(bytes, stream(decl.stream), decl.name);
      break;
    case buffer_kind::cached:
      b.cached_owner = rt::caching_allocate(bytes, stream(decl.stream));
      break;
  }
  b.view = b.raw_owner ? b.raw_owner->view() : b.cached_owner->view();
  out_.buffer_addresses.insert_or_assign(
      decl.name, std::pair{reinterpret_cast<std::uint64_t>(b.view.data()), b.view.size()});
  tracker_.begin_buffer("");
  buffers_.insert_or_assign(decl.name, std::move(b));
}

void replayer::setup() {
  tracker_.begin_operation(setup_phase);
  for (const auto& d : s_.streams) {
    rt::stream st(rt::stream_options{d.device, d.priority, d.flag == stream_flag::non_blocking});
    stream_refs_.emplace(d.name, st.ref());
    stream_owners_.emplace(d.name, std::move(st));
  }
  for (const auto& d : s_.events) {
    rt::event e(rt::event_options{d.timing, d.blocking_sync, d.interprocess});
    event_refs_.emplace(d.name, e.ref());
    event_owners_.emplace(d.name, std::move(e));
  }
  // Device memory is filled by a copy on the stream it was allocated for
  // (stream-ordered memory is valid only there, S-MEM-5); the staging
  // copies live until the synchronize below.
  std::vector<std::vector<float>> staging;
  for (const auto& d : s_.buffers) {
    if (d.deferred) continue;
    allocate(d);
    if (d.fill.empty()) continue;
    const auto& v = buffers_.at(d.name).view;
    switch (d.kind) {
      case buffer_kind::pinned:
      case buffer_kind::pageable:
      case buffer_kind::managed:
        rt::host_write<float>(v, d.fill);
        break;
      case buffer_kind::device:
        staging.push_back(d.fill);
        rt::memcpy(v, rt::buffer_view::untracked(staging.back().data(), v.size()));
        break;
      case buffer_kind::stream_ordered:
      case buffer_kind::cached:
        staging.push_back(d.fill);
        rt::memcpy_async(v, rt::buffer_view::untracked(staging.back().data(), v.size()),
                         stream(d.stream));
        break;
    }
  }
  synchronize_all();
}

void replayer::synchronize_all() {
  const int devices = rt::device_count();
  for (int d = 0; d < devices && d < std::max(2, s_.requires_.devices); ++d) rt::synchronize(d);
}

void replayer::run() {
  for (std::size_t i = 0; i < s_.operations.size(); ++i) run_one(i);
}

void replayer::run_one(std::size_t index) {
  current_ = index;
  tracker_.begin_operation(index);
  try {
    std::visit([this](const auto& op) { (*this)(op); }, s_.operations[index].body);
  } catch (const std::exception& e) {
    out_.errors.push_back({index, e.what()});
  }
}

void replayer::operator()(const launch_op& op) {
  namespace k = rt::kernels;
  const auto& b = op.buffers;
  const auto& x = op.scalars;
  k::kernel kernel;
  switch (op.kernel) {
    case kernel_kind::fill: kernel = k::fill{view(b[0]), static_cast<float>(x[0])}; break;
    case kernel_kind::copy: kernel = k::copy{view(b[0]), view(b[1])}; break;
    case kernel_kind::scale: kernel = k::scale{view(b[0]), static_cast<float>(x[0])}; break;
    case kernel_kind::axpy: kernel = k::axpy{static_cast<float>(x[0]), view(b[0]), view(b[1])}; break;
    case kernel_kind::reduce_sum: kernel = k::reduce_sum{view(b[0]), view(b[1])}; break;
    case kernel_kind::spin:
      kernel = k::spin{std::chrono::nanoseconds(static_cast<std::int64_t>(x[0]))};
      break;
  }
  std::array<rt::declared_access, 2> storage;
  rt::launch(stream(op.stream), kernel, rt::implied_accesses(kernel, storage),
             s_.operations[current_].label);
}

void replayer::operator()(const memcpy_op& op) {
  if (op.async) {
    rt::memcpy_async(view(op.dst), view(op.src), stream(op.stream));
  } else {
    rt::memcpy(view(op.dst), view(op.src));
  }
}

void replayer::operator()(const memset_op& op) {
  if (op.async) {
    rt::memset_async(view(op.dst), op.value, stream(op.stream));
  } else {
    rt::memset(view(op.dst), op.value);
  }
}

void replayer::operator()(const synchronize_op& op) {
  switch (op.target) {
    case sync_target::device: rt::synchronize(op.device); break;
    case sync_target::stream: stream(op.name).synchronize(); break;
    case sync_target::event: event(op.name).synchronize(); break;
  }
}

void replayer::operator()(const query_op& op) {
  auto ask = [&] {
    switch (op.target) {
      case sync_target::stream: return stream(op.name).query();
      case sync_target::event: return event(op.name).query();
      case sync_target::device: break;  // the parser never builds one
    }
    return false;
  };
  bool answer = ask();
  // Bounded, so that a scenario whose work never completes (a capture left
  // open, a bug in a backend) fails instead of hanging.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (op.until_true && !answer) {
    if (std::chrono::steady_clock::now() > give_up) {
      throw std::runtime_error("polling query: the work did not complete within 20 s");
    }
    std::this_thread::yield();
    answer = ask();
  }
  result(answer);
}

void replayer::operator()(const destroy_op& op) {
  switch (op.target) {
    case sync_target::stream:
      if (const auto it = stream_owners_.find(op.name); it != stream_owners_.end()) {
        stream_owners_.erase(it);  // ~stream destroys it; the ref stays
      } else {
        throw rt::usage_error("destroying stream '" + op.name +
                              "': the scenario does not own it (built-in, or destroyed already)");
      }
      break;
    case sync_target::event:
      if (const auto it = event_owners_.find(op.name); it != event_owners_.end()) {
        event_owners_.erase(it);
      } else {
        throw rt::usage_error("destroying event '" + op.name + "': destroyed already");
      }
      break;
    case sync_target::device: break;  // the parser never builds one
  }
}

void replayer::operator()(const free_op& op) {
  auto& b = buffers_.at(op.buffer);
  if (b.freed) throw rt::usage_error("freeing buffer " + op.buffer + " twice");
  b.freed = true;
  if (b.cached_owner) {
    b.cached_owner->free();
  } else if (!op.stream.empty()) {
    b.raw_owner->free_async(stream(op.stream));
  } else {
    b.raw_owner->free();
  }
}

void replayer::operator()(const host_write_op& op) {
  const auto target = view(op.dst);
  std::vector<float> values = op.values;
  if (values.size() == 1) values.assign(op.dst.end - op.dst.begin, values.front());
  rt::host_write<float>(target, values);
}

void replayer::operator()(const host_func_op& op) {
  std::vector<rt::declared_access> accesses;
  std::vector<rt::buffer_view> targets;
  for (const auto& r : op.reads) accesses.push_back(rt::reads(view(r)));
  for (const auto& w : op.writes) {
    accesses.push_back(rt::writes(view(w)));
    targets.push_back(view(w));
  }
  const float value = op.value;
  const auto& label = s_.operations[current_].label;
  rt::launch_host_func(
      stream(op.stream),
      [targets, value] {
        for (const auto& t : targets) std::fill_n(t.as<float>(), t.count<float>(), value);
      },
      accesses, label.empty() ? std::string_view("host_func") : std::string_view(label));
}

void replayer::operator()(const capture_begin_op& op) {
  auto& g = graphs_[op.graph];
  g.capture_begin(stream(op.stream));
  capturing_[op.stream] = op.graph;
}

void replayer::operator()(const capture_end_op& op) {
  const auto it = capturing_.find(op.stream);
  if (it == capturing_.end()) {
    throw rt::usage_error("ending capture on stream '" + op.stream + "': it is not capturing");
  }
  const std::string graph = it->second;
  capturing_.erase(it);
  graphs_.at(graph).capture_end();
}

void replayer::operator()(const graph_launch_op& op) { graphs_.at(op.graph).launch(stream(op.stream)); }

void replayer::operator()(const sync_debug_mode_op& op) {
  switch (op.mode) {
    case sync_debug_mode::off: rt::set_sync_debug_mode(rt::sync_debug_mode::off); break;
    case sync_debug_mode::warn: rt::set_sync_debug_mode(rt::sync_debug_mode::warn); break;
    case sync_debug_mode::error: rt::set_sync_debug_mode(rt::sync_debug_mode::error); break;
  }
}

void replayer::finish() {
  current_ = final_phase;
  tracker_.begin_operation(final_phase);
  while (!guards_.empty()) guards_.pop_back();
  rt::set_sync_debug_mode(rt::sync_debug_mode::off);
  try {
    synchronize_all();
  } catch (const std::exception& e) {
    out_.problems.push_back(std::string("the final synchronize failed: ") + e.what());
    return;
  }
  for (auto& [name, b] : buffers_) {
    if (b.freed) continue;
    try {
      switch (b.decl->kind) {
        case buffer_kind::pinned:
        case buffer_kind::pageable:
        case buffer_kind::managed:
          out_.buffers[name] = rt::host_read<float>(b.view);
          break;
        case buffer_kind::device:
        case buffer_kind::stream_ordered:
        case buffer_kind::cached: {
          std::vector<float> host(b.decl->size);
          rt::memcpy(rt::buffer_view::untracked(host.data(), host.size() * element_bytes), b.view);
          out_.buffers[name] = std::move(host);
          break;
        }
      }
    } catch (const std::exception& e) {
      out_.problems.push_back("reading buffer " + name + " after the final synchronize failed: " +
                              e.what());
    }
  }
}

// Note [Graph nodes are named by the captured operation]
// A graph node's accesses happen at the launch, so its seq leads to the
// graph_launch operation. The node itself was captured from an operation of
// the scenario, whose label the runtime gave the node as its name: naming
// that operation says which work in the graph conflicts.
std::size_t operation_of(const operation_ref& ref, const scenario& s,
                         const operation_tracker& tracker, const log_tables& tables) {
  if (ref.op == operation_kind::graph_node) {
    const auto index = s.find_label(tables.string(ref.name));
    if (index != std::string::npos) return index;
  }
  return tracker.operation_of(ref.seq);
}

seen_diagnostic translate(const diagnostic& d, const scenario& s, const operation_tracker& tracker,
                          const log_tables& tables, const replayer& names) {
  seen_diagnostic out;
  out.kind = d.kind;
  out.hazard_kind = d.hazard_kind;
  out.count = d.count;
  out.current = operation_of(d.current, s, tracker, tables);
  if (d.previous) out.previous = operation_of(*d.previous, s, tracker, tables);
  // The buffer the current access touched: with the caching allocator the
  // same bytes may belong to another block than diagnostic::allocation.
  if (!is_none(d.current.alloc)) out.buffer = tracker.buffer_of(d.current.alloc);
  if (out.buffer.empty() && d.allocation) out.buffer = tracker.buffer_of(d.allocation->id);
  if (!is_none(d.event)) out.event = names.event_name(d.event);
  if (!is_none(d.stream)) out.stream = names.stream_name(d.stream);
  return out;
}

}  // namespace

std::string cannot_run(const scenario& s, const std::string& backend) {
  const auto& allowed = s.requires_.backends;
  if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), backend) == allowed.end()) {
    return "runs on " + [&] {
      std::string list;
      for (const auto& b : allowed) list += (list.empty() ? "" : ", ") + b;
      return list;
    }() + " only";
  }
  if (backend == "cuda") {
    if (!rt::cuda_device_present()) return "no CUDA device";
    static const int devices = [] { return rt::make_cuda_backend()->device_count(); }();
    if (devices < s.requires_.devices) {
      return "needs " + std::to_string(s.requires_.devices) + " devices, cuda has " +
             std::to_string(devices);
    }
  }
  return "";
}

outcome replay(const scenario& s, const replay_options& options) {
  outcome out;
  engine_options eopts;
  eopts.deduplicate = false;  // two races of one scenario come from one call site
  engine eng(eopts);
  operation_tracker tracker(eng);
  // Made before the runtime starts and ended after it stops, so that it
  // sees every record and every host function body.
  std::unique_ptr<tsan::tsan_bridge> mirror;
  if (options.tsan != nullptr) {
    mirror = std::make_unique<tsan::tsan_bridge>(*options.tsan, eng.tables());
    eng.set_order_observer(mirror.get());
  }
  rt::initialize(options_for(s, options));
  rt::add_log_sink(tracker);
  {
    replayer r(s, out, tracker);
    rt::set_warning_handler([&](std::string_view message) {
      out.warnings.push_back({r.current(), std::string(message)});
    });
    try {
      r.setup();
    } catch (const std::exception& e) {
      out.problems.push_back(std::string("setting up the scenario failed: ") + e.what());
    }
    if (out.problems.empty()) {
      r.run();
      r.finish();
    }
    for (const auto& d : eng.diagnostics()) {
      out.diagnostics.push_back(translate(d, s, tracker, eng.tables(), r));
    }
  }
  rt::set_warning_handler({});
  rt::remove_log_sink(tracker);
  rt::shutdown();
  return out;
}

}  // namespace streamsan::harness
