// The model's side of exact footprints: which launch records wait for a
// measurement, and what a measurement becomes (Note [Measured footprints
// arrive late], Note [Learned access modes], Note [Looking up the past]).
#include <algorithm>
#include <utility>

#include "inject/model/cuda_model.h"

namespace streamsan::injection {
namespace {

// The measured launch the calling thread's next kernel_launched() is.
thread_local std::uint64_t expected_measurement = 0;

access_mode mode_of(precise::footprint_kind k) {
  switch (k) {
    case precise::footprint_kind::read: return access_mode::read;
    case precise::footprint_kind::write: return access_mode::write;
    case precise::footprint_kind::atomic: return access_mode::atomic;
  }
  return access_mode::read_write;
}

}  // namespace

void cuda_model::set_footprint_resolver(precise::footprint_resolver* resolver) noexcept {
  model_lock lock(mutex_);
  resolver_ = resolver;
}

void cuda_model::expect_measured_launch(std::uint64_t id) noexcept { expected_measurement = id; }

void cuda_model::clear_expected_measured_launch() noexcept { expected_measurement = 0; }

std::uint64_t cuda_model::take_expected_measured_launch() noexcept {
  return std::exchange(expected_measurement, 0);
}

void cuda_model::await_measurement_locked(std::uint64_t id, std::uintptr_t kernel,
                                          const kernel_info* info, const kernel_arguments& args,
                                          std::span<const access> unmeasurable) {
  if (id == 0 || resolver_ == nullptr) return;
  pending_measurement p;
  p.token = resolver_->await_next_launch();
  p.kernel = kernel;
  p.epoch = allocations_.epoch();
  if (info != nullptr) p.words = pointer_words(info->plans, args, allocations_);
  p.unmeasurable.assign(unmeasurable.begin(), unmeasurable.end());
  pending_measurements_[id] = std::move(p);
}

std::vector<access> cuda_model::measured_accesses(const precise::decoded_footprint& decoded,
                                                  const allocation_map& allocations,
                                                  std::uint64_t epoch) {
  std::vector<access> out;
  for (const auto& interval : decoded.intervals) {
    const access_mode mode = mode_of(interval.kind);
    std::uint64_t pos = interval.begin;
    while (pos < interval.end) {
      if (const auto* a = allocations.find_at(pos, epoch)) {
        const std::uint64_t end = std::min(interval.end, a->base + std::max<std::uint64_t>(a->size, 1));
        out.push_back(access{byte_range{a->id, pos - a->base, end - pos}, mode,
                             access_origin::measured});
        pos = end;
        continue;
      }
      // Untracked bytes: skip to the next allocation that was live then.
      std::uint64_t next = interval.end;
      allocations.for_each_live_overlapping(pos, interval.end, [&](const allocation& a) {
        if (a.born <= epoch && a.base > pos) next = std::min(next, a.base);
      });
      pos = next;
    }
  }
  return out;
}

void cuda_model::measured_launch_done(std::uint64_t id, const precise::decoded_footprint& decoded) {
  precise::footprint_resolver* resolver = nullptr;
  precise::footprint_resolver::token token = 0;
  std::optional<std::vector<access>> measured;
  {
    model_lock lock(mutex_);
    const auto it = pending_measurements_.find(id);
    if (it == pending_measurements_.end()) return;
    pending_measurement p = std::move(it->second);
    pending_measurements_.erase(it);
    resolver = resolver_;
    token = p.token;
    if (decoded.complete) {
      measured = measured_accesses(decoded, allocations_, p.epoch);
      if (const auto k = kernels_.find(p.kernel); k != kernels_.end()) {
        learn_from_measurement(p.words, *measured, k->second.learned);
      }
      // Note [Texture and surface objects]: fetches no measurement sees.
      measured->insert(measured->end(), p.unmeasurable.begin(), p.unmeasurable.end());
    }
  }
  // Outside the model's lock: the resolver delivers to the engine.
  if (resolver != nullptr) resolver->resolve(token, std::move(measured));
}

std::uint32_t cuda_model::estimate_footprint_slots(std::uintptr_t kernel,
                                                   const kernel_arguments& args) {
  model_lock lock(mutex_);
  kernel_info uncached;
  const kernel_info& info = kernel_info_for(lock, kernel, uncached);
  std::vector<access> inferred;
  infer_accesses(info.plans, args, allocations_, inferred);
  std::uint64_t slots = 0;
  for (const auto& a : inferred) {
    const std::uint64_t pages = a.range.size / precise::page_bytes + 2;
    const unsigned kinds = (reads(a.mode) ? 1 : 0) + (writes(a.mode) ? 1 : 0) + 1;  // + atomic
    slots += pages * kinds;
  }
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(slots, 1u << 24));
}

}  // namespace streamsan::injection
