// Placeholder until the owning component lands; replaced, not extended.
#include <iostream>

#include "cli/commands.h"
#include "cli/exit_codes.h"

namespace streamsan::cli {

int run_command(std::span<const std::string>) {
  std::cerr << "streamsan run: not built yet\n";
  return exit_code::failed;
}

}  // namespace streamsan::cli
