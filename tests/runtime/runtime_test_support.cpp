#include "tests/runtime/runtime_test_support.h"

namespace streamsan::rt::testing {

runtime_options test_options(std::uint64_t seed, unsigned progress_per_mille) {
  auto options = options_from_environment();
  options.capture_stacks = false;
  options.sim.seed = seed;
  options.sim.progress_per_mille = progress_per_mille;
  options.sanitize = false;
  options.trace_path.clear();
  return options;
}

bool on_sim() { return backend_name() == "sim"; }

std::vector<float> read_back(const buffer_view& device_memory) {
  auto host = allocate_pinned_host(device_memory.size());
  memcpy(host, device_memory);  // device -> host waits (S-COPY-1)
  return host_read<float>(host);
}

void write_to(const buffer_view& device_memory, const std::vector<float>& values) {
  auto host = allocate_pinned_host(values.size() * sizeof(float));
  host_write<float>(host, values);
  memcpy(device_memory, host);  // pinned host -> device completes (S-COPY-1)
}

std::span<const access> kept_log::keep(std::span<const access> a) {
  accesses_.emplace_back(a.begin(), a.end());
  return accesses_.back();
}

void kept_log::on_record(const record& r) {
  tables_.absorb(r.body);
  record_body body = r.body;
  if (auto* k = std::get_if<kernel_launch>(&body)) k->accesses = keep(k->accesses);
  if (auto* h = std::get_if<host_func>(&body)) h->accesses = keep(h->accesses);
  if (auto* h = std::get_if<host_access>(&body)) h->accesses = keep(h->accesses);
  if (auto* g = std::get_if<graph_instantiate>(&body)) {
    std::vector<graph_node> nodes(g->nodes.begin(), g->nodes.end());
    for (auto& n : nodes) n.accesses = keep(n.accesses);
    nodes_.push_back(std::move(nodes));
    edges_.emplace_back(g->edges.begin(), g->edges.end());
    g->nodes = nodes_.back();
    g->edges = edges_.back();
  }
  // Definitions are resolved through tables(); their views are dropped.
  if (std::holds_alternative<string_define>(body) || std::holds_alternative<stack_define>(body) ||
      std::holds_alternative<frame_symbol>(body)) {
    return;
  }
  records_.push_back(body);
}

}  // namespace streamsan::rt::testing
