// Note [Placeholders in command-line tokens]
// Boost.Program_options builds an error's message lazily, in what(), by
// replacing "%option%", "%original_token%", "%value%", "%prefix%" and
// "%canonical_option%" in a template with the offending token, again and
// again until none is left. A token that itself holds one of them makes
// that loop endless (tests/fuzz/run_options_fuzz.cpp found
// `streamsan run --%original_token%format` hanging while growing a string
// without bound). No option of ours needs those words, so a token holding
// one is refused before Boost sees it, with a message that names it.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace streamsan::cli {

// The first token that holds one of Boost.Program_options' placeholders,
// with the reason, ready to print; nullopt when there is none.
inline std::optional<std::string> refuse_placeholder_tokens(std::span<const std::string> tokens) {
  static constexpr std::array<std::string_view, 5> placeholders = {
      "%option%", "%original_token%", "%value%", "%prefix%", "%canonical_option%"};
  for (const auto& token : tokens) {
    for (const auto p : placeholders) {
      if (token.find(p) != std::string::npos) {
        return "argument '" + token + "' holds '" + std::string(p) +
               "', which the option parser cannot read";
      }
    }
  }
  return std::nullopt;
}

}  // namespace streamsan::cli
