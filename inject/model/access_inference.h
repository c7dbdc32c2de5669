// Which memory a kernel launch touches, inferred from its arguments.
//
// Note [Kernel access inference]
// A launch carries its arguments as bytes laid out like the kernel's
// parameter buffer. Every 8-byte-aligned word of that buffer that holds an
// address inside a tracked allocation is taken as an access to that
// allocation, from the address to the end of the allocation (a kernel may
// index anywhere past a pointer it is given; without an annotation nothing
// tighter is sound). This finds pointers inside struct parameters too. The
// mode comes from the parameter's type when the mangled name has one:
// `const T*` is read, every other pointer or unknown word read-write;
// arithmetic parameters are skipped, so an `int` that happens to equal an
// address is never mistaken for one (an `unsigned long long` is looked at
// for texture and surface objects only: object_words() below). Several words into one allocation fold
// into a single access (lowest offset, union of modes).
#pragma once

#include <algorithm>
#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "inject/model/allocation_map.h"
#include "inject/model/kernel_signature.h"
#include "sanitizer/log/record.h"

namespace streamsan::injection {

// One parameter as the driver reports it (cuKernelGetParamInfo).
struct param_layout {
  std::uint32_t offset = 0;  // in the parameter buffer
  std::uint32_t size = 0;
};

struct param_plan {
  std::uint32_t offset = 0;
  std::uint32_t size = 0;
  param_class kind = param_class::unknown;
};

// Joins the driver's layout with the types from the name. A name whose
// parameter count disagrees with the layout is not trusted: every parameter
// is then scanned as unknown.
std::vector<param_plan> make_param_plans(std::span<const param_layout> layout,
                                         const kernel_signature& signature);

// A launch's argument bytes: either one pointer per parameter
// (kernelParams) or one packed buffer (CU_LAUNCH_PARAM_BUFFER_POINTER).
class kernel_arguments {
 public:
  static kernel_arguments from_pointers(void* const* params) noexcept {
    kernel_arguments a;
    a.params_ = params;
    return a;
  }
  static kernel_arguments from_buffer(const void* buffer, std::size_t size) noexcept {
    kernel_arguments a;
    a.buffer_ = static_cast<const unsigned char*>(buffer);
    a.buffer_size_ = size;
    return a;
  }
  // What cuLaunchKernel takes: kernelParams, else the `extra` array's
  // CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE pairs; empty when neither.
  static kernel_arguments from_launch(void* const* kernel_params, void* const* extra) noexcept;
  // The bytes of parameter `index` (p.size of them, or fewer where a
  // buffer ends early); empty when they are not there.
  // Inline: asked for every parameter of every launch.
  std::span<const unsigned char> param_bytes(std::size_t index,
                                             const param_plan& p) const noexcept {
    if (params_ != nullptr) {
      const void* value = params_[index];
      if (value == nullptr) return {};
      return {static_cast<const unsigned char*>(value), p.size};
    }
    if (buffer_ == nullptr || p.offset >= buffer_size_) return {};
    return {buffer_ + p.offset, std::min<std::size_t>(p.size, buffer_size_ - p.offset)};
  }
  bool empty() const noexcept { return params_ == nullptr && buffer_ == nullptr; }

 private:
  void* const* params_ = nullptr;
  const unsigned char* buffer_ = nullptr;
  std::size_t buffer_size_ = 0;
};

// Note [Learned access modes]
// A measured launch (--precise, or a candidate being confirmed) shows what
// each pointer word of the kernel's arguments really does: every measured
// interval is attributed to the word that points into its allocation
// closest below it (the slice it indexes from), and a word that no interval
// is attributed to was not used. Later launches whose footprints are
// inferred take the learned mode instead of the one from the parameter's
// type: a weight read through a non-const pointer is a read, the buffer of a
// struct that the kernel never touches is no access at all. Modes only grow
// (a union over measured launches), so a kernel that touches a buffer on
// some launches keeps it. What a kernel touches through pointers loaded from
// memory is not attributed to a word and is seen only when measured.
struct word_ref {
  std::uint32_t param = 0;  // index into the plans
  std::uint32_t at = 0;     // byte offset of the word in the parameter
  friend auto operator<=>(const word_ref&, const word_ref&) = default;
};

// Note [Learned modes side by side]
// Every inferred launch asks the learned mode of each of its pointer words,
// and between two launches the driver's launch path evicts our data (Note
// [Our launch path with cold caches] in bench/injection/source_bench.cpp):
// a tree of a few nodes cost a miss a node, the largest single item of our
// work on the H200's launch loop (2.1% of its thread in one run). The
// words are learned rarely (at measurements) and asked at every launch, so
// they are kept sorted side by side, 12 bytes each: a kernel's few words
// are one or two cache lines, searched in place.
class learned_modes {
 public:
  bool empty() const noexcept { return modes_.empty(); }
  // The access_mode bits measured for the word (0: measured and unused);
  // nullopt when no measurement covered it.
  std::optional<std::uint8_t> mode_of(word_ref w) const {
    // A launch's few words in place: a call and a binary search cost more.
    if (modes_.size() <= linear_search_up_to) {
      for (const auto& l : modes_) {
        if (l.word == w) return l.bits;
      }
      return std::nullopt;
    }
    return mode_of_sorted(w);
  }
  void learn(word_ref w, std::uint8_t mode_bits);

 private:
  struct learned_word {
    word_ref word;
    std::uint8_t bits = 0;
  };
  static constexpr std::size_t linear_search_up_to = 8;
  std::optional<std::uint8_t> mode_of_sorted(word_ref w) const;
  // Where `w` is, or would go, in modes_.
  std::size_t position(word_ref w) const noexcept;
  std::vector<learned_word> modes_;  // by word
};

// A pointer word of one launch: which word, and where it pointed.
struct pointer_word {
  word_ref word;
  alloc_id alloc{};
  std::uint64_t offset = 0;   // into the allocation
  std::uint64_t address = 0;  // the word's value
  std::uint64_t rest = 0;     // the allocation's bytes from `offset` on
};

// The words of `args` that point into tracked allocations (into `out`,
// cleared first: a launch's hot path reuses its buffer).
std::vector<pointer_word> pointer_words(std::span<const param_plan> plans,
                                        const kernel_arguments& args,
                                        const allocation_map& allocations);
void pointer_words(std::span<const param_plan> plans, const kernel_arguments& args,
                   const allocation_map& allocations, std::vector<pointer_word>& out);

// Whether a word of `args` that may hold an address points into a live
// allocation `accepts` (given its top-level allocation: a block's segment).
// No allocation (asked at launches, Note [First launches are measured once
// work can overlap] in concurrency_watch.h).
bool any_word_into(std::span<const param_plan> plans, const kernel_arguments& args,
                   const allocation_map& allocations,
                   const std::function<bool(const allocation&)>& accepts);

// Attributes a complete measured footprint to the launch's pointer words
// (Note [Learned access modes]).
void learn_from_measurement(std::span<const pointer_word> words,
                            std::span<const access> measured, learned_modes& into);

// Appends the inferred accesses to `out` (cleared first), origin inferred;
// words with a learned mode take it (`learned` may be null).
void infer_accesses(std::span<const param_plan> plans, const kernel_arguments& args,
                    const allocation_map& allocations, std::vector<access>& out,
                    const learned_modes* learned = nullptr);
// The same from the launch's pointer words, found before (pointer_words):
// no second walk of the arguments.
void infer_accesses(std::span<const param_plan> plans, std::span<const pointer_word> words,
                    std::vector<access>& out, const learned_modes* learned = nullptr);

// A word that may carry a texture or surface object: the word of an
// unsigned long long parameter (`typed`), or any word of a parameter of
// unknown type (Note [Texture and surface objects] in
// cuda_model_textures.cpp).
struct object_word {
  std::uint64_t value = 0;
  bool typed = false;
};

// The nonzero words of `args` that may carry an object, into `out` (cleared
// first).
void object_words(std::span<const param_plan> plans, const kernel_arguments& args,
                  std::vector<object_word>& out);

// Adds an access to `out`, folding it into an existing access to the same
// allocation (lowest offset, extent to the furthest end, union of modes).
void add_access(std::vector<access>& out, const access& a);

// Note [Folding a launch's words]
// A foreach kernel's parameter lists a hundred tensors and more, each word
// its own allocation (a caching allocator's block). Folding word by word
// with add_access looks through every access so far: quadratic in the
// words (a 4 KiB struct with 256 addresses into 64 allocations: 21 µs a
// launch on the development machine, 17 once folded by sorting:
// BM_ModelledLaunchStructParam). fold_accesses folds `out` once, in
// O(n log n) when there are more than a few, with add_access's result:
// one access per allocation, in the order the allocations first appear,
// each the hull of its ranges with the union of its modes.
void fold_accesses(std::vector<access>& out);

}  // namespace streamsan::injection
