#include "inject/stack/fast_unwinder.h"

#include <link.h>
#include <pthread.h>
#include <unwind.h>

#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "inject/stack/symbol_names.h"

// libgcc's FDE lookup (unwind-dw2-fde.h); exported by libgcc_s and libgcc_eh.
struct dwarf_eh_bases {
  void* tbase;
  void* dbase;
  void* func;
};
extern "C" const void* _Unwind_Find_FDE(void* pc, struct dwarf_eh_bases* bases);

namespace streamsan::injection {
namespace {

// ---- internal modules ----

struct address_range {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

// Never destroyed: captures may run after this library's static destructors
// (a program's static destructor that calls CUDA, Note [Per-thread state
// outlives the thread's thread_locals]).
struct module_config {
  std::mutex mutex;
  std::vector<std::string> name_parts;  // under mutex
  std::shared_ptr<const std::vector<address_range>> ranges =  // under mutex
      std::make_shared<std::vector<address_range>>();
};
module_config& modules() {
  static module_config* config = new module_config;
  return *config;
}
std::atomic<bool> hide_static_cudart{true};
std::atomic<std::uint64_t> modules_generation{1};

int collect_ranges(dl_phdr_info* info, std::size_t, void* data) {
  auto* out = static_cast<std::vector<address_range>*>(data);
  const std::string_view name = info->dlpi_name ? info->dlpi_name : "";
  bool internal = false;
  for (const auto& part : modules().name_parts) {
    if (!name.empty() && name.find(part) != std::string_view::npos) internal = true;
  }
  if (!internal) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
      out->push_back({info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz});
    }
  }
  return 0;
}

bool in_internal_module(std::uint64_t pc, const std::vector<address_range>& ranges) {
  for (const auto& r : ranges) {
    if (pc >= r.begin && pc < r.end) return true;
  }
  return false;
}

// ---- DWARF call frame information ----

enum : std::uint8_t {
  rule_empty = 0,
  rule_ok = 1,
  rule_unsupported = 2,  // use _Unwind_Backtrace
  rule_outermost = 3,    // no caller (no FDE, or the return address is undefined)
};

constexpr unsigned reg_rbp = 6;
constexpr unsigned reg_rsp = 7;
constexpr unsigned reg_ra = 16;

struct unwind_rule {
  std::uint8_t status = rule_empty;
  std::uint8_t cfa_reg = reg_rsp;
  bool rbp_saved = false;
  bool internal = false;    // frame is hidden from reports
  bool after_call = false;  // the address follows a call instruction
  std::int32_t cfa_offset = 0;
  std::int32_t ra_offset = -8;
  std::int32_t rbp_offset = 0;
};

class cfi_reader {
 public:
  cfi_reader(const std::uint8_t* p, const std::uint8_t* end) : p_(p), end_(end) {}
  bool ok() const noexcept { return ok_; }
  bool at_end() const noexcept { return p_ >= end_; }
  const std::uint8_t* pos() const noexcept { return p_; }

  std::uint8_t u8() { return need(1) ? *p_++ : 0; }
  template <class T>
  T fixed() {
    T v{};
    if (need(sizeof v)) {
      std::memcpy(&v, p_, sizeof v);
      p_ += sizeof v;
    }
    return v;
  }
  std::uint64_t uleb() {
    std::uint64_t v = 0;
    unsigned shift = 0;
    while (need(1)) {
      const std::uint8_t b = *p_++;
      if (shift < 64) v |= std::uint64_t{b & 0x7fu} << shift;
      shift += 7;
      if ((b & 0x80) == 0) break;
    }
    return v;
  }
  std::int64_t sleb() {
    std::int64_t v = 0;
    unsigned shift = 0;
    std::uint8_t b = 0;
    while (need(1)) {
      b = *p_++;
      if (shift < 64) v |= std::int64_t{b & 0x7f} << shift;
      shift += 7;
      if ((b & 0x80) == 0) break;
    }
    if (shift < 64 && (b & 0x40)) v |= -(std::int64_t{1} << shift);
    return v;
  }
  // A DW_EH_PE-encoded pointer. `apply` = false reads only the value (pc_range).
  std::uint64_t encoded(std::uint8_t enc, bool apply = true) {
    if (enc == 0xff) return 0;  // DW_EH_PE_omit
    const std::uint64_t field = reinterpret_cast<std::uint64_t>(p_);
    std::uint64_t v = 0;
    switch (enc & 0x0f) {
      case 0x00: v = fixed<std::uint64_t>(); break;
      case 0x01: v = uleb(); break;
      case 0x02: v = fixed<std::uint16_t>(); break;
      case 0x03: v = fixed<std::uint32_t>(); break;
      case 0x04: v = fixed<std::uint64_t>(); break;
      case 0x09: v = static_cast<std::uint64_t>(sleb()); break;
      case 0x0a: v = static_cast<std::uint64_t>(std::int64_t{fixed<std::int16_t>()}); break;
      case 0x0b: v = static_cast<std::uint64_t>(std::int64_t{fixed<std::int32_t>()}); break;
      case 0x0c: v = fixed<std::uint64_t>(); break;
      default: ok_ = false; return 0;
    }
    if (!apply) return v;
    switch (enc & 0x70) {
      case 0x00: break;
      case 0x10: v += field; break;  // pcrel
      default: ok_ = false; return 0;  // textrel/datarel/funcrel: not used for pc_begin on x86-64
    }
    if (enc & 0x80) ok_ = false;  // indirect
    return v;
  }
  void skip(std::uint64_t n) {
    if (need(n)) p_ += n;
  }

 private:
  bool need(std::uint64_t n) {
    if (!ok_ || static_cast<std::uint64_t>(end_ - p_) < n) {
      ok_ = false;
      return false;
    }
    return true;
  }
  const std::uint8_t* p_;
  const std::uint8_t* end_;
  bool ok_ = true;
};

// The register rules we track while running a CFA program.
struct cfa_row {
  unsigned cfa_reg = reg_rsp;
  std::int64_t cfa_offset = 8;
  bool cfa_unsupported = false;
  // For RA and RBP: 0 = same value / undefined-for-rbp, 1 = saved at
  // CFA+offset, 2 = undefined (RA: outermost), 3 = unsupported rule.
  std::uint8_t ra_how = 1;
  std::int64_t ra_offset = -8;
  std::uint8_t rbp_how = 0;
  std::int64_t rbp_offset = 0;
};

struct cie_info {
  std::uint64_t code_align = 1;
  std::int64_t data_align = -8;
  unsigned ra_reg = reg_ra;
  std::uint8_t fde_encoding = 0;
  bool has_augmentation_data = false;
  bool signal_frame = false;
  const std::uint8_t* instructions = nullptr;
  const std::uint8_t* end = nullptr;
};

// Reads a length-prefixed CIE/FDE record; returns its body [begin, end).
bool record_bounds(const std::uint8_t* rec, const std::uint8_t*& body, const std::uint8_t*& end) {
  std::uint32_t len32;
  std::memcpy(&len32, rec, 4);
  if (len32 == 0 || len32 == 0xffffffffu) return false;  // terminator / 64-bit DWARF
  body = rec + 4;
  end = body + len32;
  return true;
}

bool parse_cie(const std::uint8_t* cie, cie_info& out) {
  const std::uint8_t* body;
  const std::uint8_t* end;
  if (!record_bounds(cie, body, end)) return false;
  cfi_reader r(body, end);
  if (r.fixed<std::uint32_t>() != 0) return false;  // CIE id
  const std::uint8_t version = r.u8();
  const char* aug = reinterpret_cast<const char*>(r.pos());
  const std::size_t aug_len = strnlen(aug, static_cast<std::size_t>(end - r.pos()));
  r.skip(aug_len + 1);
  if (version >= 4) r.skip(2);  // address size, segment size
  out.code_align = r.uleb();
  out.data_align = r.sleb();
  out.ra_reg = version == 1 ? r.u8() : static_cast<unsigned>(r.uleb());
  if (aug_len > 0 && aug[0] == 'z') {
    out.has_augmentation_data = true;
    const std::uint64_t len = r.uleb();
    const std::uint8_t* data_end = r.pos() + len;
    for (std::size_t i = 1; i < aug_len; ++i) {
      switch (aug[i]) {
        case 'R': out.fde_encoding = r.u8(); break;
        case 'L': r.u8(); break;
        case 'P': {
          const std::uint8_t enc = r.u8();
          r.encoded(enc & 0x7f, /*apply=*/false);
          break;
        }
        case 'S': out.signal_frame = true; break;
        default: break;  // unknown: the length lets us skip the rest
      }
    }
    if (r.pos() > data_end) return false;
    out.instructions = data_end;
  } else if (aug_len > 0) {
    return false;  // augmentation we cannot skip
  } else {
    out.instructions = r.pos();
  }
  out.end = end;
  return r.ok();
}

// Runs CFA instructions until the location passes `target`.
bool run_cfa_program(const std::uint8_t* begin, const std::uint8_t* end, const cie_info& cie,
                     std::uint64_t loc, std::uint64_t target, cfa_row& row,
                     const cfa_row& initial) {
  cfi_reader r(begin, end);
  cfa_row stack[8];
  int depth = 0;
  const auto set_reg = [&](std::uint64_t reg, std::uint8_t how, std::int64_t offset) {
    if (reg == cie.ra_reg) {
      row.ra_how = how;
      row.ra_offset = offset;
    } else if (reg == reg_rbp) {
      row.rbp_how = how;
      row.rbp_offset = offset;
    }
  };
  const auto restore_reg = [&](std::uint64_t reg) {
    if (reg == cie.ra_reg) {
      row.ra_how = initial.ra_how;
      row.ra_offset = initial.ra_offset;
    } else if (reg == reg_rbp) {
      row.rbp_how = initial.rbp_how;
      row.rbp_offset = initial.rbp_offset;
    }
  };
  while (!r.at_end() && r.ok()) {
    const std::uint8_t op = r.u8();
    const std::uint8_t high = op & 0xc0;
    const std::uint8_t low = op & 0x3f;
    if (high == 0x40) {  // advance_loc
      loc += low * cie.code_align;
      if (loc > target) return true;
      continue;
    }
    if (high == 0x80) {  // offset
      set_reg(low, 1, static_cast<std::int64_t>(r.uleb()) * cie.data_align);
      continue;
    }
    if (high == 0xc0) {  // restore
      restore_reg(low);
      continue;
    }
    switch (op) {
      case 0x00: break;  // nop
      case 0x01: loc = r.encoded(cie.fde_encoding); if (loc > target) return true; break;
      case 0x02: loc += r.u8() * cie.code_align; if (loc > target) return true; break;
      case 0x03: loc += r.fixed<std::uint16_t>() * cie.code_align; if (loc > target) return true; break;
      case 0x04: loc += r.fixed<std::uint32_t>() * cie.code_align; if (loc > target) return true; break;
      case 0x05: {  // offset_extended
        const auto reg = r.uleb();
        set_reg(reg, 1, static_cast<std::int64_t>(r.uleb()) * cie.data_align);
        break;
      }
      case 0x06: restore_reg(r.uleb()); break;  // restore_extended
      case 0x07: {  // undefined
        const auto reg = r.uleb();
        if (reg == cie.ra_reg) row.ra_how = 2;
        if (reg == reg_rbp) row.rbp_how = 0;
        break;
      }
      case 0x08: set_reg(r.uleb(), 0, 0); break;  // same_value
      case 0x09: {  // register
        const auto reg = r.uleb();
        r.uleb();
        if (reg == cie.ra_reg || reg == reg_rbp) set_reg(reg, 3, 0);
        break;
      }
      case 0x0a:  // remember_state
        if (depth == 8) return false;
        stack[depth++] = row;
        break;
      case 0x0b:  // restore_state
        if (depth == 0) return false;
        row = stack[--depth];
        break;
      case 0x0c:  // def_cfa
        row.cfa_reg = static_cast<unsigned>(r.uleb());
        row.cfa_offset = static_cast<std::int64_t>(r.uleb());
        row.cfa_unsupported = false;
        break;
      case 0x0d: row.cfa_reg = static_cast<unsigned>(r.uleb()); row.cfa_unsupported = false; break;
      case 0x0e: row.cfa_offset = static_cast<std::int64_t>(r.uleb()); break;
      case 0x0f:  // def_cfa_expression
        row.cfa_unsupported = true;
        r.skip(r.uleb());
        break;
      case 0x10: {  // expression
        const auto reg = r.uleb();
        r.skip(r.uleb());
        if (reg == cie.ra_reg || reg == reg_rbp) set_reg(reg, 3, 0);
        break;
      }
      case 0x11: {  // offset_extended_sf
        const auto reg = r.uleb();
        set_reg(reg, 1, r.sleb() * cie.data_align);
        break;
      }
      case 0x12:  // def_cfa_sf
        row.cfa_reg = static_cast<unsigned>(r.uleb());
        row.cfa_offset = r.sleb() * cie.data_align;
        row.cfa_unsupported = false;
        break;
      case 0x13: row.cfa_offset = r.sleb() * cie.data_align; break;  // def_cfa_offset_sf
      case 0x14:                                                      // val_offset
      case 0x15: {                                                    // val_offset_sf
        const auto reg = r.uleb();
        if (op == 0x14) r.uleb(); else r.sleb();
        if (reg == cie.ra_reg || reg == reg_rbp) set_reg(reg, 3, 0);
        break;
      }
      case 0x16: {  // val_expression
        const auto reg = r.uleb();
        r.skip(r.uleb());
        if (reg == cie.ra_reg || reg == reg_rbp) set_reg(reg, 3, 0);
        break;
      }
      case 0x2e: r.uleb(); break;  // GNU_args_size
      case 0x2f: {                 // GNU_negative_offset_extended
        const auto reg = r.uleb();
        set_reg(reg, 1, -static_cast<std::int64_t>(r.uleb()) * cie.data_align);
        break;
      }
      default: return false;
    }
  }
  return r.ok();
}

unwind_rule compute_rule(std::uint64_t lookup_pc) {
  unwind_rule rule;
  dwarf_eh_bases bases{};
  const auto* fde = static_cast<const std::uint8_t*>(
      _Unwind_Find_FDE(reinterpret_cast<void*>(lookup_pc), &bases));
  if (fde == nullptr) {
    rule.status = rule_outermost;
    return rule;
  }
  rule.status = rule_unsupported;
  const std::uint8_t* body;
  const std::uint8_t* end;
  if (!record_bounds(fde, body, end)) return rule;
  std::int32_t cie_delta;
  std::memcpy(&cie_delta, body, 4);
  const std::uint8_t* cie = body - cie_delta;
  cie_info info;
  if (!parse_cie(cie, info) || info.signal_frame) return rule;
  cfi_reader r(body + 4, end);
  const std::uint64_t pc_begin = r.encoded(info.fde_encoding);
  r.encoded(info.fde_encoding & 0x0f, /*apply=*/false);  // pc_range
  if (info.has_augmentation_data) r.skip(r.uleb());
  if (!r.ok()) return rule;

  cfa_row initial;
  if (!run_cfa_program(info.instructions, info.end, info, pc_begin, ~std::uint64_t{0}, initial,
                       initial)) {
    return rule;
  }
  cfa_row row = initial;
  if (!run_cfa_program(r.pos(), end, info, pc_begin, lookup_pc, row, initial)) return rule;

  if (row.ra_how == 2) {
    rule.status = rule_outermost;
    return rule;
  }
  if (row.cfa_unsupported || (row.cfa_reg != reg_rsp && row.cfa_reg != reg_rbp) ||
      row.ra_how != 1 || row.rbp_how == 3) {
    return rule;
  }
  rule.status = rule_ok;
  rule.cfa_reg = static_cast<std::uint8_t>(row.cfa_reg);
  rule.cfa_offset = static_cast<std::int32_t>(row.cfa_offset);
  rule.ra_offset = static_cast<std::int32_t>(row.ra_offset);
  rule.rbp_saved = row.rbp_how == 1;
  rule.rbp_offset = static_cast<std::int32_t>(row.rbp_offset);
  return rule;
}

// Whether `v` is a plausible return address: code with unwind information
// right after a call instruction (E8 rel32, or FF /2 in its 2..7-byte forms).
bool looks_like_return_address(std::uint64_t v) {
  dwarf_eh_bases bases{};
  if (_Unwind_Find_FDE(reinterpret_cast<void*>(v - 1), &bases) == nullptr) return false;
  const auto func = reinterpret_cast<std::uint64_t>(bases.func);
  const auto* p = reinterpret_cast<const std::uint8_t*>(v);
  if (v - 5 >= func && p[-5] == 0xe8) return true;
  for (const int len : {2, 3, 4, 6, 7}) {
    if (v - len >= func && p[-len] == 0xff && ((p[-len + 1] >> 3) & 7) == 2) return true;
  }
  return false;
}

// ---- per-thread state ----

struct thread_state {
  static constexpr std::size_t slots = 4096;  // power of two
  struct entry {
    std::uint64_t pc = 0;
    unwind_rule rule;
  };
  std::unique_ptr<entry[]> table{new entry[slots]};
  std::size_t used = 0;
  std::uint64_t stack_lo = 0;
  std::uint64_t stack_hi = 0;
  std::uint64_t generation = 0;
  std::shared_ptr<const std::vector<address_range>> ranges;
  unwinder_stats stats;

  // Note [Path cache]: per call path, where the first application frame's
  // return address and registers are, relative to the capture's own rsp.
  struct path_entry {
    std::uint64_t key = 0;
    std::int32_t ra_slot = 0;   // the first shown return address is at sp0 + ra_slot
    std::int32_t sp_offset = 0;  // that frame's rsp - sp0
    std::int32_t bp_slot = -1;   // its rbp was saved at sp0 + bp_slot; -1: rbp at entry
    // The return address into the innermost internal frame's caller chain
    // just below it: at sp0 + inner_ra_slot, into an internal module; -1:
    // none was read (Note [Path cache], two paths behind one key).
    std::int32_t inner_ra_slot = -1;
  };
  static constexpr std::size_t path_slots = 256;
  std::array<path_entry, path_slots> paths{};
  path_entry& path_for(std::uint64_t key) {
    return paths[(key * 0x9e3779b97f4a7c15ull >> 56) & (path_slots - 1)];
  }

  thread_state() {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* addr = nullptr;
      std::size_t size = 0;
      if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
        stack_lo = reinterpret_cast<std::uint64_t>(addr);
        stack_hi = stack_lo + size;
      }
      pthread_attr_destroy(&attr);
    }
  }

  void refresh_modules() {
    const auto g = modules_generation.load(std::memory_order_acquire);
    if (g == generation) return;
    std::lock_guard lock(modules().mutex);
    ranges = modules().ranges;
    generation = modules_generation.load(std::memory_order_relaxed);
    std::fill(table.get(), table.get() + slots, entry{});
    used = 0;
    paths.fill(path_entry{});
  }

  // `pc` is the address looked up: the current pc for the first frame,
  // return address - 1 for callers (so that a call at a function's end
  // finds the caller's own FDE). `shown` is the address reported.
  const unwind_rule& rule_for(std::uint64_t pc, std::uint64_t shown) {
    std::size_t i = (pc * 0x9e3779b97f4a7c15ull >> 52) & (slots - 1);
    while (true) {
      entry& e = table[i];
      if (e.pc == pc) return e.rule;
      if (e.pc == 0) break;
      i = (i + 1) & (slots - 1);
    }
    if (used * 4 >= slots * 3) {  // too full: start over
      std::fill(table.get(), table.get() + slots, entry{});
      used = 0;
      i = (pc * 0x9e3779b97f4a7c15ull >> 52) & (slots - 1);
    }
    entry& e = table[i];
    e.pc = pc;
    e.rule = compute_rule(pc);
    e.rule.internal = in_internal_module(shown, *ranges) ||
                      (hide_static_cudart.load(std::memory_order_relaxed) &&
                       is_static_cudart_private(shown));
    e.rule.after_call = pc != shown && looks_like_return_address(shown);
    ++used;
    ++stats.rules_computed;
    return e.rule;
  }
};

// Note [Per-thread state outlives the thread's thread_locals]
// glibc's exit() destroys the main thread's thread_locals first and runs the
// atexit handlers and static destructors afterwards; a program's static
// whose destructor frees device memory makes a CUDA call then, which is
// captured like any other. A thread's state is therefore not a thread_local
// object: it is allocated at the thread's first capture and found through a
// thread_local pointer, which has no destructor. A pthread key owns it and
// frees it when the thread ends: key destructors run after every
// thread_local destructor of the thread (which may still call CUDA), and
// never for the main thread when the process exits, whose state lives until
// the very end. A capture from a later key destructor (another library's)
// makes a new state, freed in the next round of key destructors. So memory
// is one state per live thread that captured (about 134 KiB, docs/injection.md).
std::atomic<std::size_t> live_states{0};
thread_local thread_state* current_state = nullptr;

void free_thread_state(void* state) {
  delete static_cast<thread_state*>(state);
  current_state = nullptr;
  live_states.fetch_sub(1, std::memory_order_relaxed);
}

struct owner_key {
  pthread_key_t key{};
  bool created = false;  // false: keys ran out, states leak at thread exit
};

const owner_key& state_key() {
  static const owner_key key = [] {
    owner_key k;
    k.created = pthread_key_create(&k.key, free_thread_state) == 0;
    return k;
  }();
  return key;
}

thread_state& this_thread() {
  thread_state* state = current_state;
  if (state == nullptr) [[unlikely]] {
    state = new thread_state;
    live_states.fetch_add(1, std::memory_order_relaxed);
    if (const auto& key = state_key(); key.created) pthread_setspecific(key.key, state);
    current_state = state;
  }
  state->refresh_modules();
  return *state;
}

// Note [Stack scanning]: the first application return address above `from`.
bool scan_for_caller(thread_state& state, std::uint64_t from, std::uint64_t hi,
                     std::uint64_t& pc, std::uint64_t& sp) {
  ++state.stats.scans;
  const std::uint64_t end = std::min(hi - 8, from + 65536);
  for (std::uint64_t at = from; at <= end; at += 8) {
    std::uint64_t v;
    std::memcpy(&v, reinterpret_cast<const void*>(at), 8);
    if (v < 0x10000 || in_internal_module(v, *state.ranges)) continue;
    if (!looks_like_return_address(v)) continue;
    pc = v;
    sp = at + 8;
    return true;
  }
  return false;
}

struct slow_capture {
  std::span<std::uint64_t> out;
  std::size_t written = 0;
  std::size_t seen = 0;
  thread_state* state = nullptr;
};

_Unwind_Reason_Code slow_step(_Unwind_Context* ctx, void* arg) {
  auto* c = static_cast<slow_capture*>(arg);
  int before = 0;
  const std::uint64_t ip = _Unwind_GetIPInfo(ctx, &before);
  if (ip == 0 || c->written >= c->out.size()) return _URC_END_OF_STACK;
  if (++c->seen > 512) return _URC_END_OF_STACK;
  if (c->seen == 1) return _URC_NO_REASON;  // capture_stack_slow itself
  const std::uint64_t lookup = before ? ip : ip - 1;
  if (c->state->rule_for(lookup, ip).internal) return _URC_NO_REASON;
  c->out[c->written++] = ip;
  return _URC_NO_REASON;
}

}  // namespace

void set_internal_modules(std::span<const std::string_view> name_parts) {
  auto& config = modules();
  std::lock_guard lock(config.mutex);
  config.name_parts.assign(name_parts.begin(), name_parts.end());
  auto ranges = std::make_shared<std::vector<address_range>>();
  dl_iterate_phdr(collect_ranges, ranges.get());
  config.ranges = std::move(ranges);
  modules_generation.fetch_add(1, std::memory_order_release);
}

void set_hide_static_cudart(bool hide) {
  hide_static_cudart.store(hide, std::memory_order_relaxed);
  modules_generation.fetch_add(1, std::memory_order_release);
}

std::size_t capture_stack_slow(std::span<std::uint64_t> out) noexcept {
  if (out.empty()) return 0;
  thread_state& state = this_thread();
  ++state.stats.slow_captures;
  slow_capture c{out, 0, 0, &state};
  _Unwind_Backtrace(slow_step, &c);
  return c.written;
}

__attribute__((noinline)) std::size_t capture_stack(std::span<std::uint64_t> out,
                                                   std::uint64_t path_key) noexcept {
  if (out.empty()) return 0;
  thread_state& state = this_thread();
  ++state.stats.captures;
  std::uint64_t pc, sp, bp;
  asm volatile(
      "lea 0(%%rip), %0\n\t"
      "mov %%rsp, %1\n\t"
      "mov %%rbp, %2"
      : "=r"(pc), "=r"(sp), "=r"(bp));
  const std::uint64_t lo = sp;
  const std::uint64_t hi = state.stack_hi;
  if (hi == 0 || sp < state.stack_lo || sp >= hi) return capture_stack_slow(out);
  const std::uint64_t sp0 = sp;
  const auto in_stack = [lo, hi](std::uint64_t at) { return at >= lo && at + 8 <= hi; };

  std::size_t written = 0;
  std::uint64_t lookup = pc;
  std::uint64_t shown = pc;
  bool first = true;  // our own frame is never shown
  bool learning = path_key != 0;
  std::int64_t bp_slot = -1;
  std::uint64_t last_ra_at = 0;
  std::uint64_t inner_ra_at = 0;  // the return address slot read before last_ra_at

  // Note [Path cache]: jump over the internal frames of a known path.
  if (path_key != 0) {
    auto& path = state.path_for(path_key);
    if (path.key == path_key) {
      // The word at sp0 + slot, if it is a return address (code that follows
      // a call) inside the internal modules or outside them, as `internal`
      // asks; 0 otherwise.
      const auto return_address_at = [&](std::int64_t slot, bool internal) -> std::uint64_t {
        const std::uint64_t at = sp0 + slot;
        if (!in_stack(at)) return 0;
        std::uint64_t ra;
        std::memcpy(&ra, reinterpret_cast<const void*>(at), 8);
        if (ra <= 0x10000) return 0;
        const unwind_rule& r = state.rule_for(ra - 1, ra);
        return r.internal == internal && r.after_call ? ra : 0;
      };
      const std::uint64_t ra = return_address_at(path.ra_slot, false);
      bool ok = ra != 0;
      // Two paths can share a key: a driver launch made by the program and
      // one the runtime makes for <<<>>> (Note [Launches without their
      // runtime callback]). The internal frame below the cached one must
      // still be internal, or the cached slot lies in the program's frames.
      if (ok && path.inner_ra_slot >= 0) ok = return_address_at(path.inner_ra_slot, true) != 0;
      std::uint64_t frame_bp = bp;
      if (ok && path.bp_slot >= 0) {
        ok = in_stack(sp0 + path.bp_slot);
        if (ok) std::memcpy(&frame_bp, reinterpret_cast<const void*>(sp0 + path.bp_slot), 8);
      }
      if (ok) {
        ++state.stats.path_hits;
        sp = sp0 + path.sp_offset;
        bp = frame_bp;
        lookup = ra - 1;
        shown = ra;
        first = false;
        learning = false;
      } else {
        ++state.stats.path_misses;
        path.key = 0;
      }
    }
  }

  for (int frames = 0; frames < 512 && written < out.size(); ++frames) {
    const unwind_rule& rule = state.rule_for(lookup, shown);
    if (!first && !rule.internal) {
      if (learning && written == 0 && last_ra_at != 0) {
        state.path_for(path_key) = {
            path_key, static_cast<std::int32_t>(last_ra_at - sp0),
            static_cast<std::int32_t>(sp - sp0), static_cast<std::int32_t>(bp_slot),
            inner_ra_at != 0 ? static_cast<std::int32_t>(inner_ra_at - sp0) : -1};
      }
      learning = false;
      out[written++] = shown;
    }
    first = false;
    if (rule.status == rule_outermost) {
      if (rule.internal && written == 0 && scan_for_caller(state, sp, hi, shown, sp)) {
        lookup = shown - 1;
        learning = false;  // a scanned frame is a guess: never cached
        continue;
      }
      return written;
    }
    if (rule.status != rule_ok) return capture_stack_slow(out);
    const std::uint64_t base = rule.cfa_reg == reg_rsp ? sp : bp;
    const std::uint64_t cfa = base + static_cast<std::int64_t>(rule.cfa_offset);
    const std::uint64_t ra_at = cfa + static_cast<std::int64_t>(rule.ra_offset);
    if (cfa <= sp || cfa > hi || !in_stack(ra_at)) return written;
    std::uint64_t ra;
    std::memcpy(&ra, reinterpret_cast<const void*>(ra_at), 8);
    if (rule.rbp_saved) {
      const std::uint64_t bp_at = cfa + static_cast<std::int64_t>(rule.rbp_offset);
      if (!in_stack(bp_at)) return written;
      std::memcpy(&bp, reinterpret_cast<const void*>(bp_at), 8);
      bp_slot = static_cast<std::int64_t>(bp_at - sp0);
    }
    if (ra == 0) return written;
    inner_ra_at = last_ra_at;
    last_ra_at = ra_at;
    sp = cfa;
    shown = ra;
    lookup = ra - 1;
  }
  return written;
}

unwinder_stats current_thread_unwinder_stats() noexcept { return this_thread().stats; }

std::size_t live_unwinder_states() noexcept { return live_states.load(std::memory_order_relaxed); }

}  // namespace streamsan::injection
