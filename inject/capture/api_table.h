// The handler tables: per domain, one entry per callback id, built once.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "inject/capture/api_call.h"
#include "inject/capture/api_classification.h"
#include "inject/capture/api_handler.h"

namespace streamsan::injection {

struct api_entry {
  api_handler handler;
  bool per_thread = false;  // a _ptsz / _ptds variant
  // Listed as inert (Note [Unmodelled calls are listed, inert calls are
  // not]); without a handler, a call that is not inert is unmodelled.
  bool listed_inert = false;
  bool handled() const noexcept { return handler.on_entry || handler.on_exit; }
  bool inert() const noexcept { return listed_inert && !handled(); }
};

class api_table {
 public:
  explicit api_table(api_domain domain);

  // Ids outside the table (a newer CUPTI than the headers) are unmodelled.
  const api_entry& operator[](std::uint32_t cbid) const noexcept {
    return cbid < entries_.size() ? entries_[cbid] : unknown_;
  }
  std::uint32_t size() const noexcept { return static_cast<std::uint32_t>(entries_.size()); }
  // CUPTI's name of the id ("cudaMemcpy_v3020"); "" when unknown.
  std::string_view name(std::uint32_t cbid) const noexcept;
  api_domain domain() const noexcept { return domain_; }

  // Registers `handler` for every id of `cbids` (an id takes one handler).
  void add(std::initializer_list<std::uint32_t> cbids, const api_handler& handler);

 private:
  api_domain domain_;
  std::vector<api_entry> entries_;
  api_entry unknown_;
};

struct api_tables {
  api_table runtime{api_domain::runtime};
  api_table driver{api_domain::driver};

  const api_table& operator[](api_domain d) const noexcept {
    return d == api_domain::runtime ? runtime : driver;
  }
  // Every handler family registered; built on first use, then read-only.
  static const api_tables& standard();
};

// The handler families (one file each), called by api_tables::standard().
void add_stream_handlers(api_tables& tables);
void add_event_handlers(api_tables& tables);
void add_memory_handlers(api_tables& tables);
void add_copy_handlers(api_tables& tables);
void add_memset_handlers(api_tables& tables);
void add_launch_handlers(api_tables& tables);
void add_host_function_handlers(api_tables& tables);
void add_graph_handlers(api_tables& tables);
void add_graph_edit_handlers(api_tables& tables);
void add_stream_memop_handlers(api_tables& tables);
void add_vmm_handlers(api_tables& tables);
void add_semaphore_handlers(api_tables& tables);
void add_array_handlers(api_tables& tables);

}  // namespace streamsan::injection
