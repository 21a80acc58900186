// Comma lists of positive integers (--lengths, the testing hooks): every item must be one,
// an empty item included, wherever it stands ("32,,64", ",32" and "32," alike).
#include "txl/util/parse.h"

#include <gtest/gtest.h>

namespace txl {
namespace {

TEST(ParsePositiveIntegers, EveryItemMustBeAPositiveIntegerEmptyOnesIncluded) {
  std::vector<int64_t> out;
  EXPECT_EQ(parse_positive_integers("32,64,128", out), std::nullopt);
  EXPECT_EQ(out, (std::vector<int64_t>{32, 64, 128}));
  for (const std::string& text : {"32,", "32,,64", ",32", ","}) {
    out.clear();
    EXPECT_EQ(parse_positive_integers(text, out), std::optional<std::string>("")) << text;
  }
  out.clear();
  EXPECT_EQ(parse_positive_integers("32,0", out), std::optional<std::string>("0"));
  EXPECT_EQ(parse_positive_integers("32,x", out), std::optional<std::string>("x"));
  out.clear();
  EXPECT_EQ(parse_positive_integers("", out), std::nullopt);  // nothing: the caller decides
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace txl
