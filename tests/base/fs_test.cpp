#include "txl/util/fs.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace txl {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(WriteFileAtomic, ReplacesContentAndLeavesNoTemporary) {
  const std::string path = ::testing::TempDir() + "/txl_fs_test.txt";
  write_file_atomic(path, "first");
  write_file_atomic(path, "second version");
  EXPECT_EQ(slurp(path), "second version");
  EXPECT_TRUE(is_regular_file(path));
  EXPECT_FALSE(is_directory(path));
}

TEST(WriteFileAtomic, MissingDirectoryIsAnErrorNamingThePath) {
  try {
    write_file_atomic("/nonexistent-dir-txl/x.json", "{}");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir-txl/x.json"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace txl
