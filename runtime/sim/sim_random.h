// The sim scheduler's pseudo-random numbers: splitmix64, so that a seed
// means the same schedule with every compiler and standard library
// (std::uniform_int_distribution is implementation-defined).
#pragma once

#include <cstdint>

namespace streamsan::rt::sim {

class sim_random {
 public:
  explicit sim_random(std::uint64_t seed) noexcept : state_(seed) {}

  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, bound); bound > 0.
  std::uint64_t below(std::uint64_t bound) noexcept {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * bound) >> 64);
  }

 private:
  std::uint64_t state_;
};

}  // namespace streamsan::rt::sim
