// A record that owns its variable-length payload, for sinks that keep a
// record past record_sink::on_record (Note [Records are views] in record.h).
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <string>
#include <vector>

#include "sanitizer/log/record.h"

namespace streamsan {

class owned_record {
 public:
  // Copies `r` and everything its spans and views point to.
  explicit owned_record(const record& r);
  owned_record(owned_record&&) noexcept = default;
  owned_record& operator=(owned_record&&) noexcept = default;
  owned_record(const owned_record&) = delete;
  owned_record& operator=(const owned_record&) = delete;

  const record& get() const noexcept { return record_; }

  // Replaces the accesses of a kernel_launch or host_func record (the list
  // is copied); false for any other kind.
  bool replace_accesses(std::span<const access> accesses);
  // Replaces the accesses of node `node` of a graph_instantiate record (the
  // list is copied); false for any other kind or a node out of range.
  bool replace_node_accesses(std::uint32_t node, std::span<const access> accesses);

 private:
  friend class owning_archive;
  // Note [A launch's accesses stay in the record]: the first list of
  // accesses stored is first_accesses_, later ones are in accesses_.
  std::vector<access>& new_access_list();
  // The list the record's accesses `s` are stored in, if one of those
  // replace_accesses may reuse.
  std::vector<access>* list_holding(std::span<const access> s) noexcept;

  record record_;
  std::vector<access> first_accesses_;
  bool first_accesses_used_ = false;
  // Lists, not deques: the record's spans and views point into their
  // elements, which must not move, and an empty list allocates nothing (an
  // empty std::deque allocates twice, and a held launch made five of them:
  // most of a PyTorch operator's cost in bench/injection's
  // BM_ModelledOperator).
  std::list<std::vector<access>> accesses_;
  std::list<std::vector<graph_node>> nodes_;
  std::list<std::vector<graph_edge>> edges_;
  std::list<std::vector<std::uint64_t>> addresses_;
  std::list<std::string> texts_;
};

}  // namespace streamsan
