// Starting scenarios for `streamsan test --init NAME [--racy]`: commented
// files that run as written, for a user to edit into their own.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace streamsan::harness {

struct template_file {
  std::filesystem::path path;  // NAME.yaml, as given (relative or absolute)
  std::string name;            // the scenario's name
  std::string text;
};

// `target` is the file to write, with or without ".yaml". Without `racy`:
// one correct scenario (an event orders a consumer stream after a
// producer). With `racy`: that program without the event, which races,
// written to `target`, and its fixed twin written beside it (a trailing
// "_race" becomes "_fixed", else "_fixed" is appended). Inside a corpus
// (Note [Two levels] in harness/scenario_place.h) the names are the
// paths below its root; elsewhere, the files' stems.
std::vector<template_file> starting_scenarios(const std::filesystem::path& target, bool racy);

}  // namespace streamsan::harness
