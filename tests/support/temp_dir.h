// A fresh directory per test under the test temp dir, removed afterwards.
#ifndef ACCELSCHED_TESTS_SUPPORT_TEMP_DIR_H_
#define ACCELSCHED_TESTS_SUPPORT_TEMP_DIR_H_

#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace accelsched {

class TempDir {
 public:
  TempDir() {
    const testing::TestInfo* info =
        testing::UnitTest::GetInstance()->current_test_info();
    std::string name =
        std::string(info->test_suite_name()) + "." + info->name();
    for (char& c : name) {
      if (c == '/') c = '_';
    }
    path_ = std::filesystem::path(testing::TempDir()) /
            ("accelsched-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string File(const std::string& name) const {
    return (path_ / name).string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_TEMP_DIR_H_
