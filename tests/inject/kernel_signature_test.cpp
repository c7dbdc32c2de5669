#include "inject/model/kernel_signature.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace streamsan::injection {
namespace {

using ::testing::ElementsAre;

TEST(KernelSignature, DemanglesAndClassifiesConstPointers) {
  // __global__ void scale(const float*, float*, int)
  const auto sig = parse_kernel_signature("_Z5scalePKfPfi");
  EXPECT_EQ(sig.name, "scale(float const*, float*, int)");
  ASSERT_TRUE(sig.has_types);
  EXPECT_THAT(sig.params, ElementsAre(param_class::pointer_to_const, param_class::pointer,
                                      param_class::scalar));
}

TEST(KernelSignature, TemplateKernelsKeepTheirParameterList) {
  // template <class T> __global__ void axpy(T, const T*, T*) with T = double
  const auto sig = parse_kernel_signature("_Z4axpyIdEvT_PKS0_PS0_");
  EXPECT_EQ(sig.name, "void axpy<double>(double, double const*, double*)");
  EXPECT_THAT(sig.params, ElementsAre(param_class::scalar, param_class::pointer_to_const,
                                      param_class::pointer));
}

TEST(KernelSignature, StructParametersAreScanned) {
  // struct pair_of_buffers; __global__ void use(pair_of_buffers, unsigned long)
  const auto sig = parse_kernel_signature("_Z3use15pair_of_buffersm");
  EXPECT_EQ(sig.name, "use(pair_of_buffers, unsigned long)");
  EXPECT_THAT(sig.params, ElementsAre(param_class::unknown, param_class::scalar));
}

TEST(KernelSignature, ExternCKernelsHaveNoTypes) {
  const auto sig = parse_kernel_signature("saxpy_kernel");
  EXPECT_EQ(sig.name, "saxpy_kernel");
  EXPECT_FALSE(sig.has_types);
  EXPECT_TRUE(sig.params.empty());
}

TEST(KernelSignature, NoParameters) {
  const auto sig = parse_kernel_signature("_Z5emptyv");
  EXPECT_EQ(sig.name, "empty()");
  EXPECT_TRUE(sig.has_types);
  EXPECT_TRUE(sig.params.empty());
}

TEST(KernelSignature, RestrictAndConstPointerQualifiers) {
  EXPECT_EQ(classify_parameter("float const* __restrict__"), param_class::pointer_to_const);
  EXPECT_EQ(classify_parameter("float* __restrict__"), param_class::pointer);
  EXPECT_EQ(classify_parameter("float* const"), param_class::pointer);
  EXPECT_EQ(classify_parameter("const float*"), param_class::pointer_to_const);
  // The array of pointers is what the kernel reads through the parameter.
  EXPECT_EQ(classify_parameter("float* const*"), param_class::pointer_to_const);
  EXPECT_EQ(classify_parameter("float const**"), param_class::pointer);
  EXPECT_EQ(classify_parameter("constant_buffer*"), param_class::pointer);
  EXPECT_EQ(classify_parameter("my_const*"), param_class::pointer);
  // The type of texture and surface objects (Note [Texture and surface
  // objects]): never an address, but maybe an object.
  EXPECT_EQ(classify_parameter("unsigned long long"), param_class::wide_integer);
  EXPECT_EQ(classify_parameter("unsigned long"), param_class::scalar);
  EXPECT_EQ(classify_parameter("int const"), param_class::scalar);
  EXPECT_EQ(classify_parameter("std::size_t"), param_class::unknown);
}

TEST(KernelSignature, ParameterTypesSplitAtTopLevelCommasOnly) {
  const auto types =
      parameter_types("void k<pair<int, float>, 3>(pair<int, float>*, int (*)(int, int), long)");
  ASSERT_TRUE(types.has_value());
  EXPECT_THAT(*types, ElementsAre("pair<int, float>*", "int (*)(int, int)", "long"));
  EXPECT_FALSE(parameter_types("not a function").has_value());
}

TEST(KernelSignature, AnonymousNamespaceKernels) {
  const auto sig = parse_kernel_signature("_ZN12_GLOBAL__N_14fillEPfi");
  EXPECT_EQ(sig.name, "(anonymous namespace)::fill(float*, int)");
  EXPECT_THAT(sig.params, ElementsAre(param_class::pointer, param_class::scalar));
}

}  // namespace
}  // namespace streamsan::injection
