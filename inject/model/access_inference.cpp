#include "inject/model/access_inference.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace streamsan::injection {

std::vector<param_plan> make_param_plans(std::span<const param_layout> layout,
                                         const kernel_signature& signature) {
  const bool typed = signature.has_types && signature.params.size() == layout.size();
  std::vector<param_plan> plans;
  plans.reserve(layout.size());
  for (std::size_t i = 0; i < layout.size(); ++i) {
    param_class kind = typed ? signature.params[i] : param_class::unknown;
    // A "pointer" whose slot is not one pointer wide is not what we think.
    if ((kind == param_class::pointer || kind == param_class::pointer_to_const) &&
        layout[i].size != sizeof(std::uint64_t)) {
      kind = param_class::unknown;
    }
    plans.push_back(param_plan{layout[i].offset, layout[i].size, kind});
  }
  return plans;
}

kernel_arguments kernel_arguments::from_launch(void* const* kernel_params,
                                               void* const* extra) noexcept {
  if (kernel_params != nullptr) return from_pointers(kernel_params);
  if (extra == nullptr) return {};
  // CU_LAUNCH_PARAM_END, _BUFFER_POINTER and _BUFFER_SIZE are the pointer
  // values 0, 1 and 2 (cuda.h).
  const auto key = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
  const void* buffer = nullptr;
  std::size_t size = 0;
  for (void* const* e = extra; key(e[0]) != 0; e += 2) {
    if (key(e[0]) == 1) buffer = e[1];
    if (key(e[0]) == 2 && e[1] != nullptr) size = *static_cast<const std::size_t*>(e[1]);
  }
  return buffer != nullptr ? from_buffer(buffer, size) : kernel_arguments{};
}

namespace {

void merge_into(access& into, const access& a) {
  const std::uint64_t end =
      std::max(into.range.offset + into.range.size, a.range.offset + a.range.size);
  into.range.offset = std::min(into.range.offset, a.range.offset);
  into.range.size = end - into.range.offset;
  into.mode = static_cast<access_mode>(static_cast<unsigned>(into.mode) |
                                       static_cast<unsigned>(a.mode));
}

// Below this many, a linear search per access beats sorting.
constexpr std::size_t fold_by_sorting_from = 16;

}  // namespace

void add_access(std::vector<access>& out, const access& a) {
  for (auto& existing : out) {
    if (existing.range.alloc != a.range.alloc) continue;
    merge_into(existing, a);
    return;
  }
  out.push_back(a);
}

// Note [Folding a launch's words] (access_inference.h).
void fold_accesses(std::vector<access>& out) {
  const std::size_t n = out.size();
  if (n < 2) return;
  if (n == 2) {  // most launches: two pointers
    if (out[0].range.alloc != out[1].range.alloc) return;
    merge_into(out[0], out[1]);
    out.pop_back();
    return;
  }
  std::size_t write = 0;
  if (n < fold_by_sorting_from) {
    // In place: each access into the first kept one of its allocation.
    for (std::size_t i = 0; i < n; ++i) {
      const auto kept_end = out.begin() + static_cast<std::ptrdiff_t>(write);
      const auto same = std::find_if(out.begin(), kept_end, [&](const access& k) {
        return k.range.alloc == out[i].range.alloc;
      });
      if (same != kept_end) {
        merge_into(*same, out[i]);
      } else {
        out[write++] = out[i];
      }
    }
    out.resize(write);
    return;
  }
  // Positions sorted by allocation, first appearance first within one.
  std::vector<std::uint32_t> order(n);
  for (std::uint32_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) {
    return raw(out[x].range.alloc) < raw(out[y].range.alloc);
  });
  std::vector<bool> kept(n, false);
  for (std::size_t k = 0; k < n;) {
    access& head = out[order[k]];
    kept[order[k]] = true;
    std::size_t j = k + 1;
    for (; j < n && out[order[j]].range.alloc == head.range.alloc; ++j) {
      merge_into(head, out[order[j]]);
    }
    k = j;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (kept[i]) out[write++] = out[i];
  }
  out.resize(write);
}

// Note [Learned modes side by side]
std::size_t learned_modes::position(word_ref w) const noexcept {
  const auto it = std::lower_bound(modes_.begin(), modes_.end(), w,
                                   [](const learned_word& l, word_ref k) { return l.word < k; });
  return static_cast<std::size_t>(it - modes_.begin());
}

std::optional<std::uint8_t> learned_modes::mode_of_sorted(word_ref w) const {
  const std::size_t i = position(w);
  if (i == modes_.size() || modes_[i].word != w) return std::nullopt;
  return modes_[i].bits;
}

void learned_modes::learn(word_ref w, std::uint8_t mode_bits) {
  const std::size_t i = position(w);
  if (i == modes_.size() || modes_[i].word != w) {
    modes_.insert(modes_.begin() + static_cast<std::ptrdiff_t>(i), learned_word{w, 0});
  }
  modes_[i].bits |= mode_bits;
}

namespace {

// Calls f(word, plan, value) for every nonzero 8-byte-aligned word of every
// parameter whose class `visits`.
template <class Visits, class F>
void for_each_word_of(std::span<const param_plan> plans, const kernel_arguments& args,
                      Visits&& visits, F&& f) {
  if (args.empty()) return;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const param_plan& p = plans[i];
    if (!visits(p.kind)) continue;
    // Each parameter's bytes are found once (hundreds of words in a
    // by-value struct: Note [Most words are not addresses]).
    const std::span<const unsigned char> bytes = args.param_bytes(i, p);
    const std::uint32_t first = (8 - p.offset % 8) % 8;
    for (std::uint32_t at = first; std::size_t{at} + 8 <= bytes.size(); at += 8) {
      std::uint64_t word = 0;
      std::memcpy(&word, bytes.data() + at, sizeof word);
      if (word == 0) continue;
      f(word_ref{static_cast<std::uint32_t>(i), at}, p, word);
    }
  }
}

// Every word that may hold an address (Note [Kernel access inference]):
// neither arithmetic parameters nor unsigned long long ones.
bool may_hold_address(param_class kind) {
  switch (kind) {
    case param_class::pointer_to_const:
    case param_class::pointer:
    case param_class::unknown: return true;
    case param_class::scalar:
    case param_class::wide_integer: return false;
  }
  return true;
}

// Every word that may hold a texture or surface object (Note [Texture and
// surface objects] in cuda_model_textures.cpp).
bool may_hold_object(param_class kind) {
  switch (kind) {
    case param_class::wide_integer:
    case param_class::unknown: return true;
    case param_class::pointer_to_const:
    case param_class::pointer:
    case param_class::scalar: return false;
  }
  return false;
}

template <class F>
void for_each_word(std::span<const param_plan> plans, const kernel_arguments& args, F&& f) {
  for_each_word_of(plans, args, may_hold_address, std::forward<F>(f));
}

// The mode a word's memory is inferred to be accessed in: its parameter's
// type, else what measurements taught (Note [Learned access modes]);
// nullopt when measured unused.
std::optional<access_mode> inferred_mode(const param_plan& p, word_ref w,
                                         const learned_modes* learned) {
  if (learned != nullptr) {
    if (const auto bits = learned->mode_of(w)) {
      if (*bits == 0) return std::nullopt;
      return static_cast<access_mode>(*bits);
    }
  }
  return p.kind == param_class::pointer_to_const ? access_mode::read : access_mode::read_write;
}

}  // namespace

void pointer_words(std::span<const param_plan> plans, const kernel_arguments& args,
                   const allocation_map& allocations, std::vector<pointer_word>& out) {
  out.clear();
  for_each_word(plans, args, [&](word_ref w, const param_plan&, std::uint64_t value) {
    if (const auto hit = allocations.find_extent(value)) {
      out.push_back({w, hit->id, hit->offset, value, hit->rest});
    }
  });
}

bool any_word_into(std::span<const param_plan> plans, const kernel_arguments& args,
                   const allocation_map& allocations,
                   const std::function<bool(const allocation&)>& accepts) {
  bool found = false;
  for_each_word(plans, args, [&](word_ref, const param_plan&, std::uint64_t value) {
    if (found) return;
    const allocation* a = allocations.find_live_segment(value);
    found = a != nullptr && accepts(*a);
  });
  return found;
}

std::vector<pointer_word> pointer_words(std::span<const param_plan> plans,
                                        const kernel_arguments& args,
                                        const allocation_map& allocations) {
  std::vector<pointer_word> out;
  pointer_words(plans, args, allocations, out);
  return out;
}

void learn_from_measurement(std::span<const pointer_word> words,
                            std::span<const access> measured, learned_modes& into) {
  std::vector<std::uint8_t> modes(words.size(), 0);
  for (const auto& a : measured) {
    // The word into the same allocation closest below the access, else the
    // lowest one into it.
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < words.size(); ++i) {
      if (words[i].alloc != a.range.alloc) continue;
      const bool below = words[i].offset <= a.range.offset;
      if (!best) {
        best = i;
        continue;
      }
      const auto& b = words[*best];
      const bool best_below = b.offset <= a.range.offset;
      if ((below && (!best_below || words[i].offset > b.offset)) ||
          (!below && !best_below && words[i].offset < b.offset)) {
        best = i;
      }
    }
    if (best) modes[*best] |= static_cast<std::uint8_t>(a.mode);
  }
  for (std::size_t i = 0; i < words.size(); ++i) into.learn(words[i].word, modes[i]);
}

void infer_accesses(std::span<const param_plan> plans, const kernel_arguments& args,
                    const allocation_map& allocations, std::vector<access>& out,
                    const learned_modes* learned) {
  out.clear();
  for_each_word(plans, args, [&](word_ref w, const param_plan& p, std::uint64_t value) {
    // Looked up first: most words of a by-value struct are no address
    // (Note [Most words are not addresses]), and the map says so cheaply.
    const auto hit = allocations.find_extent(value);
    if (!hit) return;
    const auto mode = inferred_mode(p, w, learned);
    if (!mode) return;  // measured: this word's memory is not used
    out.push_back(
        access{byte_range{hit->id, hit->offset, hit->rest}, *mode, access_origin::inferred});
  });
  fold_accesses(out);
}

void infer_accesses(std::span<const param_plan> plans, std::span<const pointer_word> words,
                    std::vector<access>& out, const learned_modes* learned) {
  out.clear();
  for (const auto& w : words) {
    const auto mode = inferred_mode(plans[w.word.param], w.word, learned);
    if (!mode) continue;  // measured: this word's memory is not used
    out.push_back(access{byte_range{w.alloc, w.offset, w.rest}, *mode, access_origin::inferred});
  }
  fold_accesses(out);
}

void object_words(std::span<const param_plan> plans, const kernel_arguments& args,
                  std::vector<object_word>& out) {
  out.clear();
  for_each_word_of(plans, args, may_hold_object,
                   [&](word_ref, const param_plan& p, std::uint64_t value) {
                     out.push_back({value, p.kind == param_class::wide_integer});
                   });
}

}  // namespace streamsan::injection
