// Traces of small CUDA programs, one per kind of report, as `streamsan run`
// records them: written with the real recorder and trace writer, but with
// call stacks and frame symbols laid out the way they are on a GPU machine
// (Note [Stacks start at the user]): a statically linked CUDA runtime in the
// program's own module, nvcc's launch stubs and cuda_runtime.h's wrapper
// templates above main, libc's entry frames below it, a shared libcudart /
// libcuda for the graph API, and std::thread's frames for a worker thread.
// The programs are spelled out in golden_traces.cpp, line by line, as the
// app.cu the stacks point into ("/home/user/app/app.cu").
//
// Used by the golden tests (tests/report/golden_test.cpp) and by
// `streamsan-golden-trace NAME OUT`, which writes one for trying the report
// formats by hand.
#pragma once

#include <filesystem>
#include <span>
#include <string_view>

namespace streamsan::testing {

// The source root the traces' paths are under.
inline constexpr std::string_view golden_source_root = "/home/user/app";

// The names of the traces, one per program.
std::span<const std::string_view> golden_trace_names();

// Writes trace `name` to `path`; throws std::invalid_argument for an unknown
// name and trace_error when the file cannot be written.
void write_golden_trace(std::string_view name, const std::filesystem::path& path);

}  // namespace streamsan::testing
