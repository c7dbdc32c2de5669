// A plain driver for the fuzz targets when libFuzzer is not used: runs the
// target once over each file named on the command line, or over every file
// of each directory named (sorted, so a failure is reproducible by name).
//
//   trace_reader_replay tests/fuzz/corpus/trace_reader
//
// Exits 0 when every input ran, 2 for a usage error or an unreadable input;
// a finding aborts inside the target, as under libFuzzer.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_target.h"

namespace {

namespace fs = std::filesystem;

bool run_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    return false;
  }
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  // A copy of exactly the input's size, so that ASan sees reads past its end.
  const std::vector<std::uint8_t> data(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(data.data(), data.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIRECTORY...\n", argv[0]);
    return 2;
  }
  std::size_t inputs = 0;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg = argv[i];
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      std::vector<fs::path> files;
      for (const auto& entry : fs::directory_iterator(arg)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
      if (files.empty()) {
        std::fprintf(stderr, "replay: %s holds no inputs\n", arg.c_str());
        return 2;
      }
      for (const auto& f : files) {
        if (!run_file(f)) return 2;
        ++inputs;
      }
    } else {
      if (!run_file(arg)) return 2;
      ++inputs;
    }
  }
  std::printf("replay: %zu inputs ran\n", inputs);
  return 0;
}
