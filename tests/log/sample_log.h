// A small, valid access log that uses every record alternative with
// non-default values in every field, for the trace and dump tests.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sanitizer/log/record.h"
#include "sanitizer/log/trace_writer.h"

namespace streamsan::testing {

// The records' views point into static storage: valid for the whole test.
std::vector<record> sample_log();

// Writes `records` to `path` with a trace_writer and closes it.
void write_trace(const std::filesystem::path& path, const std::vector<record>& records,
                 trace_writer_options options = {.symbolize = false});

std::string read_file_bytes(const std::filesystem::path& path);
void write_file_bytes(const std::filesystem::path& path, const std::string& bytes);

// A fresh, empty directory for one test, removed when the program exits.
std::filesystem::path scratch_dir(const std::string& test_name);


}  // namespace streamsan::testing
