// Leadership against a real PostgreSQL 15: when a leader stops serving, and
// what it does when it cannot load the state it was elected with. One process
// runs every case (tests/CMakeLists.txt), each on a database of its own.
#include "services/leadership.h"

#include <signal.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/base/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/pg_leader_election.h"
#include "tests/support/postgres_instance.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::HasSubstr;

class LeadershipTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(
        std::filesystem::path(testing::TempDir()) /
        absl::StrCat("accelsched-leadership-test-", getpid()));
    std::filesystem::remove_all(*dir_);
    std::filesystem::create_directories(*dir_);
    absl::StatusOr<std::unique_ptr<PostgresInstance>> pg =
        PostgresInstance::Start(dir_->string());
    ASSERT_OK(pg);
    pg_ = pg->release();
  }
  static void TearDownTestSuite() {
    delete pg_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override {
    ASSERT_NE(pg_, nullptr);
    static int next = 0;
    ASSERT_OK_AND_ASSIGN(uri_, pg_->CreateDatabase(absl::StrCat("l", next++)));
  }

  std::unique_ptr<PgLeaderElection> Election(const std::string& address) {
    PgLeaderElection::Options options;
    options.address = address;
    options.lease = kLease;
    options.renew_deadline = kRenewDeadline;
    options.connection.application_name = address;
    absl::StatusOr<std::unique_ptr<PgLeaderElection>> e =
        PgLeaderElection::Open(uri_, options);
    EXPECT_OK(e);
    return e.ok() ? std::move(*e) : nullptr;
  }

  // Serving as the callbacks report it; waits (bounded) for `serving`.
  struct Observed {
    absl::Mutex mu;
    bool serving ABSL_GUARDED_BY(mu) = false;
    std::string lost ABSL_GUARDED_BY(mu);
    bool AwaitServing(bool want, absl::Duration within) {
      absl::MutexLock lock(&mu);
      auto reached = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu) {
        return serving == want;
      };
      return mu.AwaitWithTimeout(absl::Condition(&reached), within);
    }
    bool AwaitLost(absl::Duration within) {
      absl::MutexLock lock(&mu);
      auto reached = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu) {
        return !lost.empty();
      };
      return mu.AwaitWithTimeout(absl::Condition(&reached), within);
    }
  };
  Leadership::Callbacks Observe(Observed& seen,
                                absl::Status load = absl::OkStatus()) {
    Leadership::Callbacks callbacks;
    callbacks.promote = [load](int64_t) { return load; };
    callbacks.serving = [&seen](bool serving, int64_t) {
      absl::MutexLock lock(&seen.mu);
      seen.serving = serving;
    };
    callbacks.lost = [&seen](const std::string& why) {
      absl::MutexLock lock(&seen.mu);
      seen.lost = why;
    };
    return callbacks;
  }

  static constexpr absl::Duration kLease = absl::Seconds(30);
  static constexpr absl::Duration kRenewDeadline = absl::Milliseconds(600);
  static constexpr absl::Duration kRetry = absl::Milliseconds(100);
  static PostgresInstance* pg_;
  static std::filesystem::path* dir_;
  std::string uri_;
};
PostgresInstance* LeadershipTest::pg_ = nullptr;
std::filesystem::path* LeadershipTest::dir_ = nullptr;

// The database session of the election named `address`: its server process.
absl::StatusOr<pid_t> BackendOf(PostgresInstance& pg,
                                const std::string& address) {
  ASSIGN_OR_RETURN(std::string pid,
                   pg.Psql(absl::StrCat("SELECT pid FROM pg_stat_activity "
                                        "WHERE application_name = '",
                                        address, "'")));
  int value = 0;
  if (!absl::SimpleAtoi(pid, &value)) {
    return absl::NotFoundError(absl::StrCat("no session of ", address));
  }
  return value;
}

TEST_F(LeadershipTest, ALeaderWhoseRenewalHangsStopsServingAtItsDeadline) {
  Observed seen;
  Leadership leadership(kRenewDeadline, kRetry, Observe(seen));
  leadership.Start(Election("hang:1"));
  ASSERT_TRUE(seen.AwaitServing(true, absl::Seconds(10)));
  EXPECT_OK(leadership.Check());
  // Its session's server process frozen: the next renewal hangs (the
  // database's kernel still answers TCP, so no timeout ends it).
  ASSERT_OK_AND_ASSIGN(const pid_t backend, BackendOf(*pg_, "hang:1"));
  ASSERT_EQ(kill(backend, SIGSTOP), 0) << "signalling PostgreSQL needs root";
  const absl::Time frozen = absl::Now();
  // Health and calls stop within the deadline, the renewal still hanging.
  EXPECT_TRUE(seen.AwaitServing(false, absl::Seconds(5)));
  EXPECT_LT(absl::Now() - frozen, kRenewDeadline + absl::Seconds(2));
  EXPECT_THAT(leadership.Check(),
              StatusIs(absl::StatusCode::kUnavailable, testing::_));
  ASSERT_EQ(kill(backend, SIGCONT), 0);
  // Nobody took over: once renewed it serves again, with its epoch.
  EXPECT_TRUE(seen.AwaitServing(true, absl::Seconds(10)));
  EXPECT_EQ(leadership.epoch(), 1);
  EXPECT_FALSE(leadership.lost());
  leadership.Stop();
}

TEST_F(LeadershipTest, ALeaderThatCannotLoadResignsAndLoses) {
  Observed seen;
  Leadership leadership(
      kRenewDeadline, kRetry,
      Observe(seen, absl::DataLossError("device type h100 is not registered")));
  leadership.Start(Election("broken:1"));
  ASSERT_TRUE(seen.AwaitLost(absl::Seconds(10)));
  {
    absl::MutexLock lock(&seen.mu);
    EXPECT_THAT(seen.lost, HasSubstr("h100 is not registered"));
    EXPECT_THAT(seen.lost, HasSubstr("resigned"));
    EXPECT_FALSE(seen.serving);
  }
  EXPECT_THAT(leadership.Check(),
              StatusIs(absl::StatusCode::kUnavailable, testing::_));
  // Its lease ended: another replica takes over at once, not after the
  // 30 s lease.
  auto other = Election("other:1");
  EXPECT_THAT(other->TryAcquire(), IsOkAndHolds(2));
  leadership.Stop();
}

TEST_F(LeadershipTest, ALeaderWhoseLoadFailsForAWhileStaysAndServes) {
  std::atomic<int> attempts{0};
  Observed seen;
  Leadership::Callbacks callbacks = Observe(seen);
  callbacks.promote = [&attempts](int64_t) {
    return ++attempts < 3 ? absl::UnavailableError("database restarting")
                          : absl::OkStatus();
  };
  Leadership leadership(kRenewDeadline, kRetry, std::move(callbacks));
  leadership.Start(Election("retry:1"));
  EXPECT_TRUE(seen.AwaitServing(true, absl::Seconds(10)));
  EXPECT_EQ(attempts.load(), 3);
  EXPECT_FALSE(leadership.lost());
  leadership.Stop();
}

}  // namespace
}  // namespace accelsched
