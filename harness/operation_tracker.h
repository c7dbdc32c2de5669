// A record_sink between the runtime's access log and the engine. It notes
// which scenario operation each record belongs to (by sequence number) and
// which buffer each allocation is, so that a diagnostic's operation_refs and
// allocation can be named in the scenario's terms.
//
// Note [Operations are found by sequence number]
// Replay is single-threaded: while operation i runs, every record the
// runtime emits (the launch, the event records the caching allocator makes
// on a free, ...) is operation i's. So a diagnostic's seq, which is the seq
// of the record that performed the access, leads back to one operation
// without relying on labels, names or call stacks.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "harness/outcome.h"
#include "sanitizer/engine/engine.h"
#include "sanitizer/log/record.h"

namespace streamsan::harness {

class operation_tracker final : public record_sink {
 public:
  explicit operation_tracker(engine& eng) : engine_(eng) {}

  // Records from now on belong to operation `index` (or a phase).
  void begin_operation(std::size_t index) noexcept { current_ = index; }
  // Allocations recorded from now on are buffer `name` ("" = none).
  void begin_buffer(std::string name) { buffer_ = std::move(name); }

  void on_record(const record& r) override;

  // The operation that emitted record `seq`; no_operation if unknown.
  std::size_t operation_of(std::uint64_t seq) const noexcept;
  // The buffer an allocation (a segment or a block) was made for; "" if none.
  std::string buffer_of(alloc_id id) const;

 private:
  engine& engine_;
  std::size_t current_ = setup_phase;
  std::string buffer_;
  // (first seq, operation), in increasing seq order.
  std::vector<std::pair<std::uint64_t, std::size_t>> spans_;
  std::map<std::uint32_t, std::string> buffers_;
};

}  // namespace streamsan::harness
