#include "harness/scenario_template.h"

#include "harness/scenario_place.h"

namespace streamsan::harness {
namespace {

namespace fs = std::filesystem;

fs::path with_yaml(fs::path p) {
  if (p.extension() == ".yaml") return p;
  p += ".yaml";
  return p;
}

fs::path twin_file(const fs::path& racy) {
  std::string stem = racy.stem().string();
  constexpr std::string_view race = "_race";
  if (stem.size() > race.size() && stem.ends_with(race)) {
    stem.resize(stem.size() - race.size());
  }
  return racy.parent_path() / (stem + "_fixed.yaml");
}

// The name a file would be held to: its path below a marked corpus root,
// else its stem.
std::string name_for(const fs::path& file) {
  const scenario_place place = place_of(file.generic_string());
  return place.level == scenario_level::corpus ? place.expected_name : file.stem().string();
}

constexpr std::string_view header = R"(# A streamsan scenario: a small CUDA program written as data, and what must be
# observed when `streamsan test` replays it with the sanitizer live.
# Format: docs/scenarios.md. Editor completion: save the output of
# `streamsan test --print-schema` as scenario.schema.json and make the first
# line of this file the comment  yaml-language-server: $schema=scenario.schema.json
)";

constexpr std::string_view rules_comment =
    R"(# The documented rules it shows. Optional outside a corpus; an id S-... is a
# rule of streamsan's semantics.md, quoted in its own words.
rules:
  - id: S-STREAM-2
    text: "Operations on different streams may run concurrently and in any relative order unless explicitly synchronized"
)";

constexpr std::string_view streams = R"(streams:                # 'default' and 'per_thread' exist without declaring them
  - {name: producer, flags: non_blocking}
  - {name: consumer, flags: non_blocking}
)";

constexpr std::string_view buffers = R"(buffers:                # 32-bit floats; size counts elements
  - {name: A, kind: device, size: 4, fill: 0}
  - {name: S, kind: device, size: 1, fill: 0}
operations:             # issued in this order by one host thread
  - {op: launch, kernel: spin, stream: producer}    # keeps the producer busy, as real work would
  - {op: launch, kernel: fill, stream: producer, out: A, value: 1, label: fill}
)";

constexpr std::string_view sum = R"(  - {op: launch, kernel: reduce_sum, stream: consumer, in: A, out: S, label: sum}
)";

std::string racy_text(const std::string& name, const std::string& twin) {
  std::string text(header);
  text += "name: " + name + "                 # how reports name it\n";
  text += R"(description: >
  A producer stream fills A and a consumer stream sums it, with nothing
  ordering the sum after the fill: the sum may read A before it is filled.
)";
  text += rules_comment;
  text += "twin: " + twin + "          # the fixed version: --schedules N compares with it\n";
  text += streams;
  text += buffers;
  text += sum;
  text += R"(expect:
  # The race the sanitizer must report: 'sum' reads A after 'fill' wrote it,
  # on another stream, with nothing ordering the two. Under a race the values
  # depend on the schedule, so the fixed twin states them.
  diagnostics:
    - {kind: stream-race, hazard: read-after-write, buffer: A, current: sum, previous: fill}
)";
  return text;
}

// `twin` is "" for a scenario written alone.
std::string fixed_text(const std::string& name, const std::string& twin) {
  std::string text(header);
  text += "name: " + name + "                 # how reports name it\n";
  text += R"(description: >
  A producer stream fills A; a consumer stream waits on an event recorded
  after the fill, then sums A.
)";
  text += rules_comment;
  text += R"(  - id: S-EVENT-2
    text: "future work on the stream waits for the work captured by e"
)";
  if (!twin.empty()) text += "twin: " + twin + "          # the racy version\n";
  text += streams;
  text += "events:\n  - {name: filled}\n";
  text += buffers;
  text += R"(  - {op: record, event: filled, stream: producer}   # captures the work so far
  - {op: wait, event: filled, stream: consumer}     # later consumer work waits for it
)";
  text += sum;
  text += R"(expect:
  diagnostics: none     # or a list of {kind, hazard, buffer, current, previous}
  buffers: {S: [4]}     # contents after the final synchronize
)";
  return text;
}

}  // namespace

std::vector<template_file> starting_scenarios(const fs::path& target, bool racy) {
  const fs::path first = with_yaml(target);
  if (!racy) return {{first, name_for(first), fixed_text(name_for(first), "")}};
  const fs::path second = twin_file(first);
  const std::string racy_name = name_for(first);
  const std::string fixed_name = name_for(second);
  return {{first, racy_name, racy_text(racy_name, fixed_name)},
          {second, fixed_name, fixed_text(fixed_name, racy_name)}};
}

}  // namespace streamsan::harness
