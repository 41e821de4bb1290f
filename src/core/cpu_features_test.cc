#include "core/cpu_features.h"

#include <gtest/gtest.h>

namespace qmlsim {
namespace {

TEST(CpuFeatures, ModelNameIsOneTrimmedLine) {
  const std::string name = cpu_model_name();
  ASSERT_FALSE(name.empty());
  EXPECT_NE(name.front(), ' ');
  EXPECT_NE(name.back(), ' ');
  EXPECT_EQ(name.find("  "), std::string::npos);
  EXPECT_EQ(name.find('\n'), std::string::npos);
  EXPECT_EQ(name.find('\0'), std::string::npos);
}

TEST(CpuFeatures, AVX512ImpliesAVX2) {
  const CpuFeatures f = detect_cpu_features();
  EXPECT_TRUE(!f.avx512f || f.avx2_fma);
}

}  // namespace
}  // namespace qmlsim
