// What to do with each CUDA API the callbacks report: an explicit table.
//
// Note [Unmodelled calls are listed, inert calls are not]
// Most of the API neither creates work, nor orders it, nor touches memory:
// queries, attributes, module loading, building a graph that is read when it
// is instantiated. Those are "inert" and cost nothing: their callbacks are
// switched off (cheaper launches: <<<>>> makes two inert runtime calls per
// launch). A "modelled" API has a handler (inject/capture/*_handlers.cpp).
// Everything else (graphics interop, CUDA arrays, external memory,
// multicast objects, some graph node kinds, ...) is "unmodelled": each call becomes an unmodelled_call record and the report
// lists them at exit, because ordering or accesses streamsan did not see can
// hide or invent races. The table (api_classes.cpp) names every API of the
// callback lists; an API it does not name (a newer CUDA's) counts as
// unmodelled, and so does a callback id without a handler whose API is
// listed as modelled (an older version: cuMemcpyHtoD beside cuMemcpyHtoD_v2).
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace streamsan::injection {

enum class api_class {
  inert,       // nothing to model: its callbacks are switched off entirely
  modelled,    // a handler models it
  unmodelled,  // listed at exit
};

// The API name without CUPTI's version and stream-variant suffixes:
// "cudaMemcpyAsync_ptsz_v7000" -> "cudaMemcpyAsync".
std::string_view base_api_name(std::string_view cupti_name);

// The class the table gives the API (by base name); nullopt when the table
// does not list it.
std::optional<api_class> listed_class(std::string_view cupti_name);

// listed_class, or unmodelled for an API the table does not list.
api_class classify_api(std::string_view cupti_name);

// The table's base names of one class, sorted.
std::span<const std::string_view> listed_apis(api_class c) noexcept;

}  // namespace streamsan::injection
