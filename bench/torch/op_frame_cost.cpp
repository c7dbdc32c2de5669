// The operator hook's frame lookup (op_frame_of, Note [Operator frames
// cached per thread]) timed alone: op_hook.cpp is included whole, so its
// internals are callable here. Built and run by op_frame_cost.py.
//   op_frame_cost THREADS ROUNDS
// Each round asks for the frames of 30 (plan, shapes) keys, as an MLP
// iteration's operators would; THREADS threads do it at once. Prints ns per
// call of one thread.
#include OP_HOOK

#include <chrono>
#include <thread>

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const long rounds = argc > 2 ? std::atol(argv[2]) : 100000;
  abi.frame = [](std::uint32_t, const char*, const char*, std::uint32_t) {};
  static plan plans[10];
  for (int i = 0; i < 10; ++i) plans[i].name = "aten::op" + std::to_string(i);
  static const std::vector<std::int64_t> sizes[3][3] = {
      {{64, 256}, {256, 256}, {256}}, {{64, 256}, {64, 256}, {}}, {{256, 64}, {64, 256}, {1}}};
  auto work = [&](std::uint64_t* sum) {
    for (long r = 0; r < rounds; ++r) {
      for (const plan& p : plans) {
        for (const auto& shapes : sizes) {
          ts.shape_count = 0;
          for (const auto& s : shapes) {
            if (!s.empty()) ts.shapes[ts.shape_count++] = {c10::ScalarType::Float, s};
          }
          *sum += op_frame_of(p);
        }
      }
    }
  };
  std::vector<std::uint64_t> sums(threads);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work, &sums[t]);
  for (auto& t : pool) t.join();
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  std::printf("%.1f\n", took.count() / (static_cast<double>(rounds) * 30.0));
}
