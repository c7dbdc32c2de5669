// streamsan test [PATHS...] [options]: replays scenario files (harness/)
// and compares what the sanitizer and the runtime observed with what each
// scenario expects. See docs/scenarios.md.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "cli/commands.h"
#include "cli/option_tokens.h"
#include "harness/corpus.h"
#include "harness/junit_writer.h"
#include "harness/progress_display.h"
#include "harness/result_json.h"
#include "harness/scenario_error.h"
#include "harness/scenario_schema.h"
#include "harness/scenario_template.h"
#include "harness/summary_table.h"
#include "harness/test_run.h"
#include "runtime/backend/backend.h"
#include "sanitizer/report/exit_codes.h"

namespace streamsan::cli {
namespace {

namespace po = boost::program_options;
namespace h = streamsan::harness;

constexpr const char* usage_line =
    "usage: streamsan test [PATHS...] [options]\n"
    "       streamsan test --init NAME [--racy]\n";

struct test_options {
  std::vector<std::string> paths;
  std::string backend = "sim";
  std::string filter;
  std::string junit;
  std::string json;
  unsigned jobs = 1;
  std::uint64_t schedules = 0;
  bool require_witness = false;
  bool list = false;
  bool strict = false;
  std::string init;
  bool racy = false;
  bool print_schema = false;
  bool worker = false;
  std::vector<std::string> strict_roots;  // --strict-root (workers)
};

// Writes `write(out)` to `path`, creating its directory; false (and a
// message) when it cannot.
template <class Write>
bool write_file(const std::string& path, const char* what, Write write) {
  std::error_code ec;
  const auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  std::ofstream out(path);
  if (out) write(out);
  if (!out) {
    std::cerr << "streamsan test: cannot write the " << what << " file " << path << '\n';
    return false;
  }
  return true;
}

// sim | cuda | auto | all -> the backends to run; throws po::error.
std::vector<std::string> backends_for(const std::string& choice) {
  if (choice == "sim") return {"sim"};
  if (choice == "cuda") {
    if (!rt::cuda_device_present()) {
      throw po::error("--backend cuda needs a CUDA device; none was found (use --backend sim "
                      "or auto)");
    }
    return {"cuda"};
  }
  if (choice == "auto") return {rt::cuda_device_present() ? "cuda" : "sim"};
  if (choice == "all") {
    if (!rt::cuda_device_present()) {
      throw po::error("--backend all compares sim with cuda and needs a CUDA device; none was "
                      "found (use --backend sim)");
    }
    return {"sim", "cuda"};
  }
  throw po::error("--backend must be sim, cuda, auto or all, not '" + choice + "'");
}

std::string self_executable() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

std::vector<std::filesystem::path> as_paths(const std::vector<std::string>& strings) {
  return {strings.begin(), strings.end()};
}

// --strict: every folder given is a corpus root, and so is the folder of
// every file given (Note [Two levels] in harness/scenario_place.h).
std::vector<std::filesystem::path> strict_roots(const test_options& o) {
  std::vector<std::filesystem::path> roots = as_paths(o.strict_roots);
  if (!o.strict) return roots;
  for (const auto& p : o.paths) {
    std::error_code ec;
    const std::filesystem::path path(p);
    if (std::filesystem::is_directory(path, ec)) {
      roots.push_back(path);
    } else {
      roots.push_back(path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path());
    }
  }
  return roots;
}

// --init NAME [--racy]: writes starting scenarios, never over a file.
int write_starting_scenarios(const test_options& o) {
  const auto files = h::starting_scenarios(o.init, o.racy);
  for (const auto& f : files) {
    if (f.name.empty() || f.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                   "0123456789_-./") != std::string::npos) {
      std::cerr << "streamsan test: '" << f.name << "' (from --init " << o.init
                << ") cannot be a scenario name; use letters, digits, '_', '-' and '.'\n";
      return exit_code::usage;
    }
    std::error_code ec;
    if (std::filesystem::exists(f.path, ec)) {
      std::cerr << "streamsan test: " << f.path.generic_string()
                << " exists; --init does not overwrite a file\n";
      return exit_code::usage;
    }
  }
  std::string written;
  std::string run;
  for (const auto& f : files) {
    if (!write_file(f.path.string(), "scenario", [&](std::ostream& out) { out << f.text; })) {
      return exit_code::failed;
    }
    written += (written.empty() ? "" : " and ") + f.path.generic_string();
    run += " " + f.path.generic_string();
  }
  std::cout << "wrote " << written
            << (o.racy ? " (a racy scenario and its fixed twin)" : "") << "\n"
            << "run them: streamsan test" << run << (o.racy ? " --schedules 20" : "") << '\n';
  return exit_code::ok;
}

// --worker: one scenario file, one backend; the result as JSON on stdout
// (Note [Worker processes] in harness/test_run.h).
int run_worker(const test_options& o, const h::test_settings& settings) {
  const auto c = h::corpus::load({std::filesystem::path(o.paths.at(0))}, strict_roots(o));
  if (!c.errors().empty() || c.scenarios().size() != 1) {
    for (const auto& e : c.errors()) std::cerr << e << '\n';
    return exit_code::bad_input;
  }
  const auto result = h::run_scenario(c.scenarios().front(), c, settings.backends.at(0), settings);
  std::cout << h::to_json(result).dump() << '\n';
  return exit_code::ok;
}

}  // namespace

int test_command(std::span<const std::string> args) {
  test_options o;
  po::options_description visible("options");
  visible.add_options()
      ("help,h", "show this help")
      ("backend", po::value(&o.backend)->default_value("sim"),
       "sim, cuda, auto (cuda when a GPU is present) or all (sim and cuda; they must agree)")
      ("filter", po::value(&o.filter), "run only scenarios whose name matches this glob "
       "(e.g. 'event/*', '*_race')")
      ("junit", po::value(&o.junit), "write a JUnit XML report to FILE")
      ("json", po::value(&o.json), "write a JSON report to FILE")
      ("jobs,j", po::value(&o.jobs)->default_value(1), "replay N scenarios at once (worker processes)")
      ("schedules", po::value(&o.schedules)->default_value(0),
       "sim: replay each scenario under N scheduler seeds and look for a seed that produces a "
       "wrong value")
      ("require-witness", po::bool_switch(&o.require_witness),
       "with --schedules: a buggy scenario fails when no seed produced a wrong value")
      ("list", po::bool_switch(&o.list), "list the selected scenarios and exit")
      ("strict", po::bool_switch(&o.strict),
       "hold the scenarios to the corpus rules (names are paths below each folder given, rules "
       "quoted from semantics.md, twins), as in a folder marked with .streamsan-corpus")
      ("init", po::value(&o.init), "write a commented starting scenario NAME.yaml and exit")
      ("racy", po::bool_switch(&o.racy),
       "with --init: a racy scenario and its fixed twin (NAME's '_race' becomes '_fixed')")
      ("print-schema", po::bool_switch(&o.print_schema),
       "print the JSON Schema of scenario files (for an editor's YAML language server) and exit");
  po::options_description hidden;
  hidden.add_options()
      ("paths", po::value(&o.paths))
      ("worker", po::bool_switch(&o.worker))
      ("strict-root", po::value(&o.strict_roots));
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description positional;
  positional.add("paths", -1);

  h::test_settings settings;
  if (const auto refused = refuse_placeholder_tokens(args)) {
    std::cerr << "streamsan test: " << *refused << "\n" << usage_line;
    return exit_code::usage;
  }
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(std::vector<std::string>(args.begin(), args.end()))
                  .options(all)
                  .positional(positional)
                  .run(),
              vm);
    po::notify(vm);
    if (vm.count("help") != 0) {
      std::cout << usage_line
                << "Replays scenario files (*.yaml; directories are searched recursively,\n"
                   "default: scenarios) through the runtime with the sanitizer live.\n\n"
                << visible;
      return exit_code::ok;
    }
    if (o.jobs == 0) throw po::error("--jobs must be at least 1");
    if (o.racy && o.init.empty()) throw po::error("--racy needs --init NAME");
    if (!o.init.empty() && !o.paths.empty()) {
      throw po::error("--init NAME writes a new scenario; it takes no PATHS");
    }
    if (o.require_witness && o.schedules == 0) {
      throw po::error("--require-witness needs --schedules N");
    }
    settings.backends = backends_for(o.backend);
  } catch (const po::error& e) {
    std::cerr << "streamsan test: " << e.what() << "\n" << usage_line;
    return exit_code::usage;
  }
  if (o.print_schema) {
    std::cout << h::scenario_schema_json;
    return exit_code::ok;
  }
  if (!o.init.empty()) return write_starting_scenarios(o);
  if (o.paths.empty()) o.paths.push_back("scenarios");
  settings.jobs = o.jobs;
  settings.schedules = o.schedules;
  settings.require_witness = o.require_witness;
  settings.worker_executable = self_executable();
  if (o.worker) return run_worker(o, settings);

  std::vector<std::filesystem::path> files;
  try {
    files = h::find_scenario_files(o.paths);
  } catch (const h::scenario_error& e) {
    std::cerr << "streamsan test: " << e.what() << '\n';
    return exit_code::bad_input;
  }
  const auto c = h::corpus::load(files, strict_roots(o));
  if (!c.errors().empty()) {
    for (const auto& e : c.errors()) std::cerr << e << '\n';
    std::cerr << "streamsan test: " << c.errors().size() << " malformed scenario file(s)\n";
    return exit_code::bad_input;
  }
  std::vector<const h::scenario*> selected;
  for (const auto& s : c.scenarios()) {
    if (o.filter.empty() || h::glob_match(o.filter, s.name)) selected.push_back(&s);
  }
  if (selected.empty()) {
    std::cerr << "streamsan test: no scenario "
              << (o.filter.empty() ? std::string("found") : "matches '" + o.filter + "'")
              << " in " << o.paths.front() << (o.paths.size() > 1 ? " ..." : "") << '\n';
    return exit_code::failed;
  }
  if (o.list) {
    for (const auto* s : selected) std::cout << s->name << "  " << s->file << '\n';
    return exit_code::ok;
  }

  h::progress_display progress(std::cout, ::isatty(STDOUT_FILENO) != 0);
  const auto results = h::run_scenarios(
      c, selected, settings,
      [&](const h::scenario_result& r, std::size_t done, std::size_t total) {
        progress.finished(r, done, total);
      });
  progress.close();
  h::write_summary(std::cout, results);

  bool written = true;
  if (!o.junit.empty()) {
    written &= write_file(o.junit, "JUnit", [&](std::ostream& out) { h::write_junit(out, results); });
  }
  if (!o.json.empty()) {
    written &= write_file(o.json, "JSON", [&](std::ostream& out) { h::write_json_report(out, results); });
  }
  const bool failed = std::any_of(results.begin(), results.end(), [](const auto& r) {
    return r.status == h::result_status::failed;
  });
  return failed || !written ? exit_code::failed : exit_code::ok;
}

}  // namespace streamsan::cli
