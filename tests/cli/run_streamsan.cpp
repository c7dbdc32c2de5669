#include "tests/cli/run_streamsan.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include "tests/log/sample_log.h"

namespace streamsan::testing {
namespace {

std::string shell_quoted(const std::string& arg) {
  std::string out = "'";
  for (const char c : arg) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace

command_result run_streamsan(const std::vector<std::string>& args) {
  const char* binary = std::getenv("STREAMSAN_BIN");
  if (binary == nullptr) throw std::runtime_error("STREAMSAN_BIN is not set (run via meson test)");
  static int calls = 0;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("streamsan-cli-" + std::to_string(::getpid()) + "-" + std::to_string(calls++));
  std::filesystem::create_directories(dir);
  std::string command = shell_quoted(binary);
  // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, a false
  // positive) on `" " + std::string&&` here.
  for (const auto& arg : args) command.append(" ").append(shell_quoted(arg));
  command.append(" >").append(shell_quoted((dir / "out").string()));
  command.append(" 2>").append(shell_quoted((dir / "err").string()));
  const int status = std::system(command.c_str());
  command_result result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_file_bytes(dir / "out");
  result.err = read_file_bytes(dir / "err");
  std::filesystem::remove_all(dir);
  return result;
}

}  // namespace streamsan::testing
