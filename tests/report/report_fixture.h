// Hand-built diagnostics and log tables with fixed frame symbols, so that
// report output is deterministic (no in-process symbolization).
#pragma once

#include <vector>

#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/log/log_tables.h"
#include "sanitizer/report/report_input.h"

namespace streamsan::testing {

// Strings, stacks and symbols for the diagnostics below. Frames live in
// /src/demo/demo.cpp and /src/demo/sync.cpp; stack 4 has one frame with no
// symbol at all and one with only a function and a module.
log_tables report_tables();

// A stream race as in the README: kernel 'sum' on stream#2 reads alloc#3
// 'A' that kernel 'fill' on stream#1 wrote; seen 3 times.
diagnostic stream_race_diagnostic();

// One diagnostic of every kind, in diagnostic_kind order, then a race with
// no stacks and no allocation.
std::vector<diagnostic> every_kind_diagnostics();

// A confirmed stream race with measured footprints: an atomic access by
// 'sum' on stream#2 against a plain write (exact extent) by 'fill' on
// stream#1, conflicting on two ranges of alloc#3.
diagnostic measured_atomic_race();

// Candidates (Note [Candidates and confirmed diagnostics]): both sides
// inferred (seen 3 times); and one side measured, the other inferred, with
// more conflicting ranges than listed.
diagnostic inferred_candidate();
diagnostic half_measured_candidate();

call_counts sample_unmodelled_calls();

}  // namespace streamsan::testing
