#include "tests/tsan/model_tsan.h"

#include <algorithm>
#include <stdexcept>

namespace streamsan::testing {
namespace {

model_tsan* the_model = nullptr;

void join(std::map<int, std::uint64_t>& into, const std::map<int, std::uint64_t>& from) {
  for (const auto& [id, t] : from) into[id] = std::max(into[id], t);
}

std::uint64_t addr(const void* p) { return reinterpret_cast<std::uint64_t>(p); }

}  // namespace

// The C entry points: each forwards to the one model.
struct model_entry_points {
  static model_tsan& m() {
    if (the_model == nullptr) throw std::logic_error("model_tsan: no model");
    return *the_model;
  }

  static void* get_current_fiber() {
    std::lock_guard lock(m().mutex_);
    return reinterpret_cast<void*>(static_cast<std::uintptr_t>(m().current_locked().id));
  }
  static void* create_fiber(unsigned) {
    auto& model = m();
    std::lock_guard lock(model.mutex_);
    model.current_locked();
    const int id = model.next_id_++;
    auto& c = model.contexts_[id];
    c.id = id;
    c.fiber = true;
    c.clock[id] = 1;  // ordered after nothing: stricter than TSan
    return reinterpret_cast<void*>(static_cast<std::uintptr_t>(id));
  }
  static void destroy_fiber(void* fiber) {
    auto& model = m();
    std::lock_guard lock(model.mutex_);
    const int id = static_cast<int>(reinterpret_cast<std::uintptr_t>(fiber));
    auto it = model.contexts_.find(id);
    if (it == model.contexts_.end() || !it->second.fiber || it->second.destroyed) {
      model.violation_locked("destroy_fiber of no live fiber " + std::to_string(id));
      return;
    }
    for (const auto& [thread, running] : model.current_) {
      if (running == id) model.violation_locked("destroy_fiber of a fiber switched in: " + it->second.name);
    }
    if (!it->second.stack.empty()) {
      model.violation_locked("fiber destroyed with frames on its shadow stack: " + it->second.name);
    }
    if (it->second.ignores != 0) {
      model.violation_locked("fiber destroyed inside an ignore (TSan dies): " + it->second.name);
    }
    it->second.destroyed = true;
  }
  static void switch_to_fiber(void* fiber, unsigned flags) {
    auto& model = m();
    std::lock_guard lock(model.mutex_);
    auto& from = model.current_locked();
    const int id = static_cast<int>(reinterpret_cast<std::uintptr_t>(fiber));
    auto it = model.contexts_.find(id);
    if (it == model.contexts_.end() || it->second.destroyed) {
      model.violation_locked("switch to no live fiber " + std::to_string(id));
      return;
    }
    if ((flags & tsan::switch_no_sync) == 0) model.violation_locked("a synchronizing fiber switch");
    for (const auto& [thread, running] : model.current_) {
      if (running == id && thread != std::this_thread::get_id()) {
        model.violation_locked("fiber " + it->second.name + " switched in on two threads");
      }
    }
    (void)from;
    model.current_[std::this_thread::get_id()] = id;
  }
  static void set_fiber_name(void* fiber, const char* name) {
    auto& model = m();
    std::lock_guard lock(model.mutex_);
    model.contexts_[static_cast<int>(reinterpret_cast<std::uintptr_t>(fiber))].name = name;
  }
  static void acquire(void* address) {
    auto& model = m();
    std::lock_guard lock(model.mutex_);
    auto& c = model.current_locked();
    if (const auto it = model.sync_.find(addr(address)); it != model.sync_.end()) {
      join(c.clock, it->second);
    }
  }
  static void release(void* address) {
    auto& model = m();
    std::lock_guard lock(model.mutex_);
    auto& c = model.current_locked();
    join(model.sync_[addr(address)], c.clock);
    ++c.clock[c.id];
  }
  static void atomic64_store(volatile long long* address, long long value, int order) {
    auto& model = m();
    std::lock_guard lock(model.mutex_);
    auto& c = model.current_locked();
    if (order != tsan::memory_order_release) model.violation_locked("an atomic store not a release");
    model.sync_[addr(const_cast<long long*>(address))] = c.clock;
    ++c.clock[c.id];
    *address = value;
  }
  static void read_range(void* address, unsigned long size) { read_range_pc(address, size, nullptr); }
  static void write_range(void* address, unsigned long size) { write_range_pc(address, size, nullptr); }
  static void read_range_pc(void* address, unsigned long size, void* pc) {
    auto& model = m();
    std::lock_guard lock(model.mutex_);
    model.access_locked(addr(address), size, false, addr(pc));
  }
  static void write_range_pc(void* address, unsigned long size, void* pc) {
    auto& model = m();
    std::lock_guard lock(model.mutex_);
    model.access_locked(addr(address), size, true, addr(pc));
  }
  static void func_entry(void* pc) {
    auto& model = m();
    std::lock_guard lock(model.mutex_);
    model.current_locked().stack.push_back(addr(pc));
  }
  static void func_exit() {
    auto& model = m();
    std::lock_guard lock(model.mutex_);
    auto& c = model.current_locked();
    if (c.stack.empty()) {
      model.violation_locked("func_exit on an empty shadow stack of " + c.name);
      return;
    }
    c.stack.pop_back();
  }
  static void ignore_thread_begin() {
    auto& model = m();
    std::lock_guard lock(model.mutex_);
    ++model.current_locked().ignores;
  }
  static void ignore_thread_end() {
    auto& model = m();
    std::lock_guard lock(model.mutex_);
    auto& c = model.current_locked();
    if (c.ignores == 0) {
      model.violation_locked("ignore_thread_end without a begin on " + c.name);
      return;
    }
    --c.ignores;
  }
};

model_tsan::model_tsan() {
  if (the_model != nullptr) throw std::logic_error("model_tsan: one at a time");
  the_model = this;
}

model_tsan::~model_tsan() { the_model = nullptr; }

const tsan::tsan_api& model_tsan::api() {
  static const tsan::tsan_api a = [] {
    tsan::tsan_api x;
    x.get_current_fiber = &model_entry_points::get_current_fiber;
    x.create_fiber = &model_entry_points::create_fiber;
    x.destroy_fiber = &model_entry_points::destroy_fiber;
    x.switch_to_fiber = &model_entry_points::switch_to_fiber;
    x.set_fiber_name = &model_entry_points::set_fiber_name;
    x.acquire = &model_entry_points::acquire;
    x.release = &model_entry_points::release;
    x.atomic64_store = &model_entry_points::atomic64_store;
    x.read_range = &model_entry_points::read_range;
    x.write_range = &model_entry_points::write_range;
    x.read_range_pc = &model_entry_points::read_range_pc;
    x.write_range_pc = &model_entry_points::write_range_pc;
    x.func_entry = &model_entry_points::func_entry;
    x.func_exit = &model_entry_points::func_exit;
    x.ignore_thread_begin = &model_entry_points::ignore_thread_begin;
    x.ignore_thread_end = &model_entry_points::ignore_thread_end;
    return x;
  }();
  return a;
}

model_tsan::context& model_tsan::current_locked() {
  const auto self = std::this_thread::get_id();
  if (const auto it = current_.find(self); it != current_.end()) return contexts_.at(it->second);
  const int id = next_id_++;
  auto& c = contexts_[id];
  c.id = id;
  c.name = "thread " + std::to_string(id);
  c.clock[id] = 1;
  thread_contexts_[self] = id;
  current_[self] = id;
  return c;
}

void model_tsan::access_locked(std::uint64_t begin, std::uint64_t size, bool write,
                               std::uint64_t pc) {
  auto& c = current_locked();
  if (c.ignores > 0 || size == 0) return;
  model_access a;
  a.begin = begin;
  a.end = begin + size;
  a.write = write;
  a.context = c.id;
  a.epoch = c.clock[c.id];
  a.context_name = c.name;
  a.stack.push_back(pc);
  a.stack.insert(a.stack.end(), c.stack.rbegin(), c.stack.rend());
  for (const auto& p : accesses_) {
    if (p.context == c.id || !(p.write || write)) continue;
    if (p.end <= a.begin || a.end <= p.begin) continue;
    if (c.clock[p.context] >= p.epoch) continue;
    reports_.push_back({a, p});
    break;  // one report per access, as TSan
  }
  accesses_.push_back(std::move(a));
}

void model_tsan::host_read(const void* address, std::uint64_t size, std::uint64_t pc) {
  std::lock_guard lock(mutex_);
  access_locked(addr(address), size, false, pc);
}

void model_tsan::host_write(const void* address, std::uint64_t size, std::uint64_t pc) {
  std::lock_guard lock(mutex_);
  access_locked(addr(address), size, true, pc);
}

std::vector<model_report> model_tsan::reports() const {
  std::lock_guard lock(mutex_);
  return reports_;
}

std::vector<std::string> model_tsan::violations() const {
  std::lock_guard lock(mutex_);
  auto out = violations_;
  for (const auto& [id, c] : contexts_) {
    if (!c.fiber && !c.stack.empty()) out.push_back("frames left on the shadow stack of " + c.name);
    if (!c.fiber && c.ignores != 0) out.push_back("ignores left on " + c.name);
  }
  for (const auto& [thread, running] : current_) {
    if (thread_contexts_.count(thread) && thread_contexts_.at(thread) != running) {
      out.push_back("a thread left on fiber " + contexts_.at(running).name);
    }
  }
  return out;
}

int model_tsan::live_fibers() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(std::count_if(contexts_.begin(), contexts_.end(), [](const auto& e) {
    return e.second.fiber && !e.second.destroyed;
  }));
}

void model_tsan::clear_reports() {
  std::lock_guard lock(mutex_);
  reports_.clear();
}

}  // namespace streamsan::testing
