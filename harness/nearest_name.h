// "Did you mean ...?" for scenario files: the valid names closest to one a
// user typed (an operation, a key, a choice, a declared name).
//
// Note [Suggesting a name]
// Plain edit distance finds typos ('strem' -> 'stream', 'sycnhronize' ->
// 'synchronize') but not a word from another vocabulary: someone who knows
// CUDA writes 'copy', 'cudaMemcpyAsync' or 'buffer' where a scenario says
// 'memcpy' or 'src'. So the valid names are looked up in three ways, the
// first that gives an answer wins:
//  1. the same spelling up to case, '_' and '-' ('waitStream' -> 'wait_stream');
//  2. a table of synonyms (CUDA and torch names, and words for roles: any
//     word for "a buffer" -> the buffer keys that are valid here);
//  3. edit distance (transpositions count one), within a bound that grows
//     with the word, or a prefix ('expectations' -> 'expect').
// Only names valid where the user wrote the word are suggested, so one
// table serves operations, keys and values.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace streamsan::harness {

// The closest valid names (at most three, best first), or none.
std::vector<std::string_view> nearest_names(std::string_view typed,
                                            std::span<const std::string_view> valid);
std::vector<std::string_view> nearest_names(std::string_view typed,
                                            const std::vector<std::string>& valid);

// "did you mean 'memcpy'?", "did you mean 'dst' or 'src'?", or "" when no
// valid name is close.
std::string did_you_mean(std::string_view typed, std::span<const std::string_view> valid);
std::string did_you_mean(std::string_view typed, const std::vector<std::string>& valid);

// Optimal string alignment distance (Damerau-Levenshtein with adjacent
// transpositions).
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace streamsan::harness
