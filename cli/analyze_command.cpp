// streamsan analyze TRACE: replays a trace file into the engine and reports
// what it finds (text, JSON, SARIF, an HTML page with race timelines, or a
// Chrome trace of them), after suppressions.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include <boost/program_options.hpp>

#include "cli/commands.h"
#include "cli/option_tokens.h"
#include "sanitizer/engine/engine.h"
#include "sanitizer/log/trace_error.h"
#include "sanitizer/log/trace_reader.h"
#include "sanitizer/report/color.h"
#include "sanitizer/report/exit_codes.h"
#include "sanitizer/report/fix_hint.h"
#include "sanitizer/report/report_format.h"
#include "sanitizer/report/suppressions.h"

namespace streamsan::cli {
namespace {

namespace po = boost::program_options;

constexpr std::string_view usage_line = "usage: streamsan analyze TRACE [options]\n";

struct analyze_options {
  std::filesystem::path trace;
  report_format format = report_format::text;
  std::optional<std::filesystem::path> output;
  int error_exitcode = exit_code::diagnostics_found;
  std::optional<std::filesystem::path> suppressions_file;
  bool builtin_suppressions = true;
  bool print_suppressions = false;
  report_options report;
  color_mode color = color_mode::automatic;
  std::optional<fix_vocabulary> vocabulary;  // nullopt: detect from the stacks
  bool allow_truncated = false;
};

struct usage_error {
  std::string message;
};

po::options_description option_descriptions() {
  po::options_description options("options");
  options.add_options()
      ("help,h", "print this help and exit")
      ("format",
       po::value<std::string>()->value_name("text|json|sarif|html|chrome-trace")->default_value("text"),
       "report format; html: one self-contained page with a timeline per race; chrome-trace: "
       "the timelines for chrome://tracing or Perfetto")
      ("output,o", po::value<std::string>()->value_name("FILE"),
       "write the report to FILE instead of standard output")
      ("error-exitcode", po::value<long long>()->value_name("N"),
       "exit status when warnings remain after suppressions (default 66; 0 turns it off); "
       "possible races never count")
      ("suppressions", po::value<std::string>()->value_name("FILE"),
       "suppression file: race:PATTERN, sync:PATTERN, KIND:PATTERN or "
       "called_from_lib:PATTERN lines")
      ("no-builtin-suppressions",
       "report what NVIDIA's libraries (cuBLAS, cuBLASLt, cuDNN, cuFFT, cuSPARSE, cuRAND, "
       "NCCL, cuSOLVER) did on their own too (the built-in called_from_lib suppressions "
       "hide it by default)")
      ("print-suppressions",
       "after the report, list every suppression, built-in ones included, with how many "
       "warnings it hid (text: in the report; json, sarif: on standard error)")
      ("print-limit", po::value<long long>()->value_name("N"),
       "text format: print at most N warnings, then say how many more there are")
      ("source-root", po::value<std::string>()->value_name("DIR"),
       "show source paths relative to DIR (SARIF: defaults to the current directory)")
      ("stack-depth", po::value<long long>()->value_name("N"),
       "show at most N of the program's own frames per stack (0: all recorded)")
      ("raw-stacks",
       "show every recorded frame: CUDA, launch stubs, streamsan and main's callers included")
      ("cpp-stacks",
       "in a Python program's stacks, show the native frames before the Python ones")
      ("color", po::value<std::string>()->value_name("auto|always|never")->default_value("auto"),
       "colour the text report (auto: when writing to a terminal)")
      ("fix-style", po::value<std::string>()->value_name("auto|cuda|runtime")->default_value("auto"),
       "API the fix hints use: cuda (cudaEventRecord...), runtime (wait_stream, record_stream); "
       "auto: runtime when the stacks pass through the streamsan runtime")
      ("allow-truncated",
       "accept a trace whose writer died before closing it (no end-of-trace marker)");
  return options;
}

std::string help_text() {
  std::ostringstream out;
  out << usage_line
      << "\nReports the races and synchronization errors in a trace recorded by the\n"
         "streamsan runtime (a trace_writer). Races found with guessed (inferred)\n"
         "kernel footprints and never confirmed by a measured one are listed as\n"
         "possible races, not reported. Exit status: 0 when nothing is reported,\n"
         "--error-exitcode (66) when something is, 2 for a bad option, 3 for an\n"
         "unreadable or corrupt trace or suppression file.\n\n"
      << option_descriptions();
  return out.str();
}

long long in_range(const po::variables_map& vm, const char* name, long long low, long long high) {
  const auto value = vm[name].as<long long>();
  if (value < low || value > high) {
    throw usage_error{"--" + std::string(name) + " must be between " + std::to_string(low) +
                      " and " + std::to_string(high) + ", not " + std::to_string(value)};
  }
  return value;
}

// nullopt: --help was given.
std::optional<analyze_options> parse(std::span<const std::string> args) {
  po::options_description visible = option_descriptions();
  po::options_description all;
  all.add(visible).add_options()("trace", po::value<std::vector<std::string>>());
  po::positional_options_description positional;
  positional.add("trace", -1);
  if (const auto refused = refuse_placeholder_tokens(args)) throw usage_error{*refused};
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(std::vector<std::string>(args.begin(), args.end()))
                  .options(all)
                  .positional(positional)
                  .run(),
              vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw usage_error{e.what()};
  }
  if (vm.count("help")) return std::nullopt;

  analyze_options options;
  const auto traces = vm.count("trace") ? vm["trace"].as<std::vector<std::string>>()
                                        : std::vector<std::string>();
  if (traces.size() != 1) {
    throw usage_error{traces.empty() ? "no trace file given"
                                     : "one trace file at a time (got " +
                                           std::to_string(traces.size()) + ")"};
  }
  options.trace = traces.front();
  const auto format = vm["format"].as<std::string>();
  const auto parsed_format = parse_report_format(format);
  if (!parsed_format) {
    throw usage_error{"--format must be " + std::string(report_format_names) + ", not '" +
                      format + "'"};
  }
  options.format = *parsed_format;
  if (vm.count("output")) options.output = vm["output"].as<std::string>();
  if (vm.count("error-exitcode")) {
    options.error_exitcode = static_cast<int>(in_range(vm, "error-exitcode", 0, 255));
  }
  if (vm.count("suppressions")) options.suppressions_file = vm["suppressions"].as<std::string>();
  options.builtin_suppressions = vm.count("no-builtin-suppressions") == 0;
  options.print_suppressions = vm.count("print-suppressions") > 0;
  if (vm.count("print-limit")) {
    options.report.print_limit =
        static_cast<std::size_t>(in_range(vm, "print-limit", 0, 1'000'000'000));
  }
  if (vm.count("source-root")) {
    options.report.source_root = std::filesystem::absolute(vm["source-root"].as<std::string>());
  } else if (options.format == report_format::sarif) {
    // GitHub code scanning wants paths relative to the repository root,
    // which is where the analysis normally runs.
    options.report.source_root = std::filesystem::current_path();
  }
  if (vm.count("stack-depth")) {
    options.report.stacks.depth = static_cast<std::size_t>(in_range(vm, "stack-depth", 0, 1000));
  }
  options.report.stacks.raw = vm.count("raw-stacks") > 0;
  options.report.stacks.native_with_python = vm.count("cpp-stacks") > 0;
  const auto color = vm["color"].as<std::string>();
  const auto parsed_color = parse_color_mode(color);
  if (!parsed_color) throw usage_error{"--color must be auto, always or never, not '" + color + "'"};
  options.color = *parsed_color;
  if (const auto style = vm["fix-style"].as<std::string>(); style != "auto") {
    options.vocabulary = parse_fix_vocabulary(style);
    if (!options.vocabulary) {
      throw usage_error{"--fix-style must be auto, cuda or runtime, not '" + style + "'"};
    }
  }
  options.allow_truncated = vm.count("allow-truncated") > 0;
  return options;
}

}  // namespace

int analyze_command(std::span<const std::string> args) {
  std::optional<analyze_options> parsed;
  try {
    parsed = parse(args);
  } catch (const usage_error& e) {
    std::cerr << "streamsan analyze: " << e.message << "\n"
              << usage_line << "Run 'streamsan analyze --help' for the options.\n";
    return exit_code::usage;
  }
  if (!parsed) {
    std::cout << help_text();
    return exit_code::ok;
  }
  const analyze_options& options = *parsed;

  // The user's rules first, so that they win a match (as in TSan).
  suppressions rules;
  if (options.suppressions_file) {
    try {
      rules = suppressions::load(*options.suppressions_file);
    } catch (const suppression_error& e) {
      std::cerr << "streamsan analyze: " << e.what() << '\n';
      return exit_code::bad_input;
    }
  }
  if (options.builtin_suppressions) rules.append(suppressions::builtin());

  engine_options engine_config;
  if (draws_timelines(options.format)) engine_config.timeline_window = default_timeline_window;
  engine eng(engine_config);
  try {
    trace_reader reader(options.trace, {.allow_missing_end = options.allow_truncated});
    reader.read_all(eng);
  } catch (const trace_error& e) {
    std::cerr << "streamsan analyze: " << e.what() << '\n';
    if (e.reason().starts_with("truncated trace: no end-of-trace marker")) {
      std::cerr << "streamsan analyze: --allow-truncated analyzes the records before the end\n";
    }
    return exit_code::bad_input;
  }

  // The trace was written by another process: only the symbols it carries
  // are valid (Note [Symbols travel with the trace]).
  symbolizer symbols(eng.tables(), symbol_source::log_only);
  const auto kept = apply_suppressions(eng.diagnostics(), rules, symbols);
  report_options report = options.report;
  report.vocabulary = options.vocabulary.value_or(detect_vocabulary(eng.diagnostics(), symbols));
  // Colour only for text, on a terminal unless forced; a file never asks.
  const color_mode color = options.output && options.color == color_mode::automatic
                               ? color_mode::never
                               : options.color;
  report.color = options.format == report_format::text && use_color(color, STDOUT_FILENO);
  const report_input input{.diagnostics = kept.kept,
                           .tables = eng.tables(),
                           .unmodelled_calls = &eng.unmodelled_calls(),
                           .records_processed = eng.records_processed(),
                           .suppressed = kept.suppressed,
                           .suppressed_builtin = kept.suppressed_builtin,
                           .device_synchronized_conflicts =
                               eng.statistics().device_synchronized_conflicts,
                           .host_ordered_conflicts = eng.statistics().host_ordered_conflicts};
  // Machine-readable reports stay parseable: the list goes to stderr.
  const auto print_rules = [&](std::ostream& report_stream) {
    if (!options.print_suppressions) return;
    print_suppressions(options.format == report_format::text ? report_stream : std::cerr, rules,
                       kept.hits);
  };
  if (options.output) {
    std::ofstream file(*options.output, std::ios::binary | std::ios::trunc);
    if (file) {
      print_report(file, options.format, input, symbols, report);
      print_rules(file);
    }
    file.flush();
    if (!file) {
      std::cerr << "streamsan analyze: cannot write " << options.output->string() << '\n';
      return exit_code::failed;
    }
  } else {
    print_report(std::cout, options.format, input, symbols, report);
    print_rules(std::cout);
    std::cout.flush();
  }
  // Candidates are no promise: only confirmed diagnostics fail the analysis.
  return confirmed_count(kept.kept) == 0 ? exit_code::ok : options.error_exitcode;
}

}  // namespace streamsan::cli
