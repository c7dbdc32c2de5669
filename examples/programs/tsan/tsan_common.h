// Shared by the ThreadSanitizer bridge examples (docs/tsan-bridge.md). Each
// is built with -fsanitize=thread, twice from one source like the other
// examples (STREAMSAN_FIXED), and reads or writes host-visible memory with
// plain host code: no annotations. Under `streamsan run`, ThreadSanitizer
// checks those accesses against the device work streamsan tells it about;
// the racy version gets a ThreadSanitizer report, the fixed one none.
#pragma once

#include "../example_common.h"

// A kernel that keeps the device busy long enough for the host to overtake
// it when the program is not ordered (about 100 ms on a recent GPU).
constexpr long long long_spin = 200000000;
