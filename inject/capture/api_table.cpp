#include "inject/capture/api_table.h"

#include <stdexcept>
#include <string>

#include "inject/capture/api_names.h"

namespace streamsan::injection {

api_table::api_table(api_domain domain) : domain_(domain) {
  const auto names = api_names(domain);
  entries_.resize(names.size());
  for (std::size_t cbid = 1; cbid < names.size(); ++cbid) {
    const std::string_view n = names[cbid];
    entries_[cbid].per_thread =
        n.find("_ptsz") != std::string_view::npos || n.find("_ptds") != std::string_view::npos;
    entries_[cbid].listed_inert = classify_api(n) == api_class::inert;
  }
}

std::string_view api_table::name(std::uint32_t cbid) const noexcept {
  const auto names = api_names(domain_);
  return cbid < names.size() ? names[cbid] : std::string_view{};
}

void api_table::add(std::initializer_list<std::uint32_t> cbids, const api_handler& handler) {
  for (const std::uint32_t cbid : cbids) {
    if (cbid == 0 || cbid >= entries_.size()) {
      throw std::logic_error("api_table: no callback id " + std::to_string(cbid));
    }
    if (entries_[cbid].handled()) {
      throw std::logic_error("api_table: two handlers for " + std::string(name(cbid)));
    }
    entries_[cbid].handler = handler;
  }
}

const api_tables& api_tables::standard() {
  // Never destroyed: the dispatcher reads it for callbacks that come after
  // the static destructors ran (Note [Nesting is tracked while stopped]).
  static const api_tables* tables = new api_tables([] {
    api_tables t;
    add_stream_handlers(t);
    add_event_handlers(t);
    add_memory_handlers(t);
    add_copy_handlers(t);
    add_memset_handlers(t);
    add_launch_handlers(t);
    add_host_function_handlers(t);
    add_graph_handlers(t);
    add_graph_edit_handlers(t);
    add_stream_memop_handlers(t);
    add_vmm_handlers(t);
    add_semaphore_handlers(t);
    add_array_handlers(t);
    return t;
  }());
  return *tables;
}

}  // namespace streamsan::injection
