// The synthetic log of bench/engine: a training step loop.
//
// 8 non-blocking streams, 1,000 live device buffers, kernel launches with 3
// buffer accesses each (two reads, one write), and every 16 launches an
// event recorded on the launching stream and waited on by the next stream.
// Each stream writes only the buffers it owns and reads its own and 200
// shared read-only buffers, so the log is race-free, as a real program
// mostly is: it measures the hot path (lookups, clock joins, history
// checks), not report building. With `racy`, every launch also writes a
// shared buffer, so every launch races (the report and deduplication path).
//
// The log is built once in memory (records whose spans point into stable
// storage) and fed straight to engine::on_record, as a recorder would.
#pragma once

#include <cstdint>
#include <vector>

#include "sanitizer/log/record.h"

namespace streamsan::bench {

struct synthetic_log {
  std::vector<record> setup;   // threads, streams, events, allocations
  std::vector<record> period;  // launches + event records/waits, replayable
  std::vector<access> accesses;  // what the launches' spans point into
  std::uint64_t launches_per_period = 0;
};

synthetic_log make_synthetic_log(bool racy);

}  // namespace streamsan::bench
