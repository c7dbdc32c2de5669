#include "cli/run_request.h"

#include <boost/program_options.hpp>

#include <algorithm>
#include <ostream>

#include "cli/option_tokens.h"
#include "sanitizer/report/exit_codes.h"

namespace streamsan::cli {
namespace {

namespace po = boost::program_options;

po::options_description describe_options() {
  po::options_description d("streamsan run [options] -- PROGRAM ARGS...\n\noptions");
  d.add_options()
      ("help,h", "show this help")
      ("injection-library", po::value<std::string>(),
       "the injection library to load (default: libstreamsan_inject.so next to "
       "streamsan or in its build tree)")
      ("log-path", po::value<std::string>(), "write the report here instead of stderr "
       "(%p = process id)")
      ("format", po::value<std::string>(), "report format: text, json, sarif, html or chrome-trace")
      ("suppressions", po::value<std::string>(), "suppressions file")
      ("no-builtin-suppressions", "report races whose user-side frames all lie inside vendor "
       "libraries (cuBLAS, cuDNN, NCCL, ...) too")
      ("print-limit", po::value<std::string>(), "print at most N diagnostics (0 = all)")
      ("halt-on-error", "stop the program at the first diagnostic")
      ("record", po::value<std::string>(), "also write the access log to this trace file")
      ("stack-depth", po::value<std::string>(), "call-stack frames per operation (0 = off)")
      ("error-exitcode", po::value<std::string>(),
       "exit status when diagnostics were found (default 66; 0 = the program's)")
      ("precise", "measure the exact footprint of every kernel launch (needs the Compute "
       "Sanitizer API; slower, like compute-sanitizer)")
      ("color", po::value<std::string>(), "colour in a text report on a terminal: auto, always "
       "or never")
      ("raw-stacks", "show every recorded frame, nothing folded")
      ("cpp-stacks", "in Python programs, show the C++ frames of libtorch and the interpreter "
       "before the Python frames")
      ("no-python", "do not load the PyTorch support into Python programs")
      ("capture", po::value<std::string>(),
       "where CUDA calls are taken from: auto (the Compute Sanitizer API when installed, "
       "else CUPTI), cupti or sanitizer");
  return d;
}

}  // namespace

std::optional<std::string> check_library_variables(
    const std::function<const char*(std::string_view)>& lookup) {
  try {
    injection::read_library_settings(lookup);
  } catch (const injection::option_error& e) {
    return e.what();
  }
  return std::nullopt;
}

// Options come from STREAMSAN_OPTIONS first; the command line overrides.
std::optional<run_request> parse_run_request(std::span<const std::string> args,
                                             std::optional<std::string_view> env_options,
                                             std::ostream& out, std::ostream& err, int& status) {
  run_request req;
  auto dashes = std::find(args.begin(), args.end(), std::string("--"));
  const std::vector<std::string> own(args.begin(), dashes);
  if (dashes != args.end()) req.program.assign(dashes + 1, args.end());

  const auto description = describe_options();
  if (const auto refused = refuse_placeholder_tokens(own)) {
    err << "streamsan run: " << *refused << '\n';
    status = exit_code::usage;
    return std::nullopt;
  }
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(own).options(description).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    err << "streamsan run: " << e.what() << "\n\n" << description;
    status = exit_code::usage;
    return std::nullopt;
  }
  if (vm.count("help")) {
    out << description;
    status = exit_code::ok;
    return std::nullopt;
  }
  try {
    if (env_options) {
      try {
        req.options = injection::parse_options(*env_options);
      } catch (const injection::option_error& e) {
        throw injection::option_error(std::string(injection::options_variable) + ": " +
                                      e.what());
      }
    }
    const std::pair<const char*, const char*> keys[] = {
        {"log-path", "log_path"},       {"format", "format"},
        {"suppressions", "suppressions"}, {"print-limit", "print_limit"},
        {"record", "record"},           {"stack-depth", "stack_depth"},
        {"error-exitcode", "error_exitcode"}, {"capture", "capture"}, {"color", "color"}};
    for (const auto& [flag, key] : keys) {
      if (vm.count(flag)) {
        try {
          injection::set_option(req.options, key, vm[flag].as<std::string>());
        } catch (const injection::option_error& e) {
          throw injection::option_error(std::string("--") + flag + ": " + e.what());
        }
      }
    }
    if (vm.count("halt-on-error")) req.options.halt_on_error = true;
    if (vm.count("no-builtin-suppressions")) req.options.builtin_suppressions = false;
    if (vm.count("precise")) req.options.precise = true;
    if (vm.count("raw-stacks")) req.options.raw_stacks = true;
    if (vm.count("cpp-stacks")) req.options.cpp_stacks = true;
    if (vm.count("no-python")) req.no_python = true;
  } catch (const injection::option_error& e) {
    err << "streamsan run: " << e.what() << '\n';
    status = exit_code::usage;
    return std::nullopt;
  }
  if (vm.count("injection-library")) req.library = vm["injection-library"].as<std::string>();
  if (req.program.empty()) {
    err << "streamsan run: no program given (usage: streamsan run [options] -- "
           "PROGRAM ARGS...)\n";
    status = exit_code::usage;
    return std::nullopt;
  }
  return req;
}

}  // namespace streamsan::cli
