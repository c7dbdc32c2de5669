// Shared by the runtime tests: session setup and a sink that keeps the log.
//
// Tests run on the backend STREAMSAN_BACKEND names (sim by default here), so
// the same binary can run on a GPU machine; tests that depend on the sim's
// scheduler skip themselves elsewhere.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <string>
#include <variant>
#include <vector>

#include "runtime/api.h"
#include "sanitizer/log/log_tables.h"
#include "sanitizer/log/record.h"

namespace streamsan::rt::testing {

// The environment's options, with stacks off and the sim seeded as given.
// progress_per_mille 0 leaves all sim work until the host blocks, which
// makes "did this call wait?" observable.
runtime_options test_options(std::uint64_t seed = 1, unsigned progress_per_mille = 500);

// Starts a fresh session for each test and shuts it down after.
class runtime_test : public ::testing::Test {
 protected:
  void SetUp() override { initialize(test_options()); }
  void TearDown() override { shutdown(); }
};

bool on_sim();

// Skips the calling test when fewer than `n` devices are visible.
#define STREAMSAN_REQUIRE_DEVICES(n)                                                  \
  do {                                                                            \
    if (::streamsan::rt::device_count() < (n)) GTEST_SKIP() << "needs " << (n) << " devices"; \
  } while (false)

// Runs `f`, which must throw exactly E with message `message`.
template <class E, class F>
void expect_error(F&& f, const std::string& message) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected: " << message;
  } catch (const E& e) {
    EXPECT_EQ(std::string(e.what()), message);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

// Reads `count` floats of device memory back through a pinned buffer.
std::vector<float> read_back(const buffer_view& device_memory);
// Writes floats into device memory through a pinned buffer (synchronous).
void write_to(const buffer_view& device_memory, const std::vector<float>& values);

// Skips the calling test unless the backend is the sim.
#define STREAMSAN_REQUIRE_SIM()                                                   \
  do {                                                                            \
    if (!::streamsan::rt::testing::on_sim()) GTEST_SKIP() << "needs the sim backend"; \
  } while (false)

// A record_sink that keeps deep copies of every record (the spans of the
// originals die with on_record; see Note [Records are views]).
class kept_log final : public record_sink {
 public:
  kept_log() { add_log_sink(*this); }
  ~kept_log() override { remove_log_sink(*this); }
  kept_log(const kept_log&) = delete;
  kept_log& operator=(const kept_log&) = delete;

  void on_record(const record& r) override;

  const std::vector<record_body>& records() const noexcept { return records_; }
  const log_tables& tables() const noexcept { return tables_; }
  std::string_view text(string_id id) const noexcept { return tables_.string(id); }

  template <class T>
  std::vector<T> all() const {
    std::vector<T> out;
    for (const auto& r : records_) {
      if (const auto* t = std::get_if<T>(&r)) out.push_back(*t);
    }
    return out;
  }

  // The records other than definitions, as variant indices, in order.
  template <class T>
  std::size_t count() const {
    return all<T>().size();
  }

 private:
  std::span<const access> keep(std::span<const access> a);

  std::vector<record_body> records_;
  log_tables tables_;
  std::deque<std::vector<access>> accesses_;
  std::deque<std::vector<graph_node>> nodes_;
  std::deque<std::vector<graph_edge>> edges_;
};

}  // namespace streamsan::rt::testing
