// What to do with a CUDA API call the model has no handler for.
//
// Note [Unmodelled calls are listed, inert calls are not]
// Most of the API neither creates work, nor orders it, nor touches memory:
// queries, attributes, module loading, building a graph that is read when it
// is instantiated. Those are "inert" and cost nothing. Everything else the
// model does not handle (interop, IPC, arrays, stream memory operations,
// semaphores, editing an instantiated graph, virtual memory management, ...)
// is "unmodelled": each call becomes an unmodelled_call record and the
// report lists them at exit, because ordering or accesses streamsan did not
// see can hide or invent races. The inert list is explicit; an API the list
// does not name (a new one, say) counts as unmodelled. Inert calls get no
// callbacks at all (cheaper launches: <<<>>> makes two inert runtime calls
// per launch), so the few handled APIs that the inert patterns would catch
// are listed as "observed".
#pragma once

#include <string_view>

namespace streamsan::injection {

enum class api_class {
  inert,       // nothing to model: its callbacks are switched off entirely
  unmodelled,  // listed at exit unless a handler models it
  observed,    // handled although the patterns would call it inert
};

// The API name without CUPTI's version and stream-variant suffixes:
// "cudaMemcpyAsync_ptsz_v7000" -> "cudaMemcpyAsync".
std::string_view base_api_name(std::string_view cupti_name);

api_class classify_api(std::string_view cupti_name);

}  // namespace streamsan::injection
