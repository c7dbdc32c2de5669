// The rule ids of ../shared/reference/semantics.md.
//
// Note [A copy of the rule ids]
// The parser rejects a citation of a rule that does not exist, and it must
// do so where semantics.md is not around (an installed streamsan, a user's
// checkout without ../shared). So the ids are copied here. The test
// tests/harness/rule_coverage_test.cpp reads semantics.md when it is present
// and fails if this list and the document disagree, so the copy cannot drift.
#pragma once

#include <span>
#include <string_view>

namespace streamsan::harness {

std::span<const std::string_view> known_rule_ids() noexcept;
bool is_known_rule(std::string_view id) noexcept;

}  // namespace streamsan::harness
