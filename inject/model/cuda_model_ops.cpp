// The model's side of framework operators (the PyTorch support, python/).
//
// Note [Operators narrow kernel footprints]
// An ATen operator names the tensors it touches: its arguments, read or
// written as its schema says (`Tensor(a!)` is written), and the tensors it
// returns. The kernels it launches touch those tensors and, at most, scratch
// memory of their own (library workspaces). So a kernel launched inside an
// operator takes the byte spans of the operator's tensors (origin exact: the
// schema is a promise torch checks), instead of "from each pointer to the
// end of its allocation", which for the caching allocator is the end of a
// segment shared with unrelated tensors. Every kernel of the operator takes
// every span: the kernels of one operator run in order on one stream, so
// this costs no precision between streams, and it holds for kernels that
// reach a tensor through a TMA descriptor or a pointer loaded from memory,
// which no argument word shows. A pointer word in no span (a workspace)
// adds its inferred footprint, so nothing the kernel may touch is dropped.
//
// Outputs are allocated inside the operator, after the kernels that write
// them were launched, so the launches of an operator that returns new
// tensors are emitted with their inferred accesses as placeholders and held
// in the footprint resolver (Note [Measured footprints arrive late]) until
// op_ended() names the outputs; those of an operator that returns none
// (in-place, out=) are exact at once. The spans are kept apart, never folded
// per allocation: two tensors of one segment stay two accesses.
//
// Note [Measured footprints of an operator's launches]
// A span flagged as a hull (Note [A span flagged as a hull] in
// inject/session/torch_entry.cpp: a strided view told from its first
// element to its last) and the footprint of a word in no span (a workspace)
// are inferred: a conflict through them is a candidate, and the session
// asks for the kernels of its inferred sides to be measured on their next
// launches (Note [Which launches are measured]: a kernel's first launch is
// measured too). A launch inside an operator that is measured waits for its
// measurement when its accesses have an inferred one, and the measurement
// replaces the inferred accesses only: each becomes the measured accesses
// inside it, with origin measured, and the exact spans stay (a measurement
// sees no texture fetch, and perhaps no TMA copy: the schema's promise is
// kept where there is one). A candidate through a hull is so confirmed by a
// measured conflict at the same call sites, or not seen again where the
// measured bytes do not overlap. An operator with new outputs knows its
// launches' accesses only at op_ended(), and the measurement may come back
// before or after that: the launch's pending measurement holds whichever
// comes first (pending_measurement::op_accesses, ::measured) and the other
// resolves the launch, with one token, the one the launch awaits in the
// footprint resolver. A launch whose accesses are all exact (the common
// case: no hull, no workspace) does not wait for its measurement, which
// only teaches its kernel what its pointer words do (Note [Learned access
// modes]). An incomplete measurement leaves the accesses as they were.
//
// Note [An operator's outputs are its blocks]
// An operator's new tensors are the caching allocator's blocks handed out
// on its thread while it runs: torch allocates an output before it launches
// the kernels that write it (they need its address), so the allocator's
// trace entry for the block (block_allocated, from the native hook's
// tracker) comes first. With op_outputs::blocks, each such block enters the
// operator's spans as written, exact, until it is freed
// (op_block_freed_locked): the operator's launches know their outputs at
// once and are not held for op_ended(), which names nothing. The hook then
// asks torch for no boxed results: on a CPU training step that boxing was
// about 44,000 instructions of the hook's 210,000 (docs/pytorch.md), and a
// held launch costs the model a resolver token and a settled copy. Exact
// because the block is the operator's alone until it returns: a tensor
// that is a strided view of it (gaps included) or a temporary it frees
// before returning are its bytes, which nothing else may touch meanwhile
// (the allocator hands a block to one stream's pool, and the reuse of a
// freed block is checked on the segment's history, Note [Caching allocator
// blocks]). A temporary is so an exact write where its pointer words gave
// an inferred footprint before. op_outputs::named_at_end stays for the
// Python dispatch mode and a hook without the tracker (another allocator
// backend): their outputs come from op_ended().
#include <algorithm>
#include <utility>

#include "inject/model/cuda_model.h"
#include "sanitizer/log/thread_state_ref.h"
#include "sanitizer/log/threads_with_state.h"

namespace streamsan::injection {
namespace {

// A launch awaiting the operator's outputs.
struct held_launch {
  precise::footprint_resolver::token token = 0;
  std::uint64_t measurement = 0;  // its pending measurement's id, 0: none
  std::vector<pointer_word> open;  // words in no input span
  std::vector<access> inferred;    // the generic footprint, per allocation
};

// The launches held are held[0 .. held_count): the elements past it keep
// their buffers for the next operator's launches (an operator's hot path
// allocates nothing once they have grown). So does `settled`, op_ended()'s
// accesses of each held launch, which the resolver copies.
struct operator_state {
  const cuda_model* model = nullptr;
  unsigned depth = 0;
  bool expects_outputs = false;   // some level names its outputs at its end
  bool blocks_are_spans = false;  // some level's blocks are its outputs
  std::vector<access> spans;  // inputs, then outputs
  std::vector<held_launch> held;
  std::size_t held_count = 0;
  std::vector<std::vector<access>> settled;
  std::vector<pointer_word> open_alloc_words;  // op_launch_accesses_locked's
  held_launch& next_held() {
    if (held_count == held.size()) held.emplace_back();
    held_launch& h = held[held_count];
    h.token = 0;
    h.measurement = 0;
    h.open.clear();
    h.inferred.clear();
    return h;
  }
};

// Note [One look at the operator state]
// `op` has vectors, so every use of it goes through the compiler's TLS
// wrapper (an initialization check), and in the injection library, which
// the driver dlopens, through __tls_get_addr: op_ended() and
// op_launch_accesses_locked() made some 30 such calls each for every
// operator of a PyTorch program. Each function takes one reference to it
// instead (the host benchmarks, linked statically, do not see the
// difference; objdump of libstreamsan_inject.so counts the calls). A
// plain `operator_state& me = op;` is not enough (Note [One look at the
// thread's state]).
thread_local operator_state op;
// Note [A thread-local looked at only when it can hold something]
// (sanitizer/log/threads_with_state.h): the threads whose `op.depth` is
// not zero.
threads_with_state threads_in_operators;

// The span of `spans` that holds the word's address, if any.
const access* span_holding(std::span<const access> spans, const pointer_word& w) {
  for (const auto& s : spans) {
    if (s.range.alloc == w.alloc && w.offset >= s.range.offset &&
        w.offset - s.range.offset < std::max<std::uint64_t>(s.range.size, 1)) {
      return &s;
    }
  }
  return nullptr;
}

void add_distinct(std::vector<access>& out, const access& a) {
  for (auto& b : out) {
    if (b.range == a.range && b.origin == a.origin) {
      b.mode = b.mode | a.mode;
      return;
    }
  }
  out.push_back(a);
}

bool inferred(const access& a) { return a.origin == access_origin::inferred; }

// What a launch of the operator touches (into `out`): every span, and the
// inferred footprint of each allocation a word in no span points into.
void settle(const held_launch& h, std::span<const access> spans, std::vector<access>& out) {
  out.assign(spans.begin(), spans.end());
  for (const auto& w : h.open) {
    if (span_holding(spans, w) != nullptr) continue;
    for (const auto& a : h.inferred) {
      if (a.range.alloc == w.alloc) add_distinct(out, a);
    }
  }
}

}  // namespace

bool cuda_model::in_operator() noexcept {
  if (threads_in_operators.none()) return false;
  return op.depth > 0;
}

void cuda_model::add_op_spans_locked(std::span<const annotated_range> ranges,
                                     std::vector<access>& out) const {
  for (const auto& r : ranges) {
    if (const auto a = access_of_locked(r)) add_distinct(out, *a);
  }
}

void cuda_model::narrow_to_measured(std::vector<access>& accesses,
                                    std::span<const access> measured) {
  const auto first_inferred = std::stable_partition(accesses.begin(), accesses.end(),
                                                    [](const access& a) { return !inferred(a); });
  const std::vector<access> guessed(first_inferred, accesses.end());
  accesses.erase(first_inferred, accesses.end());
  for (const access& g : guessed) {
    const std::uint64_t g_end = g.range.offset + g.range.size;
    for (const access& m : measured) {
      if (m.range.alloc != g.range.alloc) continue;
      const std::uint64_t begin = std::max(g.range.offset, m.range.offset);
      const std::uint64_t end = std::min(g_end, m.range.offset + m.range.size);
      if (begin >= end) continue;
      add_distinct(accesses, access{byte_range{g.range.alloc, begin, end - begin}, m.mode,
                                    access_origin::measured});
    }
  }
}

bool cuda_model::op_launch_settled_locked(std::uint64_t id, std::vector<access>& accesses) {
  const auto it = pending_measurements_.find(id);
  if (it == pending_measurements_.end()) return true;
  pending_measurement& p = it->second;
  if (p.measured) {  // back first
    if (*p.measured) narrow_to_measured(accesses, **p.measured);
    pending_measurements_.erase(it);
    return true;
  }
  if (std::ranges::none_of(accesses, inferred)) {
    p.token = 0;  // nothing for it to decide: it only teaches the kernel
    return true;
  }
  p.op_accesses = accesses;
  return false;
}

void cuda_model::op_began(std::span<const annotated_range> inputs, op_outputs outputs) {
  operator_state& me = thread_state_ref(op);  // Note [One look at the operator state]
  std::lock_guard lock(mutex_);
  if (me.model != this) {
    threads_in_operators.changed(me.depth > 0, false);
    me = operator_state{};
    me.model = this;
  }
  if (me.depth++ == 0) {
    threads_in_operators.changed(false, true);
    me.spans.clear();
    me.held_count = 0;
    me.expects_outputs = false;
    me.blocks_are_spans = false;
  }
  switch (outputs) {
    case op_outputs::none: break;
    case op_outputs::named_at_end: me.expects_outputs = true; break;
    case op_outputs::blocks: me.blocks_are_spans = true; break;
  }
  add_op_spans_locked(inputs, me.spans);
}

void cuda_model::op_ended(std::span<const annotated_range> outputs) {
  operator_state& me = thread_state_ref(op);  // Note [One look at the operator state]
  precise::footprint_resolver* resolver = nullptr;
  std::size_t settled = 0;
  {
    std::lock_guard lock(mutex_);
    if (me.model != this || me.depth == 0) return;  // unbalanced: ignored
    add_op_spans_locked(outputs, me.spans);
    if (--me.depth > 0) return;  // the outer operator settles
    threads_in_operators.changed(true, false);
    resolver = resolver_;
    settled = me.held_count;
    if (me.settled.size() < settled) me.settled.resize(settled);
    for (std::size_t i = 0; i < settled; ++i) {
      settle(me.held[i], me.spans, me.settled[i]);
      // Note [Measured footprints of an operator's launches]
      if (me.held[i].measurement != 0 &&
          !op_launch_settled_locked(me.held[i].measurement, me.settled[i])) {
        me.held[i].token = 0;  // measured_launch_done() resolves it
      }
    }
    me.held_count = 0;
    me.spans.clear();
  }
  // Outside the model's lock: the resolver delivers to the engine. `me` is
  // this thread's: nothing else touches held[] and settled[] meanwhile.
  if (resolver == nullptr) return;
  for (std::size_t i = 0; i < settled; ++i) {
    if (me.held[i].token != 0) resolver->resolve(me.held[i].token, me.settled[i]);
  }
}

// Note [Caching allocator blocks]: a block freed on this thread while its
// operators run (a temporary of a composite operator, an inner operator's
// output) leaves the spans, so that the launches after its free do not name
// a freed block. Launches already held keep their inferred accesses of it.
void cuda_model::op_block_freed_locked(alloc_id block) {
  operator_state& me = thread_state_ref(op);  // Note [One look at the operator state]
  if (me.model != this || me.depth == 0) return;
  std::erase_if(me.spans, [block](const access& a) { return a.range.alloc == block; });
}

// Note [An operator's outputs are its blocks]
void cuda_model::op_block_allocated_locked(alloc_id block, std::uint64_t size) {
  operator_state& me = thread_state_ref(op);  // Note [One look at the operator state]
  if (me.model != this || me.depth == 0 || !me.blocks_are_spans || size == 0) return;
  me.spans.push_back(access{byte_range{block, 0, size}, access_mode::write, access_origin::exact});
}

void cuda_model::op_launch_accesses_locked(const kernel_info* info, const kernel_arguments& args,
                                           std::uintptr_t kernel, std::uint64_t measurement) {
  operator_state& me = thread_state_ref(op);  // Note [One look at the operator state]
  held_launch& h = me.next_held();
  if (info != nullptr) {
    pointer_words(info->plans, args, allocations_, word_scratch_);
    for (const auto& w : word_scratch_) {
      if (span_holding(me.spans, w) == nullptr) h.open.push_back(w);
    }
    if (!h.open.empty()) {
      // settle() takes the inferred footprint of an open word's allocation
      // only, and a footprint is per allocation (add_access): the words
      // into other allocations (an operator's inputs, most often) are not
      // inferred for nothing.
      std::span<const pointer_word> words = word_scratch_;
      if (h.open.size() < word_scratch_.size()) {
        me.open_alloc_words.clear();
        for (const auto& w : word_scratch_) {
          const auto same_alloc = [&](const pointer_word& o) { return o.alloc == w.alloc; };
          if (std::ranges::any_of(h.open, same_alloc)) me.open_alloc_words.push_back(w);
        }
        words = me.open_alloc_words;
      }
      infer_accesses(info->plans, words, h.inferred, &info->learned);
    }
  }
  // Exact now, or the placeholder the resolver holds until op_ended().
  settle(h, me.spans, scratch_);
  if (resolver_ == nullptr) return;
  const bool held = me.expects_outputs;
  // Note [Measured footprints of an operator's launches]: a launch not held
  // knows its accesses now, and waits only when one is inferred.
  const bool measured = measurement != 0 && (held || std::ranges::any_of(scratch_, inferred));
  if (!held && !measured) return;  // nothing to wait for
  const auto token = resolver_->await_next_launch();
  if (held) {
    h.token = token;
    ++me.held_count;
  }
  if (!measured) return;
  pending_measurement p;
  p.token = token;
  p.kernel = kernel;
  p.epoch = allocations_.epoch();
  if (info != nullptr) p.words = word_scratch_;
  p.in_operator = true;
  if (held) {
    h.measurement = measurement;
  } else {
    p.op_accesses = scratch_;
  }
  pending_measurements_[measurement] = std::move(p);
}

void cuda_model::symbol_defined(std::uint64_t address, std::string_view function,
                                std::string_view file, std::uint32_t line,
                                std::string_view module) {
  std::lock_guard lock(mutex_);
  rec_.emit_with_stack(frame_symbol{address, function, file, line, module, 0}, {});
}

}  // namespace streamsan::injection
