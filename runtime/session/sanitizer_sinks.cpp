#include "runtime/session/sanitizer_sinks.h"

#include <unistd.h>

#include <iostream>
#include <string>

#include "sanitizer/report/report_input.h"
#include "sanitizer/report/text_report.h"

namespace streamsan::rt {

namespace {

// Programs on the runtime get hints in its vocabulary (Note [Fix hints]).
report_options report_options_of(const runtime_options& options) {
  report_options r;
  r.vocabulary = fix_vocabulary::runtime;
  r.color = use_color(options.report_color, STDERR_FILENO);
  r.stacks.depth = options.report_stack_depth;
  r.stacks.raw = options.raw_stacks;
  return r;
}

}  // namespace

sanitizer_sinks::sanitizer_sinks(const runtime_options& options)
    : print_(options.print_diagnostics), report_(report_options_of(options)) {
  if (options.sanitize) {
    engine_ = std::make_unique<engine>();
    symbols_ = std::make_unique<symbolizer>(engine_->tables(), symbol_source::log_then_this_process);
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
  // Called from engine_->on_record, mutex_ held. Candidates are listed in
  // the summary, not printed as warnings; a confirmed candidate comes back
  // here confirmed.
  if (!print_ || is_candidate(d)) return;
  print_text_diagnostic(std::cerr, d, *symbols_, report_);
  ++printed_;
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
      const report_input input{engine_->diagnostics(), engine_->tables(),
                               &engine_->unmodelled_calls(), engine_->records_processed(), 0};
      print_text_summary(std::cerr, input, printed_, *symbols_, report_);
    }
    if (trace_) trace_->close();
  } catch (const std::exception& e) {
    std::cerr << "streamsan: finishing the sanitizer: " << e.what() << '\n';
  }
}

}  // namespace streamsan::rt
