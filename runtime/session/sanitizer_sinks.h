// What sanitizer mode attaches to the session's recorder: a live engine
// (diagnostics printed when found with the text report's format, a summary
// at the end) and optionally a trace writer (STREAMSAN_TRACE).
#pragma once

#include <iosfwd>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/runtime.h"
#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/engine/engine.h"
#include "sanitizer/log/recorder.h"
#include "sanitizer/log/trace_writer.h"
#include "sanitizer/report/report_input.h"
#include "sanitizer/report/symbolizer.h"

namespace streamsan::rt {

class sanitizer_sinks final : public record_sink {
 public:
  explicit sanitizer_sinks(const runtime_options& options);
  ~sanitizer_sinks() override;

  void attach(recorder& log);
  void detach(recorder& log);
  // Prints the summary (sanitize mode) and closes the trace; reports errors
  // on stderr. Only the first call does anything.
  void finish() noexcept;

  void on_record(const record& r) override;

  // A copy: other threads may be feeding the engine.
  std::vector<diagnostic> diagnostics() const;

 private:
  void print(const diagnostic& d);

  const bool print_;
  report_options report_;
  mutable std::mutex mutex_;
  std::unique_ptr<engine> engine_;
  std::unique_ptr<symbolizer> symbols_;  // over engine_->tables(); live, so this process too
  std::unique_ptr<trace_writer> trace_;
  std::size_t printed_ = 0;
  bool finished_ = false;
};

}  // namespace streamsan::rt
