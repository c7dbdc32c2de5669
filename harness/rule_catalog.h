// The rules of ../shared/reference/semantics.md: ids and statements.
//
// Note [A copy of the rules]
// The parser rejects a citation of a rule that does not exist, and at the
// corpus level (Note [Two levels] in harness/scenario_place.h) a citation
// whose quoted text is not the rule's own words. It must do so where
// semantics.md is not around (an installed streamsan, a user's checkout
// without ../shared), so ids and statements are copied here. The test
// tests/harness/corpus_test.cpp reads semantics.md when it is present and
// fails, showing the document's words, if this copy and the document
// disagree, so the copy cannot drift.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace streamsan::harness {

struct rule_statement {
  std::string_view id;         // "S-EVENT-1"
  std::string_view statement;  // normalized (normalize_rule_text), with its source
};

std::span<const rule_statement> rule_catalog() noexcept;
bool is_known_rule(std::string_view id) noexcept;
// The rule's statement, or "" for an unknown id.
std::string_view rule_text(std::string_view id) noexcept;

// Markdown code and emphasis marks dropped and whitespace collapsed, so a
// quote may be written without them or wrapped differently.
std::string normalize_rule_text(std::string_view text);

// True when `quote` (normalized) occurs in the rule's statement.
bool quotes_rule(std::string_view id, std::string_view quote);

}  // namespace streamsan::harness
