#include "inject/precise/staging_buffer.h"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <utility>

namespace streamsan::precise {
namespace {

constexpr std::size_t page = 4096;  // what cuMemHostRegister pins whole

}  // namespace

staging_buffer::~staging_buffer() { free(); }

staging_buffer::staging_buffer(staging_buffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      pinning_(std::exchange(other.pinning_, nullptr)),
      token_(std::exchange(other.token_, std::nullopt)) {}

staging_buffer& staging_buffer::operator=(staging_buffer&& other) noexcept {
  if (this != &other) {
    free();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    pinning_ = std::exchange(other.pinning_, nullptr);
    token_ = std::exchange(other.token_, std::nullopt);
  }
  return *this;
}

void staging_buffer::reserve(std::size_t bytes, host_pinning* pinning) {
  if (bytes <= bytes_) return;
  // Note [Read-backs land in page-locked memory]: twice at least, whole pages.
  const std::size_t grown = (std::max(bytes, 2 * bytes_) + page - 1) / page * page;
  void* fresh = std::aligned_alloc(page, grown);
  if (fresh == nullptr) throw std::bad_alloc();
  free();
  data_ = fresh;
  bytes_ = grown;
  pinning_ = pinning;
  if (pinning_ != nullptr) token_ = pinning_->pin(data_, bytes_);
}

void staging_buffer::unpin() noexcept {
  if (token_.has_value()) pinning_->unpin(data_, *token_);
  token_.reset();
}

void staging_buffer::free() noexcept {
  unpin();
  std::free(data_);
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace streamsan::precise
