// ASSERT_OK / EXPECT_OK: a Status or StatusOr is OK, and when it is not the
// failure message prints it (code and message), e.g.
//   ASSERT_OK(d->Drain(0));
//   ASSERT_OK_AND_ASSIGN(DaemonJobRecord r, d->Submit(req));
#ifndef MIGSCHED_TESTS_TESTING_STATUS_MATCHERS_H_
#define MIGSCHED_TESTS_TESTING_STATUS_MATCHERS_H_

#include <gtest/gtest.h>

#include "core/status.h"

namespace migsched::testing {

inline Status StatusOf(const Status& s) { return s; }
template <typename T>
Status StatusOf(const StatusOr<T>& s) {
  return s.status();
}

}  // namespace migsched::testing

#define MIGSCHED_EXPECT_OK_IMPL_(check, expr)                                    \
  do {                                                                           \
    const ::migsched::Status _migsched_st = ::migsched::testing::StatusOf(expr); \
    check(_migsched_st.ok()) << #expr << ": " << _migsched_st.ToString();        \
  } while (0)

#define EXPECT_OK(expr) MIGSCHED_EXPECT_OK_IMPL_(EXPECT_TRUE, expr)
#define ASSERT_OK(expr) MIGSCHED_EXPECT_OK_IMPL_(ASSERT_TRUE, expr)

// ASSERT_OK_AND_ASSIGN(lhs, expr): asserts that the StatusOr `expr` is OK and
// assigns its value to `lhs` (which may be a declaration).
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  ASSERT_OK_AND_ASSIGN_IMPL_(MIGSCHED_CONCAT_(_migsched_or_, __LINE__), lhs, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr)                   \
  auto tmp = (expr);                                                 \
  ASSERT_TRUE(tmp.ok()) << #expr << ": " << tmp.status().ToString(); \
  lhs = std::move(tmp).value()

#endif  // MIGSCHED_TESTS_TESTING_STATUS_MATCHERS_H_
