#include "sanitizer/engine/engine.h"

#include <utility>

#include "sanitizer/engine/engine_impl.h"

namespace streamsan {

engine::engine(engine_options options)
    : impl_(std::make_unique<engine_impl>(options)) {}
engine::~engine() = default;
engine::engine(engine&& other) noexcept : impl_(std::exchange(other.impl_, nullptr)) {}
engine& engine::operator=(engine&& other) noexcept {
  impl_ = std::exchange(other.impl_, nullptr);
  return *this;
}

void engine::on_record(const record& r) { impl_->on_record(r); }

void engine::set_diagnostic_callback(std::function<void(const diagnostic&)> callback) {
  impl_->callback_ = std::move(callback);
}

const std::vector<diagnostic>& engine::diagnostics() const noexcept {
  return impl_->diagnostics_;
}

const log_tables& engine::tables() const noexcept { return impl_->tables_; }

const std::map<std::string, std::uint64_t, std::less<>>& engine::unmodelled_calls()
    const noexcept {
  return impl_->unmodelled_;
}

std::uint64_t engine::records_processed() const noexcept { return impl_->stats_.records; }

engine_statistics engine::statistics() const { return impl_->stats_; }

void engine_impl::on_record(const record& r) {
  ++stats_.records;
  if (tables_.absorb(r.body)) return;
  if (const auto* call = std::get_if<unmodelled_call>(&r.body)) {
    const auto name = tables_.string(call->api);
    auto it = unmodelled_.find(name);
    if (it == unmodelled_.end()) it = unmodelled_.emplace(std::string(name), 0).first;
    ++it->second;
  }
}

}  // namespace streamsan
