// What several base tests share: the InputError message of a call, a substring check, and a
// fresh folder per test.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "txl/util/error.h"

namespace txl::testing {

// The InputError message, or "" when nothing was thrown.
template <class F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// TempDir()/txl_<prefix>_<test>_<pid>: made empty when constructed, removed when destroyed.
class TestDir {
 public:
  explicit TestDir(const std::string& prefix)
      : path_(std::filesystem::path(::testing::TempDir()) /
              ("txl_" + prefix + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
               std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TestDir() { std::filesystem::remove_all(path_); }
  TestDir(const TestDir&) = delete;
  TestDir& operator=(const TestDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace txl::testing
