#include "runtime/session/sanitizer_sinks.h"

#include <iostream>
#include <string>

namespace streamsan::rt {
namespace {

// One line per diagnostic: kind, hazard, the allocation and both sides.
void print_line(std::ostream& out, const diagnostic& d, const log_tables& tables) {
  out << "streamsan: " << to_string(d.kind);
  if (d.hazard_kind != hazard::none) out << " (" << to_string(d.hazard_kind) << ')';
  if (d.allocation) {
    out << " on " << to_string(d.allocation->id) << " [" << d.overlap_offset << ", +"
        << d.overlap_size << ')';
  }
  const auto side = [&](const operation_ref& op) {
    std::string text(to_string(op.op));
    if (const auto name = tables.string(op.name); !name.empty()) {
      text += " '" + std::string(name) + "'";
    }
    switch (op.context) {
      case context_kind::stream: text += " on " + to_string(op.stream); break;
      case context_kind::host_thread: text += " on host " + to_string(op.thread); break;
    }
    return text;
  };
  out << ": " << side(d.current);
  if (d.previous) out << " vs " << side(*d.previous);
  if (!is_none(d.event)) out << ", " << to_string(d.event);
  if (!is_none(d.stream) && d.stream != d.current.stream) out << ", " << to_string(d.stream);
  out << '\n';
}

}  // namespace

sanitizer_sinks::sanitizer_sinks(const runtime_options& options) : print_(options.print_diagnostics) {
  if (options.sanitize) {
    engine_ = std::make_unique<engine>();
    engine_->set_diagnostic_callback([this](const diagnostic& d) { print(d); });
  }
  if (!options.trace_path.empty()) trace_ = std::make_unique<trace_writer>(options.trace_path);
}

sanitizer_sinks::~sanitizer_sinks() { finish(); }

void sanitizer_sinks::attach(recorder& log) { log.add_sink(*this); }
void sanitizer_sinks::detach(recorder& log) { log.remove_sink(*this); }

void sanitizer_sinks::on_record(const record& r) {
  std::lock_guard lock(mutex_);
  if (finished_) return;
  if (engine_) engine_->on_record(r);
  if (trace_) trace_->on_record(r);
}

void sanitizer_sinks::print(const diagnostic& d) {
  // Called from engine_->on_record, mutex_ held.
  if (print_) print_line(std::cerr, d, engine_->tables());
}

std::vector<diagnostic> sanitizer_sinks::diagnostics() const {
  std::lock_guard lock(mutex_);
  return engine_ ? engine_->diagnostics() : std::vector<diagnostic>{};
}

void sanitizer_sinks::finish() noexcept {
  std::lock_guard lock(mutex_);
  if (finished_) return;
  finished_ = true;
  try {
    if (engine_ && print_) {
      const auto& found = engine_->diagnostics();
      std::uint64_t total = 0;
      for (const auto& d : found) total += d.count;
      if (found.empty()) {
        std::cerr << "streamsan: no diagnostics (" << engine_->records_processed()
                  << " records checked)\n";
      } else {
        std::cerr << "streamsan: SUMMARY: " << found.size() << " distinct diagnostics (" << total
                  << " occurrences)\n";
      }
      for (const auto& [api, count] : engine_->unmodelled_calls()) {
        std::cerr << "streamsan: unmodelled call " << api << " x" << count << '\n';
      }
    }
    if (trace_) trace_->close();
  } catch (const std::exception& e) {
    std::cerr << "streamsan: finishing the sanitizer: " << e.what() << '\n';
  }
}

}  // namespace streamsan::rt
