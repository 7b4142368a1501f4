// The headers nearly every test includes, compiled once per build tree and
// reused by every test binary (tests/CMakeLists.txt, ACCELSCHED_TEST_PCH).
// GoogleTest and GoogleMock are about half of a small test's compile time:
// tests/core/base/labels_test.cc compiles in 3.8 s with them precompiled,
// 7.9 s without. Only headers that change with Debian's packages, never the
// project's own: a change to one of those rebuilds every test.
#ifndef ACCELSCHED_TESTS_SUPPORT_TEST_PCH_H_
#define ACCELSCHED_TESTS_SUPPORT_TEST_PCH_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#endif  // ACCELSCHED_TESTS_SUPPORT_TEST_PCH_H_
