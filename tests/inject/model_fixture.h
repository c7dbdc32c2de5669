// The model over a fake driver, with a capture sink and the real engine
// behind its recorder: the fixture of the model's tests that check records
// and verdicts.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "inject/model/cuda_model.h"
#include "sanitizer/engine/engine.h"
#include "tests/inject/capture_sink.h"
#include "tests/inject/fake_driver.h"

namespace streamsan::injection {

class model_fixture : public ::testing::Test {
 protected:
  recorder rec{{.capture_stacks = true, .stack_depth = 4}};
  fake_driver driver;
  capture_sink sink;
  engine eng;
  cuda_model model{rec, driver};
  call_site here{};
  // Argument storage that outlives each launch.
  std::vector<std::vector<std::uint64_t>> words;
  std::vector<std::vector<void*>> pointers;

  void SetUp() override {
    rec.add_sink(sink);
    rec.add_sink(eng);
  }
  // A kernelParams array of one pointer parameter.
  kernel_arguments args(std::uint64_t pointer) {
    words.push_back({pointer});
    pointers.push_back({&words.back()[0]});
    return kernel_arguments::from_pointers(pointers.back().data());
  }
  std::vector<std::string> kinds() const {
    std::vector<std::string> out;
    for (const auto& d : eng.diagnostics()) out.emplace_back(to_string(d.kind));
    return out;
  }
  std::vector<std::string> unmodelled() const {
    std::vector<std::string> out;
    for (const auto& u : sink.all<unmodelled_call>()) out.emplace_back(sink.tables.string(u.api));
    return out;
  }
};

}  // namespace streamsan::injection
