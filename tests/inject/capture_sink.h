// A record sink that keeps copies of what the injection tests look at.
#pragma once

#include <stdexcept>
#include <utility>
#include <variant>
#include <vector>

#include "sanitizer/log/log_tables.h"
#include "sanitizer/log/record.h"
#include "sanitizer/log/recorder.h"

namespace streamsan::injection {

// Copies what the tests look at out of each record (records are views).
struct captured {
  record_header header;
  record_body body;
  std::vector<access> accesses;
  std::vector<graph_node> nodes;
  std::vector<std::vector<access>> node_accesses;
  std::vector<graph_edge> edges;
};

class capture_sink : public record_sink {
 public:
  std::vector<captured> records;
  log_tables tables;
  void on_record(const record& r) override {
    if (tables.absorb(r.body)) return;
    captured c{r.header, r.body, {}, {}, {}, {}};
    if (const auto* k = std::get_if<kernel_launch>(&r.body)) {
      c.accesses.assign(k->accesses.begin(), k->accesses.end());
    }
    if (const auto* h = std::get_if<host_access>(&r.body)) {
      c.accesses.assign(h->accesses.begin(), h->accesses.end());
    }
    if (const auto* g = std::get_if<graph_instantiate>(&r.body)) {
      c.nodes.assign(g->nodes.begin(), g->nodes.end());
      for (const auto& n : g->nodes) c.node_accesses.emplace_back(n.accesses.begin(), n.accesses.end());
      c.edges.assign(g->edges.begin(), g->edges.end());
    }
    records.push_back(std::move(c));
  }
  template <class T>
  std::vector<T> all() const {
    std::vector<T> out;
    for (const auto& c : records) {
      if (const auto* t = std::get_if<T>(&c.body)) out.push_back(*t);
    }
    return out;
  }
  template <class T>
  const captured& last() const {
    for (auto it = records.rbegin(); it != records.rend(); ++it) {
      if (std::holds_alternative<T>(it->body)) return *it;
    }
    throw std::runtime_error("no such record");
  }
};

}  // namespace streamsan::injection
