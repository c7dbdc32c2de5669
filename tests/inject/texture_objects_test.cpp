// Note [Texture and surface objects] and Note [Mipmapped arrays]: what a
// kernel that takes an object touches, which words may carry one, the
// origin of such an access, and the levels of a mipmapped array; checked on
// the records and on the engine's verdicts.
#include <gtest/gtest.h>

#include <vector>

#include "tests/inject/model_fixture.h"

namespace streamsan::injection {
namespace texture_objects_test {  // Note [Unity test programs in the sanitizer passes]
namespace {

constexpr std::uintptr_t stream_a = 0x5000;
constexpr std::uintptr_t stream_b = 0x6000;
constexpr std::uintptr_t event = 0x7000;
constexpr std::uintptr_t array = 0xa770;
constexpr std::uintptr_t other_array = 0xa780;
constexpr std::uintptr_t kernel = 0xabc;
constexpr std::uint64_t buffer = 0x10000;
constexpr std::uint64_t host = 0x900000;
// A small value, as a driver may hand out: what integers collide with.
constexpr std::uint64_t object = 3;

class TextureObjects : public model_fixture {
 protected:
  void SetUp() override {
    model_fixture::SetUp();
    model.stream_created(here, stream_a, 1, 0);  // non-blocking
    model.stream_created(here, stream_b, 1, 0);
    model.allocated(here, buffer, 4096, memory_kind::device);
    model.array_created(here, array, 1024, "cudaMallocArray");
  }
  // read(unsigned long long, float*): a texture object and an output.
  void launch_typed(std::uintptr_t s, std::uint64_t word) {
    driver.kernels[kernel] = kernel_description{"_Z4readyPf", {{0, 8}, {8, 8}}, true};
    std::uint64_t out = buffer;
    void* params[] = {&word, &out};
    model.kernel_launched(here, {s}, kernel, kernel_arguments::from_pointers(params));
  }
  void upload_to_array(std::uintptr_t s) {
    model.copied(here, {s}, model.array_region(array), {host, 64, memory_side::host}, true);
  }
  alloc_id array_alloc() const { return sink.all<alloc_record>().at(1).alloc; }
  // The launch's accesses of the array.
  std::vector<access> array_accesses() const {
    std::vector<access> out;
    for (const auto& a : sink.last<kernel_launch>().accesses) {
      if (a.range.alloc == array_alloc()) out.push_back(a);
    }
    return out;
  }
};

TEST_F(TextureObjects, AKernelThatTakesATextureObjectReadsItsWholeArrayExactly) {
  model.texture_object_created(object, model.array_region(array), access_mode::read);
  launch_typed(stream_b, object);
  const auto reads = array_accesses();
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_EQ(reads[0].range.offset, 0u);
  EXPECT_EQ(reads[0].range.size, 1024u);
  EXPECT_EQ(reads[0].mode, access_mode::read);
  EXPECT_EQ(reads[0].origin, access_origin::exact);
}

TEST_F(TextureObjects, ATextureReadRacesWithAnUnorderedCopyIntoTheArray) {
  model.texture_object_created(object, model.array_region(array), access_mode::read);
  upload_to_array(stream_a);
  launch_typed(stream_b, object);
  ASSERT_EQ(eng.diagnostics().size(), 1u);
  const diagnostic& d = eng.diagnostics()[0];
  EXPECT_EQ(d.kind, diagnostic_kind::stream_race);
  EXPECT_EQ(d.hazard_kind, hazard::read_after_write);
  EXPECT_EQ(d.allocation->id, array_alloc());
  EXPECT_EQ(d.certainty, diagnostic_certainty::confirmed);
}

TEST_F(TextureObjects, AnEventBetweenTheCopyAndTheTextureReadOrdersThem) {
  model.texture_object_created(object, model.array_region(array), access_mode::read);
  model.event_created(here, event, 0);
  upload_to_array(stream_a);
  model.event_recorded(here, event, {stream_a});
  model.stream_waited_event(here, {stream_b}, event);
  launch_typed(stream_b, object);
  EXPECT_EQ(array_accesses().size(), 1u);
  EXPECT_TRUE(eng.diagnostics().empty()) << kinds().front();
}

TEST_F(TextureObjects, ASurfaceWriteRacesWithACopyOutOfTheArray) {
  model.texture_object_created(object, model.array_region(array), access_mode::read_write);
  launch_typed(stream_a, object);
  EXPECT_EQ(array_accesses().at(0).mode, access_mode::read_write);
  model.copied(here, {stream_b}, {host, 64, memory_side::host}, model.array_region(array), true);
  ASSERT_EQ(eng.diagnostics().size(), 1u);
  EXPECT_EQ(eng.diagnostics()[0].hazard_kind, hazard::read_after_write);
  EXPECT_EQ(eng.diagnostics()[0].certainty, diagnostic_certainty::confirmed);
}

TEST_F(TextureObjects, AnIntegerOfAnotherTypeIsNeverAnObject) {
  model.texture_object_created(object, model.array_region(array), access_mode::read);
  // read(unsigned long, float*): size_t and uint64_t are unsigned long.
  driver.kernels[kernel] = kernel_description{"_Z4readmPf", {{0, 8}, {8, 8}}, true};
  std::uint64_t n = object, out = buffer;
  void* params[] = {&n, &out};
  model.kernel_launched(here, {stream_b}, kernel, kernel_arguments::from_pointers(params));
  EXPECT_TRUE(array_accesses().empty());
  EXPECT_EQ(sink.last<kernel_launch>().accesses.size(), 1u);  // the output only
}

TEST_F(TextureObjects, AWordOfAStructIsAnInferredObject) {
  model.texture_object_created(object, model.array_region(array), access_mode::read);
  // read(params): struct {int n; int zero;} packs into the word `object`.
  driver.kernels[kernel] = kernel_description{"_Z4read6params", {{0, 16}}, true};
  struct {
    std::int32_t n, zero;
    std::uint64_t out;
  } p{static_cast<std::int32_t>(object), 0, buffer};
  void* params[] = {&p};
  upload_to_array(stream_a);
  model.kernel_launched(here, {stream_b}, kernel, kernel_arguments::from_pointers(params));
  const auto reads = array_accesses();
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_EQ(reads[0].origin, access_origin::inferred);
  ASSERT_EQ(eng.diagnostics().size(), 1u);
  EXPECT_EQ(eng.diagnostics()[0].certainty, diagnostic_certainty::candidate);
}

TEST_F(TextureObjects, AnUntypedKernelsWideWordIsInferredAndItsIntsAreNoWords) {
  model.texture_object_created(object, model.array_region(array), access_mode::read);
  // extern "C" read(int, cudaTextureObject_t): no types in the name.
  driver.kernels[kernel] = kernel_description{"read", {{0, 4}, {8, 8}}, true};
  std::int32_t n = static_cast<std::int32_t>(object);
  std::uint64_t zero = 0;
  void* params[] = {&n, &zero};
  model.kernel_launched(here, {stream_b}, kernel, kernel_arguments::from_pointers(params));
  EXPECT_TRUE(array_accesses().empty());  // the int equal to the handle is no word
  std::uint64_t texture = object;
  params[1] = &texture;
  model.kernel_launched(here, {stream_b}, kernel, kernel_arguments::from_pointers(params));
  ASSERT_EQ(array_accesses().size(), 1u);
  EXPECT_EQ(array_accesses()[0].origin, access_origin::inferred);
}

TEST_F(TextureObjects, ADestroyedHandleNamesNothingAndAReusedOneItsNewObject) {
  model.array_created(here, other_array, 512, "cudaMallocArray");
  model.texture_object_created(object, model.array_region(array), access_mode::read);
  model.texture_object_destroyed(object);
  launch_typed(stream_b, object);
  EXPECT_EQ(sink.last<kernel_launch>().accesses.size(), 1u);  // the output only
  model.texture_object_created(object, model.array_region(other_array), access_mode::read);
  launch_typed(stream_b, object);
  const auto& accesses = sink.last<kernel_launch>().accesses;
  ASSERT_EQ(accesses.size(), 2u);
  EXPECT_EQ(accesses[1].range.alloc, sink.all<alloc_record>().at(2).alloc);
  EXPECT_EQ(accesses[1].range.size, 512u);
}

TEST_F(TextureObjects, ALinearResourceIsItsByteRange) {
  model.texture_object_created(object, {buffer + 256, 512, memory_side::device},
                               access_mode::read);
  launch_typed(stream_b, object);
  const auto& accesses = sink.last<kernel_launch>().accesses;
  ASSERT_EQ(accesses.size(), 2u);
  // The output pointer's inferred access and the texture's exact one are
  // kept apart, each with its origin.
  EXPECT_EQ(accesses[0].origin, access_origin::inferred);
  EXPECT_EQ(accesses[1].range.alloc, sink.all<alloc_record>().at(0).alloc);
  EXPECT_EQ(accesses[1].range.offset, 256u);
  EXPECT_EQ(accesses[1].range.size, 512u);
  EXPECT_EQ(accesses[1].origin, access_origin::exact);
}

TEST_F(TextureObjects, AnObjectOverAFreedArrayIsAUseAfterFree) {
  model.texture_object_created(object, model.array_region(array), access_mode::read);
  model.array_destroyed(here, array);
  launch_typed(stream_b, object);
  EXPECT_EQ(kinds(), std::vector<std::string>{"use-after-free"});
}

TEST_F(TextureObjects, AnObjectOverUnknownMemoryIsNotKept) {
  model.texture_object_created(object, model.array_region(0xdead), access_mode::read);
  launch_typed(stream_b, object);
  EXPECT_EQ(sink.last<kernel_launch>().accesses.size(), 1u);
}

// Note [Mipmapped arrays]
class MipmappedArrays : public TextureObjects {
 protected:
  static constexpr std::uintptr_t mipmap = 0xb000;
  static constexpr std::uintptr_t level0 = 0xb100;
  static constexpr std::uintptr_t level1 = 0xb200;
  void SetUp() override {
    TextureObjects::SetUp();
    const std::vector<std::uint64_t> levels{512, 128, 32};
    model.mipmapped_array_created(here, mipmap, levels, "cudaMallocMipmappedArray");
    model.mipmap_level_taken(level0, mipmap, 0);
    model.mipmap_level_taken(level1, mipmap, 1);
  }
  alloc_id mipmap_alloc() const { return sink.all<alloc_record>().at(2).alloc; }
};

TEST_F(MipmappedArrays, AreOneAllocationOfAllLevelsAndEachLevelIsItsPart) {
  EXPECT_EQ(sink.all<alloc_record>().at(2).size, 672u);
  const memory_region whole = model.mipmapped_array_region(mipmap);
  const memory_region second = model.array_region(level1);
  EXPECT_EQ(whole.size, 672u);
  EXPECT_EQ(second.address, whole.address + 512);
  EXPECT_EQ(second.size, 128u);
  EXPECT_EQ(model.array_region(level0).size, 512u);
}

TEST_F(MipmappedArrays, CopiesIntoTwoLevelsDoNotConflictAndATextureReadOfAllDoes) {
  model.copied(here, {stream_a}, model.array_region(level0), {host, 64, memory_side::host}, true);
  model.copied(here, {stream_b}, model.array_region(level1), {host, 64, memory_side::host}, true);
  EXPECT_TRUE(eng.diagnostics().empty());
  model.texture_object_created(object, model.mipmapped_array_region(mipmap), access_mode::read);
  launch_typed(stream_b, object);
  ASSERT_EQ(eng.diagnostics().size(), 1u);  // with level 0's copy on stream_a
  EXPECT_EQ(eng.diagnostics()[0].allocation->id, mipmap_alloc());
}

TEST_F(MipmappedArrays, DestroyingFreesTheAllocationAndForgetsTheLevels) {
  model.array_destroyed(here, level1);  // not the program's to free
  EXPECT_TRUE(sink.all<free_record>().empty());
  model.mipmapped_array_destroyed(here, mipmap);
  ASSERT_EQ(sink.all<free_record>().size(), 1u);
  EXPECT_EQ(sink.all<free_record>()[0].alloc, mipmap_alloc());
  EXPECT_EQ(model.array_region(level1).size, 0u);
  EXPECT_EQ(model.mipmapped_array_region(mipmap).size, 0u);
}

TEST_F(MipmappedArrays, AnUnsizedOneIsListed) {
  model.mipmapped_array_created(here, 0xc000, std::vector<std::uint64_t>{},
                                "cuMipmappedArrayCreate");
  EXPECT_EQ(unmodelled(), std::vector<std::string>{"cuMipmappedArrayCreate (array size unknown)"});
}

}  // namespace
}  // namespace texture_objects_test
}  // namespace streamsan::injection
