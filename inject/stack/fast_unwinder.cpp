#include "inject/stack/fast_unwinder.h"

#include <link.h>
#include <pthread.h>
#include <unwind.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "inject/stack/symbol_names.h"
#include "sanitizer/log/thread_exit_key.h"

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

// Note [Realigned frames]
// GCC realigns the stack of a function that needs more than 16-byte
// alignment and also reads its stack arguments or calls alloca through a
// "DRAP" register: in the body, the CFA is the word saved just below the
// frame pointer (DW_CFA_def_cfa_expression: DW_OP_breg6 (rbp) k;
// DW_OP_deref) and rbp is saved where rbp points (DW_CFA_expression: r6
// (DW_OP_breg6 (rbp) j)). Those two expression shapes are followed with one
// more load; any other expression still sends the capture to
// _Unwind_Backtrace.
constexpr std::uint8_t cfa_at_rbp_word = 0xff;  // cfa_reg: CFA = *(rbp + cfa_offset)

struct unwind_rule {
  std::uint8_t status = rule_empty;
  std::uint8_t cfa_reg = reg_rsp;  // or cfa_at_rbp_word
  bool rbp_saved = false;
  bool rbp_at_rbp = false;  // saved at rbp + rbp_offset, not CFA + rbp_offset
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
  unsigned cfa_reg = reg_rsp;  // or cfa_at_rbp_word (Note [Realigned frames])
  std::int64_t cfa_offset = 8;
  bool cfa_unsupported = false;
  // For RA and RBP: 0 = same value / undefined-for-rbp, 1 = saved at
  // CFA+offset, 2 = undefined (RA: outermost), 3 = unsupported rule, 4 =
  // saved at rbp+offset (RBP only: Note [Realigned frames]).
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

// The DWARF call frame instructions (DWARF 5, 6.4.2) that matter to a
// frame's CFA, return address and saved RBP; every other register's rule is
// read and dropped. One family of instructions a method.
class cfa_program {
 public:
  // What an instruction left the interpreter to do.
  enum class step : std::uint8_t { go_on, reached, unsupported };

  cfa_program(cfi_reader& r, const cie_info& cie, std::uint64_t loc, std::uint64_t target,
              cfa_row& row, const cfa_row& initial)
      : r_(r), cie_(cie), loc_(loc), target_(target), row_(row), initial_(initial) {}

  // Runs instructions until the location passes `target`: false for one
  // it cannot follow (an unknown opcode, a state stack deeper than 8).
  bool run() {
    while (!r_.at_end() && r_.ok()) {
      switch (execute(r_.u8())) {
        case step::go_on: break;
        case step::reached: return true;
        case step::unsupported: return false;
      }
    }
    return r_.ok();
  }

 private:
  step execute(std::uint8_t op) {
    const std::uint8_t low = op & 0x3f;
    switch (op & 0xc0) {
      case 0x40: return advance(low * cie_.code_align);  // advance_loc
      case 0x80:                                          // offset
        set_reg(low, 1, static_cast<std::int64_t>(r_.uleb()) * cie_.data_align);
        return step::go_on;
      case 0xc0: restore_reg(low); return step::go_on;  // restore
      default: break;
    }
    if (op <= 0x04) return location(op);
    if (op == 0x0a || op == 0x0b) return state(op);
    if ((op >= 0x0c && op <= 0x0f) || op == 0x12 || op == 0x13) return cfa_rule(op);
    return register_rule(op);
  }

  step advance(std::uint64_t by) {
    loc_ += by;
    return loc_ > target_ ? step::reached : step::go_on;
  }

  // nop, set_loc, advance_loc1/2/4.
  step location(std::uint8_t op) {
    switch (op) {
      case 0x00: return step::go_on;
      case 0x01:
        loc_ = r_.encoded(cie_.fde_encoding);
        return loc_ > target_ ? step::reached : step::go_on;
      case 0x02: return advance(r_.u8() * cie_.code_align);
      case 0x03: return advance(r_.fixed<std::uint16_t>() * cie_.code_align);
      default: return advance(r_.fixed<std::uint32_t>() * cie_.code_align);
    }
  }

  // remember_state, restore_state.
  step state(std::uint8_t op) {
    if (op == 0x0a) {
      if (depth_ == 8) return step::unsupported;
      stack_[depth_++] = row_;
    } else {
      if (depth_ == 0) return step::unsupported;
      row_ = stack_[--depth_];
    }
    return step::go_on;
  }

  // def_cfa, def_cfa_register, def_cfa_offset, def_cfa_expression,
  // def_cfa_sf, def_cfa_offset_sf.
  step cfa_rule(std::uint8_t op) {
    switch (op) {
      case 0x0c:
        row_.cfa_reg = static_cast<unsigned>(r_.uleb());
        row_.cfa_offset = static_cast<std::int64_t>(r_.uleb());
        row_.cfa_unsupported = false;
        break;
      case 0x0d:
        row_.cfa_reg = static_cast<unsigned>(r_.uleb());
        row_.cfa_unsupported = false;
        break;
      case 0x0e: row_.cfa_offset = static_cast<std::int64_t>(r_.uleb()); break;
      case 0x0f: {
        const std::uint64_t length = r_.uleb();
        const std::uint8_t* at = r_.pos();
        r_.skip(length);
        const auto k = r_.ok() ? rbp_relative(at, length, /*deref=*/true) : std::nullopt;
        row_.cfa_unsupported = !k;
        if (k) {
          row_.cfa_reg = cfa_at_rbp_word;
          row_.cfa_offset = *k;
        }
        break;
      }
      case 0x12:
        row_.cfa_reg = static_cast<unsigned>(r_.uleb());
        row_.cfa_offset = r_.sleb() * cie_.data_align;
        row_.cfa_unsupported = false;
        break;
      default: row_.cfa_offset = r_.sleb() * cie_.data_align; break;  // 0x13
    }
    return step::go_on;
  }

  // The rules of one register: offset_extended(_sf), restore_extended,
  // undefined, same_value, register, (val_)expression, val_offset(_sf),
  // GNU_args_size, GNU_negative_offset_extended.
  step register_rule(std::uint8_t op) {
    switch (op) {
      case 0x05: {
        const auto reg = r_.uleb();
        set_reg(reg, 1, static_cast<std::int64_t>(r_.uleb()) * cie_.data_align);
        return step::go_on;
      }
      case 0x06: restore_reg(r_.uleb()); return step::go_on;
      case 0x07: undefine(r_.uleb()); return step::go_on;
      case 0x08: set_reg(r_.uleb(), 0, 0); return step::go_on;
      case 0x09: unsupported_rule(r_.uleb(), [this] { r_.uleb(); }); return step::go_on;
      case 0x10: {  // expression: saved at the address it computes
        const auto reg = r_.uleb();
        const std::uint64_t length = r_.uleb();
        const std::uint8_t* at = r_.pos();
        r_.skip(length);
        const auto j = reg == reg_rbp && r_.ok() ? rbp_relative(at, length, /*deref=*/false)
                                                 : std::nullopt;
        if (j) {
          set_reg(reg, 4, *j);
        } else {
          unsupported_rule(reg, [] {});  // its operands are skipped already
        }
        return step::go_on;
      }
      case 0x16: unsupported_rule(r_.uleb(), [this] { r_.skip(r_.uleb()); }); return step::go_on;
      case 0x11: {
        const auto reg = r_.uleb();
        set_reg(reg, 1, r_.sleb() * cie_.data_align);
        return step::go_on;
      }
      case 0x14: unsupported_rule(r_.uleb(), [this] { r_.uleb(); }); return step::go_on;
      case 0x15: unsupported_rule(r_.uleb(), [this] { r_.sleb(); }); return step::go_on;
      case 0x2e: r_.uleb(); return step::go_on;
      case 0x2f: {
        const auto reg = r_.uleb();
        set_reg(reg, 1, -static_cast<std::int64_t>(r_.uleb()) * cie_.data_align);
        return step::go_on;
      }
      default: return step::unsupported;
    }
  }

  void set_reg(std::uint64_t reg, std::uint8_t how, std::int64_t offset) {
    if (reg == cie_.ra_reg) {
      row_.ra_how = how;
      row_.ra_offset = offset;
    } else if (reg == reg_rbp) {
      row_.rbp_how = how;
      row_.rbp_offset = offset;
    }
  }

  void restore_reg(std::uint64_t reg) {
    if (reg == cie_.ra_reg) {
      row_.ra_how = initial_.ra_how;
      row_.ra_offset = initial_.ra_offset;
    } else if (reg == reg_rbp) {
      row_.rbp_how = initial_.rbp_how;
      row_.rbp_offset = initial_.rbp_offset;
    }
  }

  void undefine(std::uint64_t reg) {
    if (reg == cie_.ra_reg) row_.ra_how = 2;
    if (reg == reg_rbp) row_.rbp_how = 0;
  }

  // Note [Realigned frames]: the offset k of an expression that is exactly
  // DW_OP_breg6 k (then DW_OP_deref when `deref`); nullopt for any other.
  std::optional<std::int64_t> rbp_relative(const std::uint8_t* at, std::uint64_t length,
                                           bool deref) const {
    if (length < 2 || at == nullptr || at[0] != 0x76) return std::nullopt;
    cfi_reader e(at + 1, at + length);
    const std::int64_t k = e.sleb();
    if (!e.ok()) return std::nullopt;
    if (deref) {
      if (e.at_end() || e.u8() != 0x06) return std::nullopt;
    }
    if (!e.at_end()) return std::nullopt;
    return k;
  }

  // A rule the walk cannot follow (in another register, or an expression):
  // its operands are skipped, and for RA or RBP it makes the row unusable.
  template <class Skip>
  void unsupported_rule(std::uint64_t reg, Skip skip_operands) {
    skip_operands();
    if (reg == cie_.ra_reg || reg == reg_rbp) set_reg(reg, 3, 0);
  }

  cfi_reader& r_;
  const cie_info& cie_;
  std::uint64_t loc_;
  const std::uint64_t target_;
  cfa_row& row_;
  const cfa_row& initial_;
  cfa_row stack_[8];
  int depth_ = 0;
};

// Runs CFA instructions until the location passes `target`.
bool run_cfa_program(const std::uint8_t* begin, const std::uint8_t* end, const cie_info& cie,
                     std::uint64_t loc, std::uint64_t target, cfa_row& row,
                     const cfa_row& initial) {
  cfi_reader r(begin, end);
  return cfa_program(r, cie, loc, target, row, initial).run();
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
  if (row.cfa_unsupported ||
      (row.cfa_reg != reg_rsp && row.cfa_reg != reg_rbp && row.cfa_reg != cfa_at_rbp_word) ||
      row.ra_how != 1 || row.rbp_how == 3) {
    return rule;
  }
  rule.status = rule_ok;
  rule.cfa_reg = static_cast<std::uint8_t>(row.cfa_reg);
  rule.cfa_offset = static_cast<std::int32_t>(row.cfa_offset);
  rule.ra_offset = static_cast<std::int32_t>(row.ra_offset);
  rule.rbp_saved = row.rbp_how == 1 || row.rbp_how == 4;
  rule.rbp_at_rbp = row.rbp_how == 4;
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

// A counter of this thread's, which all_threads_unwinder_stats() reads from
// another thread: one writer, so a relaxed load and store (plain moves) and
// no read-modify-write.
[[gnu::always_inline]] inline void bump(std::uint64_t& counter) noexcept {
  __atomic_store_n(&counter, __atomic_load_n(&counter, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

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
  // Note [The unwinder's state in the caller's thread_local]: the slot that
  // holds this state, emptied when it is freed.
  unwinder_slot* slot = nullptr;

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
    bool operator==(const path_entry&) const noexcept = default;
  };
  static constexpr std::size_t path_slots = 256;
  std::array<path_entry, path_slots> paths{};
  path_entry& path_for(std::uint64_t key) {
    return paths[(key * 0x9e3779b97f4a7c15ull >> 56) & (path_slots - 1)];
  }

  // Note [A repeated walk is read back]: per path key, the application
  // part of the last walk that resumed from the path cache: where it
  // started, every stack word it read and what it wrote.
  struct walk_memo {
    static constexpr std::size_t max_reads = 64;
    static constexpr std::size_t max_frames = 32;
    std::uint64_t key = 0;  // 0: empty
    // The key whose walks lately differed from the memo, and how many did
    // in a row: a walk is recorded for the first few and then one in 16.
    std::uint64_t failing_key = 0;
    std::uint32_t failures = 0;
    std::uint64_t sp0 = 0, bp = 0, lookup = 0;
    bool bp_used = false;   // whether the walk used `bp`, the resumed frame's rbp
    std::size_t limit = 0;  // the output's size
    std::size_t reads = 0, written = 0;
    std::array<std::int32_t, max_reads> read_at{};  // offsets from sp0
    std::array<std::uint64_t, max_reads> read_word{};
    std::array<std::uint64_t, max_frames> frames{};
    // Note [A walk read back before its resume]: the path entry the walk
    // resumed from, and the word at its inner_ra_slot then.
    path_entry path;
    std::uint64_t inner_ra = 0;
  };
  // Note [A memo per start]: slots by path key and sp0, about 36 KiB.
  static constexpr std::size_t memo_slots = 32;
  std::unique_ptr<walk_memo[]> memos;  // made at the first path hit
  // Null when they cannot be made: a capture (noexcept, inside a driver
  // callback) then walks without them.
  walk_memo* memo_for(std::uint64_t key, std::uint64_t sp0) noexcept {
    if (!memos) memos.reset(new (std::nothrow) walk_memo[memo_slots]);
    return existing_memo_for(key, sp0);
  }
  // The same, null while none were made.
  walk_memo* existing_memo_for(std::uint64_t key, std::uint64_t sp0) noexcept {
    if (!memos) return nullptr;
    // Starts a few words apart land in different slots.
    const std::uint64_t slot = (key * 0x9e3779b97f4a7c15ull >> 59) + (sp0 >> 3);
    return &memos[slot & (memo_slots - 1)];
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

  // Note [The thread's state at once]: the check inline, the refresh a call.
  [[gnu::always_inline]] void refresh_modules() {
    if (modules_generation.load(std::memory_order_acquire) != generation) [[unlikely]] {
      refresh_changed_modules();
    }
  }
  [[gnu::noinline]] void refresh_changed_modules() {
    std::lock_guard lock(modules().mutex);
    ranges = modules().ranges;
    generation = modules_generation.load(std::memory_order_relaxed);
    std::fill(table.get(), table.get() + slots, entry{});
    used = 0;
    paths.fill(path_entry{});
    if (memos) std::fill(memos.get(), memos.get() + memo_slots, walk_memo{});
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
    bump(stats.rules_computed);
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
// is one state per live thread that captured (about 170 KiB, 36 of them the
// memos of Note [A memo per start]).
thread_local thread_state* current_state = nullptr;

// The live states (live_unwinder_states() counts them), and the counters of
// those freed, for all_threads_unwinder_stats() (STREAMSAN_DEBUG: a
// program's other threads capture too, autograd's for one). Never
// destroyed: threads end after static destructors.
struct state_registry {
  std::mutex mutex;
  std::vector<const thread_state*> live;
  unwinder_stats ended;
};
state_registry& registry() {
  static auto* r = new state_registry;
  return *r;
}

void add_stats(unwinder_stats& into, const unwinder_stats& from) noexcept {
  const auto read = [](const std::uint64_t& c) { return __atomic_load_n(&c, __ATOMIC_RELAXED); };
  into.captures += read(from.captures);
  into.slow_captures += read(from.slow_captures);
  into.rules_computed += read(from.rules_computed);
  into.scans += read(from.scans);
  into.path_hits += read(from.path_hits);
  into.path_misses += read(from.path_misses);
  into.walks_read_back += read(from.walks_read_back);
}

void free_thread_state(void* state) {
  auto* s = static_cast<thread_state*>(state);
  {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    std::erase(r.live, s);
    add_stats(r.ended, s->stats);
  }
  if (s->slot != nullptr) s->slot->state = nullptr;
  delete s;
  current_state = nullptr;
}

// Without a key (keys ran out) states leak at thread exit.
const thread_exit_key& state_key() {
  static const thread_exit_key key(free_thread_state);
  return key;
}

// The calling thread's first capture (or its first after its state was
// freed): its state, made.
[[gnu::noinline]] thread_state* new_thread_state() {
  auto* state = new thread_state;
  {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    r.live.push_back(state);
  }
  state_key().set(state);
  current_state = state;
  return state;
}

// Note [The thread's state at once]
// Every capture asks for its thread's state, which is there, with the
// modules it knows current; but this_thread() was a call that saved the
// registers its rare paths (a new state, changed modules) need: some 45
// instructions a capture for a load and two compares. The answer found at
// once is inline; the rare paths are calls.
[[gnu::always_inline]] inline thread_state& this_thread() {
  thread_state* state = current_state;
  if (state == nullptr) [[unlikely]] state = new_thread_state();
  state->refresh_modules();
  return *state;
}

// Note [The unwinder's state in the caller's thread_local]: the thread's
// first capture through `slot`, or its first since its state was freed.
[[gnu::noinline]] thread_state& fill_slot(unwinder_slot& slot) {
  thread_state& state = this_thread();
  state.slot = &slot;
  slot.state = &state;
  return state;
}

[[gnu::always_inline]] inline thread_state& this_thread(unwinder_slot* slot) {
  if (slot == nullptr) return this_thread();
  auto* state = static_cast<thread_state*>(slot->state);
  if (state == nullptr) [[unlikely]] return fill_slot(*slot);
  state->refresh_modules();
  return *state;
}

// Note [Stack scanning]: the first application return address above `from`.
bool scan_for_caller(thread_state& state, std::uint64_t from, std::uint64_t hi,
                     std::uint64_t& pc, std::uint64_t& sp) {
  bump(state.stats.scans);
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
  bump(state.stats.slow_captures);
  slow_capture c{out, 0, 0, &state};
  _Unwind_Backtrace(slow_step, &c);
  return c.written;
}

namespace {

// One walk of capture_stack: where it stands on the stack, and what it
// learns for the path cache. Its steps are forced inline so that the walk
// stays in registers (the helpers out of line cost 25% more a capture in
// BM_CaptureStack).
struct stack_walk {
  std::uint64_t sp0;  // capture_stack's own rsp
  std::uint64_t hi;   // the top of the thread's stack
  std::uint64_t sp, bp;
  std::uint64_t lookup;  // the PC whose rule is next
  std::uint64_t shown;   // the address shown for that frame
  bool first = true;     // our own frame is never shown
  bool learning;
  std::int64_t bp_slot = -1;
  std::uint64_t last_ra_at = 0;
  std::uint64_t inner_ra_at = 0;  // the return address slot read before last_ra_at

  // Note [A repeated walk is read back]: the memo this walk fills, if any;
  // null once it cannot (too many reads, a scan, the slow path).
  thread_state::walk_memo* memo = nullptr;

  bool in_stack(std::uint64_t at) const noexcept { return at >= sp0 && at + 8 <= hi; }
  std::uint64_t word_at(std::uint64_t at) const noexcept {
    std::uint64_t w;
    std::memcpy(&w, reinterpret_cast<const void*>(at), 8);
    return w;
  }
  // Note [A repeated walk is read back]: a saved rbp counts only once the
  // walk uses it (a frame's CFA, or the next rbp, from it). A caller that
  // keeps data in rbp, which it saves like any callee-saved register,
  // would otherwise make every walk differ.
  bool bp_initial = true;           // w.bp is still the resumed frame's
  std::int64_t pending_bp_at = -1;  // else read here (from sp0), not yet used
  std::uint64_t pending_bp = 0;

  void record(std::int64_t offset, std::uint64_t word) noexcept {
    if (memo->reads == thread_state::walk_memo::max_reads) {
      memo = nullptr;
      return;
    }
    memo->read_at[memo->reads] = static_cast<std::int32_t>(offset);
    memo->read_word[memo->reads++] = word;
  }
  // A read that decides where the walk goes next: recorded for the memo.
  std::uint64_t step_word_at(std::uint64_t at) noexcept {
    const std::uint64_t word = word_at(at);
    if (memo != nullptr) record(static_cast<std::int64_t>(at - sp0), word);
    return word;
  }
  void load_bp(std::uint64_t at) noexcept {
    bp = word_at(at);
    bp_initial = false;
    pending_bp_at = static_cast<std::int64_t>(at - sp0);
    pending_bp = bp;
  }
  // Before the walk computes anything from rbp.
  void use_bp() noexcept {
    if (memo == nullptr) return;
    if (bp_initial) {
      memo->bp_used = true;
    } else if (pending_bp_at >= 0) {
      record(pending_bp_at, pending_bp);
      pending_bp_at = -1;
    }
  }
};

// The word at sp0 + slot, if it is a return address (code that follows a
// call) inside the internal modules or outside them, as `internal` asks;
// 0 otherwise.
[[gnu::always_inline]] inline std::uint64_t return_address_at(thread_state& state, const stack_walk& w, std::int64_t slot,
                                bool internal) noexcept {
  const std::uint64_t at = w.sp0 + slot;
  if (!w.in_stack(at)) return 0;
  const std::uint64_t ra = w.word_at(at);
  if (ra <= 0x10000) return 0;
  const unwind_rule& r = state.rule_for(ra - 1, ra);
  return r.internal == internal && r.after_call ? ra : 0;
}

// Note [Path cache]: jumps over the internal frames of a known path.
[[gnu::always_inline]] inline void resume_from_cached_path(thread_state& state, std::uint64_t path_key, stack_walk& w) noexcept {
  auto& path = state.path_for(path_key);
  if (path.key != path_key) return;
  const std::uint64_t ra = return_address_at(state, w, path.ra_slot, false);
  bool ok = ra != 0;
  // Two paths can share a key: a driver launch made by the program and one
  // the runtime makes for <<<>>> (Note [Launches without their runtime
  // callback]). The internal frame below the cached one must still be
  // internal, or the cached slot lies in the program's frames.
  if (ok && path.inner_ra_slot >= 0) ok = return_address_at(state, w, path.inner_ra_slot, true) != 0;
  std::uint64_t frame_bp = w.bp;
  if (ok && path.bp_slot >= 0) {
    ok = w.in_stack(w.sp0 + path.bp_slot);
    if (ok) frame_bp = w.word_at(w.sp0 + path.bp_slot);
  }
  if (!ok) {
    bump(state.stats.path_misses);
    path.key = 0;
    return;
  }
  bump(state.stats.path_hits);
  w.sp = w.sp0 + path.sp_offset;
  w.bp = frame_bp;
  w.lookup = ra - 1;
  w.shown = ra;
  w.first = false;
  w.learning = false;
}

// The first shown frame of a walk that started below the program: where it
// lies relative to sp0 is this path's cache entry.
[[gnu::always_inline]] inline void learn_path(thread_state& state, std::uint64_t path_key, const stack_walk& w) noexcept {
  state.path_for(path_key) = {
      path_key, static_cast<std::int32_t>(w.last_ra_at - w.sp0),
      static_cast<std::int32_t>(w.sp - w.sp0), static_cast<std::int32_t>(w.bp_slot),
      w.inner_ra_at != 0 ? static_cast<std::int32_t>(w.inner_ra_at - w.sp0) : -1};
}

enum class step_outcome : std::uint8_t { next, done, slow };

// Moves `w` to the caller of the frame `rule` describes.
[[gnu::always_inline]] inline step_outcome step_to_caller(const unwind_rule& rule, stack_walk& w) noexcept {
  if (rule.status != rule_ok) return step_outcome::slow;
  if (rule.cfa_reg != reg_rsp) w.use_bp();
  const std::uint64_t base = rule.cfa_reg == reg_rsp ? w.sp : w.bp;
  std::uint64_t cfa = base + static_cast<std::int64_t>(rule.cfa_offset);
  if (rule.cfa_reg == cfa_at_rbp_word) {  // Note [Realigned frames]
    if (!w.in_stack(cfa)) return step_outcome::done;
    cfa = w.step_word_at(cfa);
  }
  const std::uint64_t ra_at = cfa + static_cast<std::int64_t>(rule.ra_offset);
  if (cfa <= w.sp || cfa > w.hi || !w.in_stack(ra_at)) return step_outcome::done;
  const std::uint64_t ra = w.step_word_at(ra_at);
  if (rule.rbp_saved) {
    if (rule.rbp_at_rbp) w.use_bp();
    const std::uint64_t bp_at =
        (rule.rbp_at_rbp ? w.bp : cfa) + static_cast<std::int64_t>(rule.rbp_offset);
    if (!w.in_stack(bp_at)) return step_outcome::done;
    w.load_bp(bp_at);
    w.bp_slot = static_cast<std::int64_t>(bp_at - w.sp0);
  }
  if (ra == 0) return step_outcome::done;
  w.inner_ra_at = w.last_ra_at;
  w.last_ra_at = ra_at;
  w.sp = cfa;
  w.shown = ra;
  w.lookup = ra - 1;
  return step_outcome::next;
}

}  // namespace

// Note [A repeated walk is read back]
// The path cache (Note [Path cache]) jumps over the driver's frames, but
// the walk through the program's own frames still looks up an unwind rule
// per frame in a 128 KiB table: in wall-clock samples of the H200's launch
// loop the unwinder was 3.6% of the program thread, its hottest
// instruction that table's compare (bench/profile/critical_share.py). A
// program launching in a loop walks the same frames from the same stack
// address every time. The walk is a function of where it resumes (sp0, the
// frame's rbp and return address), of the stack words it reads and uses
// (return addresses, realigned CFAs, saved rbps that a later frame's CFA
// or rbp is computed from: stack_walk::use_bp) and of the rules, which depend
// only on the code (the memos go when the modules change, with the path
// cache). So a resumed walk is recorded: its start, each word it read, at
// its offset from sp0, and its frames. The next resumed walk under that key
// from the same start and into an output of the same size compares those
// words (a few per frame, in cache lines the program just used) and, when
// every one is unchanged, is that walk: it writes the recorded frames. Any
// differing word (another call site, a deeper or shallower path) makes it
// walk and record anew (for a path whose walks keep differing, only now
// and then: worth_recording). A walk that scanned for a caller, went the
// slow way or read more than max_reads words is not recorded.
//
// Note [A memo per start]
// A memo is only ever read back from its own sp0 (read_back and
// read_back_unresumed compare it first), yet there was one memo per path
// key: every launch of a program reaches the driver through the same one
// or two keys, so two call chains taking turns (two operators of a
// training step, each launching from its own depth of the stack) each
// overwrote the other's memo, and neither was read back. On the H200's MLP
// loop only 77,914 of the main thread's 240,404 captures were read back,
// and the walks held about a fifth of our launch path there. So the slots
// are chosen by key and sp0 together, and there are more of them: each
// chain that repeats from its own start keeps its own memo, unless two
// starts share a slot (then they take turns, as every chain of a key did
// before).
namespace {

constexpr std::size_t slow_walk = ~std::size_t{0};

// The memo's words read are still there from w.sp0: its frames, into `out`.
[[gnu::always_inline]] inline bool read_back_words(const thread_state::walk_memo& memo,
                                                   const stack_walk& w,
                                                   std::span<std::uint64_t> out) noexcept {
  for (std::size_t i = 0; i < memo.reads; ++i) {
    if (w.word_at(w.sp0 + memo.read_at[i]) != memo.read_word[i]) return false;
  }
  std::copy_n(memo.frames.begin(), memo.written, out.begin());
  return true;
}

[[gnu::always_inline]] inline bool read_back(const thread_state::walk_memo& memo,
                                             std::uint64_t path_key, const stack_walk& w,
                                             std::span<std::uint64_t> out) noexcept {
  if (memo.key != path_key || memo.sp0 != w.sp0 || (memo.bp_used && memo.bp != w.bp) ||
      memo.lookup != w.lookup || memo.limit != out.size()) {
    return false;
  }
  return read_back_words(memo, w, out);
}

// Note [A walk read back before its resume]
// A walk read back (Note [A repeated walk is read back]) first resumed from
// the path cache, whose checks look up the rules of the return addresses at
// the path's two slots (Note [Path cache]): two probes of the 128 KiB rule
// table and more than a quarter of a steady launch's unwinding. So a memo
// also keeps the path entry its walk resumed from and the word at the inner
// slot then.
// While the path entry is that one, a capture from the memo's sp0 whose
// words at both slots are the memo's would pass the same checks (the same
// words in the same stack, and rules depend only on the code, as the memo's
// own walk assumes) and resume where the memo starts; so when its saved rbp
// and its words read compare equal too, it is the memo's walk, read back
// without resuming, and counted as the path hit it would have been. Any
// other capture resumes and reads back as before.
[[gnu::always_inline]] inline bool read_back_unresumed(const thread_state::walk_memo& memo,
                                                       const thread_state::path_entry& path,
                                                       std::uint64_t path_key,
                                                       const stack_walk& w,
                                                       std::span<std::uint64_t> out) noexcept {
  if (memo.key != path_key || memo.path != path || memo.sp0 != w.sp0 ||
      memo.limit != out.size()) {
    return false;
  }
  // Each slot in the stack: the resume read it from this sp0, in this stack.
  if (w.word_at(w.sp0 + path.ra_slot) != memo.lookup + 1) return false;
  if (path.inner_ra_slot >= 0 && w.word_at(w.sp0 + path.inner_ra_slot) != memo.inner_ra) {
    return false;
  }
  if (memo.bp_used) {
    const std::uint64_t bp = path.bp_slot >= 0 ? w.word_at(w.sp0 + path.bp_slot) : w.bp;
    if (bp != memo.bp) return false;
  }
  return read_back_words(memo, w, out);
}

// After a walk was read back.
std::size_t read_back_done(thread_state& state, thread_state::walk_memo& memo) noexcept {
  bump(state.stats.walks_read_back);
  memo.failures = 0;
  return memo.written;
}

// A path whose walks keep differing (a caller that keeps data in a
// register it saves, say: Python's eval loop) would pay for recording
// every walk and never read one back; after a few such walks in a row,
// one in 16 is recorded.
bool worth_recording(thread_state::walk_memo& memo, std::uint64_t path_key) noexcept {
  if (memo.failing_key != path_key) {
    memo.failing_key = path_key;
    memo.failures = 0;
  }
  const std::uint32_t failures = memo.failures++;
  return failures < 4 || failures % 16 == 0;
}

// Where the walk resumed, from `path`; the key is set only once the walk is
// kept, so a memo being filled never matches.
void start_recording(thread_state::walk_memo& memo, const thread_state::path_entry& path,
                     stack_walk& w, std::size_t limit) noexcept {
  memo.key = 0;
  memo.path = path;
  // In the stack: the resume read it (Note [A walk read back before its resume]).
  memo.inner_ra = path.inner_ra_slot >= 0 ? w.word_at(w.sp0 + path.inner_ra_slot) : 0;
  memo.sp0 = w.sp0;
  memo.bp = w.bp;
  memo.lookup = w.lookup;
  memo.bp_used = false;
  memo.limit = limit;
  memo.reads = 0;
  memo.written = 0;
  w.memo = &memo;
}

void keep(thread_state::walk_memo& memo, std::uint64_t path_key,
          std::span<const std::uint64_t> written) noexcept {
  std::copy(written.begin(), written.end(), memo.frames.begin());
  memo.written = written.size();
  memo.key = path_key;
}

// The frames from `w` on, into `out`; slow_walk when only _Unwind_Backtrace
// can go on.
[[gnu::always_inline]] inline std::size_t walk(thread_state& state, std::uint64_t path_key,
                                               stack_walk& w, std::span<std::uint64_t> out) noexcept {
  std::size_t written = 0;
  for (int frames = 0; frames < 512 && written < out.size(); ++frames) {
    const unwind_rule& rule = state.rule_for(w.lookup, w.shown);
    if (!w.first && !rule.internal) {
      if (w.learning && written == 0 && w.last_ra_at != 0) learn_path(state, path_key, w);
      w.learning = false;
      out[written++] = w.shown;
    }
    w.first = false;
    if (rule.status == rule_outermost) {
      if (rule.internal && written == 0 && scan_for_caller(state, w.sp, w.hi, w.shown, w.sp)) {
        w.lookup = w.shown - 1;
        w.learning = false;  // a scanned frame is a guess: never cached
        w.memo = nullptr;    // nor recorded
        continue;
      }
      return written;
    }
    switch (step_to_caller(rule, w)) {
      case step_outcome::next: break;
      case step_outcome::done: return written;
      case step_outcome::slow: return slow_walk;
    }
  }
  return written;
}

}  // namespace

__attribute__((noinline)) std::size_t capture_stack(std::span<std::uint64_t> out,
                                                   std::uint64_t path_key,
                                                   unwinder_slot* slot) noexcept {
  if (out.empty()) return 0;
  thread_state& state = this_thread(slot);
  bump(state.stats.captures);
  std::uint64_t pc, sp, bp;
  asm volatile(
      "lea 0(%%rip), %0\n\t"
      "mov %%rsp, %1\n\t"
      "mov %%rbp, %2"
      : "=r"(pc), "=r"(sp), "=r"(bp));
  const std::uint64_t hi = state.stack_hi;
  if (hi == 0 || sp < state.stack_lo || sp >= hi) return capture_stack_slow(out);
  stack_walk w{.sp0 = sp, .hi = hi, .sp = sp, .bp = bp, .lookup = pc, .shown = pc,
               .learning = path_key != 0};
  if (path_key != 0) {
    const auto& path = state.path_for(path_key);
    if (auto* memo = state.existing_memo_for(path_key, w.sp0);
        memo != nullptr && read_back_unresumed(*memo, path, path_key, w, out)) {
      bump(state.stats.path_hits);
      return read_back_done(state, *memo);
    }
    resume_from_cached_path(state, path_key, w);
    if (!w.first) {  // resumed: Note [A repeated walk is read back]
      if (auto* memo = state.memo_for(path_key, w.sp0)) {
        if (read_back(*memo, path_key, w, out)) return read_back_done(state, *memo);
        if (worth_recording(*memo, path_key) && out.size() <= memo->frames.size()) {
          start_recording(*memo, path, w, out.size());
        }
      }
    }
  }
  const std::size_t written = walk(state, path_key, w, out);
  if (written == slow_walk) return capture_stack_slow(out);
  if (w.memo != nullptr) keep(*w.memo, path_key, out.first(written));
  return written;
}

unwinder_stats current_thread_unwinder_stats() noexcept { return this_thread().stats; }

std::size_t live_unwinder_states() noexcept {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  return r.live.size();
}

unwinder_stats all_threads_unwinder_stats() noexcept {
  unwinder_stats sum;
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  add_stats(sum, r.ended);
  for (const thread_state* s : r.live) add_stats(sum, s->stats);
  return sum;
}

}  // namespace streamsan::injection
