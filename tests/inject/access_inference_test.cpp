#include "inject/model/access_inference.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <map>
#include <random>
#include <vector>

namespace streamsan::injection {
namespace {

constexpr std::uint64_t base_a = 0x7f0000100000;
constexpr std::uint64_t base_b = 0x7f0000200000;

allocation_map two_allocations() {
  allocation_map m;
  m.insert({alloc_id{1}, base_a, 4096, memory_kind::device, 0});
  m.insert({alloc_id{2}, base_b, 1024, memory_kind::device, 0});
  return m;
}

// The kernelParams array of a launch: one pointer per parameter.
struct launch_args {
  std::vector<std::vector<unsigned char>> storage;
  std::vector<void*> pointers;
  template <class T>
  void add(const T& value) {
    storage.emplace_back(sizeof(T));
    std::memcpy(storage.back().data(), &value, sizeof(T));
  }
  kernel_arguments view() {
    pointers.clear();
    for (auto& s : storage) pointers.push_back(s.data());
    return kernel_arguments::from_pointers(pointers.data());
  }
};

TEST(AccessInference, ConstPointerIsReadOtherPointerIsReadWrite) {
  const auto m = two_allocations();
  const auto sig = parse_kernel_signature("_Z5scalePKfPfi");  // (const float*, float*, int)
  const param_layout layout[] = {{0, 8}, {8, 8}, {16, 4}};
  const auto plans = make_param_plans(layout, sig);
  launch_args args;
  args.add(base_a + 256);
  args.add(base_b);
  args.add(int{7});
  std::vector<access> out;
  infer_accesses(plans, args.view(), m, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].range.alloc, alloc_id{1});
  EXPECT_EQ(out[0].range.offset, 256u);
  EXPECT_EQ(out[0].range.size, 4096u - 256u);  // to the end of the allocation
  EXPECT_EQ(out[0].mode, access_mode::read);
  EXPECT_EQ(out[1].range.alloc, alloc_id{2});
  EXPECT_EQ(out[1].range.offset, 0u);
  EXPECT_EQ(out[1].range.size, 1024u);
  EXPECT_EQ(out[1].mode, access_mode::read_write);
}

TEST(AccessInference, ScalarThatLooksLikeAnAddressIsIgnored) {
  const auto m = two_allocations();
  const auto sig = parse_kernel_signature("_Z1fm");  // f(unsigned long)
  const param_layout layout[] = {{0, 8}};
  launch_args args;
  args.add(base_a);
  std::vector<access> out;
  infer_accesses(make_param_plans(layout, sig), args.view(), m, out);
  EXPECT_TRUE(out.empty());
}

// Note [Texture and surface objects]: an unsigned long long is never an
// address, but its word, and every word of an unknown parameter, may carry
// an object; pointers and other integers never do.
TEST(AccessInference, ObjectWordsAreUnsignedLongLongAndUnknownWords) {
  const auto m = two_allocations();
  // f(unsigned long long, float*, unsigned long, params): params is 16 bytes.
  const auto sig = parse_kernel_signature("_Z1fyPfm6params");
  const param_layout layout[] = {{0, 8}, {8, 8}, {16, 8}, {24, 16}};
  const auto plans = make_param_plans(layout, sig);
  EXPECT_EQ(plans[0].kind, param_class::wide_integer);
  launch_args args;
  args.add(std::uint64_t{base_a});  // an unsigned long long equal to an address
  args.add(std::uint64_t{3});
  args.add(std::uint64_t{4});
  args.add(std::array<std::uint64_t, 2>{5, 0});
  std::vector<access> out;
  infer_accesses(plans, args.view(), m, out);
  EXPECT_TRUE(out.empty());
  std::vector<object_word> words;
  object_words(plans, args.view(), words);
  ASSERT_EQ(words.size(), 2u);  // the zero word is no object
  EXPECT_EQ(words[0].value, base_a);
  EXPECT_TRUE(words[0].typed);
  EXPECT_EQ(words[1].value, 5u);
  EXPECT_FALSE(words[1].typed);
}

TEST(AccessInference, PointersInsideStructParametersAreFound) {
  const auto m = two_allocations();
  struct buffers {
    int n;                // offset 0
    const float* input;   // offset 8
    float* output;        // offset 16
    std::uint32_t flags;  // offset 24
  };
  const auto sig = parse_kernel_signature("_Z3use7buffers");  // use(buffers)
  const param_layout layout[] = {{0, sizeof(buffers)}};
  launch_args args;
  args.add(buffers{3, reinterpret_cast<const float*>(base_a + 8),
                   reinterpret_cast<float*>(base_b + 16), 0});
  std::vector<access> out;
  infer_accesses(make_param_plans(layout, sig), args.view(), m, out);
  ASSERT_EQ(out.size(), 2u);
  // Inside a struct the constness is unknown: read-write.
  EXPECT_EQ(out[0].range.alloc, alloc_id{1});
  EXPECT_EQ(out[0].range.offset, 8u);
  EXPECT_EQ(out[0].mode, access_mode::read_write);
  EXPECT_EQ(out[1].range.alloc, alloc_id{2});
  EXPECT_EQ(out[1].range.offset, 16u);
}

TEST(AccessInference, OnlyEightByteAlignedWordsOfTheBufferAreRead) {
  allocation_map m;
  m.insert({alloc_id{1}, base_a, 64, memory_kind::device, 0});
  // A 16-byte parameter at buffer offset 4: its aligned word starts 4 bytes in.
  const param_layout layout[] = {{0, 4}, {4, 16}};
  const kernel_signature untyped;
  launch_args args;
  args.add(std::uint32_t{0});
  unsigned char bytes[16] = {};
  const std::uint64_t p = base_a;
  std::memcpy(bytes + 4, &p, 8);
  args.add(bytes);
  std::vector<access> out;
  infer_accesses(make_param_plans(layout, untyped), args.view(), m, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].range.alloc, alloc_id{1});
}

TEST(AccessInference, WordsIntoOneAllocationFoldIntoOneAccess) {
  const auto m = two_allocations();
  const auto sig = parse_kernel_signature("_Z4copyPKfPf");  // copy(const float*, float*)
  const param_layout layout[] = {{0, 8}, {8, 8}};
  launch_args args;
  args.add(base_a + 2048);
  args.add(base_a + 1024);
  std::vector<access> out;
  infer_accesses(make_param_plans(layout, sig), args.view(), m, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].range.offset, 1024u);
  EXPECT_EQ(out[0].range.size, 4096u - 1024u);
  EXPECT_EQ(out[0].mode, access_mode::read_write);
}

TEST(AccessInference, PackedBufferArguments) {
  const auto m = two_allocations();
  const param_layout layout[] = {{0, 8}, {8, 4}};
  const auto sig = parse_kernel_signature("_Z1gPfi");  // g(float*, int)
  unsigned char buffer[16] = {};
  const std::uint64_t p = base_b + 4;
  std::memcpy(buffer, &p, 8);
  std::vector<access> out;
  infer_accesses(make_param_plans(layout, sig),
                 kernel_arguments::from_buffer(buffer, sizeof buffer), m, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].range.alloc, alloc_id{2});
  EXPECT_EQ(out[0].range.offset, 4u);
}

// A buffer that ends before the layout says: no word past its end is read.
TEST(AccessInference, APackedBufferIsReadNoFurtherThanItsSize) {
  const auto m = two_allocations();
  const param_layout layout[] = {{0, 8}, {8, 16}};  // the second ends at 24
  const kernel_signature untyped;
  unsigned char buffer[24] = {};
  const std::uint64_t a = base_a, b = base_b;
  std::memcpy(buffer, &a, 8);
  std::memcpy(buffer + 16, &b, 8);
  std::vector<access> out;
  infer_accesses(make_param_plans(layout, untyped), kernel_arguments::from_buffer(buffer, 16), m,
                 out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].range.alloc, alloc_id{1});
  infer_accesses(make_param_plans(layout, untyped), kernel_arguments::from_buffer(buffer, 24), m,
                 out);
  EXPECT_EQ(out.size(), 2u);
}

// An operator's launch is inferred from the pointer words already found:
// the same accesses, learned modes included, as from its arguments.
TEST(AccessInference, InferringFromPointerWordsMatchesInferringFromArguments) {
  const auto m = two_allocations();
  const auto sig = parse_kernel_signature("_Z4axpyPKfPfS1_i");  // (const float*, float*, float*, int)
  const param_layout layout[] = {{0, 8}, {8, 8}, {16, 8}, {24, 4}};
  const auto plans = make_param_plans(layout, sig);
  launch_args args;
  args.add(base_a + 64);
  args.add(base_b + 8);
  args.add(base_a + 1024);
  args.add(int{5});
  learned_modes learned;
  learned.learn(word_ref{1, 0}, static_cast<std::uint8_t>(access_mode::write));
  learned.learn(word_ref{2, 0}, 0);  // measured unused
  const learned_modes* choices[] = {nullptr, &learned};
  for (const learned_modes* l : choices) {
    std::vector<access> from_args, from_words;
    infer_accesses(plans, args.view(), m, from_args, l);
    infer_accesses(plans, pointer_words(plans, args.view(), m), from_words, l);
    ASSERT_EQ(from_words.size(), from_args.size());
    for (std::size_t i = 0; i < from_args.size(); ++i) {
      EXPECT_EQ(from_words[i].range.alloc, from_args[i].range.alloc);
      EXPECT_EQ(from_words[i].range.offset, from_args[i].range.offset);
      EXPECT_EQ(from_words[i].range.size, from_args[i].range.size);
      EXPECT_EQ(from_words[i].mode, from_args[i].mode);
    }
  }
  std::vector<access> out;
  infer_accesses(plans, pointer_words(plans, args.view(), m), out, &learned);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].mode, access_mode::read);   // the const pointer, as typed
  EXPECT_EQ(out[1].mode, access_mode::write);  // learned
}

TEST(AccessInference, LaunchExtraArrayCarriesAPackedBuffer) {
  const auto m = two_allocations();
  unsigned char buffer[8];
  const std::uint64_t p = base_a + 16;
  std::memcpy(buffer, &p, 8);
  std::size_t size = sizeof buffer;
  // {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, END}
  void* extra[] = {reinterpret_cast<void*>(1), buffer, reinterpret_cast<void*>(2), &size,
                   nullptr};
  const param_layout layout[] = {{0, 8}};
  std::vector<access> out;
  infer_accesses(make_param_plans(layout, parse_kernel_signature("_Z1gPf")),
                 kernel_arguments::from_launch(nullptr, extra), m, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].range.offset, 16u);
  EXPECT_TRUE(kernel_arguments::from_launch(nullptr, nullptr).empty());
}

TEST(AccessInference, MismatchedSignatureFallsBackToScanning) {
  const auto m = two_allocations();
  // The name says one int, the driver says two 8-byte parameters.
  const auto sig = parse_kernel_signature("_Z1hi");
  const param_layout layout[] = {{0, 8}, {8, 8}};
  const auto plans = make_param_plans(layout, sig);
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(plans[0].kind, param_class::unknown);
  EXPECT_EQ(plans[1].kind, param_class::unknown);
}

TEST(AccessInference, FreedAllocationIsStillAttributed) {
  auto m = two_allocations();
  ASSERT_TRUE(m.erase(base_b).has_value());
  const auto sig = parse_kernel_signature("_Z1gPf");
  const param_layout layout[] = {{0, 8}};
  launch_args args;
  args.add(base_b + 8);
  std::vector<access> out;
  infer_accesses(make_param_plans(layout, sig), args.view(), m, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].range.alloc, alloc_id{2});
}

// Note [Folding a launch's words]: folding all at once, by sorting once
// there are many, gives what folding one by one gives.
TEST(AccessInference, FoldingManyAccessesMatchesFoldingOneByOne) {
  for (const std::size_t count : {3u, 15u, 16u, 40u, 300u}) {
    std::vector<access> appended;
    std::uint64_t seed = 12345;
    for (std::size_t i = 0; i < count; ++i) {
      seed = seed * 6364136223846793005u + 1442695040888963407u;
      const auto alloc = alloc_id{static_cast<std::uint32_t>(seed >> 59) + 1};  // 1..32
      const std::uint64_t offset = (seed >> 20) % 4096;
      const auto mode = (seed >> 40) % 2 == 0 ? access_mode::read : access_mode::read_write;
      appended.push_back(access{byte_range{alloc, offset, 4096 - offset}, mode,
                                access_origin::inferred});
    }
    std::vector<access> one_by_one{access{byte_range{alloc_id{99}, 0, 8}, access_mode::write}};
    for (const access& a : appended) add_access(one_by_one, a);
    std::vector<access> at_once{access{byte_range{alloc_id{99}, 0, 8}, access_mode::write}};
    at_once.insert(at_once.end(), appended.begin(), appended.end());
    fold_accesses(at_once);
    EXPECT_EQ(at_once, one_by_one) << count << " accesses";
  }
}

TEST(AccessInference, WordsIntoManyAllocationsFoldPerAllocationInFirstSeenOrder) {
  allocation_map m;
  constexpr std::uint64_t first = 0x7f0000000000;
  for (std::uint32_t i = 0; i < 40; ++i) {
    m.insert({alloc_id{i + 1}, first + i * 0x10000, 0x10000, memory_kind::device, 0});
  }
  // A struct of 80 words: allocation 40 - k at word k, then each again,
  // lower, in the same order.
  std::vector<std::uint64_t> words(80);
  for (std::uint32_t k = 0; k < 40; ++k) {
    words[k] = first + (39 - k) * 0x10000 + 0x100;
    words[40 + k] = first + (39 - k) * 0x10000 + 0x10;
  }
  const param_layout layout[] = {{0, 640}};
  const auto plans = make_param_plans(layout, parse_kernel_signature("_Z1k6Params"));
  void* params[1] = {words.data()};
  std::vector<access> out;
  infer_accesses(plans, kernel_arguments::from_pointers(params), m, out);
  ASSERT_EQ(out.size(), 40u);
  for (std::uint32_t k = 0; k < 40; ++k) {
    EXPECT_EQ(out[k].range.alloc, alloc_id{40 - k});
    EXPECT_EQ(out[k].range.offset, 0x10u);
    EXPECT_EQ(out[k].range.size, 0x10000u - 0x10u);
  }
}

// Note [Learned modes side by side]: words learned in any order are found,
// their bits are a union, and a word never measured is not.
TEST(LearnedModes, WordsLearnedInAnyOrderAreFoundWithTheUnionOfTheirBits) {
  learned_modes l;
  const auto read = static_cast<std::uint8_t>(access_mode::read);
  const auto write = static_cast<std::uint8_t>(access_mode::write);
  l.learn({2, 8}, read);
  l.learn({0, 16}, 0);  // measured, unused
  l.learn({2, 0}, write);
  l.learn({0, 0}, read);
  l.learn({2, 8}, write);
  EXPECT_EQ(l.mode_of({2, 8}), std::optional<std::uint8_t>(read | write));
  EXPECT_EQ(l.mode_of({0, 16}), std::optional<std::uint8_t>(0));
  EXPECT_EQ(l.mode_of({2, 0}), std::optional<std::uint8_t>(write));
  EXPECT_EQ(l.mode_of({0, 0}), std::optional<std::uint8_t>(read));
  EXPECT_EQ(l.mode_of({0, 8}), std::nullopt);
  EXPECT_EQ(l.mode_of({3, 0}), std::nullopt);
  EXPECT_EQ(l.mode_of({1, 16}), std::nullopt);
}

TEST(LearnedModes, AgreeWithAMapUnderRandomLearning) {
  learned_modes l;
  std::map<word_ref, std::uint8_t> reference;
  std::mt19937 random(11);
  for (int step = 0; step < 5000; ++step) {
    const word_ref w{static_cast<std::uint32_t>(random() % 6),
                     static_cast<std::uint32_t>((random() % 8) * 8)};
    if (random() % 3 == 0) {
      const auto bits = static_cast<std::uint8_t>(random() % 8);
      l.learn(w, bits);
      reference[w] |= bits;
    } else {
      const auto it = reference.find(w);
      const auto expected =
          it == reference.end() ? std::nullopt : std::optional<std::uint8_t>(it->second);
      ASSERT_EQ(l.mode_of(w), expected) << "step " << step;
    }
  }
}

}  // namespace
}  // namespace streamsan::injection
