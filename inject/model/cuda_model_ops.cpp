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
#include <algorithm>
#include <utility>

#include "inject/model/cuda_model.h"

namespace streamsan::injection {
namespace {

// A launch awaiting the operator's outputs.
struct held_launch {
  precise::footprint_resolver::token token = 0;
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
  bool expects_outputs = false;
  std::vector<access> spans;  // inputs, then outputs
  std::vector<held_launch> held;
  std::size_t held_count = 0;
  std::vector<std::vector<access>> settled;
  std::vector<pointer_word> open_alloc_words;  // op_launch_accesses_locked's
  held_launch& next_held() {
    if (held_count == held.size()) held.emplace_back();
    held_launch& h = held[held_count];
    h.token = 0;
    h.open.clear();
    h.inferred.clear();
    return h;
  }
};

thread_local operator_state op;

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

bool cuda_model::in_operator() noexcept { return op.depth > 0; }

void cuda_model::add_op_spans_locked(std::span<const annotated_range> ranges,
                                     std::vector<access>& out) const {
  for (const auto& r : ranges) {
    const auto* a = allocations_.find_live(r.address);
    if (a == nullptr) continue;  // memory streamsan does not track
    const std::uint64_t offset = r.address - a->base;
    const std::uint64_t size = std::min(r.size, a->size - offset);
    add_distinct(out, access{byte_range{a->id, offset, size}, r.mode, access_origin::exact});
  }
}

void cuda_model::op_began(std::span<const annotated_range> inputs, bool expects_outputs) {
  std::lock_guard lock(mutex_);
  if (op.model != this) {
    op = operator_state{};
    op.model = this;
  }
  if (op.depth++ == 0) {
    op.spans.clear();
    op.held_count = 0;
    op.expects_outputs = false;
  }
  op.expects_outputs = op.expects_outputs || expects_outputs;
  add_op_spans_locked(inputs, op.spans);
}

void cuda_model::op_ended(std::span<const annotated_range> outputs) {
  precise::footprint_resolver* resolver = nullptr;
  std::size_t settled = 0;
  {
    std::lock_guard lock(mutex_);
    if (op.model != this || op.depth == 0) return;  // unbalanced: ignored
    add_op_spans_locked(outputs, op.spans);
    if (--op.depth > 0) return;  // the outer operator settles
    resolver = resolver_;
    settled = op.held_count;
    if (op.settled.size() < settled) op.settled.resize(settled);
    for (std::size_t i = 0; i < settled; ++i) settle(op.held[i], op.spans, op.settled[i]);
    op.held_count = 0;
    op.spans.clear();
  }
  // Outside the model's lock: the resolver delivers to the engine. `op` is
  // this thread's: nothing else touches held[] and settled[] meanwhile.
  if (resolver == nullptr) return;
  for (std::size_t i = 0; i < settled; ++i) resolver->resolve(op.held[i].token, op.settled[i]);
}

// Note [Caching allocator blocks]: a block freed on this thread while its
// operators run (a temporary of a composite operator, an inner operator's
// output) leaves the spans, so that the launches after its free do not name
// a freed block. Launches already held keep their inferred accesses of it.
void cuda_model::op_block_freed_locked(alloc_id block) {
  if (op.model != this || op.depth == 0) return;
  std::erase_if(op.spans, [block](const access& a) { return a.range.alloc == block; });
}

void cuda_model::op_launch_accesses_locked(const kernel_info* info, const kernel_arguments& args) {
  held_launch& h = op.next_held();
  if (info != nullptr) {
    pointer_words(info->plans, args, allocations_, word_scratch_);
    for (const auto& w : word_scratch_) {
      if (span_holding(op.spans, w) == nullptr) h.open.push_back(w);
    }
    if (!h.open.empty()) {
      // settle() takes the inferred footprint of an open word's allocation
      // only, and a footprint is per allocation (add_access): the words
      // into other allocations (an operator's inputs, most often) are not
      // inferred for nothing.
      std::span<const pointer_word> words = word_scratch_;
      if (h.open.size() < word_scratch_.size()) {
        op.open_alloc_words.clear();
        for (const auto& w : word_scratch_) {
          const auto same_alloc = [&](const pointer_word& o) { return o.alloc == w.alloc; };
          if (std::ranges::any_of(h.open, same_alloc)) op.open_alloc_words.push_back(w);
        }
        words = op.open_alloc_words;
      }
      infer_accesses(info->plans, words, h.inferred, &info->learned);
    }
  }
  // Exact now, or the placeholder the resolver holds until op_ended().
  settle(h, op.spans, scratch_);
  if (!op.expects_outputs || resolver_ == nullptr) return;  // nothing to wait for
  h.token = resolver_->await_next_launch();
  ++op.held_count;
}

void cuda_model::symbol_defined(std::uint64_t address, std::string_view function,
                                std::string_view file, std::uint32_t line,
                                std::string_view module) {
  std::lock_guard lock(mutex_);
  rec_.emit_with_stack(frame_symbol{address, function, file, line, module, 0}, {});
}

}  // namespace streamsan::injection
