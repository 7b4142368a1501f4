// StatusIs(code[, message matcher]) for absl::Status and absl::StatusOr in
// tests; Debian's abseil ships none.
#ifndef ACCELSCHED_TESTS_SUPPORT_STATUS_MATCHERS_H_
#define ACCELSCHED_TESTS_SUPPORT_STATUS_MATCHERS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace accelsched {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

MATCHER_P2(StatusIs, code, message_matcher, "") {
  const absl::Status& s = GetStatus(arg);
  *result_listener << "status is " << s;
  return s.code() == code &&
         testing::ExplainMatchResult(message_matcher, std::string(s.message()),
                                     result_listener);
}

// An OK absl::StatusOr whose value matches `value_matcher`.
MATCHER_P(IsOkAndHolds, value_matcher, "") {
  if (!arg.ok()) {
    *result_listener << "status is " << arg.status();
    return false;
  }
  return testing::ExplainMatchResult(value_matcher, *arg, result_listener);
}

#define EXPECT_OK(expr) \
  EXPECT_THAT((expr),   \
              ::accelsched::StatusIs(absl::StatusCode::kOk, ::testing::_))
#define ASSERT_OK(expr) \
  ASSERT_THAT((expr),   \
              ::accelsched::StatusIs(absl::StatusCode::kOk, ::testing::_))

// `lhs` = the value of the absl::StatusOr `expr`; a fatal failure if not OK.
#define ASSERT_OK_AND_ASSIGN(lhs, expr)                                      \
  ASSERT_OK_AND_ASSIGN_IMPL_(ACCELSCHED_TEST_CONCAT_(_status_or_, __LINE__), \
                             lhs, expr)
#define ACCELSCHED_TEST_CONCAT_INNER_(a, b) a##b
#define ACCELSCHED_TEST_CONCAT_(a, b) ACCELSCHED_TEST_CONCAT_INNER_(a, b)
#define ASSERT_OK_AND_ASSIGN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                               \
  ASSERT_OK(statusor);                                  \
  lhs = std::move(statusor).value()

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_STATUS_MATCHERS_H_
