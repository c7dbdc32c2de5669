// The sentences that say why a race's order is missing (the diagnostic's
// cause, Note [Causes]) and how an ordering error relates to the races it
// failed to prevent. Shared by every report format.
#pragma once

#include <optional>
#include <string>

#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/log/log_tables.h"

namespace streamsan {

// "kernel 'k_write'", "memcpy", "host access 'h'": an operation in a sentence.
std::string short_operation(const operation_ref& op, const log_tables& tables);

// The name a hint uses for an operation: the kernel's name ("k_write"), or
// its kind ("memcpy").
std::string operation_name(const operation_ref& op, const log_tables& tables);

// "the wait for event#4 on stream#2 ordered nothing: event#4 was never
// recorded (S-EVENT-3)"; nullopt without a cause.
std::optional<std::string> cause_sentence(const diagnostic& d, const log_tables& tables);

// For a cause that names a call reported by itself: "It was reported above
// as unrecorded-event on event#4."
std::optional<std::string> cause_reference(const diagnostic& d);

// For an ordering error: "It failed to prevent the race reported below."
std::optional<std::string> prevented_sentence(const diagnostic& d);

}  // namespace streamsan
