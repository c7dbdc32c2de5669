#include "sanitizer/report/suppressions.h"

#include <gtest/gtest.h>

#include "sanitizer/log/interpreter_frame.h"

#include <fstream>
#include <sstream>

#include "tests/report/report_fixture.h"

namespace streamsan {
namespace {

std::string parse_error(std::string_view text) {
  try {
    suppressions::parse(text, "supp.txt");
    return {};
  } catch (const suppression_error& e) {
    return e.what();
  }
}

TEST(Suppressions, ParsesRulesCommentsAndBlankLines) {
  const auto rules = suppressions::parse(
      "# a comment\n"
      "\n"
      "race:fill\n"
      "  sync: ^sync_all$  \n"
      "use-after-free:*/vendor/*\r\n"
      "race:ns::function",
      "supp.txt");
  ASSERT_EQ(rules.rules().size(), 4u);
  EXPECT_EQ(rules.rules()[0].category, "race");
  EXPECT_EQ(rules.rules()[0].pattern, "fill");
  EXPECT_EQ(rules.rules()[0].origin, "supp.txt:3");
  EXPECT_EQ(rules.rules()[1].category, "sync");
  EXPECT_EQ(rules.rules()[1].pattern, "^sync_all$");
  EXPECT_EQ(rules.rules()[1].origin, "supp.txt:4");
  EXPECT_EQ(rules.rules()[2].category, "use-after-free");
  EXPECT_EQ(rules.rules()[2].pattern, "*/vendor/*");
  EXPECT_EQ(rules.rules()[3].pattern, "ns::function");  // only the first ':' splits
  EXPECT_TRUE(suppressions::parse("", "empty").empty());
  EXPECT_TRUE(suppressions::parse("# only\n\n", "comments").empty());
}

TEST(Suppressions, MalformedLinesNameFileLineAndCause) {
  EXPECT_EQ(parse_error("race:a\nfill_kernel\n"),
            "supp.txt:2: expected TYPE:PATTERN (e.g. race:my_kernel), got 'fill_kernel'");
  EXPECT_EQ(parse_error("\n\nrase:fill\n"),
            "supp.txt:3: unknown suppression type 'rase' (expected race, sync, "
            "called_from_lib or a diagnostic kind such as stream-race)");
  EXPECT_EQ(parse_error("race:   \n"), "supp.txt:1: empty pattern after 'race:'");
  EXPECT_EQ(parse_error("sync:a^b\n"), "supp.txt:1: '^' may only begin a pattern");
  EXPECT_EQ(parse_error("sync:a$b\n"), "supp.txt:1: '$' may only end a pattern");
  EXPECT_EQ(parse_error("race:^$\n"), "supp.txt:1: pattern '^$' matches nothing");
}

TEST(Suppressions, UnreadableFileNamesThePath) {
  try {
    suppressions::load("/nonexistent/streamsan.supp");
    FAIL() << "no error";
  } catch (const suppression_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "/nonexistent/streamsan.supp: cannot read suppressions file: No such file or "
              "directory");
  }
}

TEST(Suppressions, GlobsMatchAnywhereUnlessAnchored) {
  EXPECT_TRUE(suppression_pattern_matches("fill", "launch_fill(float*)"));
  EXPECT_TRUE(suppression_pattern_matches("^launch", "launch_fill(float*)"));
  EXPECT_FALSE(suppression_pattern_matches("^fill", "launch_fill(float*)"));
  EXPECT_TRUE(suppression_pattern_matches("*)$", "launch_fill(float*)"));
  EXPECT_FALSE(suppression_pattern_matches("fill$", "launch_fill(float*)"));
  EXPECT_TRUE(suppression_pattern_matches("^launch_*(float*)$", "launch_fill(float*)"));
  EXPECT_TRUE(suppression_pattern_matches("la*fi*oat", "launch_fill(float*)"));
  EXPECT_FALSE(suppression_pattern_matches("fill*sum", "launch_fill(float*)"));
  EXPECT_TRUE(suppression_pattern_matches("^demo.cpp$", "demo.cpp"));
  EXPECT_FALSE(suppression_pattern_matches("x", ""));
  EXPECT_TRUE(suppression_pattern_matches("*", "anything"));
}

std::optional<std::size_t> match(std::string_view text, const diagnostic& d) {
  const auto tables = testing::report_tables();
  symbolizer symbols(tables, symbol_source::log_only);
  return suppressions::parse(text, "supp.txt").match(d, symbols);
}

TEST(Suppressions, MatchOperationNamesFramesFilesAndLabels) {
  const auto race = testing::stream_race_diagnostic();
  EXPECT_EQ(match("race:^sum$", race), 0u);                      // current kernel name
  EXPECT_EQ(match("race:^fill$", race), 0u);                     // previous kernel name
  EXPECT_EQ(match("race:launch_fill", race), 0u);                // previous frame function
  EXPECT_EQ(match("race:*/demo/demo.cpp$", race), 0u);           // frame file
  EXPECT_EQ(match("race:^A$", race), 0u);                        // allocation label
  EXPECT_EQ(match("race:make_buffers", race), std::nullopt);     // allocation site: not matched
  EXPECT_EQ(match("race:nothing_like_it", race), std::nullopt);
  EXPECT_EQ(match("race:nothing\nrace:main", race), 1u);         // first matching rule wins
}

TEST(Suppressions, CategoriesSelectKinds) {
  const auto all = testing::every_kind_diagnostics();
  const auto& race = all[0];        // stream-race
  const auto& unrecorded = all[6];  // unrecorded-event
  EXPECT_EQ(match("sync:main", race), std::nullopt);
  EXPECT_EQ(match("race:main", unrecorded), std::nullopt);
  EXPECT_EQ(match("sync:main", unrecorded), 0u);
  EXPECT_EQ(match("stream-race:main", race), 0u);
  EXPECT_EQ(match("host-device-race:main", race), std::nullopt);
  EXPECT_EQ(match("unrecorded-event:sync_all", unrecorded), 0u);
}

TEST(Suppressions, ApplyCountsWhatWasRemovedPerRule) {
  const auto tables = testing::report_tables();
  symbolizer symbols(tables, symbol_source::log_only);
  const auto all = testing::every_kind_diagnostics();
  const auto rules = suppressions::parse("sync:sync_all\nrace:^sum$\nrace:never\n", "supp.txt");
  const auto result = apply_suppressions(all, rules, symbols);
  // sync_all is in a stack of every sync diagnostic (5); kernel 'sum' is
  // the current or previous operation of 4 races (stream, host-device,
  // free-while-in-use, use-after-free).
  EXPECT_EQ(result.hits, (std::vector<std::uint64_t>{5, 4, 0}));
  EXPECT_EQ(result.suppressed, 9u);
  ASSERT_EQ(result.kept.size(), all.size() - 9);
  for (const auto& d : result.kept) {
    EXPECT_FALSE(rules.match(d, symbols).has_value());
  }
}

TEST(Suppressions, ApplyToCandidatesAsToConfirmedDiagnostics) {
  const auto tables = testing::report_tables();
  symbolizer symbols(tables, symbol_source::log_only);
  const std::vector<diagnostic> all{testing::inferred_candidate(),
                                    testing::half_measured_candidate(),
                                    testing::measured_atomic_race()};
  const auto rules = suppressions::parse("stream-race:^B$\n", "supp.txt");  // alloc#5's label
  const auto result = apply_suppressions(all, rules, symbols);
  EXPECT_EQ(result.suppressed, 1u);
  ASSERT_EQ(result.kept.size(), 2u);
  EXPECT_TRUE(is_candidate(result.kept[0]));
  EXPECT_EQ(result.kept[0].allocation->id, alloc_id{3});
  EXPECT_EQ(confirmed_count(result.kept), 1u);
  const auto everything = apply_suppressions(all, suppressions::parse("race:fill\n", "s"), symbols);
  EXPECT_EQ(everything.suppressed, 3u);
}


// ---- called_from_lib and the built-in library suppressions ----

// Call sites in modules: frames 0x10.. are in cuBLAS (below the CUDA
// runtime's and the driver's frames, as another producer than the injection
// library may record them), 0x20.. in the program, 0x30 in cuBLASLt, 0x40
// has no symbol at all.
class LibrarySuppressions : public ::testing::Test {
 protected:
  enum : std::uint32_t { cublas_stack = 1, program_stack, cublaslt_stack, unknown_stack };

  LibrarySuppressions() {
    frame(0x11, "/usr/local/cuda/lib64/libcudart.so.13", "cudaEventQuery");
    frame(0x12, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "");
    frame(0x13, "/opt/torch/lib/nvidia/cu13/lib/libcublas.so.13", "cublasSgemm_v2");
    frame(0x21, "/home/me/app", "main");
    frame(0x31, "/opt/torch/lib/nvidia/cu13/lib/libcublasLt.so.13", "cublasLtMatmul");
    tables_.define_stack(stack_id{cublas_stack}, std::vector<std::uint64_t>{0x11, 0x12, 0x13, 0x21});
    tables_.define_stack(stack_id{program_stack}, std::vector<std::uint64_t>{0x21});
    tables_.define_stack(stack_id{cublaslt_stack}, std::vector<std::uint64_t>{0x31, 0x13, 0x21});
    tables_.define_stack(stack_id{unknown_stack}, std::vector<std::uint64_t>{0x40, 0x13});
  }

  void frame(std::uint64_t address, std::string module, std::string function) {
    symbol_info s;
    s.module = std::move(module);
    s.function = std::move(function);
    tables_.define_symbol(address, std::move(s));
  }

  static diagnostic unrecorded_event_at(std::uint32_t stack) {
    diagnostic d;
    d.kind = diagnostic_kind::unrecorded_event;
    d.current.op = operation_kind::event_synchronize;
    d.current.stack = stack_id{stack};
    return d;
  }

  static diagnostic race_between(std::uint32_t current, std::uint32_t previous) {
    diagnostic d;
    d.kind = diagnostic_kind::stream_race;
    d.current.op = operation_kind::kernel;
    d.current.stack = stack_id{current};
    d.previous = operation_ref{};
    d.previous->op = operation_kind::kernel;
    d.previous->stack = stack_id{previous};
    return d;
  }

  std::optional<std::size_t> match(const suppressions& rules, const diagnostic& d) {
    symbolizer symbols(tables_, symbol_source::log_only);
    return rules.match(d, symbols);
  }

  log_tables tables_;
};

TEST_F(LibrarySuppressions, BuiltinRulesNameEveryLibraryOfTheIssue) {
  const auto rules = suppressions::builtin();
  std::vector<std::string> origins;
  for (const auto& rule : rules.rules()) {
    EXPECT_EQ(rule.category, "called_from_lib");
    EXPECT_TRUE(rule.builtin);
    origins.push_back(rule.origin);
  }
  EXPECT_EQ(origins, (std::vector<std::string>{
                         "built-in (cuBLAS)", "built-in (cuBLASLt)", "built-in (cuDNN)",
                         "built-in (cuFFT)", "built-in (cuSPARSE)", "built-in (cuRAND)",
                         "built-in (NCCL)", "built-in (cuSOLVER)"}));
}

TEST_F(LibrarySuppressions, BuiltinPatternsMatchLibraryFileNamesOnly) {
  const auto rules = suppressions::builtin();
  const auto matching = [&](std::string_view module) {
    std::vector<std::string> hit;
    for (const auto& rule : rules.rules()) {
      if (suppression_pattern_matches(rule.pattern, module)) hit.push_back(rule.origin);
    }
    return hit;
  };
  using list = std::vector<std::string>;
  EXPECT_EQ(matching("libcublas.so.13"), (list{"built-in (cuBLAS)"}));
  EXPECT_EQ(matching("libcublasLt.so.13.0.2"), (list{"built-in (cuBLASLt)"}));
  EXPECT_EQ(matching("libcudnn_engines_precompiled.so.9"), (list{"built-in (cuDNN)"}));
  EXPECT_EQ(matching("libcufftw.so.12"), (list{"built-in (cuFFT)"}));
  EXPECT_EQ(matching("libcusparse.so.12"), (list{"built-in (cuSPARSE)"}));
  EXPECT_EQ(matching("libcurand.so.10"), (list{"built-in (cuRAND)"}));
  EXPECT_EQ(matching("libnccl.so.2"), (list{"built-in (NCCL)"}));
  EXPECT_EQ(matching("libcusolverMg.so.11"), (list{"built-in (cuSOLVER)"}));
  EXPECT_EQ(matching("libcudart.so.13"), list{});
  EXPECT_EQ(matching("libmycublas_wrapper.so"), list{});
}

TEST_F(LibrarySuppressions, AnOperationCalledFromALibraryIsSuppressed) {
  const auto rules = suppressions::builtin();
  // The CUDA runtime's and the driver's frames are skipped: cuBLAS called
  // cudaEventQuery, whatever the program's frames below it.
  EXPECT_EQ(match(rules, unrecorded_event_at(cublas_stack)), 0u);
  EXPECT_EQ(match(rules, unrecorded_event_at(cublaslt_stack)), 1u);
  EXPECT_EQ(match(rules, unrecorded_event_at(program_stack)), std::nullopt);
}

TEST_F(LibrarySuppressions, EveryOperationMustComeFromALibrary) {
  const auto rules = suppressions::builtin();
  // Two libraries' operations: suppressed, counted for the current one's.
  EXPECT_EQ(match(rules, race_between(cublaslt_stack, cublas_stack)), 1u);
  // The program's own work on one side: a real report.
  EXPECT_EQ(match(rules, race_between(cublas_stack, program_stack)), std::nullopt);
  EXPECT_EQ(match(rules, race_between(program_stack, cublas_stack)), std::nullopt);
}

TEST_F(LibrarySuppressions, PythonFramesBehindALibrarysCallDoNotHideIt) {
  // A Python program's NCCL call, its frames read from the interpreter
  // behind the native ones (Note [Python frames read in place]): the
  // native call site still selects the built-in rule.
  frame(0x51, "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2", "ncclGroupEnd");
  symbol_info python;
  python.function = "train_step";
  python.file = "/work/train.py";
  python.line = 12;
  tables_.define_symbol(interpreter_frame_address(0x8000'0001u), python);
  tables_.define_stack(stack_id{9},
                       std::vector<std::uint64_t>{0x11, 0x51, interpreter_frame_address(0x8000'0001u)});
  EXPECT_EQ(match(suppressions::builtin(), unrecorded_event_at(9)), 6u);  // NCCL's rule
}

TEST_F(LibrarySuppressions, UnknownCallSitesAreNeverALibrarys) {
  const auto rules = suppressions::builtin();
  EXPECT_EQ(match(rules, unrecorded_event_at(unknown_stack)), std::nullopt);
  EXPECT_EQ(match(rules, unrecorded_event_at(0)), std::nullopt);  // no stack
  EXPECT_EQ(match(rules, race_between(cublas_stack, 0)), std::nullopt);
}

TEST_F(LibrarySuppressions, UserRulesNameLibrariesByFileNameOrPath) {
  EXPECT_EQ(match(suppressions::parse("called_from_lib:^libcublas.so", "s"),
                  unrecorded_event_at(cublas_stack)),
            0u);
  EXPECT_EQ(match(suppressions::parse("called_from_lib:*/nvidia/cu13/*", "s"),
                  unrecorded_event_at(cublas_stack)),
            0u);
  EXPECT_EQ(match(suppressions::parse("called_from_lib:^libcudart.so", "s"),
                  unrecorded_event_at(cublas_stack)),
            std::nullopt);  // CUDA's own frames are never call sites
  // An ordinary rule matches frame modules too (as TSan's do).
  EXPECT_EQ(match(suppressions::parse("sync:libcublasLt", "s"),
                  unrecorded_event_at(cublaslt_stack)),
            0u);
}

TEST_F(LibrarySuppressions, ApplyCountsBuiltinHitsApartAndUserRulesComeFirst) {
  auto rules = suppressions::parse("sync:cublasLtMatmul\n", "supp.txt");
  rules.append(suppressions::builtin());
  symbolizer symbols(tables_, symbol_source::log_only);
  const std::vector<diagnostic> all = {unrecorded_event_at(cublas_stack),
                                       unrecorded_event_at(cublaslt_stack),
                                       unrecorded_event_at(program_stack)};
  const auto result = apply_suppressions(all, rules, symbols);
  EXPECT_EQ(result.suppressed, 2u);
  EXPECT_EQ(result.suppressed_builtin, 1u);
  ASSERT_EQ(result.hits.size(), 9u);
  EXPECT_EQ(result.hits[0], 1u);  // the user's rule took the cuBLASLt one
  EXPECT_EQ(result.hits[1], 1u);  // built-in cuBLAS
  ASSERT_EQ(result.kept.size(), 1u);
  EXPECT_EQ(result.kept[0].current.stack, stack_id{program_stack});
}

TEST(Suppressions, PrintListsEveryRuleWithItsHits) {
  auto rules = suppressions::parse("race:fill\n", "supp.txt");
  rules.append(suppressions::builtin());
  std::vector<std::uint64_t> hits(rules.rules().size(), 0);
  hits[0] = 12;
  hits[1] = 3;
  std::ostringstream out;
  print_suppressions(out, rules, hits);
  const std::string text = out.str();
  EXPECT_EQ(text.substr(0, text.find('\n', text.find("cuBLAS")) + 1),
            "streamsan: suppressions (hits, rule, origin):\n"
            "      12  race:fill  supp.txt:1\n"
            "       3  called_from_lib:^libcublas.so  built-in (cuBLAS)\n");
  EXPECT_NE(text.find("       0  called_from_lib:^libcusolver  built-in (cuSOLVER)\n"),
            std::string::npos);
  std::ostringstream none;
  print_suppressions(none, suppressions{}, {});
  EXPECT_EQ(none.str(), "streamsan: suppressions (hits, rule, origin):\n  (none)\n");
}

}  // namespace
}  // namespace streamsan
