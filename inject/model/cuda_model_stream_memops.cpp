// Stream memory operations: cuStreamWriteValue32/64, cuStreamWaitValue32/64
// (and the same operations in cuStreamBatchMemOp).
//
// Note [Stream memory operations]
// cuStreamWriteValue32/64 enqueues on its stream a 4- or 8-byte write of a
// value, fenced by default: the stream's earlier work is visible to whoever
// sees the value. cuStreamWaitValue32/64 enqueues a wait: the stream's later
// work starts once the word satisfies a condition. Used together (NCCL,
// spin-wait code), they are a release and an acquire through the word.
// The model:
// - A write is an operation on its stream (a kernel_launch record named
//   after the call) that writes the word, then an event_record of an event
//   the model owns for that word (tracked memory: its allocation and
//   offset; untracked: its address), recorded again by each fenced write.
// - A wait is an event_wait of the word's event on the waiting stream: it
//   is ordered after the *last* fenced write to the word that the program
//   issued before it, from any stream (S-EVENT-1: a record overwrites the
//   previous one). The wait reads the word only to synchronize: no access
//   is logged for it (a flag written by a kernel would otherwise race with
//   its own wait).
// Limits, each listed at exit rather than guessed:
// - a wait with no earlier write through the model (the flag is written by
//   the host, by a kernel's store, by another process, or by a write the
//   program issues after the wait) orders nothing: listed as
//   "cuStreamWaitValue32 (release not seen)";
// - a write with CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER releases nothing
//   (earlier writes may be reordered after it): it forgets the word's
//   release, so a later wait is listed the same way;
// - on a capturing stream the operations become graph nodes (batch memory
//   operation nodes, which instantiation lists) and are not modelled here.
// The value and the comparison are not followed: a wait is taken to be
// satisfied by the last write, which is how such flags are used (a counter
// or a flag that only goes up).
#include <string>

#include "inject/model/cuda_model.h"

namespace streamsan::injection {
namespace {

// The key of a word's release: its allocation and offset, or its address.
std::pair<std::uint32_t, std::uint64_t> word_key(const byte_range& word, std::uint64_t address) {
  return is_none(word.alloc) ? std::pair{0u, address} : std::pair{raw(word.alloc), word.offset};
}

}  // namespace

void cuda_model::stream_value_written(const call_site& at, stream_arg s, std::uint64_t address,
                                      std::uint32_t size, bool fenced, std::string_view api) {
  stream_memory_operation(at, s, address, size, fenced ? memop::fenced_write : memop::write, api);
}

void cuda_model::stream_value_waited(const call_site& at, stream_arg s, std::uint64_t address,
                                     std::uint32_t size, std::string_view api) {
  stream_memory_operation(at, s, address, size, memop::wait, api);
}

void cuda_model::stream_memory_operation(const call_site& at, stream_arg s, std::uint64_t address,
                                         std::uint32_t size, memop op, std::string_view api) {
  const stream_ref on = prepare(s);
  model_lock lock(mutex_);
  const stream_id stream = resolve_stream(lock, at, on);
  memory_kind kind;
  const byte_range word = resolve_range(lock, {address, size, memory_side::device}, kind);
  if (capturing_.contains(raw(stream))) return;  // a node of the graph being captured
  const auto key = word_key(word, address);
  switch (op) {
    case memop::wait: {
      const auto it = value_events_.find(key);
      if (it == value_events_.end()) {
        emit(at, unmodelled_call{rec_.intern(std::string(api) + " (release not seen)")});
      } else {
        emit(at, event_wait{it->second, stream});
      }
      return;
    }
    case memop::write:
    case memop::fenced_write: {
      scratch_.clear();
      if (!is_none(word.alloc)) scratch_.push_back(access{word, access_mode::write});
      emit(at, kernel_launch{stream, rec_.intern(api), scratch_});
      if (op == memop::write) {
        value_events_.erase(key);
        return;
      }
      auto [it, fresh] = value_events_.try_emplace(key);
      if (fresh) {
        it->second = rec_.new_event_id();
        emit(at, event_create{it->second, event_flag_none});
      }
      emit(at, event_record{it->second, stream});
      return;
    }
  }
}

}  // namespace streamsan::injection
