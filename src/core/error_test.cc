#include "core/error.h"

#include <gtest/gtest.h>

#include <string>

namespace qmlsim {
namespace {

TEST(Printable, EscapesControlBytesAndBrokenUtf8KeepsWellFormedUtf8) {
  EXPECT_EQ(printable("plain text"), "plain text");
  EXPECT_EQ(printable("a\nb\x7f"), "a\\x0ab\\x7f");
  EXPECT_EQ(printable("θ = π/2 ✓ 𝛼"), "θ = π/2 ✓ 𝛼");  // 2-, 3- and 4-byte sequences
  EXPECT_EQ(printable("k\xffnd"), "k\\xffnd");
  EXPECT_EQ(printable("\xc3"), "\\xc3");                             // cut short
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a surrogate
  EXPECT_EQ(printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  const std::string once = printable("x\xfe\n");
  EXPECT_EQ(printable(once), once);
  EXPECT_EQ(std::string(Error("bad \xff").what()), "bad \\xff");
}

}  // namespace
}  // namespace qmlsim
